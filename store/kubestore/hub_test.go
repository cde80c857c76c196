package kubestore_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/kubestore"
)

// watchCounter counts the watch requests sent through a client: a
// RoundTripper around the real transport, which changes nothing.
type watchCounter struct {
	next    http.RoundTripper
	watches atomic.Int64
	// failGet, when set, names a Lease whose GETs fail.
	failGet atomic.Pointer[string]
}

func (c *watchCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	if w := req.URL.Query().Get("watch"); w == "true" || w == "1" {
		c.watches.Add(1)
	} else if name := c.failGet.Load(); name != nil && req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/leases/"+*name) {
		return nil, errors.New("the test refuses this GET")
	}
	return c.next.RoundTrip(req)
}

// countingLeases returns a coordination/v1 client of k whose watch requests
// are counted.
func countingLeases(t testing.TB, cfg *rest.Config) (coordinationclient.LeasesGetter, *watchCounter) {
	t.Helper()
	counter := &watchCounter{}
	cfg = rest.CopyConfig(cfg)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		counter.next = rt
		return counter
	}
	c, err := coordinationclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, counter
}

// The watchers of many names on one Store share one API-server watch, and
// each receives the changes of its own name only.
func TestWatchOneRequestPerStore(t *testing.T) {
	t.Run("Watch", func(t *testing.T) { testWatchOneRequestPerStore(t, false) })
	t.Run("WatchFunc", func(t *testing.T) { testWatchOneRequestPerStore(t, true) })
}

func testWatchOneRequestPerStore(t *testing.T, viaFunc bool) {
	const n = 50
	e := newEnv(t, "hub")
	client, counter := countingLeases(t, e.k.Config())
	st, err := kubestore.New[meta](client, e.ns)
	if err != nil {
		t.Fatal(err)
	}
	writer := newStore[meta](t, e.client, e.ns)
	c := ctx(t)
	name := func(i int) string { return "job-" + strconv.Itoa(i) }
	// Half the names exist before they are watched.
	revs := make([]lease.Revision, n)
	for i := 0; i < n; i += 2 {
		if _, revs[i], err = writer.CompareAndSwap(c, name(i), 0, record("pre-"+name(i), 1)); err != nil {
			t.Fatal(err)
		}
	}
	wctx, cancel := context.WithCancel(c)
	defer cancel()
	chans := make([]<-chan store.Event[meta], n)
	for i := range n {
		ch, err := testcluster.WatchChan(t, wctx, st, name(i), viaFunc)
		if err != nil {
			t.Fatal(err)
		}
		chans[i] = ch
		ev := recv(t, ch)
		switch {
		case i%2 == 0 && (ev.Absent || ev.Record.Holder != "pre-"+name(i)):
			t.Fatalf("watch %s: first event %+v, want its Lease", name(i), ev)
		case i%2 == 1 && !ev.Absent:
			t.Fatalf("watch %s: first event %+v, want Absent", name(i), ev)
		}
	}
	for i := range n {
		if _, _, err := writer.CompareAndSwap(c, name(i), revs[i], record(name(i), 2)); err != nil {
			t.Fatal(err)
		}
	}
	for i, ch := range chans {
		if ev := recv(t, ch); ev.Absent || ev.Record.Holder != name(i) {
			t.Fatalf("watch %s: %+v, want the Lease it holds", name(i), ev)
		}
	}
	if got := counter.watches.Load(); got != 1 {
		t.Fatalf("%d watchers of %d names sent %d watch requests, want 1", n, n, got)
	}
	t.Logf("%d watchers of %d names: %d watch request", n, n, counter.watches.Load())
}

// Leases of another program in the namespace reach no watcher: a watcher of
// one name receives only its own Lease, even while another changes.
func TestWatchIgnoresForeignLeases(t *testing.T) {
	t.Run("Watch", func(t *testing.T) { testWatchIgnoresForeignLeases(t, false) })
	t.Run("WatchFunc", func(t *testing.T) { testWatchIgnoresForeignLeases(t, true) })
}

