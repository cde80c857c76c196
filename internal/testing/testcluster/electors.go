package testcluster

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

// FastConfig is short timing, still valid, for elector tests on a real
// server: a 1s lease, a 600ms renew deadline, 100ms retries, a 200ms
// backend timeout.
func FastConfig() lease.Config {
	return lease.Config{
		LeaseDuration:  time.Second,
		RenewDeadline:  600 * time.Millisecond,
		RetryInterval:  100 * time.Millisecond,
		RetryJitter:    0.1,
		BackendTimeout: 200 * time.Millisecond,
		ErrorInterval:  time.Second,
	}
}

// Change is a leadership change reported by one of an Electors' electors,
// with when its observer received it.
type Change struct {
	ID string
	lead.Change
	At time.Time
}

// Electors runs the electors of one election for a backend test, each on a
// store from NewStore (a store and client of its own, as separate processes
// would have, or one shared store), and collects the changes they report.
// What NewStore registers with its tb's Cleanup (a client's Close, say)
// belongs to that elector: it runs when Start replaces the elector, as a
// restarted process's connections close, or when the test ends.
//
// Start, Stop and the waits must be called from the test's goroutine.
type Electors[M any] struct {
	// BeforeRun, if set, is called with every new elector before its Run
	// starts (to set its metadata, say).
	BeforeRun func(e *lead.Elector[M])

	tb       testing.TB
	name     string
	timeout  time.Duration
	newStore func(tb testing.TB) store.Store[M]
	changes  chan Change
	pending  []Change // received by a wait for other electors' changes

	mu     sync.Mutex
	nodes  map[string]*electorRun[M]
	runs   []*electorRun[M] // every elector started
	tokens []fence.Token    // of every Started, in the order received
}

type electorRun[M any] struct {
	e      *lead.Elector[M]
	cancel context.CancelFunc
	done   chan error
	store  *storeTB // what its store registered with Cleanup
}

// storeTB is the testing.TB an elector's store is made with: it keeps the
// functions registered with Cleanup for closeStore, not the test's end.
type storeTB struct {
	testing.TB
	mu       sync.Mutex
	cleanups []func()
}

// Cleanup keeps f for closeStore.
func (s *storeTB) Cleanup(f func()) {
	s.mu.Lock()
	s.cleanups = append(s.cleanups, f)
	s.mu.Unlock()
}

// closeStore runs the functions kept, last registered first, once.
func (s *storeTB) closeStore() {
	s.mu.Lock()
	fs := s.cleanups
	s.cleanups = nil
	s.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

// NewElectors returns an empty set of electors of the election name, whose
// stores newStore makes. timeout bounds Stop and NextLeader.
func NewElectors[M any](tb testing.TB, name string, timeout time.Duration, newStore func(tb testing.TB) store.Store[M]) *Electors[M] {
	c := &Electors[M]{
		tb: tb, name: name, timeout: timeout, newStore: newStore,
		changes: make(chan Change, 1000), nodes: map[string]*electorRun[M]{},
	}
	// Registered first, so run last: after every elector has stopped.
	tb.Cleanup(func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, n := range c.runs {
			n.store.closeStore()
		}
	})
	return c
}

// Name is the name of the election.
func (c *Electors[M]) Name() string { return c.name }

