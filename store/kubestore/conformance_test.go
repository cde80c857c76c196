package kubestore_test

import (
	"context"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/kubestore"
	"github.com/tenure-go/tenure/store/storetest"
)

// The store passes the conformance suite against a real API server, and
// its token floor survives a reopen: each reopened store has a client of
// its own, and a Lease deleted by hand (kubectl delete lease) gets a new
// term's token above every token issued before, from the clock.
func TestConformance(t *testing.T) {
	e := newEnv(t, "conformance")
	reopen := func(t *testing.T) store.Store[storetest.Meta] {
		return newStore[storetest.Meta](t, e.k.Client(t), e.ns)
	}
	del := func(t *testing.T, name string) {
		if err := e.k.Client(t).CoordinationV1().Leases(e.ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// A corrupt record: a Lease whose token annotation is not a number.
	corrupt := func(t *testing.T, _ store.Store[storetest.Meta], name string) {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{kubestore.AnnotationToken: "x"}}}
		if _, err := e.k.Client(t).CoordinationV1().Leases(e.ns).Create(context.Background(), l, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	storetest.Run(t, func(t *testing.T) store.Store[storetest.Meta] {
		return newStore[storetest.Meta](t, e.client, e.ns)
	}, storetest.WithReopen(reopen), storetest.WithDelete[storetest.Meta](del), storetest.WithCorrupt(corrupt))
}
