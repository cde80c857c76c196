package lead

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/fsm"
	"github.com/tenure-go/tenure/lease"
)

// A term's life, in the order it is lived. The machine (package fsm)
// decides; the driver follows its actions:
//
//   - Acquire: the machine asks for a swap (fsm.Swap, Acquire), written as
//     buildRecord says by performSwap (run.go); when the store's answer
//     makes it leader it emits StartedLeading, and startTerm opens the
//     term: the context of its bodies, its watchdog, the observers'
//     Started.
//   - Renew: each renewal is a swap too (Renew); when the answer moves
//     the machine's deadline, refreshTerm moves the term's.
//   - Watchdog: termWatchdog cancels the term's context at its deadline
//     even if Run's loop is late; the term's context also reads the clock
//     whenever asked (checkedContext).
//   - End: at StoppedLeading, endTerm cancels the term's context and
//     tells the observers. The machine emits one StoppedLeading for each
//     StartedLeading, before it stops (fsm's property test checks both), so
//     each term ends exactly once.
//   - Release: the machine's release (a swap, Release) is held back while
//     the term's bodies still run (holdRelease, drained), up to the term's
//     deadline.
//
// Two things cancel the term's work without waiting for Run's loop: the
// watchdog at the term's deadline, and Run's ctx ending.

// activeTerm is the term in progress, with the context that ends with it.
type activeTerm struct {
	term       Term
	ctx        context.Context // the work's: base, checked (checkedContext), with the token
	base       context.Context // cancelled when the term ends
	cancel     context.CancelCauseFunc
	epoch      time.Time     // the elector's epoch when the watchdog was last set
	until      time.Duration // local belief deadline (monotonic since epoch)
	confirmed  time.Duration // last successful renewal sent
	watchdog   Timer
	unhook     func() bool // stops cancelling the term when Run's ctx ends
	ended      fsm.Reason  // why Run's loop ended the term (0: it has not); under e.mu
	resigned   bool        // Resign ended it: it is not led any more; under e.mu
	handedOver bool        // the Resign was a HandOver; under e.mu
	bodies     termBodies  // the bodies running in it (runInTerm)
	warned     bool        // bodies still running at its deadline were logged (Run's loop)
}

// ---- Acquire ----

// buildRecord turns a swap action into the record to write, adding the
// times and metadata the machine does not track.
func (r *runner[M]) buildRecord(a fsm.Action) lease.Record[M] {
	e := r.e
	now := e.clock.Now()
	e.mu.Lock()
	last, meta := e.rec, e.meta
	e.mu.Unlock()
	rec := lease.Record[M]{
		Holder:        a.Next.Holder,
		Token:         a.Next.Token,
		Transitions:   a.Next.Transitions,
		LeaseDuration: a.Next.LeaseDuration,
		AcquiredAt:    now,
		RenewedAt:     now,
		// For people only (see lease.Record's Claim): a create this
		// elector will not lead on unless the store vouches for it.
		Claim:    a.Swap == fsm.Acquire && a.Claim,
		Stamp:    e.drawStamp(),
		Metadata: meta,
	}
	if a.Swap == fsm.Release {
		// A handover (HandOver): the release names the successor.
		rec.Successor = a.Next.Successor
	}
	switch a.Swap {
	case fsm.Renew:
		if last.Token == a.Next.Token && !last.AcquiredAt.IsZero() {
			rec.AcquiredAt = last.AcquiredAt
		}
	case fsm.Release:
		var zero M
		rec.AcquiredAt, rec.RenewedAt, rec.Metadata = last.AcquiredAt, last.RenewedAt, zero
	}
	return rec
}

// drawStamp draws the Stamp of a write: 64 bits nobody can tell before
// the write (see lease.Record's Stamp), never 0. If the source fails, the
// write carries no stamp (0), which only makes followers count their
// waits from their reads.
func (e *Elector[M]) drawStamp() uint64 {
	var b [8]byte
	if _, err := io.ReadFull(e.stamps, b[:]); err != nil {
		return 0
	}
	return binary.LittleEndian.Uint64(b[:]) | 1
}

