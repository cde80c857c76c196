package controllerruntime

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/tenure-go/tenure/lead"
)

// Errors returned by this package.
var (
	// ErrNilArgument: a nil manager, elector, runnable, option or context,
	// or an Election not made by New. The error names the argument.
	ErrNilArgument = errors.New("controllerruntime: nil argument")
	// ErrManagerElection: the manager.Options given to NewManager enable
	// controller-runtime's own leader election; with Tenure's election on
	// top, leader-only runnables would wait for both.
	ErrManagerElection = errors.New("controllerruntime: the manager's own leader election is enabled")
	// ErrLeadershipLost: the term ended while the manager was running, and
	// the policy is Exit (the default): the manager stops, and its Start
	// returns an error wrapping this one (and lead.ErrLeadershipLost).
	ErrLeadershipLost = errors.New("controllerruntime: leadership lost")
	// ErrAlreadyStarted: the Election's runnable was started a second time
	// (a manager can be started once).
	ErrAlreadyStarted = errors.New("controllerruntime: election already started")
	// ErrStopped: a leader-only runnable was added after the Election had
	// stopped; it will never run.
	ErrStopped = errors.New("controllerruntime: election stopped")
	// ErrBadOption: an option has a value outside its range.
	ErrBadOption = errors.New("controllerruntime: bad option")
)

// OnLoss says what an Election does when its term ends while the manager
// keeps running (the store could not be reached for RenewDeadline, another
// replica took the lease, the store refused a renewal).
type OnLoss uint8

// The policies of OnLoss.
const (
	// Exit, the default, stops the manager: once the leader-only runnables
	// have returned, the Election's runnable returns an error wrapping
	// ErrLeadershipLost, so the manager's Start returns it and the process
	// exits and is restarted, as controller-runtime does on a lost
	// election. It is the only safe choice for controller-runtime's own
	// controllers, which refuse to be started twice.
	Exit OnLoss = iota
	// Rejoin keeps the manager running: the leader-only runnables are
	// stopped, the replica competes again, and in its next term every
	// leader-only runnable is started again with Start. Use it only when
	// every leader-only runnable can be started more than once (a
	// manager.RunnableFunc built for it, say); a runnable that refuses (a
	// controller returns "controller was started more than once") fails
	// the term, and its error stops the manager.
	Rejoin
)

// String returns "exit" or "rejoin".
func (p OnLoss) String() string {
	switch p {
	case Exit:
		return "exit"
	case Rejoin:
		return "rejoin"
	}
	return fmt.Sprintf("OnLoss(%d)", uint8(p))
}

// Option configures New and NewManager.
type Option func(*options)

type options struct {
	onLoss OnLoss
	errs   []error
}

// WithOnLoss sets what happens when the term ends while the manager runs
// (default Exit). A value other than Exit and Rejoin makes New fail with
// an error wrapping ErrBadOption.
func WithOnLoss(p OnLoss) Option {
	return func(o *options) {
		if p != Exit && p != Rejoin {
			o.errs = append(o.errs, fmt.Errorf("%w: WithOnLoss(%v): must be Exit or Rejoin", ErrBadOption, p))
			return
		}
		o.onLoss = p
	}
}

// Election runs the leader-only runnables of a controller-runtime manager
// while an elector of Tenure leads. Make it with New or NewManager, give
// Manager() to the builders (ctrl.NewControllerManagedBy) instead of the
// manager it wraps, and start the manager as usual.
//
// Its methods are safe for concurrent use. A nil *Election, or one not
// made by New, does not lead: Add returns an error wrapping ErrNilArgument,
// Elected a channel that is never closed, Manager nil.
type Election[M any] struct {
	mgr     manager.Manager // the manager wrapped, with its own election off
	wrapped *electedManager[M]
	e       *lead.Elector[M]
	onLoss  OnLoss
	elected chan struct{} // closed at the first term

	mu        sync.Mutex
	runnables []manager.Runnable // leader-only runnables, in the order added
	cur       *termGroup         // the runnables of the term in progress; nil if none
	started   bool
	stopped   bool
}