// Start starts an elector with identity id, timings cfg and opts (which
// come after, and so win over, the ones Start sets), on a new store. It
// replaces an elector of the same identity; if that one has stopped, what
// its store registered with Cleanup runs now (otherwise when the test
// ends). The elector stops when the test ends, if not before.
func (c *Electors[M]) Start(id string, cfg lease.Config, opts ...lead.Option) *lead.Elector[M] {
	t := c.tb
	t.Helper()
	c.mu.Lock()
	old := c.nodes[id]
	c.mu.Unlock()
	if old != nil {
		select {
		case <-old.e.Done():
			old.store.closeStore()
		default:
		}
	}
	stb := &storeTB{TB: t}
	st := c.newStore(stb)
	opts = append([]lead.Option{
		lead.WithIdentity(id),
		lead.WithConfig(cfg),
		lead.WithLookupEnv(nil),
		lead.WithObserver(func(ch lead.Change) {
			if ch.Kind == lead.Started {
				c.mu.Lock()
				c.tokens = append(c.tokens, ch.Term.Token)
				c.mu.Unlock()
			}
			c.changes <- Change{id, ch, time.Now()}
		}),
	}, opts...)
	e, err := lead.New(c.name, st, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if c.BeforeRun != nil {
		c.BeforeRun(e)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &electorRun[M]{e: e, cancel: cancel, done: make(chan error, 1), store: stb}
	go func() { n.done <- e.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-e.Done() })
	c.mu.Lock()
	c.nodes[id] = n
	c.runs = append(c.runs, n)
	c.mu.Unlock()
	return e
}

// StartEach starts an elector of every identity in ids.
func (c *Electors[M]) StartEach(ids []string, cfg lease.Config, opts ...lead.Option) {
	c.tb.Helper()
	for _, id := range ids {
		c.Start(id, cfg, opts...)
	}
}

// Elector returns the elector last started with identity id.
func (c *Electors[M]) Elector(id string) *lead.Elector[M] {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[id].e
}

// IDs returns the identity of every elector started.
func (c *Electors[M]) IDs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ids []string
	for id := range c.nodes {
		ids = append(ids, id)
	}
	return ids
}

// Leaders returns the electors that say they lead.
func (c *Electors[M]) Leaders() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ids []string
	for id, n := range c.nodes {
		if n.e.IsLeader() {
			ids = append(ids, id)
		}
	}
	return ids
}

// Stop stops the elector id (releasing its lease unless it was started
// with lead.WithReleaseOnStop(false), which makes this a crash to the
// others) and waits for its Run to return nil.
func (c *Electors[M]) Stop(id string) {
	c.tb.Helper()
	c.mu.Lock()
	n := c.nodes[id]
	c.mu.Unlock()
	n.cancel()
	timer := time.NewTimer(c.timeout)
	defer timer.Stop()
	select {
	case err := <-n.done:
		if err != nil {
			c.tb.Fatalf("%s: Run = %v", id, err)
		}
	case <-timer.C:
		c.tb.Fatalf("%s: Run did not return within %v of its context ending", id, c.timeout)
	}
}

// Handover stops the leader id and returns the next Started change, with
// the time from the stop to it.
func (c *Electors[M]) Handover(id string) (Change, time.Duration) {
	c.tb.Helper()
	stopping := time.Now()
	c.Stop(id)
	next := c.NextLeader(id)
	// Run delivered every change of id before it returned, but its
	// Stopped may come after the successor's Started (its observer's
	// goroutine ran late): take it now, or a later wait would take it for
	// a loss.
	c.takeStopped(id)
	return next, next.At.Sub(stopping)
}

// HandOverTo has the leader id hand the lease over to successor
// (Elector.HandOver) and returns the successor's Started change, with the
// time from the call to it. It fails tb if HandOver fails or another
// elector starts leading.
func (c *Electors[M]) HandOverTo(id, successor string) (Change, time.Duration) {
	c.tb.Helper()
	c.mu.Lock()
	n := c.nodes[id]
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	calling := time.Now()
	if err := n.e.HandOver(ctx, successor); err != nil {
		c.tb.Fatalf("%s: HandOver(%q) = %v", id, successor, err)
	}
	next := c.NextLeader(id)
	if next.ID != successor {
		c.tb.Fatalf("%s handed over to %s, but %s started leading", id, successor, next.ID)
	}
	c.takeStopped(id)
	return next, next.At.Sub(calling)
}

// takeStopped drops the Stopped changes of id among those received and
// not yet taken; the others stay, in order.
func (c *Electors[M]) takeStopped(id string) {
	for drained := false; !drained; {
		select {
		case ch := <-c.changes:
			c.pending = append(c.pending, ch)
		default:
			drained = true
		}
	}
	c.pending = slices.DeleteFunc(c.pending, func(ch Change) bool { return ch.ID == id && ch.Kind == lead.Stopped })
}