// startTerm opens the term the machine started: the context of its work,
// its watchdog, the observers' Started.
func (r *runner[M]) startTerm(a fsm.Action) {
	e := r.e
	ctx, cancel := context.WithCancelCause(context.Background())
	t := &activeTerm{
		term: Term{
			Name:     e.name,
			Identity: e.id,
			Token:    fence.Token(a.Token),
		},
		base:      ctx,
		cancel:    cancel,
		until:     r.m.LeaderUntil(),
		confirmed: r.m.LastConfirmed(),
	}
	// Whoever asks the term's context whether it is done learns the
	// moment the term ends, from the clock, whether or not a timer has
	// cancelled it yet (see checkedContext).
	// The term's context carries its bodies' count (runInTerm).
	t.ctx = fence.WithToken(checkedContext{Context: context.WithValue(ctx, termKey{}, &t.bodies), check: func() {
		if ctx.Err() != nil {
			return
		}
		if ended, reason := e.termEnded(t); ended {
			cancel(fmt.Errorf("%w: %s", ErrLeadershipLost, reason))
		}
	}}, fence.Token(a.Token))
	// The term's work stops the moment Run's ctx ends, without waiting
	// for the loop to step down.
	t.unhook = context.AfterFunc(r.ctx, func() {
		cancel(fmt.Errorf("%w: %s", ErrLeadershipLost, fsm.ReasonStopped))
	})
	e.mu.Lock()
	t.term.Start, t.epoch = e.epoch.Add(a.Since), e.epoch
	e.term = t
	e.notifyLocked()
	select {
	case <-e.runDone:
		// Ended apart from its ctx (endRun) before the loop heard of it:
		// as if its ctx had ended.
		cancel(fmt.Errorf("%w: %s", ErrLeadershipLost, fsm.ReasonStopped))
	default:
	}
	e.mu.Unlock()
	r.armWatchdog(t)
	e.log.Info("started leading", "token", a.Token, "state", fsm.Leader.String())
	r.obs.push(Change{Kind: Started, Term: t.term})
}

// checkedContext is a context whose Done and Err first run check, which
// cancels it if what it stands for has ended (a term, by its deadline on
// the elector's clock): a caller that asks sees the end at the instant it
// comes, not when a timer's goroutine gets to cancel the context. A
// caller blocked on a Done channel it took earlier learns it from the
// cancellation: the term's watchdog at the deadline, Run's loop at the
// end of the term, each after the runtime has run them.
type checkedContext struct {
	context.Context
	check func()
}

// Done runs check, then returns the context's Done.
func (c checkedContext) Done() <-chan struct{} {
	c.check()
	return c.Context.Done()
}

// Err runs check, then returns the context's Err.
func (c checkedContext) Err() error {
	c.check()
	return c.Context.Err()
}

// termEnded reports whether t is no longer the term this elector leads in
// (see leadingLocked) and why: for checkedContext, so that the term's
// context ends the instant the term does, without waiting for a timer.
func (e *Elector[M]) termEnded(t *activeTerm) (bool, fsm.Reason) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.term != t {
		// The loop has ended the term and cancels its context next, with
		// the machine's reason: whoever asks first cancels it with that.
		return t.ended != 0, t.ended
	}
	if e.leadingLocked() == t {
		return false, 0
	}
	select {
	case <-e.runDone:
		return true, fsm.ReasonStopped
	default:
	}
	if t.resigned {
		if t.handedOver {
			return true, fsm.ReasonHandedOver
		}
		return true, fsm.ReasonResigned
	}
	return true, fsm.ReasonDeadline
}

// ---- Renew ----

// refreshTerm moves the term's deadline after a renewal (or a Reconfigure
// that shortened it).
func (r *runner[M]) refreshTerm() {
	if r.m.State() != fsm.Leader {
		return
	}
	e := r.e
	until := r.m.LeaderUntil()
	e.mu.Lock()
	t := e.term
	moved := t != nil && t.until != until && t.base.Err() == nil
	if moved {
		t.until, t.confirmed = until, r.m.LastConfirmed()
	}
	// A counted stop moved the epoch: the watchdog's timer, set on the
	// clock, would come that much late.
	restart := t != nil && !t.epoch.Equal(e.epoch) && t.base.Err() == nil
	if t != nil {
		t.epoch = e.epoch
	}
	e.mu.Unlock()
	if moved {
		r.armWatchdog(t)
	}
	if w, ok := t.watchdog.(*termWatchdog); ok && restart {
		w.restart()
	}
}

// ---- Watchdog ----

// armWatchdog cancels the term's context at its deadline even if Run's loop
// is late: the work stops before the local deadline passes (see
// termWatchdog).
func (r *runner[M]) armWatchdog(t *activeTerm) {
	w, _ := t.watchdog.(*termWatchdog)
	if w == nil {
		w = newTermWatchdog(r.e.clock, r.now, func() {
			t.cancel(fmt.Errorf("%w: %s", ErrLeadershipLost, fsm.ReasonDeadline))
		})
		t.watchdog = w
	}
	w.set(t.until)
}

// termWatchdog ends a term's context at the term's local deadline even if
// Run's loop is late (stalled by a slow logger or observer, starved of
// CPU). Every renewal moves the deadline later; rather than a new timer for
// each (one per RetryInterval), the timer stays where it is, and when it
// fires before the deadline it sets itself again for the deadline then in
// force: one timer per RenewDeadline or so. A deadline moved earlier (a
// Reconfigure) moves the timer at once. Either way the context ends no
// later than the deadline in force.
//
// It is the Timer of activeTerm.watchdog: Stop stops it for good.
type termWatchdog struct {
	clock Clock
	now   func() time.Duration // time since the elector's epoch
	fire  func()               // ends the term's context

	mu      sync.Mutex
	until   time.Duration // the deadline in force
	at      time.Duration // when timer fires
	timer   Timer
	stopped bool
}