// New wraps mgr so that its leader-only runnables run only while e leads,
// and adds to mgr the runnable that drives e: the manager runs e (do not
// call e.Run yourself) from its start until it stops, and on a clean stop
// the leader-only runnables return before e releases the lease (unless e
// was made with lead.WithReleaseOnStop(false)).
//
// mgr must have been made with controller-runtime's own leader election
// off (manager.Options.LeaderElection false, the default); NewManager
// checks that. Leader-only runnables must be added through the Election
// (Add, or Manager().Add, as the builders do); a runnable added to mgr
// directly runs on every replica, whatever it needs.
//
// New returns an error wrapping ErrNilArgument for a nil mgr, e or option,
// or an Elector not made by lead.New, one wrapping ErrBadOption for an
// option out of range, and mgr.Add's error if mgr no longer takes runnables.
func New[M any](mgr manager.Manager, e *lead.Elector[M], opts ...Option) (*Election[M], error) {
	switch {
	case mgr == nil:
		return nil, fmt.Errorf("%w: New: mgr is nil", ErrNilArgument)
	case e == nil:
		return nil, fmt.Errorf("%w: New: e is nil", ErrNilArgument)
	case e.Name() == "":
		// lead.New refuses an empty name: this Elector was not made by it.
		return nil, fmt.Errorf("%w: New: e was not made by lead.New", ErrNilArgument)
	}
	var o options
	for i, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("%w: New: option %d of %d is nil", ErrNilArgument, i+1, len(opts))
		}
		opt(&o)
	}
	if err := errors.Join(o.errs...); err != nil {
		return nil, err
	}
	x := &Election[M]{mgr: mgr, e: e, onLoss: o.onLoss, elected: make(chan struct{})}
	x.wrapped = &electedManager[M]{Manager: mgr, x: x}
	if err := mgr.Add(electionRunnable[M]{x}); err != nil {
		return nil, fmt.Errorf("controllerruntime: New: adding the election to the manager: %w", err)
	}
	return x, nil
}

// NewManager makes a manager with manager.New(cfg, mo) and wraps it with
// New. It refuses, with an error wrapping ErrManagerElection, options that
// enable controller-runtime's own leader election, and returns an error
// wrapping ErrNilArgument for a nil cfg.
func NewManager[M any](cfg *rest.Config, mo manager.Options, e *lead.Elector[M], opts ...Option) (*Election[M], error) {
	switch {
	case cfg == nil:
		return nil, fmt.Errorf("%w: NewManager: cfg is nil", ErrNilArgument)
	case e == nil:
		return nil, fmt.Errorf("%w: NewManager: e is nil", ErrNilArgument)
	case mo.LeaderElection:
		return nil, fmt.Errorf("%w: NewManager: set manager.Options.LeaderElection to false (Tenure's election %q gates the leader-only runnables)", ErrManagerElection, e.Name())
	}
	mgr, err := manager.New(cfg, mo)
	if err != nil {
		return nil, fmt.Errorf("controllerruntime: NewManager: %w", err)
	}
	return New(mgr, e, opts...)
}

// usable returns an error wrapping ErrNilArgument, for method op, when x
// is nil or was not made by New.
func (x *Election[M]) usable(op string) error {
	switch {
	case x == nil:
		return fmt.Errorf("%w: %s: the *Election is nil (make one with New)", ErrNilArgument, op)
	case x.wrapped == nil:
		return fmt.Errorf("%w: %s: the Election was not made by New", ErrNilArgument, op)
	}
	return nil
}

// Manager returns the wrapped manager: the manager given to New, except
// that Add sends leader-only runnables to the Election (see Add) and
// Elected is the Election's. Give it to everything that adds controllers
// (ctrl.NewControllerManagedBy, controller.New). It is nil for a nil
// Election.
func (x *Election[M]) Manager() manager.Manager {
	if x.usable("Manager") != nil {
		return nil
	}
	return x.wrapped
}

// Elector returns the elector that the Election runs (nil for a nil
// Election): its Term, Status, Err and Leaders tell who leads and why not.
func (x *Election[M]) Elector() *lead.Elector[M] {
	if x.usable("Elector") != nil {
		return nil
	}
	return x.e
}

// Elected is closed when this replica starts its first term, once the
// leader-only runnables of that term have been started: the equivalent of
// manager.Manager's Elected. It is never reopened; with Rejoin, ask the
// elector (Elector().IsLeader) whether a term is in progress now. For a
// nil Election it is never closed.
func (x *Election[M]) Elected() <-chan struct{} {
	if x.usable("Elected") != nil {
		return make(chan struct{})
	}
	return x.elected
}

