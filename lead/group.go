package lead

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/tenure-go/tenure/fsm"
	"github.com/tenure-go/tenure/internal/nilarg"
	"github.com/tenure-go/tenure/store"
)

// Group runs many elections on one store with one goroutine: one per
// tenant, per shard, per cron job. Each name added is an ordinary Elector
// (IsLeader, Lead, Every, Leaders, Record, Status, Reconfigure work on it
// as on one made by New), but its Run is the Group's: one loop steps
// every elector's state machine, the same code that Run uses for one. An
// idle elector of a Group holds no goroutine: its timers, its store
// operations and its watch post to the loop when they fire, and a store
// that implements store.FuncWatcher (memstore, redisstore, pgstore,
// kubestore) delivers watch events without a goroutine per name.
//
// Each elector keeps its own safety: its own machine, term context,
// watchdog and fencing token, exactly as with Run. Leaders on the Group's
// clock share its wake timers for their renewals, one per instant of a
// grid with a renewal due: a twentieth of RetryInterval (100 ms at the
// default timings), from 10 to 100 ms, and at most a quarter of the time
// a renewal has to spare before the deadline (RenewDeadline -
// RetryInterval*(1+RetryJitter); with less than 40 ms to spare, a
// leader's wakes are its own). A renewal may go up to a grain late, as
// after a slow step, but never so late that the leader would step down
// past its deadline; a follower's wakes, which lead to takeovers, are
// always its own. The loop is shared, so
// an elector whose observers or store are slow never delays another:
// observers run on goroutines of their own and store operations off the
// loop, as with Run (except on a store that says it never waits,
// store.Immediate: memstore's run on the loop). At most 256 store
// operations of a Group run at once (each on a goroutine while it runs;
// up to 32 of those goroutines then wait for the next operation rather
// than end, until Run returns; WithMaxStoreOps sets another bound); more
// wait their turn, as they
// would for a connection of the store client's pool: a leader's renewals
// and releases first, then the others, each in the order asked, so that a
// store that falls behind (thousands of names starting at once) keeps the
// terms that exist. On a store that batches swaps (store.Batcher), the
// renewals due at one wake of the grid go out together, up to 64 in one
// request, each answered to its own elector as a single swap is
// (BatchInstruments counts the requests).
//
// Make a Group with NewGroup; its methods are safe for concurrent use.
type Group[M any] struct {
	st    store.Store[M]
	opts  []Option
	loop  *loop[M]
	ops   opPool      // the members' store operations (groupops.go)
	wakes wakeGrid[M] // the leaders' shared wakes (groupwake.go)
	// renewals are the leaders' renewals due together, sent in batches
	// when the store batches swaps (groupbatch.go).
	renewals renewals[M]
	// clock is the default clock of the members no option gives one:
	// one for all, so that its readings of the boot time (three system
	// calls, at most one every bootEvery) are shared by the members'
	// steps instead of made by each. Every member still counts the stops
	// since its own Run began (Elector.seenStops).
	clock *systemClock

	mu      sync.Mutex
	members map[string]*member[M]
	pending []*member[M] // added, not started yet
	ran     bool         // Run was called
	ending  bool         // Run's ctx ended: Add refuses
	live    int          // members started and not finished (the loop's)
	fatal   []error      // the errors of members that stopped on a write refused for good
	waits   sync.WaitGroup
	logged  bool // the store's capabilities were logged (by the first Add)
}

// member is one elector of a Group, and the host of its runner: its store
// operations run in the Group's pool, and a leader's wakes may share the
// Group's grid. Its ctx is the Group's (Run's, for the values and the end
// of all); Remove ends one alone, and so does not cancel a context of its
// own but tells the elector (endRun) and its runner (a context per
// elector, with what the context package registers on it, cost about 600
// bytes an elector).
type member[M any] struct {
	g       *Group[M]
	e       *Elector[M]
	started bool // taken out of pending by the loop (under g.mu)
	// r is set once started (under g.mu; the wake grid reads it too,
	// after the runner's first step); nil if it failed to start.
	r       *runner[M]
	removed bool // Remove asked it to stop
	// groupClock: added without a clock of its own, so its clock is the
	// Group's and its wakes may share the Group's grid.
	groupClock bool
	slot       int64 // the shared wake armed, if slotted; under g.wakes.mu
	slotted    bool
}

// spawn runs a store operation of the member's in the Group's pool.
func (m *member[M]) spawn(op func(), urgent bool) { m.g.ops.spawn(op, urgent) }

// spawnWatch runs the start of the member's watch in the Group's pool.
func (m *member[M]) spawnWatch(op func()) { m.g.ops.spawnWatch(op) }

// finished tells the Group that the member's runner has stopped.
func (m *member[M]) finished(r *runner[M]) { m.g.finished(r) }