// Next returns the next change any elector reports within d; with d <= 0
// it only takes one already reported.
func (c *Electors[M]) Next(d time.Duration) (Change, bool) {
	if len(c.pending) > 0 {
		ch := c.pending[0]
		c.pending = c.pending[1:]
		return ch, true
	}
	if d <= 0 {
		select {
		case ch := <-c.changes:
			return ch, true
		default:
			return Change{}, false
		}
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case ch := <-c.changes:
		return ch, true
	case <-timer.C:
		return Change{}, false
	}
}

// NextLeader waits for the next Started change, failing on any Stopped one
// unless from one of allowStopped, or of a term older than one already
// started (each elector's observer runs on its own, so the end of a term
// handed over may be reported after its successor's start).
func (c *Electors[M]) NextLeader(allowStopped ...string) Change {
	c.tb.Helper()
	for {
		ch, ok := c.Next(c.timeout)
		if !ok {
			c.tb.Fatalf("nobody started leading within %v", c.timeout)
		}
		if ch.Kind == lead.Started {
			return ch
		}
		if !slices.Contains(allowStopped, ch.ID) && !c.superseded(ch.Term.Token) {
			c.tb.Fatalf("%s stopped leading (token %d): %v", ch.ID, ch.Term.Token, ch.Reason)
		}
	}
}

// superseded reports whether a term with a token above t has started.
func (c *Electors[M]) superseded(t fence.Token) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.ContainsFunc(c.tokens, func(s fence.Token) bool { return s > t })
}

// WaitStarted waits up to within for the next Started change of one of ids
// (of anyone if none), skipping their other changes; the changes of other
// electors are kept for later waits.
func (c *Electors[M]) WaitStarted(within time.Duration, ids ...string) Change {
	c.tb.Helper()
	return c.wait(lead.Started, within, ids)
}

// WaitStopped is WaitStarted for a Stopped change.
func (c *Electors[M]) WaitStopped(within time.Duration, ids ...string) Change {
	c.tb.Helper()
	return c.wait(lead.Stopped, within, ids)
}

func (c *Electors[M]) wait(kind lead.ChangeKind, within time.Duration, ids []string) Change {
	c.tb.Helper()
	ours := func(ch Change) bool { return len(ids) == 0 || slices.Contains(ids, ch.ID) }
	// Changes received before, by waits for other electors.
	for i := 0; i < len(c.pending); {
		ch := c.pending[i]
		if !ours(ch) {
			i++
			continue
		}
		c.pending = slices.Delete(c.pending, i, i+1)
		if ch.Kind == kind {
			return ch
		}
	}
	timer := time.NewTimer(within)
	defer timer.Stop()
	for {
		select {
		case ch := <-c.changes:
			switch {
			case !ours(ch):
				c.pending = append(c.pending, ch)
			case ch.Kind == kind:
				return ch
			}
		case <-timer.C:
			who := "nobody"
			if len(ids) > 0 {
				who = fmt.Sprint(ids)
			}
			c.tb.Fatalf("%s: no %v change within %v", who, kind, within)
			return Change{}
		}
	}
}

// CheckTokens checks that the token of every term started grew strictly
// over the one of the term received before it.
func (c *Electors[M]) CheckTokens() {
	c.tb.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := 1; i < len(c.tokens); i++ {
		if c.tokens[i] <= c.tokens[i-1] {
			c.tb.Errorf("term %d has token %d, not above the %d of the term before (all: %v)", i, c.tokens[i], c.tokens[i-1], c.tokens)
		}
	}
}

// NextEvent returns the next event of the watch channel ch, which must come
// within d.
func NextEvent[M any](tb testing.TB, ch <-chan store.Event[M], d time.Duration) store.Event[M] {
	tb.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case ev, ok := <-ch:
		if !ok {
			tb.Fatal("the watch channel was closed")
		}
		return ev
	case <-timer.C:
		tb.Fatalf("no watch event within %v", d)
	}
	panic("unreachable")
}

