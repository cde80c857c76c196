package controllerruntime_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/tenure-go/tenure/controllerruntime"
	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store/memstore"
)

// offline is a rest.Config of a server that does not exist: nothing in
// these tests reads the API, so the managers never dial it.
func offline() *rest.Config { return &rest.Config{Host: "http://127.0.0.1:1"} }

// quiet are manager options with no listener.
func quiet() manager.Options {
	return manager.Options{Metrics: metricsserver.Options{BindAddress: "0"}}
}

// memConfig is short, for an in-memory store.
func memConfig() lease.Config {
	return lease.Config{
		LeaseDuration:  600 * time.Millisecond,
		RenewDeadline:  400 * time.Millisecond,
		RetryInterval:  50 * time.Millisecond,
		RetryJitter:    0.1,
		BackendTimeout: 100 * time.Millisecond,
		ErrorInterval:  time.Second,
	}
}

func newElector(t *testing.T, st *cuttable) *lead.Elector[struct{}] {
	t.Helper()
	e, err := lead.New("op", st, lead.WithIdentity("pod-a"), lead.WithConfig(memConfig()))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

var errCut = errors.New("test: store cut")

// cuttable is a memstore whose every operation fails while cut is set
// (followers poll: it does not watch).
type cuttable struct {
	st  *memstore.Store[struct{}]
	cut atomic.Bool
}

func (c *cuttable) Get(ctx context.Context, name string) (lease.Record[struct{}], lease.Revision, error) {
	if c.cut.Load() {
		return lease.Record[struct{}]{}, 0, errCut
	}
	return c.st.Get(ctx, name)
}

func (c *cuttable) CompareAndSwap(ctx context.Context, name string, expected lease.Revision, next lease.Record[struct{}]) (lease.Record[struct{}], lease.Revision, error) {
	if c.cut.Load() {
		return lease.Record[struct{}]{}, 0, errCut
	}
	return c.st.CompareAndSwap(ctx, name, expected, next)
}

func (c *cuttable) MayLoseRecords() bool { return false }

func TestNilArguments(t *testing.T) {
	e := newElector(t, &cuttable{st: memstore.New[struct{}]()})
	mgr, err := manager.New(offline(), quiet())
	if err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"New(nil mgr)":           second(controllerruntime.New(nil, e)),
		"New(nil e)":             second(controllerruntime.New[struct{}](mgr, nil)),
		"New(zero e)":            second(controllerruntime.New(mgr, &lead.Elector[struct{}]{})),
		"New(nil option)":        second(controllerruntime.New(mgr, e, nil)),
		"NewManager(nil cfg)":    second(controllerruntime.NewManager(nil, quiet(), e)),
		"NewManager(nil e)":      second(controllerruntime.NewManager[struct{}](offline(), quiet(), nil)),
		"nil Election Add":       (*controllerruntime.Election[struct{}])(nil).Add(manager.RunnableFunc(func(context.Context) error { return nil })),
		"zero Election Add":      new(controllerruntime.Election[struct{}]).Add(manager.RunnableFunc(func(context.Context) error { return nil })),
		"Add(nil)":               addTo(t, e, nil),
		"Add(nil RunnableFunc)":  addTo(t, e, manager.RunnableFunc(nil)),
		"Add(nil *Server)":       addTo(t, e, (*manager.Server)(nil)),
		"Manager().Add(nil)":     managerAdd(t, e, nil),
		"NewManager(nil option)": second(controllerruntime.NewManager(offline(), quiet(), e, nil)),
	} {
		if !errors.Is(err, controllerruntime.ErrNilArgument) {
			t.Errorf("%s: %v, want ErrNilArgument", name, err)
		}
	}
	var x *controllerruntime.Election[struct{}]
	if x.Manager() != nil || x.Elector() != nil {
		t.Error("a nil Election has a manager or an elector")
	}
	select {
	case <-x.Elected():
		t.Error("a nil Election's Elected is closed")
	default:
	}
	//lint:ignore SA1012 the nil context is the point
	if _, ok := controllerruntime.TermFromContext(nil); ok {
		t.Error("TermFromContext(nil) found a term")
	}
	if _, ok := controllerruntime.TermFromContext(context.Background()); ok {
		t.Error("TermFromContext found a term in a bare context")
	}
}

