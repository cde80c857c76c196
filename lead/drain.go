package lead

import (
	"context"
	"fmt"
	"sync"

	"github.com/tenure-go/tenure/fsm"
)

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