// LeaderOutage runs the first half of a server-outage test: once a leader
// has renewed a few times, kill takes the server away; the leader must step
// down within cfg.RenewDeadline of the kill (its last successful renewal
// was sent before it; 100ms are allowed for the observer), and nobody may
// lead for the two lease durations that follow. It returns the Started
// change of the leader that stepped down; bringing the server back is the
// caller's.
func (c *Electors[M]) LeaderOutage(cfg lease.Config, what string, kill func() error) Change {
	c.tb.Helper()
	first := c.NextLeader()
	renewals := time.NewTimer(3 * cfg.RetryInterval)
	<-renewals.C
	if err := kill(); err != nil {
		c.tb.Fatal(err)
	}
	killed := time.Now()

	ch, ok := c.Next(cfg.RenewDeadline + time.Second)
	if !ok || ch.Kind != lead.Stopped || ch.ID != first.ID {
		c.tb.Fatalf("after the kill: %+v, %v; want %s to stop leading", ch, ok, first.ID)
	}
	took := ch.At.Sub(killed)
	c.tb.Logf("leader stepped down %v after the %s was killed", took, what)
	if took > cfg.RenewDeadline+100*time.Millisecond {
		c.tb.Fatalf("the leader stepped down %v after the kill, later than RenewDeadline (%v)", took, cfg.RenewDeadline)
	}
	if ids := c.Leaders(); len(ids) != 0 {
		c.tb.Fatalf("%v lead with the server gone", ids)
	}
	if ch, ok := c.Next(2 * cfg.LeaseDuration); ok {
		c.tb.Fatalf("with the server gone: %+v", ch)
	}
	if ids := c.Leaders(); len(ids) != 0 {
		c.tb.Fatalf("%v lead with the server gone", ids)
	}
	return first
}

// ReleaseHandover stops the current leader, which releases the lease, and
// checks that another elector then leads with a larger token in less than
// within, and that its record names it with Transitions above zero. It
// returns the successor's Started change.
func (c *Electors[M]) ReleaseHandover(within time.Duration) Change {
	c.tb.Helper()
	first := c.NextLeader()
	second, took := c.Handover(first.ID)
	c.tb.Logf("handover from stop to successor leading: %v", took)
	if second.ID == first.ID {
		c.tb.Fatalf("%s led again after it stopped", first.ID)
	}
	if second.Term.Token <= first.Term.Token {
		c.tb.Fatalf("token went from %d to %d", first.Term.Token, second.Term.Token)
	}
	if took >= within {
		c.tb.Fatalf("handover took %v, not less than %v: the successor did not learn of the release at once", took, within)
	}
	if rec, _ := c.Elector(second.ID).Record(); rec.Holder != second.ID || rec.Transitions == 0 {
		c.tb.Fatalf("record after handover: %+v", rec)
	}
	return second
}

// CrashFailover stops the current leader of electors started with
// lead.WithReleaseOnStop(false), as a crash, and checks that another leads
// with a larger token once the lease has run out: no sooner than
// LeaseDuration after the last renewal (which followers saw at most one
// retry interval before the crash), and no later than 3s after that.
func (c *Electors[M]) CrashFailover(cfg lease.Config) Change {
	c.tb.Helper()
	first := c.NextLeader()
	second, took := c.Handover(first.ID) // no release: a crash
	c.tb.Logf("failover after crash: %v (lease %v)", took, cfg.LeaseDuration)
	if second.Term.Token <= first.Term.Token {
		c.tb.Fatalf("token went from %d to %d", first.Term.Token, second.Term.Token)
	}
	if lo := cfg.LeaseDuration - cfg.MaxRetryInterval(); took < lo {
		c.tb.Fatalf("failover after %v, before the lease could have expired (%v)", took, lo)
	}
	if hi := cfg.LeaseDuration + 3*time.Second; took > hi {
		c.tb.Fatalf("failover took %v, more than %v", took, hi)
	}
	return second
}
