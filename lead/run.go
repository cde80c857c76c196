package lead

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenure-go/tenure/fsm"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

// Run takes part in the election until ctx ends. Then it steps down if it
// leads, waits for the term's bodies (the fn of each Lead and Every running
// in it) to return, releases the lease (unless WithReleaseOnStop(false)) so
// that a successor leads at once, and returns nil. From the moment ctx
// ends this elector no longer reports itself leader (IsLeader, Term,
// ConfirmedWithin and Status say so at once, without waiting for Run's
// loop) and the contexts of the bodies are cancelled.
//
// The lease is never released while a body of the ending term still runs:
// the successor's bodies would run beside it. The wait is bounded by the
// term's deadline, the instant this elector would have stopped believing
// it leads anyway (its last renewal sent plus RenewDeadline; no renewal is
// sent once the term has ended). If a body still runs then, Run does not
// release the lease: it logs a warning (with the election's name and how
// many bodies still run) and returns an error wrapping
// ErrBodiesStillRunning, and the lease expires in the store, so a
// successor leads one LeaseDuration after the last renewal. A body that
// never returns is then covered by the fencing token only: return when the
// context is cancelled. Run also returns that error when a body of its
// last term outran the term's deadline with nothing to release (a term
// lost to another holder, or WithReleaseOnStop(false)).
//
// Run returns an error without waiting for ctx when the store refuses what
// this elector writes for a reason that retrying cannot mend (a name or
// metadata the store does not accept). SetMetadata refuses metadata that
// the store says it cannot take, so that only happens with metadata the
// store could not check beforehand (see SetMetadata), or with the zero
// metadata when the store cannot encode even that. It returns
// ErrAlreadyRunning when called a second time, and an error wrapping
// ErrNilArgument for a nil ctx or an Elector not made by New.
func (e *Elector[M]) Run(ctx context.Context) error {
	if err := e.usable("Run"); err != nil {
		return err
	}
	if ctx == nil {
		return fmt.Errorf("%w: Run: ctx is nil", ErrNilArgument)
	}
	e.mu.Lock()
	if err := e.rerun; err != nil {
		e.mu.Unlock()
		return err
	}
	e.rerun = ErrAlreadyRunning
	e.mu.Unlock()

	l := newLoop[M]()
	r, err := e.start(ctx, l, soloHost[M]{})
	if err != nil {
		return err
	}
	l.runOne(ctx, r)
	left := r.bodiesLeft()
	r.wait()
	if r.fatal != nil {
		return r.fatal
	}
	return left
}

// start makes the runner of one Run, stepped by l and hosted by h, and
// posts its begin to l. When the runner cannot be made, the elector is
// marked as done (Lead, Every and Done must not wait for it) and the
// error returned.
func (e *Elector[M]) start(ctx context.Context, l *loop[M], h host[M]) (*runner[M], error) {
	e.mu.Lock()
	cfg := e.cfg
	m, err := fsm.New(fsm.Options{Identity: e.id, Config: cfg, Rand: e.rand, LossyStore: e.lossy, AuthenticWatch: e.authentic, GuardedRelease: e.guarded})
	if err != nil {
		e.mu.Unlock()
		e.markReady()
		close(e.stopped)
		return nil, err
	}
	r := &runner[M]{
		e:    e,
		ctx:  ctx,
		loop: l,
		m:    m,
		cfg:  cfg,
		host: h,
		// Store operations outlive ctx (the release happens after it
		// ends) but not the runner.
		opCtx:  newOpsContext(ctx),
		errLog: map[string]time.Duration{},
		obs:    newObserverQueue(e.observers),
	}
	e.epoch = e.clock.Now()
	if e.stops != nil {
		e.seenStops = e.stops.stoppedTotal() // stops before Run are none of its business
	}
	if e.runDone == nil { // else endRun closed it already
		e.runDone = ctx.Done()
	}
	e.run = r
	e.mu.Unlock()
	l.post(r, msgBegin)
	if e.priority > 0 {
		r.ops.Add(1)
		go func() {
			defer r.ops.Done()
			e.prefer(ctx, r.opCtx)
		}()
	}
	return r, nil
}

