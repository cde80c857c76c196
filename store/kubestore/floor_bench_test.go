package kubestore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store/kubestore"
)

// BenchmarkHandoverFloor measures the least any library can take for
// BenchmarkHandoverPeerConfig's handover on this API server: client-go
// alone, no Tenure. Three clients of their own, each as the peer
// benchmark's electors; the two followers watch the Lease. The leader
// PUTs it released; each follower, on the watch event of the release,
// PUTs itself as holder at that event's resourceVersion (one wins, the
// other gets a conflict). A handover is the time from the release's PUT
// to the winner's PUT returning. One op is testcluster.Handovers (20 unless
// TENURE_HANDOVERS says) handovers; it reports p50
// and p90 and the medians of the two PUTs.
func BenchmarkHandoverFloor(b *testing.B) {
	e := newEnv(b, "bench-floor")
	for b.Loop() {
		hs := handoverFloor(b, e, testcluster.Handovers(b))
		testcluster.ReportHandover(b, "client-go alone", hs)
	}
}

// floorWin is a follower's successful acquiring PUT: who, when it
// returned, and how long it took.
type floorWin struct {
	id   int
	at   time.Time
	took time.Duration
}

func handoverFloor(b *testing.B, e *env, n int) []testcluster.Handover {
	b.Helper()
	f := newKubeFloor(b, e)
	return testcluster.FloorHandovers(n, func() testcluster.Handover { return f.handover(b) })
}

// kubeFloor is BenchmarkHandoverFloor's three clients and their Lease.
type kubeFloor struct {
	name    string
	clients []coordinationclient.LeaseInterface
	cur     *coordinationv1.Lease // as the leader last wrote it
	leader  atomic.Int32          // the stopped leader does not take part
	wins    chan floorWin
	errs    chan error
}

// newKubeFloor makes the floor's Lease in e's namespace, its three
// clients, and a follower on each that watches the Lease until b's
// Cleanup, which stops the watches and waits for the followers.
func newKubeFloor(b *testing.B, e *env) *kubeFloor {
	b.Helper()
	c, cancel := context.WithCancel(context.Background())
	f := &kubeFloor{name: "floor-" + randomSuffix(b), clients: make([]coordinationclient.LeaseInterface, 3), wins: make(chan floorWin, 3), errs: make(chan error, 3)}
	for i := range f.clients {
		f.clients[i] = e.k.Leases(b).Leases(e.ns)
	}
	holder := "node-0"
	created, err := f.clients[0].Create(c, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: f.name},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder},
	}, metav1.CreateOptions{})
	if err != nil {
		cancel()
		b.Fatal(err)
	}
	f.cur = created
	var followers sync.WaitGroup
	var watches []watch.Interface
	b.Cleanup(func() {
		cancel()
		for _, w := range watches {
			w.Stop()
		}
		followers.Wait()
	})
	for i := range f.clients {
		w, err := f.clients[i].Watch(c, metav1.ListOptions{
			FieldSelector:   "metadata.name=" + f.name,
			ResourceVersion: created.ResourceVersion,
		})
		if err != nil {
			b.Fatal(err)
		}
		watches = append(watches, w)
		followers.Go(func() { followFloor(c, i, &f.leader, f.clients[i], w, f.wins, f.errs) })
	}
	return f
}

