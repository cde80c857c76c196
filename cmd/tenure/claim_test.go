package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/storeurl"
)

// watchOnce runs tenure watch with format until it printed its first line,
// and returns what it printed.
func watchOnce(t *testing.T, o *storeurl.Opener, url, format, name string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var watched syncBuffer
	first := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(context.WithValue(ctx, openerKey{}, o), []string{"watch", "--store", url, "-o", format, name}, &firstWrite{w: &watched, first: first}, &watched)
	}()
	<-first
	cancel()
	<-done
	return watched.String()
}

// A record that is only a claim says so in every output of get and watch;
// a term says nothing of a claim.
func TestGetAndWatchShowAClaim(t *testing.T) {
	o := &storeurl.Opener{}
	const url = "memory://claim"
	now := time.Now()
	claim := lease.Record[[]byte]{Holder: "cli-a", Token: 3, LeaseDuration: 15 * time.Second, AcquiredAt: now, RenewedAt: now, Claim: true, Metadata: []byte("{}")}
	term := claim
	term.Token, term.Claim = 4, false
	putRaw(t, o, url, "claimed", claim)
	putRaw(t, o, url, "led", term)

	for _, c := range []struct {
		name  string
		claim bool
	}{{"claimed", true}, {"led", false}} {
		code, out := inProcess(context.Background(), o, "get", "--store", url, c.name)
		if code != 0 {
			t.Fatalf("get %s: %d %s", c.name, code, out)
		}
		const mark = "holder:       cli-a (claim: does not lead yet; it takes the lease with a new token once this record has stood 15s"
		if got := strings.Contains(out.String(), mark); got != c.claim {
			t.Errorf("get %s: shows the claim %v, want %v:\n%s", c.name, got, c.claim, out)
		}
		if n := strings.Count(out.String(), "\n"); n != 9 {
			t.Errorf("get %s printed %d lines, want 9:\n%s", c.name, n, out)
		}

		code, out = inProcess(context.Background(), o, "get", "--store", url, "-o", "json", c.name)
		var fields map[string]any
		if err := json.Unmarshal([]byte(out.String()), &fields); code != 0 || err != nil {
			t.Fatalf("get -o json %s: %d %v %s", c.name, code, err, out)
		}
		if v, ok := fields["claim"]; ok != c.claim || (ok && v != true) {
			t.Errorf("get -o json %s: claim = %v (present %v); want present and true only for a claim:\n%s", c.name, v, ok, out)
		}

		text := watchOnce(t, o, url, "text", c.name)
		if got := strings.Contains(text, "holder=cli-a claim=true token="); got != c.claim {
			t.Errorf("watch %s: shows the claim %v, want %v:\n%s", c.name, got, c.claim, text)
		}
		js := watchOnce(t, o, url, "json", c.name)
		fields = nil
		if err := json.Unmarshal([]byte(js), &fields); err != nil {
			t.Fatalf("watch -o json %s: %v %s", c.name, err, js)
		}
		if v, ok := fields["claim"]; ok != c.claim || (ok && v != true) {
			t.Errorf("watch -o json %s: claim = %v (present %v); want present and true only for a claim:\n%s", c.name, v, ok, js)
		}
	}
}
