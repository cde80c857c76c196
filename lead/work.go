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

// InTerm runs fn once, now, as one of the bodies of the term this elector
// leads, as Lead runs its fn: fn's context ends with ctx or with the term
// and carries the term's fencing token, and the lease is not released nor
// handed over while fn runs (until the term's deadline at most). It is
// for work that arrives from outside, a request or a controller's
// reconcile, which must not run on after the term ends.
//
// InTerm returns fn's result; if the term ended before fn returned, an
// error wrapping ErrLeadershipLost (and fn's error, if any). If this
// elector does not lead, it returns an error wrapping ErrNotLeader
// without calling fn. A nil ctx or fn, or an Elector not made by New, is
// an error wrapping ErrNilArgument.
func (e *Elector[M]) InTerm(ctx context.Context, fn func(ctx context.Context, t Term) error) error {
	if err := e.usable("InTerm"); err != nil {
		return err
	}
	switch {
	case ctx == nil:
		return fmt.Errorf("%w: InTerm: ctx is nil", ErrNilArgument)
	case fn == nil:
		return fmt.Errorf("%w: InTerm: fn is nil", ErrNilArgument)
	}
	t, termCtx, ok := e.currentTerm()
	if !ok {
		return fmt.Errorf("%w: InTerm: %s does not lead %q", ErrNotLeader, e.id, e.name)
	}
	lost, err := runInTerm(ctx, termCtx, t, fn)
	if lost {
		return errors.Join(context.Cause(termCtx), err)
	}
	return err
}

