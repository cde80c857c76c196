package controllerruntime_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tenure-go/tenure/controllerruntime"
	"github.com/tenure-go/tenure/controllerruntime/example"
	"github.com/tenure-go/tenure/internal/testing/testcluster"
)

// The example operator (package example), on a Lease of the real API server, stamps a ConfigMap with
// its number of keys and the token of its term, and stops cleanly.
func TestOperatorStampsConfigMaps(t *testing.T) {
	k := testcluster.PackageKube(t)
	ns := k.Namespace(t, "example")
	client := k.Client(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: ns}, Data: map[string]string{"a": "1", "b": "2"}}
	cm, err := client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := client.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("metadata.name", "settings").String(),
		ResourceVersion: cm.ResourceVersion,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	opCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	go func() {
		done <- example.Run(opCtx, log, k.Config(), example.Options{Namespace: ns, ID: "pod-a", Probes: "0"})
	}()
	for ev := range w.ResultChan() {
		got, ok := ev.Object.(*corev1.ConfigMap)
		if !ok {
			t.Fatalf("watch event %v: %T", ev.Type, ev.Object)
		}
		tok, err := strconv.ParseUint(got.Annotations[example.TokenAnnotation], 10, 64)
		if got.Annotations[example.KeysAnnotation] == "2" && err == nil && tok > 0 {
			break
		}
	}
	if ctx.Err() != nil {
		t.Fatal("the ConfigMap was never stamped")
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("clean stop: %v", err)
	}
}

// The example's exported functions refuse nil arguments.
func TestOperatorNilArguments(t *testing.T) {
	var s *example.Stamper
	if _, err := s.Reconcile(t.Context(), reconcile.Request{}); !errors.Is(err, controllerruntime.ErrNilArgument) {
		t.Errorf("nil Stamper: %v", err)
	}
	if _, err := (&example.Stamper{}).Reconcile(t.Context(), reconcile.Request{}); !errors.Is(err, controllerruntime.ErrNilArgument) {
		t.Errorf("Stamper without a client: %v", err)
	}
	if err := example.Run(t.Context(), nil, nil, example.Options{}); !errors.Is(err, controllerruntime.ErrNilArgument) {
		t.Errorf("Run without a config: %v", err)
	}
	//lint:ignore SA1012 the nil context is the point
	if err := example.Run(nil, nil, offline(), example.Options{}); !errors.Is(err, controllerruntime.ErrNilArgument) {
		t.Errorf("Run without a context: %v", err)
	}
}