// runner is the state of one elector while it runs. Its loop (loop.go) is
// the only goroutine that steps the machine: it feeds it each event (a
// timer, the answer to a store operation, a watch event, the end of the
// elector's ctx, a Reconfigure) and performs the actions that come back
// (perform): store operations, run off the loop by its host, whose
// answers come back as messages (handleResult); the start, renewal and
// end of terms (term.go); reports (report.go). The watch is in watch.go.
type runner[M any] struct {
	e    *Elector[M]
	ctx  context.Context // the elector's: Run's (a Group's elector: the Group's)
	loop *loop[M]
	host host[M]
	m    *fsm.Machine
	cfg  lease.Config
	// timer is the runner's own wake timer, set when timerSet; once
	// stopped, a timer of the system clock is kept, to be moved when next
	// needed (see movable).
	timer    Timer
	timerSet bool
	timerAt  time.Duration // the NextWake timer is set for
	// timerEpoch is the elector's epoch when the timer was set: once a
	// counted stop moved it, the timer comes late and is set again.
	timerEpoch time.Time
	wakeFn     func()      // what timer calls: post a wake
	opCtx      *opsContext // the store operations' and the watch's: ends in finish
	ops        sync.WaitGroup

	// The watch: watches is false when the store cannot watch; watchGen
	// counts the watches started, and messages of an older one are
	// dropped; watchTimer starts the next after a failure.
	watches    bool
	watchGen   uint32
	watchTimer Timer

	// claimTraced is the token of the claim last told to the Tracer as
	// waited on; 0 when none.
	claimTraced uint64

	// Under loop.mu: the messages of this runner waiting in the queue
	// (loop.post), and the newest watch event waiting.
	queued     uint8
	pendingGen uint32
	pendingEv  store.Event[M]

	// accepted is the revision of the record the machine holds as the
	// store's (fsm.Machine.Observed, after each answer: remember), 0 when
	// none or the record's absence. Set on the loop, read by postWatch:
	// a watch event showing that revision again (a leader's own renewal
	// heard back, above all) is news to nobody, and is not posted.
	accepted atomic.Uint64

	errLog   map[string]time.Duration
	obs      *observerQueue
	fatal    error        // a write the store refuses for good: the runner stops, Run returns it
	vouch    *atomic.Bool // the store's vouch for the swap in flight, if it creates
	stopping bool         // the machine was told to Stop
	ctxEnded bool         // the elector's ctx ended (the reason of the Stop)
	done     bool         // the machine stopped; the loop hands this runner nothing more

	// The release held for the bodies (term.go): the term ended last,
	// whose bodies may still run; the release held back for them; the
	// timer of its deadline.
	ending     *activeTerm
	held       fsm.Action
	holding    bool
	drainTimer Timer
	waitingEnd bool            // the machine stopped and over waits for the bodies
	abandoned  bool            // given up on the machine: bodies outran the deadline while stopping
	resigning  *resignation[M] // the Resign (or HandOver) in progress, if any

	// The reads for MetadataChanges (metafeed.go): the oldest revision of
	// the watch hints that came since the last read started (0: none);
	// the one the read in flight must reach; a read in flight; no read
	// before metaNext; the timer that starts the next one then.
	metaWant  lease.Revision
	metaAsked lease.Revision
	metaBusy  bool
	metaNext  time.Time
	metaTimer Timer
}

