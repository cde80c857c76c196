package lead

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/store"
)

// HandOver ends this elector's term and hands the lease to successor, the
// identity of another candidate of the election: the term ends at once
// (as for Resign: IsLeader and the others say so, the bodies' contexts are
// cancelled, the observers get Stopped with a reason that says "handed
// over"), and once the term's bodies have returned the lease is released
// naming successor (lease.Record's Successor). Only successor may take
// such a release at once; every other candidate, this elector included,
// waits it out as a held lease, for one LeaseDuration from when it saw it.
//
// HandOver returns nil once this elector sees the record held by
// successor with a new term. The successor must be a live participant: an
// elector of the same name with that identity, running, that reads or
// hears of the release (a watch event, or its next poll). HandOver does not
// look for it beforehand, which would cost every follower a write: the
// named release is an offer that only a live successor takes. If none has
// taken it when ctx ends, or after the handover timeout (RenewDeadline,
// counted from when the release was stored, if ctx has no earlier
// deadline), HandOver gives the lease back to every candidate: it swaps
// the named release, from the revision it was stored at, for a plain
// release, which a successor that took the lease meanwhile makes fail. It
// then returns an error wrapping ErrHandOverFailed that says so; the same
// when the named release could not be stored (the lease expired or was
// taken by another first), or another candidate took the lease. If ctx
// ends before the release is stored (the term's bodies still run),
// HandOver returns ctx's error at once and the handover goes on without
// it: once stored, the release is the successor's for the handover
// timeout, and is then given back to every candidate. If Run returns
// after the release was stored, HandOver still waits for the successor
// as above (this elector then sees nothing more of the record: the swap
// that gives the lease back tells whether the successor took it). A
// release whose reply was lost but which the successor took counts as
// handed over.
//
// HandOver returns an error wrapping ErrNotLeader if this elector does not
// lead, ErrInvalidIdentity if successor breaks the rules of holder names or
// is this elector's own identity, ErrStopped if Run has returned or
// returns before the release, and ErrBodiesStillRunning as Resign does. A
// nil ctx, or an Elector not made by New, is an error wrapping
// ErrNilArgument. A body of the term that hands over passes its own
// context, as with Resign, and so returns at once (with its context's
// error): the handover goes on without it.
//
// An Elector of a Group (Group.Add) hands its own name over the same way.
func (e *Elector[M]) HandOver(ctx context.Context, successor string) error {
	if err := e.usable("HandOver"); err != nil {
		return err
	}
	if ctx == nil {
		return fmt.Errorf("%w: HandOver: ctx is nil", ErrNilArgument)
	}
	if err := store.ValidateName(successor); err != nil {
		return fmt.Errorf("%w: HandOver: successor (the argument): %w", ErrInvalidIdentity, err)
	}
	if successor == e.id {
		return fmt.Errorf("%w: HandOver: successor %q is this elector's own identity; use Resign", ErrInvalidIdentity, successor)
	}
	q, err := e.stepDown("HandOver", successor)
	if err != nil {
		return err
	}
	if e.tracer == nil {
		return e.handOver(ctx, q)
	}
	start := e.clock.Now()
	err = e.handOver(ctx, q)
	var ld time.Duration
	select {
	case <-q.done: // q's outcome is written before done is closed
		ld = q.named.LeaseDuration
	default: // ctx ended first: the release is still to come
	}
	e.tracer.HandOver(Operation{Name: e.name, Op: OpHandOver, Token: uint64(q.token), LeaseDuration: ld,
		Start: start, End: e.clock.Now(), Outcome: OutcomeOf(err), Err: err})
	return err
}

// handOver waits for q, the step down of HandOver, and then for the
// successor to lead.
func (e *Elector[M]) handOver(ctx context.Context, q *resignation[M]) error {
	select {
	case <-q.done:
	case <-ctx.Done():
		// The handover goes on without the caller (a body that hands over
		// passes its own ctx, which ends at once): once the release naming
		// the successor is stored, the successor has the handover timeout
		// to take it, and then it is given back to every candidate.
		go func() {
			<-q.done
			if q.err == nil && q.handed && !q.taken {
				_ = e.awaitSuccessor(context.WithoutCancel(ctx), q)
			}
		}()
		return ctx.Err()
	}
	if q.err != nil {
		return q.err
	}
	if q.taken {
		return nil
	}
	if !q.handed {
		return fmt.Errorf("%w: %q: the release naming %q was not stored: the lease expired or was taken first", ErrHandOverFailed, e.name, q.successor)
	}
	return e.awaitSuccessor(ctx, q)
}

// awaitSuccessor waits, after q's named release was stored, until the
// record this elector sees is held by the successor in a new term, and
// falls back to a plain release when ctx ends or the handover timeout
// passes first.
func (e *Elector[M]) awaitSuccessor(ctx context.Context, q *resignation[M]) error {
	timeout := make(chan struct{})
	t := e.clock.AfterFunc(e.Config().RenewDeadline, func() { close(timeout) })
	defer t.Stop()
	for {
		changed := e.changes()
		if rec, ok := e.Record(); ok && fence.Token(rec.Token) > q.token && rec.Holder != "" {
			if rec.Holder == q.successor {
				return nil
			}
			return fmt.Errorf("%w: %q: %q took the lease, not %q", ErrHandOverFailed, e.name, rec.Holder, q.successor)
		}
		select {
		case <-changed:
		case <-timeout:
			return e.fallBack(ctx, q, "within RenewDeadline")
		case <-ctx.Done():
			return e.fallBack(ctx, q, fmt.Sprintf("before ctx ended (%v)", ctx.Err()))
		}
	}
}

// fallBack gives the lease back to every candidate after a handover that
// the successor did not take: a compare-and-swap from the named release's
// revision to the same release naming nobody, so that it never overwrites
// the successor's term if the successor took it meanwhile.
func (e *Elector[M]) fallBack(ctx context.Context, q *resignation[M], when string) error {
	plain := q.named
	plain.Successor = ""
	plain.RenewedAt = e.clock.Now()
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.Config().BackendTimeout)
	defer cancel()
	rec, _, err := e.st.CompareAndSwap(cctx, e.name, q.rev, plain)
	switch {
	case err == nil:
		e.log.Info("handover not taken: released to every candidate", "successor", q.successor, "token", uint64(q.token))
		return fmt.Errorf("%w: %q: %q did not take the lease %s; released it to every candidate", ErrHandOverFailed, e.name, q.successor, when)
	case errors.Is(err, store.ErrConflict) && rec.Holder == q.successor && fence.Token(rec.Token) > q.token:
		return nil // taken as the timeout came
	case errors.Is(err, store.ErrConflict):
		return fmt.Errorf("%w: %q: %q did not take the lease %s, and the record moved on (holder %q)", ErrHandOverFailed, e.name, q.successor, when, rec.Holder)
	default:
		return fmt.Errorf("%w: %q: %q did not take the lease %s, and the plain release failed (the named one expires for the others after LeaseDuration): %w",
			ErrHandOverFailed, e.name, q.successor, when, err)
	}
}