func testWatchIgnoresForeignLeases(t *testing.T, viaFunc bool) {
	e := newEnv(t, "foreign")
	st := newStore[meta](t, e.client, e.ns)
	writer := newStore[meta](t, e.client, e.ns)
	leases := e.client.CoordinationV1().Leases(e.ns)
	c := ctx(t)
	holder := "someone-else"
	foreign, err := leases.Create(c, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "foreign"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(c)
	defer cancel()
	ch, err := testcluster.WatchChan(t, wctx, st, "mine", viaFunc)
	if err != nil {
		t.Fatal(err)
	}
	if ev := recv(t, ch); !ev.Absent {
		t.Fatalf("first event %+v, want Absent", ev)
	}
	var rev lease.Revision
	for i := range 5 {
		// The foreign Lease changes, then ours: the next event must be
		// ours. The receiver waits, so a foreign event would be sent
		// first.
		foreign.Spec.HolderIdentity = &holder
		holder = "someone-else-" + strconv.Itoa(i)
		if foreign, err = leases.Update(c, foreign, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		rec := record("mine", 1)
		_, r, err := writer.CompareAndSwap(c, "mine", rev, rec)
		if err != nil {
			t.Fatal(err)
		}
		rev = r
		ev := recv(t, ch)
		if ev.Absent || ev.Revision != rev || ev.Record.Holder != "mine" {
			t.Fatalf("round %d: event %+v, want our Lease at revision %d", i, ev, rev)
		}
	}
	if err := leases.Delete(c, "foreign", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, r, err := writer.CompareAndSwap(c, "mine", rev, record("mine", 1))
	if err != nil {
		t.Fatal(err)
	}
	if ev := recv(t, ch); ev.Absent || ev.Revision != r {
		t.Fatalf("after the foreign Lease's deletion: %+v, want our Lease at revision %d", ev, r)
	}
}

// The shared watch outlives a restart of the API server: it resumes (the
// restarted server answers 410 to the old version, and every watcher reads
// its Lease again), the channel stays open, and later changes arrive. A
// watcher that cannot read its Lease again then is ended.
func TestWatchSurvivesRestart(t *testing.T) {
	t.Run("Watch", func(t *testing.T) { testWatchSurvivesRestart(t, false) })
	t.Run("WatchFunc", func(t *testing.T) { testWatchSurvivesRestart(t, true) })
}

func testWatchSurvivesRestart(t *testing.T, viaFunc bool) {
	k := testcluster.NewKube(t, testcluster.KubeOptions{})
	ns := k.Namespace(t, "restart")
	client, counter := countingLeases(t, k.Config())
	st, err := kubestore.New[meta](client, ns)
	if err != nil {
		t.Fatal(err)
	}
	writer, err := kubestore.New[meta](k.Leases(t), ns)
	if err != nil {
		t.Fatal(err)
	}
	c := ctx(t)
	_, rev, err := writer.CompareAndSwap(c, "job", 0, record("a", 1))
	if err != nil {
		t.Fatal(err)
	}
	// The restart may take longer than eventTimeout.
	wctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ch, err := testcluster.WatchChan(t, wctx, st, "job", viaFunc)
	if err != nil {
		t.Fatal(err)
	}
	other, err := testcluster.WatchChan(t, wctx, st, "other", viaFunc)
	if err != nil {
		t.Fatal(err)
	}
	doomed, err := testcluster.WatchChan(t, wctx, st, "doomed", viaFunc)
	if err != nil {
		t.Fatal(err)
	}
	if ev := recv(t, doomed); !ev.Absent {
		t.Fatalf("first event of doomed %+v, want Absent", ev)
	}
	counter.failGet.Store(new("doomed"))
	if ev := recv(t, ch); ev.Revision != rev {
		t.Fatalf("first event %+v, want revision %d", ev, rev)
	}
	if ev := recv(t, other); !ev.Absent {
		t.Fatalf("first event of other %+v, want Absent", ev)
	}
	began := time.Now()
	if err := k.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := k.Start(); err != nil {
		t.Fatal(err)
	}
	t.Logf("the API server was down for %v", time.Since(began))
	_, rev2, err := writer.CompareAndSwap(ctx(t), "job", rev, record("b", 2))
	if err != nil {
		t.Fatal(err)
	}
	_, rev3, err := writer.CompareAndSwap(ctx(t), "other", 0, record("c", 1))
	if err != nil {
		t.Fatal(err)
	}
	if ev := recv(t, ch); ev.Revision != rev2 || ev.Record.Holder != "b" {
		t.Fatalf("after the restart: %+v, want revision %d", ev, rev2)
	}
	if ev := recv(t, other); ev.Revision != rev3 || ev.Record.Holder != "c" {
		t.Fatalf("after the restart, other: %+v, want revision %d", ev, rev3)
	}
	if got := counter.watches.Load(); got < 2 {
		t.Fatalf("%d watch requests, want the watch resumed", got)
	}
	// The GET of doomed failed after the restart: its watch was ended.
	select {
	case ev, ok := <-doomed:
		if ok {
			t.Fatalf("doomed: %+v, want its watch ended", ev)
		}
	case <-time.After(eventTimeout):
		t.Fatalf("the watch of doomed is still on %v after its Lease could not be read again", eventTimeout)
	}
}
