package lead

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/tenure-go/tenure/fence"
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

// watchStart is the outcome of one call to Watch, made off Run's loop (it
// may wait for the server): the channel to receive from, or the error.
type watchStart[M any] struct {
	ch  <-chan store.Event[M]
	err error
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

// report logs what the machine reported, rate-limited per ErrorInterval,
// and keeps a rollback for Err. A corrupt record was logged already when
// its answer was checked.
func (r *runner[M]) report(a fsm.Action) {
	e := r.e
	switch a.Problem {
	case fsm.ProblemRollback:
		var err error
		if a.Revision == 0 {
			err = fmt.Errorf("lead: %q: %w: the store holds no record after revision %d; no new term for %v", e.name, ErrRevisionRollback, a.Newest, a.Wait)
		} else {
			err = fmt.Errorf("lead: %q: %w: the store shows revision %d after revision %d; no new term for %v", e.name, ErrRevisionRollback, a.Revision, a.Newest, a.Wait)
		}
		e.mu.Lock()
		e.rollbackErr = err
		e.mu.Unlock()
		r.logAt(slog.LevelError, "rollback", "store revision went back", "revision", uint64(a.Revision), "newest", uint64(a.Newest), "wait", a.Wait, "error", err)
	case fsm.ProblemTokensExhausted:
		e.mu.Lock()
		err := e.exhaustedErr
		e.mu.Unlock()
		if err == nil {
			err = store.ErrTokenExhausted
		}
		r.logAt(slog.LevelError, "tokens", "fencing tokens exhausted", "token", a.Token, "error", err)
	case fsm.ProblemLongWait:
		r.logAt(slog.LevelWarn, "long-wait", "waiting longer than this elector's LeaseDuration for a longer lease seen in the store",
			"wait", a.Wait, "lease_duration", r.cfg.LeaseDuration, "revision", uint64(a.Revision))
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

// handleWatch passes a watch event to the machine as a hint: it may make the
// machine read the record, and the read's answer is what counts. Record()
// too is left to reads and swaps: anyone who can publish on the store's
// channel can forge an event.
func (r *runner[M]) handleWatch(ev store.Event[M]) {
	w := fsm.Event{Kind: fsm.Watched, Absent: ev.Absent, Revision: ev.Revision}
	switch {
	case ev.Err != nil && errors.Is(ev.Err, store.ErrCorruptRecord):
		// The record may have changed into something unreadable: a read
		// tells, and reports it.
		w.Corrupt = true
	case ev.Err != nil:
		r.logError("watch", ev.Err)
		return
	case !ev.Absent:
		if checkStored(ev.Record, ev.Revision) != nil {
			w.Corrupt = true
		} else {
			w.Lease = leaseOf(ev.Record)
		}
	}
	r.step(w)
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

// startWatch calls Watch off Run's loop (it may wait for the server); the
// loop gets the outcome on watchStarted and from then on receives the
// events itself, so a watch costs no goroutine of the elector's own.
func (r *runner[M]) startWatch() {
	if r.opCtx.Err() != nil {
		return
	}
	name := r.e.name
	r.ops.Go(func() {
		ch, err := r.watcher.Watch(r.opCtx, name)
		r.watchStarted <- watchStart[M]{ch: ch, err: err}
	})
}

// watchBegan takes the outcome of a Watch call.
func (r *runner[M]) watchBegan(ws watchStart[M]) {
	switch {
	case r.opCtx.Err() != nil:
		// Run is ending: the store closes the channel when opCtx ends.
	case errors.Is(ws.err, errors.ErrUnsupported):
		// A wrapper forwarded Watch to a store that cannot watch
		// (store.Watch): poll only.
		r.e.log.Info("the store cannot watch; followers poll", "error", ws.err)
		r.watcher = nil
	case ws.err != nil:
		r.watchFailed(ws.err)
	default:
		r.watchCh = ws.ch
	}
}

// watchFailed handles a watch that could not start or that ended: changes
// may be missed until the next watch is up, so the machine polls meanwhile,
// and a new watch starts after a retry interval.
func (r *runner[M]) watchFailed(err error) {
	if r.opCtx.Err() != nil {
		return
	}
	r.step(fsm.Event{Kind: fsm.WatchLost})
	r.e.log.Debug("store operation failed", "op", "watch", "error", err)
	if r.watchTimer != nil {
		r.watchTimer.Stop()
	}
	r.watchTimer = r.e.clock.AfterFunc(r.cfg.RetryInterval, func() {
		select {
		case r.watchRetry <- struct{}{}:
		default:
		}
	})
}

func (r *runner[M]) startTerm(a fsm.Action) {
	e := r.e
	ctx, cancel := context.WithCancelCause(context.Background())
	t := &activeTerm{
		term: Term{
			Name:     e.name,
			Identity: e.id,
			Token:    fence.Token(a.Token),
			Start:    e.epoch.Add(a.Since),
		},
		ctx:       fence.WithToken(ctx, fence.Token(a.Token)),
		cancel:    cancel,
		until:     r.m.LeaderUntil(),
		confirmed: r.m.LastConfirmed(),
	}
	// The term's work stops the moment Run's ctx ends, without waiting
	// for the loop to step down.
	t.unhook = context.AfterFunc(r.ctx, func() {
		cancel(fmt.Errorf("%w: %s", ErrLeadershipLost, fsm.ReasonStopped))
	})
	e.mu.Lock()
	e.term = t
	e.notifyLocked()
	e.mu.Unlock()
	r.armWatchdog(t)
	e.log.Info("started leading", "token", a.Token, "state", fsm.Leader.String())
	r.obs.push(Change{Kind: Started, Term: t.term})
}

// armWatchdog cancels the term's context at its deadline even if Run's loop
// is late: the work stops before the local deadline passes.
func (r *runner[M]) armWatchdog(t *activeTerm) {
	if t.watchdog != nil {
		t.watchdog.Stop()
	}
	d := max(t.until-r.now(), 0)
	t.watchdog = r.e.clock.AfterFunc(d, func() {
		t.cancel(fmt.Errorf("%w: %s", ErrLeadershipLost, fsm.ReasonDeadline))
	})
}

func (r *runner[M]) endTerm(reason fsm.Reason) {
	e := r.e
	e.mu.Lock()
	t := e.term
	e.term = nil
	if t != nil {
		e.notifyLocked()
	}
	e.mu.Unlock()
	if t == nil {
		return
	}
	t.watchdog.Stop()
	t.unhook()
	cause := fmt.Errorf("%w: %s", ErrLeadershipLost, reason)
	t.cancel(cause)
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
	moved := t != nil && t.until != until && t.ctx.Err() == nil
	if moved {
		t.until, t.confirmed = until, r.m.LastConfirmed()
	}
	e.mu.Unlock()
	if moved {
		r.armWatchdog(t)
	}
}

// logError logs a failed store operation at most once per ErrorInterval for
// each operation, and keeps err for Err(). The store refusing to issue a
// token above lease.MaxToken is logged at Error, the rest at Warn.
func (r *runner[M]) logError(op string, err error) {
	e := r.e
	e.mu.Lock()
	e.lastErr = err
	e.mu.Unlock()
	level := slog.LevelWarn
	if errors.Is(err, store.ErrTokenExhausted) {
		level = slog.LevelError
	}
	r.logAt(level, op, "store operation failed", "op", op, "error", err)
}

// logCorrupt reports a corrupt record the store answered with: kept for
// Err() and logged at Error, at most once per ErrorInterval.
func (r *runner[M]) logCorrupt(op string, err error) {
	e := r.e
	e.mu.Lock()
	e.lastErr = err
	e.mu.Unlock()
	r.logAt(slog.LevelError, "corrupt", "store holds a corrupt record; not overwriting it, and not leading until it is replaced or removed", "op", op, "error", err)
}

// logAt logs msg at most once per ErrorInterval for each key, with the
// machine's state.
func (r *runner[M]) logAt(level slog.Level, key, msg string, args ...any) {
	now := r.now()
	if last, ok := r.errLog[key]; ok && now-last < r.cfg.ErrorInterval {
		return
	}
	r.errLog[key] = now
	r.e.log.Log(context.Background(), level, msg, append(args, "state", r.m.State().String())...)
}

// Names of store operations, as reported to Instruments.
const (
	OpRead    = "read"
	OpAcquire = "acquire"
	OpRenew   = "renew"
	OpRelease = "release"
)

func opName(k fsm.SwapKind) string {
	switch k {
	case fsm.Acquire:
		return OpAcquire
	case fsm.Renew:
		return OpRenew
	default:
		return OpRelease
	}
}
