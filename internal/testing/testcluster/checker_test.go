package testcluster

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/lead"
)

// fakeBelief is a Belief set by hand. afterRead, if set, runs once just
// after the next read: what changes between two reads of one sample.
type fakeBelief struct {
	mu        sync.Mutex
	token     fence.Token // 0: not leading
	afterRead func()
}

func (f *fakeBelief) set(t fence.Token) { f.mu.Lock(); f.token = t; f.mu.Unlock() }

func (f *fakeBelief) Term() (lead.Term, bool) {
	f.mu.Lock()
	tok, after := f.token, f.afterRead
	f.afterRead = nil
	f.mu.Unlock()
	if after != nil {
		after()
	}
	return lead.Term{Token: tok}, tok != 0
}

// TestCheckerReportsOverlapsOnly: the oracle judges the samples; two
// beliefs whose terms overlap are reported, a handover is not, even when
// it happens between two reads of one sample.
func TestCheckerReportsOverlapsOnly(t *testing.T) {
	tests := []struct {
		name    string
		run     func(c *Checker, a, b *fakeBelief)
		overlap bool
	}{
		{"handover between samples", func(c *Checker, a, b *fakeBelief) {
			a.set(1)
			c.sample()
			a.set(0)
			c.sample()
			b.set(2)
			c.sample()
		}, false},
		{"handover between two reads of one sample", func(c *Checker, a, b *fakeBelief) {
			a.set(1)
			c.sample()
			// a is read leading; then its term ends and b's starts, before
			// b is read.
			a.afterRead = func() { a.set(0); b.set(2) }
			c.sample()
			c.sample()
		}, false},
		{"both lead in one sample", func(c *Checker, a, b *fakeBelief) {
			a.set(1)
			b.set(2)
			c.sample()
		}, true},
		{"b starts while a still leads, a read first", func(c *Checker, a, b *fakeBelief) {
			a.set(1)
			c.sample()
			a.afterRead = func() { b.set(2) }
			c.sample() // a leading, then b leading, then a again
		}, true},
		{"b starts while a leads, between two samples", func(c *Checker, a, b *fakeBelief) {
			a.set(1)
			c.sample()
			b.set(2)
			c.sample()
		}, true},
	}
	for _, tt := range tests {
		a, b := &fakeBelief{}, &fakeBelief{}
		c := NewChecker(time.Millisecond, FastConfig())
		c.Add("a", a)
		c.Add("b", b)
		tt.run(c, a, b)
		r := c.Report()
		if got := len(r.Overlaps) > 0; got != tt.overlap || r.Failed() != tt.overlap {
			t.Errorf("%s: overlaps %q, want an overlap: %v\n%s", tt.name, r.Overlaps, tt.overlap, c.Timeline(0))
		}
		if tt.overlap && (len(r.Overlaps) == 0 || !strings.Contains(r.Overlaps[0], "both lead")) {
			t.Errorf("%s: overlaps %q, want two leaders named", tt.name, r.Overlaps)
		}
	}
}

// TestCheckerRestartIsANewProcess: an elector added again under its id is
// a new process; its term following the old one's is no overlap.
func TestCheckerRestartIsANewProcess(t *testing.T) {
	a, b := &fakeBelief{}, &fakeBelief{}
	c := NewChecker(time.Millisecond)
	c.Add("a", a)
	a.set(1)
	c.sample()
	a.set(0)
	c.sample()
	c.Add("a", b)
	b.set(2)
	c.sample()
	if r := c.Report(); r.Failed() || r.Terms != 2 {
		t.Fatalf("a restart: %+v", r)
	}
}

func TestCheckerCountsTermsGapsAndOverlaps(t *testing.T) {
	a, b := &fakeBelief{}, &fakeBelief{}
	c := NewChecker(time.Millisecond)
	c.Add("a", a)
	c.Add("b", b)
	c.Fault("test")
	c.sample()
	c.Heal(time.Now(), "test")
	a.set(1)
	c.sample()
	c.sample()
	a.set(0)
	c.sample()
	b.set(2)
	c.sample()
	r := c.Report()
	if r.Failed() || r.Terms != 2 || r.MinGap <= 0 || len(r.ToLeader) != 1 || r.ToLeader[0].D <= 0 || r.Samples != 5 {
		t.Fatalf("one leader after the other: %+v", r)
	}
	// A heal after which the next fault comes before a leader.
	b.set(0)
	c.sample()
	c.Heal(time.Now(), "second")
	c.Fault("third")
	c.sample()
	b.set(4)
	c.sample()
	if r := c.Report(); r.Interrupted != 1 || len(r.ToLeader) != 1 || r.Failed() {
		t.Fatalf("a heal cut short: %+v", r)
	}
	a.set(5) // b leads too
	c.sample()
	if r := c.Report(); !r.Failed() || len(r.Overlaps) != 1 {
		t.Fatalf("two leaders: %+v\n%s", r, c.Timeline(0))
	}
}

// The fence checks catch a write accepted after a larger token's, and a
// refusal of a writer that still leads.
func TestCheckerFenceCatchesLateAcceptsAndWrongRefusals(t *testing.T) {
	a := &fakeBelief{}
	a.set(5)
	c := NewChecker(time.Millisecond)
	c.Add("a", a)
	var reg fence.Register
	var mu sync.Mutex
	calls := 0
	write := func(ctx context.Context, tok fence.Token, value string) error {
		mu.Lock()
		defer mu.Unlock()
		calls++
		return reg.Check(tok)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.FenceWriter(ctx, "a", a, time.Millisecond, time.Second, write); close(done) }()
	waitCalls := func(n int) {
		t.Helper()
		waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return calls >= n })
	}
	// FenceWriter records a write after it returns, before the next one:
	// once the fourth has begun, the first three are recorded.
	waitCalls(4)
	if r := c.Report(); r.Failed() || r.FenceAccepted < 3 {
		t.Fatalf("calm writes: %+v", r)
	}
	// Someone else wrote with token 9 while a still leads with 5.
	if err := reg.Check(9); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	n := calls
	mu.Unlock()
	waitCalls(n + 2)
	cancel()
	<-done
	r := c.Report()
	if len(r.FenceRefusedWhileLeading) == 0 || r.FenceStale == 0 {
		t.Fatalf("refused while leading: %+v", r)
	}

	// Accepted out of order: a write of token 9 done, then one of 5
	// accepted.
	c2 := NewChecker(time.Millisecond)
	now := time.Now()
	c2.writes = []FenceWrite{
		{ID: "b", Token: 9, Call: now, Ret: now.Add(time.Millisecond), Accepted: true},
		{ID: "a", Token: 5, Call: now.Add(2 * time.Millisecond), Ret: now.Add(3 * time.Millisecond), Accepted: true},
	}
	if r := c2.Report(); len(r.FenceOutOfOrder) != 1 {
		t.Fatalf("out of order: %+v", r)
	}
}