// host runs what a runner hands off its loop: its store operations and
// the start of its watch. It may serve the runner's wakes, and is told
// when the runner has finished. Run's is soloHost; a Group's electors are
// hosted by their member of the Group (group.go).
type host[M any] interface {
	// spawn runs op, a store operation, off the loop; urgent: a leader's
	// renewal or release.
	spawn(op func(), urgent bool)
	// spawnWatch runs op, the start of a watch, off the loop.
	spawnWatch(op func())
	// shareWake arms r's wake at at, the clock's time being clockNow and
	// the elector's epoch epoch, and reports whether it did; if not, r
	// sets a timer of its own.
	shareWake(r *runner[M], at time.Duration, clockNow, epoch time.Time) bool
	// unwake cancels a wake shareWake armed.
	unwake()
	// batchRenew takes r's renewal sw into a batch of renewals sent
	// together, and reports whether it did; if not, r swaps alone.
	batchRenew(r *runner[M], sw store.Swap[M]) bool
	// finished is called on the loop once r has finished.
	finished(r *runner[M])
}

// soloHost is the host of Run's runner: each store operation on a
// goroutine of its own (an elector alone has an operation or two in
// flight), and the runner's own timer for its wakes.
type soloHost[M any] struct{}

func (soloHost[M]) spawn(op func(), _ bool)                                        { go op() }
func (soloHost[M]) spawnWatch(op func())                                           { go op() }
func (soloHost[M]) shareWake(*runner[M], time.Duration, time.Time, time.Time) bool { return false }
func (soloHost[M]) unwake()                                                        {}
func (soloHost[M]) batchRenew(*runner[M], store.Swap[M]) bool                      { return false }
func (soloHost[M]) finished(*runner[M])                                            {}

// runOne is the loop of Run: it hands r its messages until r's machine has
// stopped. ctx is Run's: when it ends, r is told.
func (l *loop[M]) runOne(ctx context.Context, r *runner[M]) {
	done := ctx.Done()
	for !r.done {
		select {
		case <-done:
			done = nil
			l.post(r, msgDone)
		case <-l.ready:
		}
		batch := l.take()
		l.dispatch(batch)
		l.recycle(batch)
	}
}

// handle passes one message to the runner.
func (r *runner[M]) handle(m *msg[M]) {
	switch m.kind {
	case msgBegin:
		r.begin()
	case msgDone:
		if !r.stopping {
			r.ctxEnded = true
			r.stop()
		}
	case msgWake:
		r.tick()
	case msgReconf:
		r.reconfigure()
	case msgResult:
		r.handleResult(m.res)
	case msgWatch:
		if m.gen == r.watchGen {
			r.handleWatch(m.ev)
		}
	case msgWatchEnd:
		if m.gen == r.watchGen {
			r.watchClosed()
		}
	case msgWatchStarted:
		if m.gen == r.watchGen {
			r.watchBegan(m.err)
		}
	case msgWatchRetry:
		r.startWatch()
	case msgDrained:
		r.drained()
	case msgResign:
		r.resign()
	case msgMetaRead:
		r.metaRead(m.res)
	case msgMetaRetry:
		r.metaTimer = nil
		r.readForMetadata()
	}
	if r.fatal != nil && !r.stopping && !r.m.Stopped() {
		r.stop()
	}
	r.settleResign()
	r.traceClaim()
}

// finish ends the runner once it is over (see over: its machine has
// stopped, and the bodies of its last term returned or outran their
// deadline): its timers and store operations are stopped, a Resign
// waiting told, and its host told. The machine
// stops (or is given up on, after its term ended) only after stepping
// down (fsm's property test checks it), so no term is open here: each
// ended at its StoppedLeading.
func (r *runner[M]) finish() {
	r.done = true
	r.disarm()
	if r.watchTimer != nil {
		r.watchTimer.Stop()
	}
	if r.drainTimer != nil {
		r.drainTimer.Stop()
	}
	if r.metaTimer != nil {
		r.metaTimer.Stop()
	}
	r.endResign()
	r.traceClaim()
	r.opCtx.end()
	r.e.markReady()
	r.host.finished(r)
}

// wait waits, after finish, for the store operations still running and the
// observers, then closes Done.
func (r *runner[M]) wait() {
	r.ops.Wait()
	r.obs.close()
	e := r.e
	e.mu.Lock()
	e.run = nil
	close(e.stopped)
	e.notifyLocked()
	e.mu.Unlock()
}

