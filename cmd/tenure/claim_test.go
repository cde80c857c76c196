package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tenure-go/tenure/lead"
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

// claimThenTerm returns a closed channel of leaders: a's claim (token 7,
// LeaseDuration 15s), a's term (token 8), and then any more given.
func claimThenTerm(more ...lead.Leader[rawMeta]) <-chan lead.Leader[rawMeta] {
	leaders := make(chan lead.Leader[rawMeta], 2+len(more))
	rec := lease.Record[rawMeta]{Holder: "a", Token: 7, LeaseDuration: 15 * time.Second, Claim: true}
	leaders <- lead.Leader[rawMeta]{Holder: "a", Token: 7, Present: true, Record: rec, Claim: true}
	rec.Claim, rec.Token = false, 8
	leaders <- lead.Leader[rawMeta]{Holder: "a", Token: 8, Present: true, Record: rec}
	for _, l := range more {
		leaders <- l
	}
	close(leaders)
	return leaders
}

// run -v on a follower tells a claim from a term: the claimer does not
// lead yet.
func TestVerboseFollowerSaysAClaimIsNoLeader(t *testing.T) {
	var out strings.Builder
	sayLeaders(claimThenTerm(), "b", "job", true, &out)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("printed %d lines, want 2:\n%s", len(lines), out.String())
	}
	if !strings.Contains(lines[0], `a claims "job" (token 7): it does not lead yet`) || strings.Contains(lines[0], "leads") {
		t.Errorf("the claim's line is %q, want it to say a claims and does not lead yet", lines[0])
	}
	if !strings.Contains(lines[1], `a leads "job" (token 8)`) {
		t.Errorf("the term's line is %q, want it to say a leads with token 8", lines[1])
	}
}

// A release handed to a successor names it in every output of get,
// watch and ls; a plain release names nobody.
func TestGetWatchAndLsShowASuccessor(t *testing.T) {
	o := &storeurl.Opener{}
	const url = "memory://successor"
	now := time.Now()
	named := lease.Record[[]byte]{Token: 3, LeaseDuration: 15 * time.Second, AcquiredAt: now, RenewedAt: now, Successor: "cli-b", Metadata: []byte("{}")}
	plain := named
	plain.Successor = ""
	putRaw(t, o, url, "named", named)
	putRaw(t, o, url, "plain", plain)
	for _, c := range []struct {
		name  string
		named bool
	}{{"named", true}, {"plain", false}} {
		code, out := inProcess(context.Background(), o, "get", "--store", url, c.name)
		if got := strings.Contains(out.String(), "holder:       (none: released to cli-b, who may take it at once; others wait 15s)"); code != 0 || got != c.named {
			t.Errorf("get %s: %d, shows the successor %v, want %v:\n%s", c.name, code, got, c.named, out)
		}
		code, out = inProcess(context.Background(), o, "get", "--store", url, "-o", "json", c.name)
		var fields map[string]any
		if err := json.Unmarshal([]byte(out.String()), &fields); code != 0 || err != nil {
			t.Fatalf("get -o json %s: %d %v %s", c.name, code, err, out)
		}
		if v, ok := fields["successor"]; ok != c.named || (ok && v != "cli-b") {
			t.Errorf("get -o json %s: successor = %v (present %v), want cli-b only for the named release", c.name, v, ok)
		}
		if text := watchOnce(t, o, url, "text", c.name); strings.Contains(text, "successor=cli-b") != c.named {
			t.Errorf("watch %s: %s", c.name, text)
		}
	}
	code, out := inProcess(context.Background(), o, "ls", "--store", url)
	if code != 0 || !strings.Contains(out.String(), "(released to cli-b)") || strings.Count(out.String(), "(released") != 2 {
		t.Errorf("ls: %d\n%s", code, out)
	}
}