func second[T any](_ T, err error) error { return err }

// addTo adds r to a fresh Election (its own elector: an elector runs once).
func addTo(t *testing.T, _ *lead.Elector[struct{}], r manager.Runnable) error {
	t.Helper()
	x, err := controllerruntime.NewManager(offline(), quiet(), newElector(t, &cuttable{st: memstore.New[struct{}]()}))
	if err != nil {
		t.Fatal(err)
	}
	return x.Add(r)
}

func managerAdd(t *testing.T, _ *lead.Elector[struct{}], r manager.Runnable) error {
	t.Helper()
	x, err := controllerruntime.NewManager(offline(), quiet(), newElector(t, &cuttable{st: memstore.New[struct{}]()}))
	if err != nil {
		t.Fatal(err)
	}
	return x.Manager().Add(r)
}

func TestBadOptions(t *testing.T) {
	e := newElector(t, &cuttable{st: memstore.New[struct{}]()})
	mo := quiet()
	mo.LeaderElection = true
	mo.LeaderElectionID = "op"
	if _, err := controllerruntime.NewManager(offline(), mo, e); !errors.Is(err, controllerruntime.ErrManagerElection) {
		t.Errorf("NewManager with the manager's own election: %v, want ErrManagerElection", err)
	}
	if _, err := controllerruntime.NewManager(offline(), quiet(), e, controllerruntime.WithOnLoss(7)); !errors.Is(err, controllerruntime.ErrBadOption) {
		t.Errorf("WithOnLoss(7): %v, want ErrBadOption", err)
	}
	for p, want := range map[controllerruntime.OnLoss]string{controllerruntime.Exit: "exit", controllerruntime.Rejoin: "rejoin", 9: "OnLoss(9)"} {
		if got := p.String(); got != want {
			t.Errorf("OnLoss(%d).String() = %q, want %q", p, got, want)
		}
	}
}

// runs records the starts and stops of a runnable, and wakes waiters.
type runs struct {
	mu      sync.Mutex
	tokens  []fence.Token // token of each start
	running bool
	causes  []error
	changed chan struct{}
}

func newRuns() *runs { return &runs{changed: make(chan struct{})} }

func (r *runs) runnable(refuseAgain bool) manager.Runnable {
	return manager.RunnableFunc(func(ctx context.Context) error {
		tok, _ := fence.FromContext(ctx)
		r.mu.Lock()
		again := len(r.tokens) > 0
		r.tokens = append(r.tokens, tok)
		r.running = true
		close(r.changed)
		r.changed = make(chan struct{})
		r.mu.Unlock()
		if again && refuseAgain {
			r.mu.Lock()
			r.running = false
			r.mu.Unlock()
			return errors.New("started more than once")
		}
		<-ctx.Done()
		r.mu.Lock()
		r.running = false
		r.causes = append(r.causes, context.Cause(ctx))
		close(r.changed)
		r.changed = make(chan struct{})
		r.mu.Unlock()
		return nil
	})
}

func (r *runs) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	timer := time.NewTimer(10 * time.Second)
	defer timer.Stop()
	for {
		r.mu.Lock()
		ok, ch := cond(), r.changed
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-timer.C:
			r.mu.Lock()
			defer r.mu.Unlock()
			t.Fatalf("still waiting for %s: starts %v, causes %v", what, r.tokens, r.causes)
		}
	}
}