func newTermWatchdog(clock Clock, now func() time.Duration, fire func()) *termWatchdog {
	return &termWatchdog{clock: clock, now: now, fire: fire}
}

// set makes until the deadline.
func (w *termWatchdog) set(until time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	w.until = until
	if w.timer != nil && w.at <= until {
		return // it fires first, and then looks at the deadline
	}
	if w.timer != nil {
		w.timer.Stop()
	}
	w.startLocked(w.now())
}

// restart sets the timer again for the deadline in force, counting from
// now: the elector's time moved ahead of the clock's (a counted stop), so
// the timer set before would come late.
func (w *termWatchdog) restart() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	if w.timer != nil {
		w.timer.Stop()
	}
	w.startLocked(w.now())
}

func (w *termWatchdog) startLocked(now time.Duration) {
	w.at = w.until
	w.timer = w.clock.AfterFunc(max(w.until-now, 0), w.fired)
}

// fired runs when the timer fires: it ends the term if the deadline has
// come, and otherwise waits for it.
func (w *termWatchdog) fired() {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return
	}
	if now := w.now(); now < w.until {
		w.startLocked(now)
		w.mu.Unlock()
		return
	}
	w.mu.Unlock()
	w.fire()
}

// Stop stops the watchdog for good, and reports whether a timer was
// pending.
func (w *termWatchdog) Stop() bool {
	if w == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	if w.timer == nil {
		return false
	}
	return w.timer.Stop()
}

// ---- End ----

// endTerm closes the term the machine ended for reason: its work is
// cancelled, its timers stopped, the observers told. From now on no body
// starts in it, and the release of its lease waits for the bodies running
// (holdRelease, below): the last to return tells the loop.
func (r *runner[M]) endTerm(reason fsm.Reason) {
	if r.ctxEnded {
		// The Stop that Run's ctx ending brought: that is why the term
		// ends (its work was cancelled for it then, see startTerm), even
		// if the machine found its deadline passed in the same step.
		reason = fsm.ReasonStopped
	}
	e := r.e
	e.mu.Lock()
	t := e.term
	if t == nil {
		e.mu.Unlock()
		return // never: the machine ends only the term it started
	}
	e.term, t.ended = nil, reason
	e.notifyLocked()
	e.mu.Unlock()
	t.watchdog.Stop()
	t.unhook()
	cause := fmt.Errorf("%w: %s", ErrLeadershipLost, reason)
	t.cancel(cause)
	// Sealed after the cancel: a body refused from now on finds the
	// term's context cancelled, with its cause.
	r.ending, r.waitingEnd = t, false
	t.bodies.seal(func() { r.loop.post(r, msgDrained) })
	e.log.Info("stopped leading", "token", uint64(t.term.Token), "reason", reason.String())
	r.obs.push(Change{Kind: Stopped, Term: t.term, Reason: cause})
}

// ---- Release ----

// A term's bodies (what runInTerm runs: Lead's fn, Every's fn) may outlive
// the term: their contexts are cancelled when it ends, but a body may be
// slow to notice, or ignore it. The lease is never released while one of
// them runs, or a successor's bodies would run beside it. So the driver
// counts each term's bodies (termBodies), holds back the machine's release
// of an ended term until they have returned (holdRelease, drained), and
// does not let its runner end (over) before they have. The wait is bounded
// by the term's deadline (activeTerm.until: the last renewal sent plus
// RenewDeadline), the instant this elector would have stopped believing it
// leads anyway; no renewal is sent once the term has ended. A body that
// still runs then is given up on (giveUp): the lease is not released but
// expires in the store, so a successor takes over only after LeaseDuration
// (and the fencing token covers the body if it never returns).

// holdRelease holds back a, the machine's release, while bodies of the term
// it gives back still run, and reports whether it did: the loop performs it
// once they have returned, or gives up at the term's deadline (drained).
// The machine waits for the answer meanwhile, as for a slow store.
func (r *runner[M]) holdRelease(a fsm.Action) bool {
	t := r.ending
	if t == nil || uint64(t.term.Token) != a.Next.Token || r.e.releaseEarly || t.bodies.running() == 0 {
		return false
	}
	r.held, r.holding = a, true
	r.armDrain(t)
	return true
}

// armDrain has the loop told (msgDrained) at t's deadline.
func (r *runner[M]) armDrain(t *activeTerm) {
	if r.drainTimer != nil {
		r.drainTimer.Stop()
	}
	r.drainTimer = r.e.clock.AfterFunc(max(t.until-r.now(), 0), func() { r.loop.post(r, msgDrained) })
}

