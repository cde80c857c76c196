package controllerruntime_test

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/tenure-go/tenure/controllerruntime"
	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/store/memstore"
)

// A controller made with EnableWarmup stops with its term like any other:
// once the term is lost, with a request queued after its end, the
// controller returns and the manager stops (the default policy, Exit).
func TestWarmupControllerStopsWithItsTerm(t *testing.T) {
	st := &cuttable{st: memstore.New[struct{}]()}
	x, err := controllerruntime.NewManager(offline(), quiet(), newElector(t, st))
	if err != nil {
		t.Fatal(err)
	}
	var e *lead.Elector[struct{}]
	warm := true
	skip := true
	c, err := controller.New("warm", x.Manager(), controller.Options{
		EnableWarmup: &warm, SkipNameValidation: &skip,
		Reconciler: reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
			return reconcile.Result{}, nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan event.TypedGenericEvent[*corev1.Pod], 10)
	if err := c.Watch(source.Channel(events, &handler.TypedEnqueueRequestForObject[*corev1.Pod]{})); err != nil {
		t.Fatal(err)
	}
	e = x.Elector()
	termEnded := make(chan struct{})
	go func() {
		_ = e.Lead(t.Context(), func(ctx context.Context, _ lead.Term) error {
			<-ctx.Done()
			close(termEnded)
			return nil
		})
	}()
	done := make(chan error, 1)
	go func() { done <- x.Manager().Start(t.Context()) }()
	select {
	case <-x.Elected():
	case <-time.After(10 * time.Second):
		t.Fatal("no term within 10s")
	}
	st.cut.Store(true)
	<-termEnded
	events <- event.TypedGenericEvent[*corev1.Pod]{Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p"}}}
	select {
	case err := <-done:
		if !errors.Is(err, controllerruntime.ErrLeadershipLost) {
			t.Fatalf("manager returned %v, want ErrLeadershipLost", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the manager still runs 10s after the term was lost")
	}
}

// An elector whose Run fails at once (it already runs elsewhere) stops the
// manager with that error, rather than leave it waiting for a term.
func TestRunFailingAtOnceStopsTheManager(t *testing.T) {
	st := &cuttable{st: memstore.New[struct{}]()}
	e := newElector(t, st)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go e.Run(ctx)
	<-e.Ready()
	x, err := controllerruntime.NewManager(offline(), quiet(), e)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- x.Manager().Start(t.Context()) }()
	select {
	case err := <-done:
		if !errors.Is(err, lead.ErrAlreadyRunning) {
			t.Fatalf("manager returned %v, want lead.ErrAlreadyRunning", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the manager still runs 10s after its elector's Run failed")
	}
}