// NewGroup returns a Group of elections kept in st. opts apply to every
// elector the Group adds (WithConfig, WithClock, WithLogger, WithIdentity,
// ...), before the options of each Add; WithMaxStoreOps applies to the
// Group itself. It validates st as New does, and refuses an option New
// would refuse.
func NewGroup[M any](st store.Store[M], opts ...Option) (*Group[M], error) {
	var o options
	for i, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("%w: NewGroup: option %d of %d is nil", ErrNilArgument, i+1, len(opts))
		}
		opt(&o)
	}
	if err := errors.Join(o.errs...); err != nil {
		return nil, err
	}
	maxOps := groupMaxOps
	if o.maxOps > 0 {
		maxOps = o.maxOps
	}
	if nilarg.IsNil(st) {
		return nil, ErrNilStore
	}
	if err := store.Validate(st); err != nil {
		if errors.Is(err, store.ErrNilArgument) {
			return nil, fmt.Errorf("%w: %w", ErrNilStore, err)
		}
		return nil, fmt.Errorf("lead: NewGroup: the store is not usable: %w", err)
	}
	l := newLoop[M]()
	g := &Group[M]{st: st, opts: opts, loop: l, ops: opPool{max: maxOps}, wakes: wakeGrid[M]{loop: l}, members: map[string]*member[M]{}, clock: newSystemClock()}
	if b := store.BatcherOf(st); b != nil {
		g.renewals.b = b
		g.renewals.batch = func(ctx context.Context, swaps []store.Swap[M]) []store.SwapResult[M] {
			return store.CompareAndSwapBatch(ctx, st, swaps)
		}
	}
	return g, nil
}

// usable returns an error wrapping ErrNilArgument, for method op, when g is
// nil or was not made by NewGroup.
func (g *Group[M]) usable(op string) error {
	switch {
	case g == nil:
		return fmt.Errorf("%w: Group.%s: the *Group is nil (make one with NewGroup)", ErrNilArgument, op)
	case g.loop == nil:
		return fmt.Errorf("%w: Group.%s: the Group was not made by NewGroup", ErrNilArgument, op)
	}
	return nil
}

// Add adds the election name to the Group and returns its Elector, made as
// New makes one, with the Group's options followed by opts. It starts
// taking part at once if the Group runs, else when Run is called. Add
// returns an error wrapping ErrAlreadyRunning when name is in the Group
// already, and ErrStopped once Run's ctx has ended.
func (g *Group[M]) Add(name string, opts ...Option) (*Elector[M], error) {
	if err := g.usable("Add"); err != nil {
		return nil, err
	}
	all := make([]Option, 0, 1+len(g.opts)+len(opts))
	all = append(append(append(all, defaultClock(g.clock)), g.opts...), opts...)
	e, err := newElector(name, g.st, all)
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.ending:
		return nil, fmt.Errorf("%w: Group.Add %q: the Group's Run has ended", ErrStopped, name)
	case g.members[name] != nil:
		return nil, fmt.Errorf("%w: Group.Add %q: the name is in the Group already", ErrAlreadyRunning, name)
	}
	if !g.logged {
		g.logged = true
		e.logCapabilities()
	}
	e.rerun = errInGroup
	m := &member[M]{g: g, e: e, groupClock: !setsClock(opts)}
	g.members[name] = m
	g.pending = append(g.pending, m)
	if g.ran {
		g.loop.signal()
	}
	return e, nil
}