// drained handles msgDrained: the last body of the ended term returned, or
// its deadline came. A held release is performed once no body runs; at the
// deadline, with bodies still running, it is given up on.
func (r *runner[M]) drained() {
	t := r.ending
	if t == nil {
		return
	}
	if !r.holding {
		r.waitingEnd = false // a runner waiting to end: over looks again
		return
	}
	n := t.bodies.running()
	switch {
	case n == 0:
		r.holding = false
		r.performSwap(r.held)
	case r.now() >= t.until:
		r.holding = false
		r.giveUp(t, n)
	default:
		r.armDrain(t) // early: a counted stop of the clock moved the epoch
	}
}

// giveUp handles n bodies of t still running at its deadline, while the
// release is held: the lease is not released. A stopping runner ends
// without it (as a crashed process would: the machine is dropped), and a
// Resign is told; either logs it. Any other runner tells its machine the
// release failed, so that it tries again on its schedule (held again
// while the bodies run) and follows once the lease has surely expired. A
// term that ended by its deadline (the store did not answer in time) is
// past it already, and its bodies, cancelled then, are seldom back yet:
// that is not logged.
func (r *runner[M]) giveUp(t *activeTerm, n int) {
	if q := r.resigning; q != nil {
		r.warnBodies(t, n)
		r.resigning = nil
		q.finish(r.bodiesError(n))
	}
	if r.stopping {
		r.warnBodies(t, n)
		r.abandoned = true
		return
	}
	r.step(fsm.Event{Kind: fsm.SwapFailed, Err: r.bodiesError(n)})
}

// warnBodies logs, once per term, that n of its bodies still run at its
// deadline.
func (r *runner[M]) warnBodies(t *activeTerm, n int) {
	if t.warned {
		return
	}
	t.warned = true
	r.e.log.Warn("bodies of the ended term still run at its deadline: the lease is not released and expires in the store, "+
		"so a successor leads only after LeaseDuration; return when the context is cancelled",
		"token", uint64(t.term.Token), "bodies", n, "lease_duration", r.cfg.LeaseDuration)
}

// bodiesError is the error of n bodies still running at the deadline.
func (r *runner[M]) bodiesError(n int) error {
	return fmt.Errorf("%w: %q: %d of the ended term's bodies still run at its deadline; the lease was not released", ErrBodiesStillRunning, r.e.name, n)
}

// over reports whether the runner has ended: its machine stopped (or was
// given up on, see giveUp) and no body of its last term runs, or that
// term's deadline has passed (then Run returns an error wrapping
// ErrBodiesStillRunning). While bodies run it has the loop told at the
// deadline.
func (r *runner[M]) over() bool {
	if r.abandoned {
		return true
	}
	if !r.m.Stopped() {
		return false
	}
	t := r.ending
	if t == nil || r.e.releaseEarly {
		return true
	}
	n := t.bodies.running()
	if n == 0 {
		return true
	}
	if r.now() >= t.until {
		r.warnBodies(t, n)
		return true
	}
	if !r.waitingEnd {
		r.waitingEnd = true
		r.armDrain(t)
	}
	return false
}

// bodiesLeft is the error Run returns when bodies of its last term still
// run as it ends (nil if none).
func (r *runner[M]) bodiesLeft() error {
	if t := r.ending; t != nil && !r.e.releaseEarly {
		if n := t.bodies.running(); n > 0 {
			return r.bodiesError(n)
		}
	}
	return nil
}

// termKey is the key under which a term's context carries its
// *termBodies, for runInTerm.
type termKey struct{}

// termBodies counts the bodies running in one term. Once the loop has
// ended the term (seal), no body starts in it, and the last body to return
// calls drained.
type termBodies struct {
	mu      sync.Mutex
	n       int
	sealed  bool
	drained func()
}

// bodiesOf returns the bodies of the term whose context is termCtx (nil
// for a context that is no term's).
func bodiesOf(termCtx context.Context) *termBodies {
	b, _ := termCtx.Value(termKey{}).(*termBodies)
	return b
}

// enter counts one more body, unless the term has ended: it reports
// whether the body may run.
func (b *termBodies) enter() bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sealed {
		return false
	}
	b.n++
	return true
}

// leave counts a body that returned; the last one after seal calls
// drained.
func (b *termBodies) leave() {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.n--
	last := b.n == 0 && b.sealed
	f := b.drained
	b.mu.Unlock()
	if last && f != nil {
		f()
	}
}

// seal refuses bodies from now on; drained is called when the last one
// running returns.
func (b *termBodies) seal(drained func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sealed, b.drained = true, drained
}

// running returns how many bodies run.
func (b *termBodies) running() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n
}
