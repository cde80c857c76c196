package lead

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tenure-go/tenure/fsm"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

// result is the outcome of one store operation, sent back to Run's loop.
type result[M any] struct {
	read bool
	rec  lease.Record[M]
	rev  lease.Revision
	err  error
}

// Run takes part in the election until ctx ends. Then it steps down if it
// leads, releases the lease (unless WithReleaseOnStop(false)) so that a
// successor leads at once, and returns nil. From the moment ctx ends this
// elector no longer reports itself leader (IsLeader, Term, ConfirmedWithin
// and Status say so at once, without waiting for Run's loop) and the
// contexts of the work that Lead and Every run are cancelled.
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
	if e.ran {
		e.mu.Unlock()
		return ErrAlreadyRunning
	}
	e.ran = true
	e.epoch = e.clock.Now()
	e.runDone = ctx.Done()
	cfg := e.cfg
	e.mu.Unlock()

	m, err := fsm.New(fsm.Options{Identity: e.id, Config: cfg, Rand: e.rand, LossyStore: e.lossy})
	if err != nil {
		// Run has returned: Lead, Every and Done must not wait for it.
		e.markReady()
		close(e.stopped)
		return err
	}
	r := runner[M]{
		e:       e,
		ctx:     ctx,
		m:       m,
		cfg:     cfg,
		results: make(chan result[M], 1),
		wake:    make(chan struct{}, 1),
		errLog:  map[string]time.Duration{},
		obs:     newObserverQueue(e.observers),
	}
	err = r.run(ctx)
	r.obs.close()
	close(e.stopped)
	e.mu.Lock()
	e.notifyLocked()
	e.mu.Unlock()
	return err
}

// runner is the state of one Run.
type runner[M any] struct {
	e       *Elector[M]
	ctx     context.Context // Run's
	m       *fsm.Machine
	cfg     lease.Config
	results chan result[M]
	wake    chan struct{}
	timer   Timer
	// The watch, received from in Run's loop itself: watcher is nil when
	// the store cannot watch; watchCh is nil while no watch is up;
	// watchStarted brings the outcome of Watch; watchRetry is signalled
	// when it is time to watch again after a failure.
	watcher      store.Watcher[M]
	watchCh      <-chan store.Event[M]
	watchStarted chan watchStart[M]
	watchRetry   chan struct{}
	watchTimer   Timer
	opCtx        context.Context
	ops          sync.WaitGroup
	errLog       map[string]time.Duration
	obs          *observerQueue
	fatal        error
	swapKind     fsm.SwapKind
}