// stop tells the machine to stop: a leader steps down at once, the lease is
// released (unless WithReleaseOnStop(false)), and then the machine is
// Stopped, which ends the runner.
func (r *runner[M]) stop() {
	r.stopping = true
	r.step(fsm.Event{Kind: fsm.Stop, Release: r.e.releaseOnStop})
}

// begin starts the watch, if the store can, and the machine.
func (r *runner[M]) begin() {
	e := r.e
	if _, ok := e.st.(store.Watcher[M]); ok {
		r.watches = true
		r.startWatch()
	}
	e.log.Debug("elector running", "lease_duration", r.cfg.LeaseDuration, "renew_deadline", r.cfg.RenewDeadline)
	r.tick()
}

// tick tells the machine the time: its NextWake came.
func (r *runner[M]) tick() { r.step(fsm.Event{Kind: fsm.Tick}) }

// reconfigure takes the configuration Reconfigure left.
func (r *runner[M]) reconfigure() {
	e := r.e
	e.mu.Lock()
	r.cfg = e.cfg
	e.mu.Unlock()
	r.step(fsm.Event{Kind: fsm.Reconfigure, Config: r.cfg})
}

// watchClosed handles the end of the watch (the store closed it).
func (r *runner[M]) watchClosed() {
	r.watchFailed(errors.New("watch closed"))
}

// markReady closes Ready (once).
func (e *Elector[M]) markReady() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.readyNow {
		e.readyNow = true
		close(e.ready)
	}
}

// step feeds one event to the machine, performs its actions and re-arms the
// timer.
func (r *runner[M]) step(ev fsm.Event) { r.stepThen(ev, nil) }

// stepThen is step, calling observed (when not nil) after the machine took
// ev and before its actions are performed: what observed records (the
// record an answer showed, for Record) is in place when a term those
// actions open starts its work.
func (r *runner[M]) stepThen(ev fsm.Event, observed func()) {
	ev.Now = r.now()
	acts := r.m.Step(ev)
	if observed != nil {
		observed()
	}
	for _, a := range acts {
		r.perform(a)
	}
	r.refreshTerm()
	e := r.e
	e.mu.Lock()
	e.state = r.m.State()
	e.holdUntil = r.m.HoldUntil()
	if r.m.TokensExhausted() && e.exhaustedErr == nil {
		e.exhaustedErr = fmt.Errorf("lead: %q: %w: the largest token seen is lease.MaxToken (%d); no new term can start", e.name, store.ErrTokenExhausted, lease.MaxToken)
	}
	stopped := e.unlogged
	e.unlogged = 0
	e.mu.Unlock()
	if stopped > 0 {
		e.log.Warn("the clock stood still (a suspend, a paused VM): the time counted as elapsed", "stopped", stopped, "state", r.m.State().String())
	}
	r.arm()
}

// now is the machine's time: the elector's (sinceEpoch).
func (r *runner[M]) now() time.Duration {
	e := r.e
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.sinceEpoch()
}

// arm makes the timer wake the loop at the machine's NextWake, counting
// from the time now (not from the step's: performing the step's actions
// may have taken long, a logger that blocks, say). A timer already set for
// that instant, which has not fired (the instant is still ahead), is kept:
// most steps (a leader's renewals heard back, a follower's watch events
// that change nothing) leave NextWake where it was.
func (r *runner[M]) arm() {
	at := r.m.NextWake()
	if at == fsm.Never || r.m.Stopped() {
		r.disarm()
		return
	}
	e := r.e
	e.mu.Lock()
	clockNow := e.nowCountingStopsLocked()
	epoch := e.epoch
	e.mu.Unlock()
	if r.host.shareWake(r, at, clockNow, epoch) {
		return
	}
	now := clockNow.Sub(epoch)
	if r.timerSet && at == r.timerAt && at > now && epoch.Equal(r.timerEpoch) {
		return
	}
	r.host.unwake()
	r.timerSet, r.timerAt, r.timerEpoch = true, at, epoch
	if rt := r.movable(); rt != nil {
		// Moved, not made again: a follower's wake moves at every renewal
		// it hears, and a leader's own timer serves it between the
		// shared wakes of its renewals. Fired already, it fires again,
		// as a new timer would after the old one's wake.
		rt.Reset(max(at-now, 0))
		return
	}
	if r.timer != nil {
		r.timer.Stop()
	}
	if r.wakeFn == nil {
		r.wakeFn = func() { r.loop.post(r, msgWake) }
	}
	r.timer = e.clock.AfterFunc(max(at-now, 0), r.wakeFn)
}

