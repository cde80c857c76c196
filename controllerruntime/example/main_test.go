package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tenure-go/tenure/internal/testcluster"
)

func TestMain(m *testing.M) {
	if os.Getenv("TENURE_KUBE_LOG") == "" {
		klog.SetLogger(logr.Discard())
		ctrllog.SetLogger(logr.Discard())
	}
	testcluster.Main(m)
}

// The operator, on a Lease of the real API server, stamps a ConfigMap with
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
		done <- run(opCtx, log, k.Config(), options{namespace: ns, id: "pod-a", probes: "0"})
	}()
	for ev := range w.ResultChan() {
		got, ok := ev.Object.(*corev1.ConfigMap)
		if !ok {
			t.Fatalf("watch event %v: %T", ev.Type, ev.Object)
		}
		tok, err := strconv.ParseUint(got.Annotations[tokenAnnotation], 10, 64)
		if got.Annotations[keysAnnotation] == "2" && err == nil && tok > 0 {
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