// Remove takes the election name out of the Group: its elector steps down
// if it leads, waits for its term's bodies and releases the lease (unless
// WithReleaseOnStop(false)), as when Run's ctx ends (the wait is bounded
// the same way, see Run); its Done is closed once that is over, and the
// name may then be added again. Remove reports whether name was in the
// Group.
func (g *Group[M]) Remove(name string) bool {
	if g.usable("Remove") != nil {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	m := g.members[name]
	if m == nil {
		return false
	}
	if m.started {
		first := !m.removed
		m.removed = true
		r := m.r
		if first {
			m.e.endRun() // as if its ctx ended: from now on it does not lead
		}
		if r != nil {
			g.loop.post(r, msgDone) // the loop takes it from there
		}
		// Else startMember posts it once the runner is made.
		return true
	}
	// Not started: it never will be.
	delete(g.members, name)
	for i, p := range g.pending {
		if p == m {
			g.pending = append(g.pending[:i], g.pending[i+1:]...)
			break
		}
	}
	m.e.markReady()
	close(m.e.stopped)
	return true
}

// Run runs every elector of the Group, those added later too, until ctx
// ends. Then each steps down if it leads, waits for its term's bodies (the
// fn of Lead and Every), releases its lease (unless
// WithReleaseOnStop(false)), and Run returns once all have stopped (their
// Done is closed). The wait for the bodies is bounded by the term's
// deadline (its last renewal sent plus RenewDeadline), as in Elector.Run:
// an elector whose bodies still run then does not release its lease (it
// expires in the store, and a successor leads one LeaseDuration after the
// last renewal), and Run returns an error wrapping ErrBodiesStillRunning
// for it. An elector whose writes the
// store refuses for good (see Elector.Run) stops alone; Run returns these
// errors, joined, at the end.
// Run returns ErrAlreadyRunning when called a second time, and an error
// wrapping ErrNilArgument for a nil ctx.
func (g *Group[M]) Run(ctx context.Context) error {
	if err := g.usable("Run"); err != nil {
		return err
	}
	if ctx == nil {
		return fmt.Errorf("%w: Group.Run: ctx is nil", ErrNilArgument)
	}
	g.mu.Lock()
	if g.ran {
		g.mu.Unlock()
		return ErrAlreadyRunning
	}
	g.ran = true
	g.mu.Unlock()

	// The electors' contexts derive from base, a context of this package
	// whatever ctx is: deriving one costs no goroutine.
	base, cancel := context.WithCancel(ctx)
	defer cancel()
	// The batches of renewals run in batchOps: the values of ctx, not its
	// end (as each elector's operations), until every elector finished.
	batchOps := newOpsContext(base)
	defer batchOps.end()
	l := g.loop
	done := base.Done()
	for {
		if g.startPending(base) {
			break
		}
		select {
		case <-done:
			done = nil
			g.mu.Lock()
			g.ending = true
			var runners []*runner[M]
			for _, m := range g.members {
				if m.r != nil {
					runners = append(runners, m.r)
				}
			}
			g.mu.Unlock()
			for _, r := range runners {
				l.post(r, msgDone)
			}
		case <-l.ready:
		}
		batch := l.take()
		l.dispatch(batch)
		l.recycle(batch)
		g.flushRenewals(batchOps)
	}
	g.waits.Wait()
	g.wakes.stop()
	g.ops.stop()
	g.mu.Lock()
	defer g.mu.Unlock()
	return errors.Join(g.fatal...)
}

// startPending starts the electors added since the last call, and reports
// whether Run is over: its ctx ended and every elector finished.
func (g *Group[M]) startPending(base context.Context) (over bool) {
	g.mu.Lock()
	pending := g.pending
	g.pending = nil
	if g.ending && len(pending) == 0 && g.live == 0 {
		g.mu.Unlock()
		return true
	}
	for _, m := range pending {
		m.started = true
	}
	g.live += len(pending)
	g.mu.Unlock()
	for _, m := range pending {
		g.startMember(base, m)
	}
	return false
}

// startMember starts one elector on the loop, in ctx, the Group's. When
// ctx ends (Run sees it: this runs on Run's goroutine) or Remove takes the
// elector out, the loop tells it (msgDone), and it steps down and releases
// as after Run's ctx.
func (g *Group[M]) startMember(ctx context.Context, m *member[M]) {
	r, err := m.e.start(ctx, g.loop, m)
	g.mu.Lock()
	if err != nil {
		defer g.mu.Unlock()
		g.forgetLocked(m.e)
		g.live--
		g.fatal = append(g.fatal, err)
		return
	}
	m.r = r
	end := m.removed || g.ending
	g.mu.Unlock()
	if end {
		g.loop.post(r, msgDone)
	}
}

// finished is called by the loop when the machine of r has stopped: the
// name leaves the Group, and Done is closed once r's operations and
// observers are over.
func (g *Group[M]) finished(r *runner[M]) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.forgetLocked(r.e)
	g.live--
	if r.fatal != nil {
		g.fatal = append(g.fatal, r.fatal)
	}
	if err := r.bodiesLeft(); err != nil {
		g.fatal = append(g.fatal, err)
	}
	g.waits.Go(r.wait)
}

// forgetLocked takes e out of the Group. g.mu must be held.
func (g *Group[M]) forgetLocked(e *Elector[M]) {
	if m := g.members[e.name]; m != nil && m.e == e {
		delete(g.members, e.name)
	}
}

// errInGroup is what Run returns for an elector of a Group.
var errInGroup = fmt.Errorf("%w: Run: the elector belongs to a Group, whose Run runs it", ErrAlreadyRunning)

// defaultClock makes c the clock unless a later option sets one; it is
// not an option that sets a clock (setsClock).
func defaultClock(c Clock) Option {
	return func(o *options) { o.clock = c }
}

// setsClock reports whether an option of opts sets a clock.
func setsClock(opts []Option) bool {
	var o options
	for _, opt := range opts {
		opt(&o) // not nil: newElector has checked
	}
	return o.setsClock
}

// endRun is, for an elector of a Group, what the end of Run's ctx is for
// one: from now on it does not lead (IsLeader and the others say so at
// once, as runDone is closed), and its term's work is cancelled, without
// waiting for the loop, which is told too (Group.Remove posts msgDone).
func (e *Elector[M]) endRun() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.runDone = closed()
	if t := e.term; t != nil {
		t.cancel(fmt.Errorf("%w: %s", ErrLeadershipLost, fsm.ReasonStopped))
	}
}