// movable returns the runner's timer when it may be moved rather than
// made again: a *time.Timer of the system clock (the default). Another
// Clock's Timer is only stopped: a *time.Timer it returns may stand for
// a time of its own (a clock that runs faster, or drifts), which Reset,
// in real time, would not keep.
func (r *runner[M]) movable() *time.Timer {
	if _, ok := r.e.clock.(*systemClock); !ok {
		return nil
	}
	t, _ := r.timer.(*time.Timer)
	return t
}

// disarm stops the wake, the runner's own or its host's.
func (r *runner[M]) disarm() {
	r.stopTimer()
	r.host.unwake()
}

// stopTimer stops the runner's own wake timer.
func (r *runner[M]) stopTimer() {
	r.timerSet = false
	if r.timer != nil {
		r.timer.Stop()
		if r.movable() == nil {
			r.timer = nil
		}
	}
}

// perform carries out one action of the machine.
func (r *runner[M]) perform(a fsm.Action) {
	e := r.e
	switch a.Kind {
	case fsm.Read:
		// Swap kind 0: a read.
		r.startOp(0, func(ctx context.Context) (lease.Record[M], lease.Revision, error) {
			return e.st.Get(ctx, e.name)
		})
	case fsm.Swap:
		if a.Swap == fsm.Release && r.holdRelease(a) {
			return // performed once the ended term's bodies returned (term.go)
		}
		r.performSwap(a)
	case fsm.StartedLeading:
		r.startTerm(a)
	case fsm.StoppedLeading:
		r.endTerm(a.Reason)
	case fsm.Report:
		r.report(a)
	case fsm.Done:
	}
}

// performSwap starts the swap a asks for. A renewal a Group batches goes
// out with the others due now; every other swap runs as an operation of
// its own (swapOp). The closures of swapOp take a's fields, not a or the
// record: captured here, both would be moved to the heap at every swap,
// batched renewals included.
func (r *runner[M]) performSwap(a fsm.Action) {
	e := r.e
	next := r.buildRecord(a)
	// A create may be vouched for by the store (fsm.Event.Vouched).
	var v *atomic.Bool
	if a.Expected == 0 {
		v = new(atomic.Bool)
	}
	r.vouch = v
	if a.Guarded {
		// Only asked for with fsm.Options.GuardedRelease, set when the
		// store has a guard; never a plain swap instead (the helper
		// fails when the guard is gone).
		was := store.Released{Token: a.Was.Token, Transitions: a.Was.Transitions, LeaseDuration: a.Was.LeaseDuration, Successor: a.Was.Successor}
		r.swapOp(a.Swap, a.Expected, &was, next, nil)
		return
	}
	if a.Swap == fsm.Renew && v == nil && r.host.batchRenew(r, store.Swap[M]{Name: e.name, Expected: a.Expected, Next: next}) {
		return // sent with the other renewals due now (groupbatch.go)
	}
	r.swapOp(a.Swap, a.Expected, nil, next, v)
}

