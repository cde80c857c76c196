package lead

import (
	"context"
	"fmt"

	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/fsm"
	"github.com/tenure-go/tenure/lease"
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
	q, err := e.stepDown("Resign", "")
	if err != nil {
		return err
	}
	select {
	case <-q.done:
		return q.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// stepDown ends the term this elector leads, for Resign (successor "") or
// HandOver (op), and has the loop release the lease once the term's bodies
// have returned, naming successor if any. It returns the resignation whose
// done says when the release is over.
func (e *Elector[M]) stepDown(op, successor string) (*resignation[M], error) {
	e.mu.Lock()
	select {
	case <-e.stopped:
		e.mu.Unlock()
		return nil, fmt.Errorf("%w: %s: %q", ErrStopped, op, e.name)
	default:
	}
	t, r := e.leadingLocked(), e.run
	if t == nil || r == nil {
		e.mu.Unlock()
		return nil, fmt.Errorf("%w: %s: %q", ErrNotLeader, op, e.name)
	}
	// From now on the term is not led: the queries say so, and its work
	// is cancelled, without waiting for the loop.
	reason := fsm.ReasonResigned
	if successor != "" {
		reason = fsm.ReasonHandedOver
	}
	t.resigned, t.handedOver = true, successor != ""
	t.cancel(fmt.Errorf("%w: %s", ErrLeadershipLost, reason))
	q := &resignation[M]{op: op, token: t.term.Token, successor: successor, done: make(chan struct{})}
	e.resignReq = q
	e.notifyLocked()
	e.mu.Unlock()
	r.loop.post(r, msgResign)
	return q, nil
}

// resignation is one call of Resign or HandOver: the term it ends, the
// successor the release names, and its outcome.
type resignation[M any] struct {
	op        string
	token     fence.Token
	successor string
	done      chan struct{}
	err       error
	// A HandOver's named release, once stored: its record and revision
	// (handed false if the machine did not see it stored). taken: the
	// machine's last answer shows the successor holding the lease in a
	// later term (the release's reply was lost, and a retry found it
	// taken).
	handed bool
	taken  bool
	named  lease.Record[M]
	rev    lease.Revision
}

// finish tells Resign its outcome.
func (q *resignation[M]) finish(err error) {
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
		q.finish(fmt.Errorf("%w: %s: %q: the term ended first", ErrNotLeader, q.op, e.name))
		return
	}
	r.resigning = q
	r.step(fsm.Event{Kind: fsm.Resign, Successor: q.successor})
}

// settleResign tells the Resign in progress that it is over once the
// machine no longer holds (or releases) the lease: a follower.
func (r *runner[M]) settleResign() {
	q := r.resigning
	if q == nil || r.holding || r.m.Stopped() || r.m.State() == fsm.Expiring {
		return
	}
	r.resigning = nil
	r.noteHandover(q)
	q.finish(nil)
}

// noteHandover notes, for a HandOver, whether the store took the release
// naming the successor, or the successor holds the lease already: the
// machine's last answer says.
func (r *runner[M]) noteHandover(q *resignation[M]) {
	if q.successor == "" {
		return
	}
	l, rev, absent, ok := r.m.Observed()
	switch {
	case !ok || absent:
	case l.Holder == q.successor && fence.Token(l.Token) > q.token:
		q.taken = true
	case l.Holder == "" && l.Successor == q.successor && fence.Token(l.Token) == q.token:
		e := r.e
		e.mu.Lock()
		if e.haveRec && e.rev == rev {
			q.handed, q.named, q.rev = true, e.rec, rev
		}
		e.mu.Unlock()
	}
}

// endResign tells a Resign not over yet, when the runner ends, that Run
// has returned.
func (r *runner[M]) endResign() {
	e := r.e
	e.mu.Lock()
	q := e.resignReq
	e.resignReq = nil
	e.mu.Unlock()
	if q := r.resigning; q != nil {
		// The release may have been stored as Run ended: a HandOver then
		// goes on, and gives the lease back to every candidate unless
		// the successor has it.
		r.noteHandover(q)
		if q.handed || q.taken {
			q.finish(nil)
			r.resigning = nil
		}
	}
	for _, q := range []*resignation[M]{q, r.resigning} {
		if q != nil {
			q.finish(fmt.Errorf("%w: %s: %q: Run returned before the step-down was over", ErrStopped, q.op, e.name))
		}
	}
	r.resigning = nil
}