// runInTerm runs fn with a context that ends with ctx or with the term, and
// returns fn's error and whether the term ended before fn returned. fn is
// one of the term's bodies: the term's lease is not released while it runs
// (see holdRelease in term.go), and once Run's loop has ended the term no body starts
// in it (lost, without running fn).
func runInTerm(ctx, termCtx context.Context, t Term, fn func(context.Context, Term) error) (lost bool, err error) {
	b := bodiesOf(termCtx)
	if !b.enter() {
		return true, nil
	}
	defer b.leave()
	if termCtx.Err() != nil {
		// The term ended (its deadline passed, say) before its loop
		// sealed it: fn does not start.
		return true, nil
	}
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
	// If stop reports false, the term's end has already cancelled the body;
	// a deadline passed that nothing has acted on yet ends it too.
	return !stop() || termCtx.Err() != nil, err
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

// EveryOption configures one call of Every. It is a type apart from Option
// and LeadOption, so that the compiler refuses one where another is meant.
type EveryOption func(*everyOptions)

type everyOptions struct {
	fromCall    bool // AtTermStart(false): ticks from the call, not from each term
	stopOnError bool
}

// AtTermStart says whether Every's schedule starts with each term (true, the
// default) or with the call of Every (false).
//
// With true, fn runs as soon as Every sees a term start, then every
// interval after that first run, until the term ends; the next term starts
// a schedule of its own, again with a run at its start.
//
// With false, Every ticks every interval from the moment it is called,
// whether or not this elector leads, and fn runs on the ticks that come
// while it leads: the first run comes one interval after the call at the
// earliest, and a new leader waits up to an interval for its first run.
// Use it for a task that must not run more often than interval across
// handovers within one process, or whose ticks must stay aligned to the
// call.
func AtTermStart(atStart bool) EveryOption {
	return func(o *everyOptions) { o.fromCall = !atStart }
}

// StopOnError makes Every return the first error fn returns while its
// term is still going, instead of logging it and keeping the schedule.
func StopOnError() EveryOption { return func(o *everyOptions) { o.stopOnError = true } }

// EveryInstruments is implemented by Instruments that count failed runs
// of Every (package metrics does, as tenure_every_errors_total). The
// elector finds it by a type assertion on what WithInstruments was given.
type EveryInstruments interface {
	// EveryFailed reports that a run of Every for the election name
	// returned err while its term was still going. It is called from
	// Every's goroutine and must be quick and safe for concurrent use.
	EveryFailed(name string, err error)
}

// Every runs fn periodically while this elector leads, until ctx ends.
//
// When runs happen (by default, or with AtTermStart(true)):
//
//   - The first run of a term starts as soon as Every sees that this
//     elector leads: at once if it leads when Every is called, else when
//     the term starts.
//   - Later runs of the term start on the grid first + k*interval (k = 1,
//     2, ...), first being the start of the term's first run: the
//     interval is measured from the start of one run to the start of the
//     next, so a run's length does not shift the grid. A run that lasts
//     longer than interval skips the grid times it overlaps: the next run
//     starts at the first grid time after it returned. Runs never
//     overlap.
//   - When the term ends, the run in progress has its context cancelled
//     and no other run of that term starts. Every waits for the next term
//     of this elector, which starts a new schedule with a run at its
//     start.
//
// With AtTermStart(false), ticks come every interval from the call of
// Every instead, whether this elector leads or not; fn runs on the ticks
// that come while it leads, and skips ticks as above.
//
// fn's context ends with the term, as Lead's does, and carries the term's
// fencing token (see fence.FromContext).
//
// An error from fn does not end the schedule: it is logged at Warn through
// the elector's logger (WithLogger), with the election name and the term's
// token, at most once per ErrorInterval for each call of Every (the line
// says how many runs failed since the last line), and counted through
// EveryInstruments if the elector's Instruments implement it. With
// StopOnError, Every returns the first such error instead. An error from a
// run cut short by the end of its term, or by the end of ctx, is dropped
// either way: the next leader runs the task.
//
// fn is one of the term's bodies, as Lead's is: the lease is not released
// while it runs, up to the term's deadline (its last renewal sent plus
// RenewDeadline); if it still runs then, the lease expires in the store
// instead (see Run).
//
// Every returns ctx's error when ctx ends, an error wrapping ErrStopped
// when Run has returned (at once if it had returned before Every was
// called), or, with StopOnError, fn's error as above. interval must be
// positive; a nil ctx, fn or option, or an Elector not made by New, is an
// error wrapping ErrNilArgument. Like Lead, Every may be called before Run
// starts: it waits until this elector leads.
func (e *Elector[M]) Every(ctx context.Context, interval time.Duration, fn func(ctx context.Context, t Term) error, opts ...EveryOption) error {
	if err := e.usable("Every"); err != nil {
		return err
	}
	switch {
	case ctx == nil:
		return fmt.Errorf("%w: Every: ctx is nil", ErrNilArgument)
	case fn == nil:
		return fmt.Errorf("%w: Every: fn is nil", ErrNilArgument)
	}
	var o everyOptions
	for i, opt := range opts {
		if opt == nil {
			return fmt.Errorf("%w: Every: option %d of %d is nil", ErrNilArgument, i+1, len(opts))
		}
		opt(&o)
	}
	if interval <= 0 {
		return fmt.Errorf("lead: Every interval is %v, must be > 0", interval)
	}
	r := &everyRun[M]{e: e, fn: fn, stopOnError: o.stopOnError}
	r.instruments, _ = e.instruments.(EveryInstruments)
	if o.fromCall {
		return r.fromCall(ctx, interval)
	}
	return r.perTerm(ctx, interval)
}

// everyRun is one call of Every.
type everyRun[M any] struct {
	e           *Elector[M]
	fn          func(context.Context, Term) error
	stopOnError bool
	instruments EveryInstruments // nil when the elector's do not count
	logged      bool             // a failure has been logged
	lastLog     time.Time        // when (the elector's clock)
	unlogged    int              // failures since the last line
}

// run runs fn in term t and returns the error Every must return, if any.
func (r *everyRun[M]) run(ctx, termCtx context.Context, t Term) error {
	lost, err := runInTerm(ctx, termCtx, t, r.fn)
	if err == nil || lost || ctx.Err() != nil {
		return nil
	}
	if r.stopOnError {
		return err
	}
	r.failed(t, err)
	return nil
}

// failed counts and logs a failed run, at most one line per ErrorInterval.
func (r *everyRun[M]) failed(t Term, err error) {
	if r.instruments != nil {
		r.instruments.EveryFailed(r.e.name, err)
	}
	r.unlogged++
	now := r.e.clock.Now()
	if r.logged && now.Sub(r.lastLog) < r.e.Config().ErrorInterval {
		return
	}
	r.e.log.Warn("Every: a run failed; the schedule goes on", "token", uint64(t.Token), "failed_runs", r.unlogged, "error", err)
	r.logged, r.lastLog, r.unlogged = true, now, 0
}

// stopped is what Every returns once Run has returned: ctx's error if ctx
// has ended too (the caller's reason), else one wrapping ErrStopped.
func (r *everyRun[M]) stopped(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return fmt.Errorf("%w: %q", ErrStopped, r.e.name)
}

// perTerm is Every with a schedule per term (AtTermStart(true)).
func (r *everyRun[M]) perTerm(ctx context.Context, interval time.Duration) error {
	e := r.e
	var last fence.Token
	for {
		t, termCtx, err := e.awaitTerm(ctx, last)
		if err != nil {
			if errors.Is(err, ErrStopped) {
				return r.stopped(ctx)
			}
			return err
		}
		last = t.Token
		if err := r.term(ctx, termCtx, t, interval); err != nil {
			return err
		}
	}
}

// term runs the schedule of term t until the term ends (it returns nil
// then), ctx ends or Run returns.
func (r *everyRun[M]) term(ctx, termCtx context.Context, t Term, interval time.Duration) error {
	e := r.e
	first := e.clock.Now()
	for {
		if err := r.run(ctx, termCtx, t); err != nil {
			return err
		}
		if termCtx.Err() != nil {
			return nil
		}
		// The next run starts at the first first+k*interval still to
		// come: the ticks a long run overlapped are skipped.
		wait := interval - e.clock.Now().Sub(first)%interval
		tick := make(chan struct{})
		timer := e.clock.AfterFunc(wait, func() { close(tick) })
		select {
		case <-tick:
			continue
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-e.stopped:
			timer.Stop()
			return r.stopped(ctx)
		case <-termCtx.Done():
			timer.Stop()
			return nil
		}
	}
}

// fromCall is Every with ticks from the call (AtTermStart(false)).
func (r *everyRun[M]) fromCall(ctx context.Context, interval time.Duration) error {
	e := r.e
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
			return r.stopped(ctx)
		case <-tick:
		}
		start := e.clock.Now()
		if t, termCtx, ok := e.currentTerm(); ok {
			if err := r.run(ctx, termCtx, t); err != nil {
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