func (r *runner[M]) run(ctx context.Context) error {
	e := r.e
	// Store operations outlive ctx (the release happens after it ends) but
	// not Run.
	opCtx, cancelOps := context.WithCancel(context.WithoutCancel(ctx))
	r.opCtx = opCtx
	defer func() {
		cancelOps()
		r.ops.Wait()
		if r.timer != nil {
			r.timer.Stop()
		}
		if r.watchTimer != nil {
			r.watchTimer.Stop()
		}
	}()
	if w, ok := e.st.(store.Watcher[M]); ok {
		r.watcher = w
		r.watchStarted = make(chan watchStart[M], 1)
		r.watchRetry = make(chan struct{}, 1)
		r.startWatch()
	}
	e.log.Debug("elector running", "lease_duration", r.cfg.LeaseDuration, "renew_deadline", r.cfg.RenewDeadline)

	r.step(fsm.Event{Kind: fsm.Tick})
	stopping := false
	for !r.m.Stopped() {
		if r.fatal != nil && !stopping {
			stopping = true
			r.step(fsm.Event{Kind: fsm.Stop, Release: e.releaseOnStop})
			continue
		}
		var done <-chan struct{}
		if !stopping {
			done = ctx.Done()
		}
		select {
		case <-done:
			stopping = true
			// Local state says "not leader" from this moment.
			r.endTerm(fsm.ReasonStopped)
			r.step(fsm.Event{Kind: fsm.Stop, Release: e.releaseOnStop})
		case res := <-r.results:
			r.handleResult(res)
		case ev, ok := <-r.watchCh:
			if ok {
				r.handleWatch(ev)
			} else {
				r.watchCh = nil
				r.watchFailed(errors.New("watch closed"))
			}
		case ws := <-r.watchStarted:
			r.watchBegan(ws)
		case <-r.watchRetry:
			r.startWatch()
		case <-r.wake:
			r.step(fsm.Event{Kind: fsm.Tick})
		case <-e.reconf:
			e.mu.Lock()
			r.cfg = e.cfg
			e.mu.Unlock()
			r.step(fsm.Event{Kind: fsm.Reconfigure, Config: r.cfg})
		}
	}
	r.endTerm(fsm.ReasonStopped)
	e.markReady()
	return r.fatal
}

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
func (r *runner[M]) step(ev fsm.Event) {
	ev.Now = r.now()
	for _, a := range r.m.Step(ev) {
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
	e.mu.Unlock()
	r.arm()
}

func (r *runner[M]) now() time.Duration { return r.e.clock.Now().Sub(r.e.epoch) }

func (r *runner[M]) arm() {
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
	at := r.m.NextWake()
	if at == fsm.Never || r.m.Stopped() {
		return
	}
	d := max(at-r.now(), 0)
	r.timer = r.e.clock.AfterFunc(d, func() {
		select {
		case r.wake <- struct{}{}:
		default:
		}
	})
}

func (r *runner[M]) perform(a fsm.Action) {
	e := r.e
	switch a.Kind {
	case fsm.Read:
		r.startOp(OpRead, func(ctx context.Context) (lease.Record[M], lease.Revision, error) {
			return e.st.Get(ctx, e.name)
		})
	case fsm.Swap:
		next := r.buildRecord(a)
		r.swapKind = a.Swap
		r.startOp(opName(a.Swap), func(ctx context.Context) (lease.Record[M], lease.Revision, error) {
			return e.st.CompareAndSwap(ctx, e.name, a.Expected, next)
		})
	case fsm.StartedLeading:
		r.startTerm(a)
	case fsm.StoppedLeading:
		r.endTerm(a.Reason)
	case fsm.Report:
		r.report(a)
	case fsm.Done:
	}
}

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
		Metadata:      meta,
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

func (r *runner[M]) startOp(kind string, op func(context.Context) (lease.Record[M], lease.Revision, error)) {
	e := r.e
	timeout := r.cfg.BackendTimeout
	r.ops.Go(func() {
		ctx, cancel := context.WithTimeout(r.opCtx, timeout)
		defer cancel()
		began := e.clock.Now()
		rec, rev, err := op(ctx)
		if e.instruments != nil {
			e.instruments.StoreOp(e.name, kind, e.clock.Now().Sub(began), err)
		}
		r.results <- result[M]{read: kind == OpRead, rec: rec, rev: rev, err: err}
	})
}

// permanent reports whether err is the store refusing what this elector
// writes, which retrying cannot mend.
func permanent(err error) bool {
	return errors.Is(err, store.ErrInvalidName) || errors.Is(err, store.ErrInvalidRecord) ||
		errors.Is(err, store.ErrMetadataTooLarge) || errors.Is(err, store.ErrEncode)
}

func (r *runner[M]) handleResult(res result[M]) {
	e := r.e
	defer e.markReady()
	op := OpRead
	if !res.read {
		op = opName(r.swapKind)
	}
	ev := fsm.Event{Err: res.err}
	var bad error // the store answered with a corrupt record
	switch {
	case res.read && errors.Is(res.err, store.ErrNotFound):
		ev.Kind, ev.Absent, ev.Err = fsm.ReadDone, true, nil
	case res.read && errors.Is(res.err, store.ErrCorruptRecord):
		ev.Kind, ev.Corrupt, bad = fsm.ReadDone, true, res.err
	case res.read && res.err != nil:
		ev.Kind = fsm.ReadFailed
		r.logError(op, res.err)
	case res.read:
		ev.Kind = fsm.ReadDone
		bad = r.fill(&ev, res.rec, res.rev)
	case res.err == nil:
		ev.Kind = fsm.SwapDone
		bad = r.fill(&ev, res.rec, res.rev)
	case errors.Is(res.err, store.ErrConflict) && res.rev == 0:
		ev.Kind, ev.Absent = fsm.SwapConflict, true
	case errors.Is(res.err, store.ErrConflict):
		ev.Kind = fsm.SwapConflict
		bad = r.fill(&ev, res.rec, res.rev)
	case errors.Is(res.err, store.ErrCorruptRecord):
		// The store refused to overwrite a record it cannot read: the swap
		// was not applied, and the store holds something unusable.
		ev.Kind, ev.Corrupt, bad = fsm.SwapConflict, true, res.err
	default:
		ev.Kind = fsm.SwapFailed
		r.logError(op, res.err)
		if permanent(res.err) {
			r.fatal = fmt.Errorf("lead: %s of %q refused by the store: %w", r.swapKind, e.name, res.err)
		}
	}
	switch {
	case bad != nil:
		ev.Err = bad
		r.logCorrupt(op, bad)
	case ev.Kind != fsm.ReadFailed && ev.Kind != fsm.SwapFailed:
		// The store answered (a record, its absence, or a conflict).
		e.mu.Lock()
		e.lastErr = nil
		e.mu.Unlock()
	}
	r.step(ev)
	if bad == nil && ev.Kind != fsm.ReadFailed && ev.Kind != fsm.SwapFailed {
		r.remember(ev, res.rec)
	}
}

// fill puts the record a store answered with into ev, after checking it as
// untrusted input: a record outside store.ValidateStored, or one at revision
// 0, is marked corrupt and the error returned.
func (r *runner[M]) fill(ev *fsm.Event, rec lease.Record[M], rev lease.Revision) error {
	ev.Revision = rev
	if err := checkStored(rec, rev); err != nil {
		ev.Corrupt = true
		return fmt.Errorf("lead: record of %q at revision %d: %w", r.e.name, rev, err)
	}
	ev.Lease = leaseOf(rec)
	return nil
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
	if ok {
		e.seeLeaderLocked(absent)
	}
}

func leaseOf[M any](rec lease.Record[M]) fsm.Lease {
	return fsm.Lease{Holder: rec.Holder, Token: rec.Token, Transitions: rec.Transitions, LeaseDuration: rec.LeaseDuration}
}