// swapOp starts a swap of kind from expected to next as an operation of
// its own: guarded by was if not nil, else a create the store may vouch
// for into v if v is not nil, else a plain compare-and-swap.
func (r *runner[M]) swapOp(kind fsm.SwapKind, expected lease.Revision, was *store.Released, next lease.Record[M], v *atomic.Bool) {
	e := r.e
	r.startOp(kind, r.traced(opName(kind), next.Token, next.LeaseDuration, func(ctx context.Context) (lease.Record[M], lease.Revision, error) {
		switch {
		case was != nil:
			return store.CompareReleasedAndSwap(ctx, e.st, e.name, expected, *was, next)
		case v != nil:
			rec, rev, vouched, err := store.CreateVouched(ctx, e.st, e.name, next)
			v.Store(vouched)
			return rec, rev, err
		}
		return e.st.CompareAndSwap(ctx, e.name, expected, next)
	}))
}

// result is the answer to one store operation, posted to the loop.
type result[M any] struct {
	swap fsm.SwapKind // the kind of swap asked for; 0 for a read
	rec  lease.Record[M]
	rev  lease.Revision
	err  error
}

// startOp runs op (a read when swap is 0, else a swap of that kind) off
// the loop, by the host (on it when the store answers immediately),
// within BackendTimeout, and posts its answer to the loop.
func (r *runner[M]) startOp(swap fsm.SwapKind, op func(context.Context) (lease.Record[M], lease.Revision, error)) {
	r.startOpThen(swap, op, r.loop.postResult)
}

// startOpThen is startOp, handing the answer to post instead (which posts
// it to the loop).
func (r *runner[M]) startOpThen(swap fsm.SwapKind, op func(context.Context) (lease.Record[M], lease.Revision, error), post func(*runner[M], result[M])) {
	e := r.e
	timeout := r.cfg.BackendTimeout
	r.ops.Add(1)
	run := func() {
		defer r.ops.Done()
		// As context.WithTimeout, without a timer for stores that never
		// ask Done. The timeout starts when the operation does: the
		// machine's own deadlines count from when it asked.
		ctx := newOpContext(r.opCtx, timeout)
		defer ctx.end(context.Canceled)
		var began time.Time
		if e.instruments != nil {
			began = e.clock.Now()
		}
		rec, rev, err := op(ctx)
		if e.instruments != nil {
			e.instruments.StoreOp(e.name, opName(swap), e.clock.Now().Sub(began), err)
		}
		post(r, result[M]{swap: swap, rec: rec, rev: rev, err: err})
	}
	if e.immediate {
		// The store never waits: no goroutine. The answer is still
		// posted, so the machine takes it as it takes any other.
		run()
		return
	}
	r.host.spawn(run, swap == fsm.Renew || swap == fsm.Release)
}

// handleResult passes the answer to a store operation to the machine. A
// failure is logged and kept for Err (and a write the store refuses for good
// stops Run); a corrupt record is reported; any other answer clears Err's
// last error and, once the machine accepted it, is kept for Record.
func (r *runner[M]) handleResult(res result[M]) {
	e := r.e
	defer e.markReady()
	var ev fsm.Event
	if res.swap == 0 {
		ev = r.readEvent(res)
	} else {
		ev = r.swapEvent(res)
	}
	failed := ev.Kind == fsm.ReadFailed || ev.Kind == fsm.SwapFailed
	switch {
	case failed:
		r.logError(opName(res.swap), res.err)
		if res.swap != 0 && permanent(res.err) {
			r.fatal = fmt.Errorf("lead: %s of %q refused by the store: %w", res.swap, e.name, res.err)
		}
	case ev.Corrupt:
		r.logCorrupt(opName(res.swap), ev.Err)
	default:
		// The store answered (a record, its absence, or a conflict).
		e.mu.Lock()
		e.lastErr = nil
		e.mu.Unlock()
	}
	var keep func()
	if !failed && !ev.Corrupt {
		keep = func() { r.remember(ev, res.rec) }
	}
	r.stepThen(ev, keep)
}

