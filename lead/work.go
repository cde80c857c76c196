package lead

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tenure-go/tenure/fence"
)

// LeadOption configures one call of Lead. It is a type apart from Option,
// which configures the Elector, so that the compiler refuses one where the
// other is meant. Repeat is the only one: the option keeps both common forms
// short, Lead(ctx, fn) and Lead(ctx, fn, Repeat()), and leaves room for
// more without changing Lead's signature.
type LeadOption func(*leadOptions)

type leadOptions struct{ repeat bool }

// Repeat makes Lead run the body again in every new term, until ctx ends
// or the body fails while its term is still going.
func Repeat() LeadOption { return func(o *leadOptions) { o.repeat = true } }

// Lead waits until this elector leads, then runs fn with a context that
// ends with the term (and that carries the term's fencing token, see
// fence.FromContext): from the instant the term ends its Err and Done say
// so (they read the clock), and a goroutine blocked on a Done channel it
// took earlier is woken by the term's timer, as soon as the runtime runs
// it.
//
// fn is one of the term's bodies: when the term ends (Run's ctx ends,
// Resign, Group.Remove, or the term is lost), its context is cancelled,
// and the lease is not released before fn has returned. The wait lasts
// until the term's deadline (its last renewal sent plus RenewDeadline) at
// most: if fn still runs then, the lease is not released but expires in
// the store, and Run returns an error wrapping ErrBodiesStillRunning (see
// Run). If the term ends before fn starts, fn does not run.
//
// Without Repeat, Lead returns fn's result; if the term ended before fn
// returned, it returns an error wrapping ErrLeadershipLost (and fn's error,
// if any). With Repeat, Lead waits for the next term after each run and runs
// fn again; it returns when ctx ends (ctx's error) or when fn returns an
// error while its term is still going (that error).
//
// Lead returns an error wrapping ErrNilArgument, without waiting, for a nil
// ctx, fn or option, or an Elector not made by New.
//
// Lead may be called before Run starts, as it usually is (Run and Lead
// started side by side): it then waits for Run to start and win a term.
// It returns an error wrapping ErrStopped once Run has returned, whether
// Lead was waiting then or is called afterwards. It cannot tell that Run
// will never be called: bound the wait with ctx if that can happen.
func (e *Elector[M]) Lead(ctx context.Context, fn func(ctx context.Context, t Term) error, opts ...LeadOption) error {
	if err := e.usable("Lead"); err != nil {
		return err
	}
	switch {
	case ctx == nil:
		return fmt.Errorf("%w: Lead: ctx is nil", ErrNilArgument)
	case fn == nil:
		return fmt.Errorf("%w: Lead: fn is nil", ErrNilArgument)
	}
	var o leadOptions
	for i, opt := range opts {
		if opt == nil {
			return fmt.Errorf("%w: Lead: option %d of %d is nil", ErrNilArgument, i+1, len(opts))
		}
		opt(&o)
	}
	var last fence.Token
	for {
		t, termCtx, err := e.awaitTerm(ctx, last)
		if err != nil {
			return err
		}
		last = t.Token
		lost, err := runInTerm(ctx, termCtx, t, fn)
		switch {
		case ctx.Err() != nil && o.repeat:
			return ctx.Err()
		case !o.repeat && lost:
			return errors.Join(context.Cause(termCtx), err)
		case !o.repeat:
			return err
		case err != nil && !lost:
			return err
		}
	}
}

// runInTerm runs fn with a context that ends with ctx or with the term, and
// returns fn's error and whether the term ended before fn returned. fn is
// one of the term's bodies: the term's lease is not released while it runs
// (see drain.go), and once Run's loop has ended the term no body starts
// in it (lost, without running fn).
func runInTerm(ctx, termCtx context.Context, t Term, fn func(context.Context, Term) error) (lost bool, err error) {
	b := bodiesOf(termCtx)
	if !b.enter() {
		return true, nil
	}
	defer b.leave()
	inner, cancel := context.WithCancelCause(fence.WithToken(ctx, t.Token))
	defer cancel(nil)
	stop := context.AfterFunc(termCtx, func() { cancel(context.Cause(termCtx)) })
	// Asked whether it is done, the body's context asks the term's, which
	// reads the clock (checkedContext): the answer does not wait for the
	// goroutine that AfterFunc starts.
	bodyCtx := checkedContext{Context: inner, check: func() {
		if inner.Err() == nil && termCtx.Err() != nil {
			cancel(context.Cause(termCtx))
		}
	}}
	err = fn(bodyCtx, t)
	// If stop reports false, the term's end has already cancelled the body.
	return !stop(), err
}

// awaitTerm waits for a term whose token is larger than after.
func (e *Elector[M]) awaitTerm(ctx context.Context, after fence.Token) (Term, context.Context, error) {
	for {
		changed := e.changes()
		if t, termCtx, ok := e.currentTerm(); ok && t.Token > after {
			return t, termCtx, nil
		}
		select {
		case <-e.stopped:
			return Term{}, nil, fmt.Errorf("%w: %q", ErrStopped, e.name)
		default:
		}
		select {
		case <-ctx.Done():
			return Term{}, nil, ctx.Err()
		case <-e.stopped:
		case <-changed:
		}
	}
}

// Every runs fn every interval while this elector leads, until ctx ends.
// Ticks that come while it follows are skipped, and so are ticks that come
// while fn is still running. fn's context ends with the term, as Lead's
// does, and carries the term's fencing token. fn is one of the term's
// bodies, as Lead's is: the lease is not released while it runs, up to the
// term's deadline (its last renewal sent plus RenewDeadline); if it still
// runs then, the lease expires in the store instead (see Run).
//
// Every returns ctx's error when ctx ends, an error wrapping ErrStopped
// when Run has returned (at once if it had returned before Every was
// called), or the first error fn returns while its term is still going (an
// error from a run cut short by the end of its term is dropped: the next
// leader runs the task). interval must be positive; a nil ctx or fn, or an
// Elector not made by New, is an error wrapping ErrNilArgument. Like Lead,
// Every may be called before Run starts: its ticks are skipped until this
// elector leads.
func (e *Elector[M]) Every(ctx context.Context, interval time.Duration, fn func(ctx context.Context, t Term) error) error {
	if err := e.usable("Every"); err != nil {
		return err
	}
	switch {
	case ctx == nil:
		return fmt.Errorf("%w: Every: ctx is nil", ErrNilArgument)
	case fn == nil:
		return fmt.Errorf("%w: Every: fn is nil", ErrNilArgument)
	}
	if interval <= 0 {
		return fmt.Errorf("lead: Every interval is %v, must be > 0", interval)
	}
	tick := make(chan struct{}, 1)
	var timer Timer
	schedule := func(d time.Duration) {
		timer = e.clock.AfterFunc(d, func() {
			select {
			case tick <- struct{}{}:
			default:
			}
		})
	}
	schedule(interval)
	defer func() { timer.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-e.stopped:
			if err := ctx.Err(); err != nil {
				return err // both ended: ctx's end is the caller's reason
			}
			return fmt.Errorf("%w: %q", ErrStopped, e.name)
		case <-tick:
		}
		start := e.clock.Now()
		t, termCtx, ok := e.currentTerm()
		if ok {
			if lost, err := runInTerm(ctx, termCtx, t, fn); err != nil && !lost && ctx.Err() == nil {
				return err
			}
		}
		// Next tick one interval after this one, skipping ticks that a
		// long run overlapped.
		elapsed := e.clock.Now().Sub(start)
		skip := (elapsed / interval) * interval
		schedule(interval - (elapsed - skip))
	}
}
