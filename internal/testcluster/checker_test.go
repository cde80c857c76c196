package testcluster

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/lead"
)

// fakeBelief is a Belief set by hand.
type fakeBelief struct {
	mu    sync.Mutex
	token fence.Token // 0: not leading
}

func (f *fakeBelief) set(t fence.Token) { f.mu.Lock(); f.token = t; f.mu.Unlock() }

func (f *fakeBelief) Term() (lead.Term, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return lead.Term{Token: f.token}, f.token != 0
}

func TestCheckerSamples(t *testing.T) {
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
	b.set(2)
	c.sample()
	if r := c.Report(); r.Interrupted != 1 || len(r.ToLeader) != 1 {
		t.Fatalf("a heal cut short: %+v", r)
	}
	a.set(3) // b leads too
	c.sample()
	if r := c.Report(); !r.Failed() || len(r.Overlaps) != 1 {
		t.Fatalf("two leaders: %+v\n%s", r, c.Timeline(0))
	}
}

// The fence checks catch a write accepted after a larger token's, and a
// refusal of a writer that still leads.
func TestCheckerFence(t *testing.T) {
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