// readEvent turns the answer to a read into the machine's event.
func (r *runner[M]) readEvent(res result[M]) fsm.Event {
	switch {
	case res.err == nil:
		return r.answered(fsm.ReadDone, res)
	case errors.Is(res.err, store.ErrNotFound):
		return fsm.Event{Kind: fsm.ReadDone, Absent: true}
	case errors.Is(res.err, store.ErrCorruptRecord):
		return fsm.Event{Kind: fsm.ReadDone, Corrupt: true, Err: res.err}
	default:
		return fsm.Event{Kind: fsm.ReadFailed, Err: res.err}
	}
}

// swapEvent turns the answer to a swap into the machine's event.
func (r *runner[M]) swapEvent(res result[M]) fsm.Event {
	switch {
	case res.err == nil:
		ev := r.answered(fsm.SwapDone, res)
		ev.Vouched = r.vouch != nil && r.vouch.Load()
		return ev
	case errors.Is(res.err, store.ErrConflict) && res.rev == 0:
		return fsm.Event{Kind: fsm.SwapConflict, Absent: true, Err: res.err}
	case errors.Is(res.err, store.ErrConflict):
		return r.answered(fsm.SwapConflict, res)
	case errors.Is(res.err, store.ErrCorruptRecord):
		// The store refused to overwrite a record it cannot read: the swap
		// was not applied, and the store holds something unusable.
		return fsm.Event{Kind: fsm.SwapConflict, Corrupt: true, Err: res.err}
	default:
		return fsm.Event{Kind: fsm.SwapFailed, Err: res.err}
	}
}

// answered is the event of kind for an answer that carries a record, after
// checking the record as untrusted input: a record outside
// store.ValidateStored, or one at revision 0, makes a corrupt event whose
// Err says why.
func (r *runner[M]) answered(kind fsm.EventKind, res result[M]) fsm.Event {
	ev := fsm.Event{Kind: kind, Revision: res.rev, Err: res.err}
	if err := checkStored(res.rec, res.rev); err != nil {
		ev.Corrupt, ev.Err = true, fmt.Errorf("lead: record of %q at revision %d: %w", r.e.name, res.rev, err)
		return ev
	}
	ev.Lease, ev.Stamp = leaseOf(res.rec), res.rec.Stamp
	return ev
}

// permanent reports whether err is the store refusing what this elector
// writes, which retrying cannot mend.
func permanent(err error) bool {
	return errors.Is(err, store.ErrInvalidName) || errors.Is(err, store.ErrInvalidRecord) ||
		errors.Is(err, store.ErrMetadataTooLarge) || errors.Is(err, store.ErrEncode)
}

// checkStored checks a record read from a store, which anyone with access to
// the store (or a custom store itself) may have made up.
func checkStored[M any](rec lease.Record[M], rev lease.Revision) error {
	if err := store.ValidateStored(rec); err != nil {
		return err
	}
	if rev == 0 {
		return fmt.Errorf("%w: a record at revision 0 (the revision of no record)", store.ErrCorruptRecord)
	}
	return nil
}

// remember keeps the record the machine accepted from the answer ev (rec),
// for Record(): what a read or a swap showed, never a pushed event, and
// after a rollback what the store holds now.
func (r *runner[M]) remember(ev fsm.Event, rec lease.Record[M]) {
	l, rev, absent, ok := r.m.Observed()
	e := r.e
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case !ok:
	case absent:
		if e.haveRec {
			e.haveRec, e.rec, e.rev = false, lease.Record[M]{}, 0
			e.notifyLocked()
		}
	case !ev.Absent && rev == ev.Revision && l == ev.Lease && (!e.haveRec || e.rev != rev):
		e.rec, e.rev, e.haveRec = rec, rev, true
		e.notifyLocked()
	}
	if ok && !absent {
		r.accepted.Store(uint64(rev))
	} else {
		r.accepted.Store(0)
	}
	if ok {
		e.seeLeaderLocked(absent)
	}
}

func leaseOf[M any](rec lease.Record[M]) fsm.Lease {
	return fsm.Lease{Holder: rec.Holder, Token: rec.Token, Transitions: rec.Transitions, LeaseDuration: rec.LeaseDuration, Successor: rec.Successor}
}
