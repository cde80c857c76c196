package lead

import (
	"context"
	"fmt"

	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/fsm"
)

// Resign steps down and stays in the election. If this elector leads, its
// term ends at once (IsLeader and the others say so as soon as Resign is
// called, the contexts of the term's bodies are cancelled and the
// observers get Stopped, with a reason that says "resigned"), and once the
// term's bodies (the fn of Lead and Every) have returned the lease is
// released, so that another candidate takes over at once. The elector goes
// on as a follower, but does not start a term again until it has seen
// another holder's record, or until one LeaseDuration has passed,
// whichever comes first: it does not take the lease it released straight
// back, and it does lead again if no other candidate does.
//
// Resign returns nil once the lease has been released (or found taken by
// another). The wait for the bodies is bounded as when Run's ctx ends (see
// Run): if some still run at the term's deadline, the lease is not
// released and Resign returns an error wrapping ErrBodiesStillRunning (the
// lease then expires in the store; the elector releases it if the bodies
// return before it does). Resign returns an error wrapping ErrNotLeader if
// this elector does not lead, ErrStopped if Run has returned or returns
// before the step-down is over, and ctx's error if ctx ends first (the
// step-down goes on without it). A nil ctx, or an Elector not made by
// New, is an error wrapping ErrNilArgument.
//
// A body of the term (the fn of Lead or Every) that resigns passes its own
// context: Resign cancels it, and so returns its error at once; the lease
// is released once the body has returned. With any other ctx, Resign would
// wait for the body that called it until the term's deadline.
func (e *Elector[M]) Resign(ctx context.Context) error {
	if err := e.usable("Resign"); err != nil {
		return err
	}
	if ctx == nil {
		return fmt.Errorf("%w: Resign: ctx is nil", ErrNilArgument)
	}
	e.mu.Lock()
	select {
	case <-e.stopped:
		e.mu.Unlock()
		return fmt.Errorf("%w: Resign: %q", ErrStopped, e.name)
	default:
	}
	t, r := e.leadingLocked(), e.run
	if t == nil || r == nil {
		e.mu.Unlock()
		return fmt.Errorf("%w: Resign: %q", ErrNotLeader, e.name)
	}
	// From now on the term is not led: the queries say so, and its work
	// is cancelled, without waiting for the loop.
	t.resigned = true
	t.cancel(fmt.Errorf("%w: %s", ErrLeadershipLost, fsm.ReasonResigned))
	q := &resignation{token: t.term.Token, done: make(chan struct{})}
	e.resignReq = q
	e.notifyLocked()
	e.mu.Unlock()
	r.loop.post(r, msgResign)
	select {
	case <-q.done:
		return q.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// resignation is one call of Resign: the term it ends, and its outcome.
type resignation struct {
	token fence.Token
	done  chan struct{}
	err   error
}

// finish tells Resign its outcome.
func (q *resignation) finish(err error) {
	q.err = err
	close(q.done)
}

// resign handles msgResign: the machine is told to resign if it still
// leads in the term Resign ended; the release that follows waits for the
// term's bodies (holdRelease), and settleResign tells Resign when it is
// over.
func (r *runner[M]) resign() {
	e := r.e
	e.mu.Lock()
	q := e.resignReq
	e.resignReq = nil
	e.mu.Unlock()
	if q == nil {
		return
	}
	if token, _, ok := r.m.Term(); !ok || fence.Token(token) != q.token || r.stopping {
		q.finish(fmt.Errorf("%w: Resign: %q: the term ended first", ErrNotLeader, e.name))
		return
	}
	r.resigning = q
	r.step(fsm.Event{Kind: fsm.Resign})
}

// settleResign tells the Resign in progress that it is over once the
// machine no longer holds (or releases) the lease: a follower.
func (r *runner[M]) settleResign() {
	q := r.resigning
	if q == nil || r.holding || r.m.Stopped() || r.m.State() == fsm.Expiring {
		return
	}
	r.resigning = nil
	q.finish(nil)
}

// endResign tells a Resign not over yet, when the runner ends, that Run
// has returned.
func (r *runner[M]) endResign() {
	e := r.e
	e.mu.Lock()
	q := e.resignReq
	e.resignReq = nil
	e.mu.Unlock()
	for _, q := range []*resignation{q, r.resigning} {
		if q != nil {
			q.finish(fmt.Errorf("%w: Resign: %q: Run returned before the step-down was over", ErrStopped, e.name))
		}
	}
	r.resigning = nil
}
