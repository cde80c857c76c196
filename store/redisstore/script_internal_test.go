package redisstore

import (
	"crypto/sha1"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tenure-go/tenure/internal/testcluster"
)

// go-redis retries a script after a network error. If the first attempt
// did write, the retry (same arguments, same op nonce) must report that
// write as a success rather than a conflict with itself, and must not
// write again.
func TestRetriedSwapIsIdempotent(t *testing.T) {
	srv := testcluster.PackageRedis(t)
	c := srv.Client(t)
	st, err := New[string](c, WithPrefix("internal:"+t.Name()+":"+time.Now().Format(time.RFC3339Nano)+":"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	args := []any{"0", "nonce-1", st.channel("n"), "a", "1", "", "", "1000", "0", `"m"`}
	first, err := casScript.Run(ctx, c, []string{st.key("n")}, args...).StringSlice()
	if err != nil || len(first) != 5 || first[0] != "ok" {
		t.Fatalf("first run: %q, %v", first, err)
	}
	again, err := casScript.Run(ctx, c, []string{st.key("n")}, args...).StringSlice()
	if err != nil || strings.Join(again, ",") != strings.Join(first, ",") {
		t.Fatalf("retried run: %q, %v; want %q", again, err, first)
	}
	rec, rev, err := st.Get(ctx, "n")
	if err != nil || strconv.FormatUint(uint64(rev), 10) != first[1] || rec.Holder != "a" {
		t.Fatalf("Get = %+v at %d, %v", rec, rev, err)
	}
	// Another call with the same expected revision is a conflict.
	args[1] = "nonce-2"
	other, err := casScript.Run(ctx, c, []string{st.key("n")}, args...).Slice()
	if err != nil || other[0] != "conflict" {
		t.Fatalf("another call: %q, %v; want a conflict", other, err)
	}
}

// checksum is the sum field r's other fields call for.
func (r *raw) checksum() string {
	var sum [2 * sha1.Size]byte
	r.sum(&sum)
	return string(sum[:])
}

func TestMessageRoundTrip(t *testing.T) {
	r := raw{"123", "op", "holder with: colons", "18446744073709551615", "", "2025-01-01T00:00:00Z", "0", "7", "1:2:\x00binary{}", ""}
	r[9] = r.checksum()
	var b strings.Builder
	for _, f := range r {
		b.WriteString(strconv.Itoa(len(f)))
		b.WriteByte(':')
		b.WriteString(f)
	}
	got, err := rawFromMessage(b.String())
	if err != nil || got != r {
		t.Fatalf("rawFromMessage = %q, %v; want %q", got, err, r)
	}
	if _, err := got.parse(); err != nil {
		t.Fatalf("parse: %v", err)
	}
	for _, bad := range []string{"", "3:abc", b.String() + "x", "x:" + b.String(), "99999999999:a", "-1:" + b.String()} {
		if _, err := rawFromMessage(bad); err == nil {
			t.Errorf("rawFromMessage(%.40q) succeeded", bad)
		}
	}
}