// With Rejoin, a term that ends stops the leader-only runnables and the
// next term starts them again, with a larger token; the manager keeps
// running. A runnable that refuses its second start stops the manager with
// its error.
func TestRejoinRestartsRunnablesOnTheNextTerm(t *testing.T) {
	for _, refuse := range []bool{false, true} {
		t.Run(fmt.Sprintf("refuse=%v", refuse), func(t *testing.T) {
			st := &cuttable{st: memstore.New[struct{}]()}
			x, err := controllerruntime.NewManager(offline(), quiet(), newElector(t, st), controllerruntime.WithOnLoss(controllerruntime.Rejoin))
			if err != nil {
				t.Fatal(err)
			}
			r := newRuns()
			if err := x.Manager().Add(r.runnable(refuse)); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- x.Manager().Start(ctx) }()
			r.waitFor(t, "the first term", func() bool { return r.running })
			st.cut.Store(true)
			r.waitFor(t, "the term's end", func() bool { return !r.running })
			if !errors.Is(r.causes[0], lead.ErrLeadershipLost) {
				t.Errorf("first term's runnable stopped for %v, want ErrLeadershipLost", r.causes[0])
			}
			st.cut.Store(false)
			r.waitFor(t, "the second start", func() bool { return len(r.tokens) == 2 })
			if r.tokens[1] <= r.tokens[0] {
				t.Errorf("tokens %v do not go up", r.tokens)
			}
			if refuse {
				if err := <-done; err == nil || errors.Is(err, controllerruntime.ErrLeadershipLost) {
					t.Fatalf("manager returned %v, want the runnable's error", err)
				}
				return
			}
			r.waitFor(t, "the second term's runnable", func() bool { return r.running })
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("clean stop: %v", err)
			}
		})
	}
}

// With Exit, a lost term stops the manager with ErrLeadershipLost.
func TestExitStopsTheManagerWhenATermIsLost(t *testing.T) {
	st := &cuttable{st: memstore.New[struct{}]()}
	x, err := controllerruntime.NewManager(offline(), quiet(), newElector(t, st))
	if err != nil {
		t.Fatal(err)
	}
	r := newRuns()
	if err := x.Add(r.runnable(false)); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- x.Manager().Start(t.Context()) }()
	r.waitFor(t, "the first term", func() bool { return r.running })
	st.cut.Store(true)
	err = <-done
	if !errors.Is(err, controllerruntime.ErrLeadershipLost) || !errors.Is(err, lead.ErrLeadershipLost) {
		t.Fatalf("manager returned %v, want ErrLeadershipLost", err)
	}
	if r.running || len(r.tokens) != 1 {
		t.Fatalf("after the manager returned: running %v, starts %v", r.running, r.tokens)
	}
	if err := x.Add(r.runnable(false)); !errors.Is(err, controllerruntime.ErrStopped) {
		t.Errorf("Add after the stop: %v, want ErrStopped", err)
	}
}

// A leader-only runnable added while a term runs starts in that term; one
// that fails while its term runs stops the manager with its error.
func TestAddDuringTermAndFailure(t *testing.T) {
	st := &cuttable{st: memstore.New[struct{}]()}
	x, err := controllerruntime.NewManager(offline(), quiet(), newElector(t, st))
	if err != nil {
		t.Fatal(err)
	}
	r := newRuns()
	if err := x.Add(r.runnable(false)); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- x.Manager().Start(t.Context()) }()
	<-x.Elected()
	errBoom := errors.New("boom")
	late := make(chan fence.Token, 1)
	if err := x.Manager().Add(manager.RunnableFunc(func(ctx context.Context) error {
		tok, _ := fence.FromContext(ctx)
		late <- tok
		return errBoom
	})); err != nil {
		t.Fatal(err)
	}
	if tok := <-late; tok == 0 {
		t.Error("the runnable added during the term has no token")
	}
	if err := <-done; !errors.Is(err, errBoom) {
		t.Fatalf("manager returned %v, want the runnable's error", err)
	}
	if r.running {
		t.Error("the term's other runnable still runs")
	}
}
