package lead

import (
	"context"
	"fmt"

	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/fsm"
)

// A term's life in the driver follows the machine's actions: startTerm at
// StartedLeading, refreshTerm after each step that moved its deadline, and
// endTerm at StoppedLeading. The machine emits one StoppedLeading for each
// StartedLeading, before it stops (fsm's property test checks both), so
// each term ends exactly once. Two timers cancel the term's work without
// waiting for Run's loop: the watchdog at the term's deadline, and Run's
// ctx ending.

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
	if e.removed {
		// Removed from its Group before the loop heard of it: as if its
		// ctx had ended.
		cancel(fmt.Errorf("%w: %s", ErrLeadershipLost, fsm.ReasonStopped))
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

// endRun is, for an elector of a Group, what the end of Run's ctx is for
// one: from now on it does not lead (IsLeader and the others say so at
// once), and its term's work is cancelled, without waiting for the loop,
// which is told too (Group.Remove posts msgDone).
func (e *Elector[M]) endRun() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.removed = true
	if t := e.term; t != nil {
		t.cancel(fmt.Errorf("%w: %s", ErrLeadershipLost, fsm.ReasonStopped))
	}
}

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

// endTerm closes the term the machine ended for reason: its work is
// cancelled, its timers stopped, the observers told. From now on no body
// starts in it, and the release of its lease waits for the bodies running
// (see drain.go): the last to return tells the loop.
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
