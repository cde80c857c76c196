package redisstore

import (
	"crypto/sha1"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
)

// internalStore returns a Store on the package's server under a prefix of
// the test's own, and its client.
func internalStore(t *testing.T) (*Store[string], *redis.Client) {
	c := testcluster.PackageRedis(t).Client(t)
	st, err := New[string](c, WithPrefix("internal:"+t.Name()+":"+time.Now().Format(time.RFC3339Nano)+":"))
	if err != nil {
		t.Fatal(err)
	}
	return st, c
}

// go-redis retries a script after a network error. If the first attempt
// did write, the retry (same arguments, same op nonce) must report that
// write as a success rather than a conflict with itself, and must not
// write again.
func TestRetriedSwapIsIdempotent(t *testing.T) {
	st, c := internalStore(t)
	ctx := t.Context()
	args := []any{"0", "nonce-1", st.channel("n"), "a", "1", "", "", "1000", "0", `"m"`}
	first, err := casScript.Run(ctx, c, []string{st.key("n")}, args...).StringSlice()
	if err != nil || len(first) != 6 || first[0] != "ok" {
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

// message is the message the script publishes for r: every field as its
// length in decimal, a colon, and the field; the claim field only when set
// or followed by a successor field, which is set.
func message(r raw) string {
	var b strings.Builder
	fields := r[:]
	switch {
	case r[numFields+1] != "":
	case r[numFields] == "":
		fields = r[:numFields]
	default:
		fields = r[:numFields+1]
	}
	for _, f := range fields {
		b.WriteString(strconv.Itoa(len(f)))
		b.WriteByte(':')
		b.WriteString(f)
	}
	return b.String()
}

func TestMessageRoundTrip(t *testing.T) {
	r := raw{"123", "op", "holder with: colons", "18446744073709551615", "", "2025-01-01T00:00:00Z", "0", "7", "1:2:\x00binary{}", ""}
	r[9] = r.checksum()
	msg := message(r)
	got, err := rawFromMessage(msg)
	if err != nil || got != r {
		t.Fatalf("rawFromMessage = %q, %v; want %q", got, err, r)
	}
	if p, err := got.parse(); err != nil || p.claim {
		t.Fatalf("parse without a claim field = %+v, %v; want no claim", p, err)
	}
	if _, err := got.parse(); err != nil {
		t.Fatalf("parse: %v", err)
	}
	// A claim's message carries its claim field last.
	r[numFields] = r[0]
	claimMsg := message(r)
	got, err = rawFromMessage(claimMsg)
	if err != nil || got != r {
		t.Fatalf("rawFromMessage of a claim = %q, %v; want %q", got, err, r)
	}
	if p, err := got.parse(); err != nil || !p.claim {
		t.Fatalf("parse of a claim = %+v, %v; want claim", p, err)
	}
	// A release naming a successor: an empty claim field, then the
	// successor's, which counts only at the record's revision.
	r[numFields], r[numFields+1] = "", r[0]+":next: one"
	got, err = rawFromMessage(message(r))
	if err != nil || got != r {
		t.Fatalf("rawFromMessage of a named release = %q, %v; want %q", got, err, r)
	}
	if p, err := got.parse(); err != nil || p.successor != "next: one" || p.claim {
		t.Fatalf("parse of a named release = %+v, %v; want successor %q", p, err, "next: one")
	}
	got[numFields+1] = "12:next"
	if p, err := got.parse(); err != nil || p.successor != "" {
		t.Fatalf("parse of a successor field of another revision = %+v, %v; want none", p, err)
	}
	for _, bad := range []string{"", "3:abc", msg + "x", claimMsg + "0:0:", "x:" + msg, "99999999999:a", "-1:" + msg} {
		if _, err := rawFromMessage(bad); err == nil {
			t.Errorf("rawFromMessage(%.40q) succeeded", bad)
		}
	}
}

func TestDecimalAcceptsOnlyCanonicalUint64(t *testing.T) {
	for _, tc := range []struct {
		s  string
		n  uint64
		ok bool
	}{
		{"0", 0, true},
		{"7", 7, true},
		{"1000", 1000, true},
		{"18446744073709551615", 1<<64 - 1, true},
		{"18446744073709551616", 0, false}, // above uint64
		{"99999999999999999999", 0, false},
		{"", 0, false},
		{"00", 0, false},
		{"01", 0, false},
		{"+1", 0, false},
		{"-1", 0, false},
		{"-0", 0, false},
		{"1_000", 0, false},
		{" 1", 0, false},
		{"1 ", 0, false},
		{"1a", 0, false},
		{"0x10", 0, false},
		{"1e3", 0, false},
		{"\u0663", 0, false}, // an Arabic-Indic digit three
	} {
		n, ok := decimal(tc.s)
		if ok != tc.ok || (ok && n != tc.n) {
			t.Errorf("decimal(%q) = %d, %v; want %d, %v", tc.s, n, ok, tc.n, tc.ok)
		}
	}
}

// BenchmarkParseMessage parses one published record, as a watch does for
// every message: Hub.dispatch's share of a follower's CPU.
func BenchmarkParseMessage(b *testing.B) {
	r := raw{"1733150000000001", "op-nonce", "node-1", "1733150000000000", "2026-12-02T21:00:00.123456Z", "2026-12-02T22:00:00.123456Z", "15000000000", "3", `{}`, ""}
	r[9] = r.checksum()
	msg := message(r)
	b.ReportAllocs()
	for b.Loop() {
		got, err := rawFromMessage(msg)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := got.parse(); err != nil {
			b.Fatal(err)
		}
	}
}

// A call that made the marker, resent by go-redis with the same arguments
// (its op nonce too) after the data was lost, makes a marker of a nonce of
// its own: a Store that saw the lost marker's nonce must not attest its age
// for the new one. Resent with the marker still there, it finds its own
// write and the same marker.
func TestResentCallMakesAMarkerOfItsOwn(t *testing.T) {
	st, c := internalStore(t)
	ctx := t.Context()
	keys := []string{st.key("n"), st.markerKey()}
	args := []any{"0", "nonce-1", st.channel("n"), "a", "1", "", "", "1000", "0", `"m"`, "1", "", "0", "born:n"}
	run := func(what string) string {
		t.Helper()
		r, err := casScript.Run(ctx, c, keys, args...).StringSlice()
		if err != nil || len(r) != 6 || r[0] != "ok" || r[3] == "" {
			t.Fatalf("%s: %q, %v", what, r, err)
		}
		return r[3]
	}
	first := run("the first attempt")
	if again := run("resent, nothing lost"); again != first {
		t.Fatalf("resent with the marker there: nonce %q, want the marker's %q", again, first)
	}
	if err := c.Del(ctx, keys...).Err(); err != nil {
		t.Fatal(err)
	}
	if resent := run("resent after a loss"); resent == first || resent == args[1] {
		t.Fatalf("resent after a loss: the new marker's nonce is %q, the lost one's was %q (op nonce %q)", resent, first, args[1])
	}
}