// handover releases the Lease as its leader and returns when a follower
// took it.
func (f *kubeFloor) handover(b *testing.B) testcluster.Handover {
	b.Helper()
	c := b.Context()
	released := f.cur.DeepCopy()
	released.Spec.HolderIdentity = nil
	start := time.Now()
	if _, err := f.clients[f.leader.Load()].Update(c, released, metav1.UpdateOptions{}); err != nil {
		b.Fatalf("release: %v", err)
	}
	releaseTook := time.Since(start)
	win := testcluster.Await(b, f.wins, f.errs, eventTimeout)
	f.leader.Store(int32(win.id))
	cur, err := f.clients[win.id].Get(c, f.name, metav1.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	f.cur = cur
	return testcluster.Handover{Total: win.at.Sub(start), Release: releaseTook, Acquire: win.took}
}

// followFloor acquires the Lease on every watch event that shows it
// released, at that event's resourceVersion, as a watching follower would
// without reading first.
func followFloor(c context.Context, id int, leader *atomic.Int32, leases coordinationclient.LeaseInterface, w watch.Interface, wins chan<- floorWin, errs chan<- error) {
	for ev := range w.ResultChan() {
		l, ok := ev.Object.(*coordinationv1.Lease)
		if !ok || ev.Type != watch.Modified || l.Spec.HolderIdentity != nil || leader.Load() == int32(id) {
			continue
		}
		mine := l.DeepCopy()
		h := fmt.Sprintf("node-%d", id)
		mine.Spec.HolderIdentity = &h
		start := time.Now()
		_, err := leases.Update(c, mine, metav1.UpdateOptions{})
		switch {
		case err == nil:
			wins <- floorWin{id: id, at: time.Now(), took: time.Since(start)}
		case apierrors.IsConflict(err), errors.Is(err, context.Canceled):
		default:
			errs <- fmt.Errorf("follower %d: acquire: %w", id, err)
			return
		}
	}
}

// BenchmarkSwapFloor compares one write of each kind, alternated 200
// times on an idle server: client-go's PUT of a Lease that holds a holder
// and nothing else (the handover floor's), client-go's PUT of a Lease as
// Tenure writes it (annotations, field manager), and the Store's
// CompareAndSwap (that PUT, with the record's encoding before and the
// reply's decoding after). It reports the p50 and p90 of each, so that
// what Tenure's Lease costs the server on its own can be told from what a
// handover adds.
func BenchmarkSwapFloor(b *testing.B) {
	e := newEnv(b, "bench-swap")
	c := context.Background()
	leases := e.k.Leases(b).Leases(e.ns)
	holder := "node-0"
	bare, err := leases.Create(c, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "bare"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder},
	}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	st := newStore[meta](b, e.client, e.ns)
	now := time.Now()
	rec := lease.Record[meta]{Holder: holder, Token: 1, AcquiredAt: now, RenewedAt: now, LeaseDuration: 15 * time.Second, Metadata: meta{Pod: "pod-0"}}
	_, rev, err := st.CompareAndSwap(c, "tenure", 0, rec)
	if err != nil {
		b.Fatal(err)
	}
	var bareTook, rawTook, swapTook []time.Duration
	timed := func(into *[]time.Duration, f func() error) {
		start := time.Now()
		if err := f(); err != nil {
			b.Fatal(err)
		}
		*into = append(*into, time.Since(start))
	}
	for b.Loop() {
		for range 200 {
			timed(&bareTook, func() (err error) {
				bare.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
				bare, err = leases.Update(c, bare, metav1.UpdateOptions{})
				return err
			})
			tl, err := leases.Get(c, "tenure", metav1.GetOptions{})
			if err != nil {
				b.Fatal(err)
			}
			timed(&rawTook, func() error {
				tl.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
				_, err := leases.Update(c, tl, metav1.UpdateOptions{FieldManager: kubestore.FieldManager})
				return err
			})
			if _, rev, err = st.Get(c, "tenure"); err != nil {
				b.Fatal(err)
			}
			timed(&swapTook, func() (err error) {
				rec.RenewedAt = time.Now()
				_, rev, err = st.CompareAndSwap(c, "tenure", rev, rec)
				return err
			})
		}
	}
	for _, m := range []struct {
		unit string
		took []time.Duration
	}{{"bare", bareTook}, {"tenure-lease", rawTook}, {"store-swap", swapTook}} {
		slices.Sort(m.took)
		b.ReportMetric(float64(testcluster.Quantile(m.took, 0.5))/1e6, m.unit+"-p50-ms")
		b.ReportMetric(float64(testcluster.Quantile(m.took, 0.9))/1e6, m.unit+"-p90-ms")
	}
}
