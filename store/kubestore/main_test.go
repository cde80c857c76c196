package kubestore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/kubestore"
)

func TestMain(m *testing.M) {
	// client-go logs through klog; the tests stop the API server on
	// purpose, and every failed request would be logged.
	if os.Getenv("TENURE_KUBE_LOG") == "" {
		klog.SetLogger(logr.Discard())
	}
	testcluster.Main(m)
}

// eventTimeout bounds every wait for something that must happen.
const eventTimeout = 20 * time.Second

// meta is the metadata the elector tests attach.
type meta struct {
	Pod string `json:"pod"`
}

// env is a namespace of its own on the shared API server.
type env struct {
	k      *testcluster.Kube
	ns     string
	client kubernetes.Interface
}

func newEnv(t testing.TB, prefix string) *env {
	t.Helper()
	k := testcluster.PackageKube(t)
	return &env{k: k, ns: k.Namespace(t, prefix), client: k.Client(t)}
}

// store returns a new Store of the env's namespace with its own client.
func newStore[M any](t testing.TB, client kubernetes.Interface, ns string) *kubestore.Store[M] {
	t.Helper()
	st, err := kubestore.New[M](client.CoordinationV1(), ns)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// ctx returns a context that ends with t or after eventTimeout.
func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), eventTimeout)
	t.Cleanup(cancel)
	return c
}

// recv returns the next event of ch, which must come within eventTimeout.
func recv[M any](t testing.TB, ch <-chan store.Event[M]) store.Event[M] {
	t.Helper()
	return testcluster.NextEvent(t, ch, eventTimeout)
}

// randomSuffix returns a few random hex digits.
func randomSuffix(t testing.TB) string {
	t.Helper()
	return fmt.Sprintf("%06x", rand.Uint32()>>8)
}

// parseRV returns resourceVersion rv as a revision.
func parseRV(t testing.TB, rv string) lease.Revision {
	t.Helper()
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", rv, err)
	}
	return lease.Revision(n)
}