// Add adds r to the manager. A runnable that needs leader election, as the
// manager decides it (a manager.LeaderElectionRunnable whose
// NeedLeaderElection is true, which controllers are by default, or one
// that is neither that nor a cache, a webhook server or a manager.Server),
// runs only in this replica's terms: it is started with a context that
// carries the term (TermFromContext) and its fencing token
// (fence.FromContext), and that is cancelled the instant the term ends.
// A controller's Warmup (EnableWarmup) is not run: it starts the
// controller's sources and work queue with the manager's context, so the
// queue would outlive the term, its workers would go on reconciling after
// the term ended, and the controller would never return to let the term
// end. Every other runnable is given to the manager as it is.
//
// Added while a term is in progress, a leader-only runnable starts at
// once in that term. Add returns an error wrapping ErrNilArgument for a
// nil r, and one wrapping ErrStopped once the Election has stopped.
func (x *Election[M]) Add(r manager.Runnable) error {
	if err := x.usable("Add"); err != nil {
		return err
	}
	if isNil(r) {
		return fmt.Errorf("%w: Add: the runnable is nil (%T)", ErrNilArgument, r)
	}
	if !needsLeader(r) {
		return x.mgr.Add(r)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.stopped {
		return fmt.Errorf("%w: Add: %q no longer starts leader-only runnables", ErrStopped, x.e.Name())
	}
	x.runnables = append(x.runnables, r)
	if x.cur != nil {
		x.cur.start(r)
	}
	return nil
}

// run is the Start of the runnable that New adds to the manager.
func (x *Election[M]) run(ctx context.Context) error {
	if ctx == nil {
		return fmt.Errorf("%w: Start: ctx is nil", ErrNilArgument)
	}
	x.mu.Lock()
	if x.started {
		x.mu.Unlock()
		return ErrAlreadyStarted
	}
	x.started = true
	x.mu.Unlock()
	defer func() {
		x.mu.Lock()
		x.stopped = true
		x.mu.Unlock()
	}()

	// The elector outlives ctx by a little: it releases the lease only
	// after the leader-only runnables have returned, so that the next
	// leader's never overlap with them.
	runCtx, stopElector := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElector()
	var runErr error
	runDone := make(chan struct{})
	go func() {
		runErr = x.e.Run(runCtx)
		close(runDone)
	}()
	// Run ending on its own (it failed at once, say, as when the elector
	// already runs elsewhere) ends the terms too: Lead would wait for a
	// term that no Run of this Election will start.
	leadCtx, stopLead := context.WithCancel(ctx)
	defer stopLead()
	go func() {
		select {
		case <-runDone:
			stopLead()
		case <-leadCtx.Done():
		}
	}()

	err := x.lead(leadCtx)
	stopElector()
	<-runDone
	if runErr != nil {
		err = errors.Join(err, fmt.Errorf("controllerruntime: elector %q: %w", x.e.Name(), runErr))
	}
	return err
}

// lead runs the terms until ctx ends, the term ends under Exit, a
// leader-only runnable fails or the elector stops.
func (x *Election[M]) lead(ctx context.Context) error {
	for {
		var runnableErr error
		err := x.e.Lead(ctx, func(ctx context.Context, t lead.Term) error {
			runnableErr = x.term(ctx, t)
			return runnableErr
		})
		switch {
		case ctx.Err() != nil:
			// A clean stop: only the runnables' own errors count.
			return runnableErr
		case runnableErr != nil:
			return runnableErr
		case errors.Is(err, lead.ErrLeadershipLost) && x.onLoss == Rejoin:
			continue
		case errors.Is(err, lead.ErrLeadershipLost):
			return fmt.Errorf("%w: %q: the manager stops (policy %v): %w", ErrLeadershipLost, x.e.Name(), x.onLoss, err)
		case err != nil:
			return fmt.Errorf("controllerruntime: %q: %w", x.e.Name(), err)
		default:
			// The body returns nil only once its context has ended, so a
			// nil from Lead comes with ctx's end or the term's: never here.
			// Be safe and compete again rather than spin.
			continue
		}
	}
}

// term runs the leader-only runnables in one term: it starts them all
// with ctx (which carries the token), waits until ctx ends or one of them
// fails, and returns once all have returned.
func (x *Election[M]) term(ctx context.Context, t lead.Term) error {
	g := newTermGroup(withTerm(ctx, t), x.e.Name())
	x.mu.Lock()
	x.cur = g
	for _, r := range slices.Clone(x.runnables) {
		g.start(r)
	}
	x.mu.Unlock()
	select {
	case <-x.elected:
	default:
		close(x.elected)
	}
	err := g.wait()
	x.mu.Lock()
	x.cur = nil
	x.mu.Unlock()
	return err
}

// electionRunnable is the runnable New adds to the manager: it runs on
// every replica, drives the elector and the leader-only runnables.
type electionRunnable[M any] struct{ x *Election[M] }

// Start runs the election until ctx ends.
func (r electionRunnable[M]) Start(ctx context.Context) error { return r.x.run(ctx) }

// NeedLeaderElection is false: the election runs on every replica.
func (electionRunnable[M]) NeedLeaderElection() bool { return false }

type termKey struct{}

// withTerm returns ctx carrying t.
func withTerm(ctx context.Context, t lead.Term) context.Context {
	return context.WithValue(ctx, termKey{}, t)
}

// TermFromContext returns the term that ctx carries: a leader-only
// runnable's context and everything derived from it (a reconciler's
// context) carry the term the runnable was started in, with its fencing
// token (also given by fence.FromContext). It returns false for a nil ctx
// or one that carries no term.
func TermFromContext(ctx context.Context) (lead.Term, bool) {
	if ctx == nil {
		return lead.Term{}, false
	}
	t, ok := ctx.Value(termKey{}).(lead.Term)
	return t, ok
}

// isNil reports whether r is nil or a typed nil (a nil *manager.Server, a
// nil manager.RunnableFunc), which would panic when started.
func isNil(r manager.Runnable) bool {
	if r == nil {
		return true
	}
	v := reflect.ValueOf(r)
	switch v.Kind() {
	case reflect.Pointer, reflect.Func, reflect.Map, reflect.Chan, reflect.Slice, reflect.Interface:
		return v.IsNil()
	}
	return false
}
