package etcdstore_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/etcdstore"
)

// rpcCounter counts the unary gRPC calls of one client (one round trip
// each) and the streams it opens (watches).
type rpcCounter struct {
	unary   atomic.Int64
	streams atomic.Int64
}

func (c *rpcCounter) options() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			c.unary.Add(1)
			return invoker(ctx, method, req, reply, cc, opts...)
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			c.streams.Add(1)
			return streamer(ctx, desc, cc, method, opts...)
		}),
	}
}

// countedClient returns a client of the package's etcd whose calls n
// counts.
func countedClient(b *testing.B, n *rpcCounter) *clientv3.Client {
	b.Helper()
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{testcluster.PackageEtcd(b).Endpoint()},
		DialTimeout: 2 * time.Second,
		Logger:      zap.NewNop(),
		DialOptions: n.options(),
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	return c
}

// One renewal is one CompareAndSwap: one transaction, one round trip.
func BenchmarkRenew(b *testing.B) {
	n := &rpcCounter{}
	st, err := etcdstore.New[meta](countedClient(b, n), etcdstore.WithPrefix(uniquePrefix(b)))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	r, rev, err := st.CompareAndSwap(ctx, "renew", 0, rec("a", 1))
	if err != nil {
		b.Fatal(err)
	}
	n.unary.Store(0)
	for b.Loop() {
		r.RenewedAt = time.Now()
		if r, rev, err = st.CompareAndSwap(ctx, "renew", rev, r); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n.unary.Load())/float64(b.N), "roundtrips/op")
}

// swaps counts the CompareAndSwap calls made through it and forwards every
// optional interface of the store it wraps.
type swaps[M any] struct {
	store.Store[M]
	n *atomic.Int64
}

func (s swaps[M]) CompareAndSwap(ctx context.Context, name string, expected lease.Revision, next lease.Record[M]) (lease.Record[M], lease.Revision, error) {
	s.n.Add(1)
	return s.Store.CompareAndSwap(ctx, name, expected, next)
}
func (s swaps[M]) MayLoseRecords() bool    { return store.MayLoseRecords(s.Store) }
func (s swaps[M]) CheckMetadata(m M) error { return store.CheckMetadata(s.Store, m) }
func (s swaps[M]) Validate() error         { return store.Validate(s.Store) }
func (s swaps[M]) Watch(ctx context.Context, name string) (<-chan store.Event[M], error) {
	return store.Watch(ctx, s.Store, name)
}
func (s swaps[M]) WatchCapabilities() store.WatchCapabilities {
	return store.WatchCapabilitiesOf(s.Store)
}

// Round trips per renewal of a real elector: every unary call of its
// client (reads included) over its CompareAndSwap calls, with a follower
// watching on a client of its own. Watch streams are counted apart.
func BenchmarkElectorRenewals(b *testing.B) {
	cfg := lease.Config{
		LeaseDuration:  10 * time.Second,
		RenewDeadline:  5 * time.Second,
		RetryInterval:  5 * time.Millisecond,
		RetryJitter:    0.1,
		BackendTimeout: 2 * time.Second,
		ErrorInterval:  time.Minute,
	}
	prefix := uniquePrefix(b)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	b.Cleanup(func() { cancel(); wg.Wait() })
	type node struct {
		rpcs  rpcCounter
		swaps atomic.Int64
	}
	nodes := map[string]*node{"leader": {}, "follower": {}}
	started := make(chan string, 2)
	start := func(id string) {
		nd := nodes[id]
		st, err := etcdstore.New[meta](countedClient(b, &nd.rpcs), etcdstore.WithPrefix(prefix))
		if err != nil {
			b.Fatal(err)
		}
		e, err := lead.New("job", swaps[meta]{st, &nd.swaps}, lead.WithIdentity(id), lead.WithConfig(cfg), lead.WithLookupEnv(nil),
			lead.WithObserver(func(ch lead.Change) {
				if ch.Kind == lead.Started {
					started <- id
				}
			}))
		if err != nil {
			b.Fatal(err)
		}
		wg.Go(func() { _ = e.Run(ctx) })
		select {
		case <-e.Ready():
		case <-time.After(time.Minute):
			b.Fatalf("%s not ready after a minute", id)
		}
	}
	start("leader")
	if id := <-started; id != "leader" {
		b.Fatalf("%s leads", id)
	}
	start("follower")
	l, f := nodes["leader"], nodes["follower"]
	b.ResetTimer()
	u0, s0, fu0, fs0 := l.rpcs.unary.Load(), l.swaps.Load(), f.rpcs.unary.Load(), f.swaps.Load()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for l.swaps.Load()-s0 < int64(b.N) {
		<-tick.C
	}
	b.StopTimer()
	renewals := l.swaps.Load() - s0
	b.ReportMetric(float64(l.rpcs.unary.Load()-u0)/float64(renewals), "roundtrips/renewal")
	b.ReportMetric(float64(f.rpcs.unary.Load()-fu0)/float64(renewals), "follower-roundtrips/renewal")
	b.Logf("%d renewals; follower: %d swaps, %d watch streams opened in all", renewals, f.swaps.Load()-fs0, f.rpcs.streams.Load())
	select {
	case id := <-started:
		b.Fatalf("%s started leading during the benchmark", id)
	default:
	}
}

// Handover after a release with the default timings (RetryInterval 2s):
// the leader stops (releasing the lease), and a follower, which hears of
// the release through Watch, leads. Reports the median and the 90th
// percentile.
func BenchmarkHandoverAfterRelease(b *testing.B) {
	cfg := lease.DefaultConfig()
	prefix := uniquePrefix(b)
	e := testcluster.PackageEtcd(b)
	type node struct {
		cancel context.CancelFunc
		e      *lead.Elector[meta]
	}
	changes := make(chan testcluster.Change, 100)
	nodes := map[string]node{}
	count := 0
	startNode := func() {
		count++
		id := fmt.Sprint("node-", count)
		st, err := etcdstore.New[meta](newClient(b, e), etcdstore.WithPrefix(prefix))
		if err != nil {
			b.Fatal(err)
		}
		el, err := lead.New("job", st, lead.WithIdentity(id), lead.WithConfig(cfg), lead.WithLookupEnv(nil),
			lead.WithObserver(func(ch lead.Change) { changes <- testcluster.Change{ID: id, Change: ch, At: time.Now()} }))
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		go func() { _ = el.Run(ctx) }()
		nodes[id] = node{cancel, el}
		b.Cleanup(func() { cancel(); <-el.Done() })
		select {
		case <-el.Ready():
		case <-time.After(time.Minute):
			b.Fatalf("%s not ready after a minute", id)
		}
	}
	nextStarted := func() testcluster.Change {
		for {
			select {
			case ch := <-changes:
				if ch.Kind == lead.Started {
					return ch
				}
			case <-time.After(time.Minute):
				b.Fatal("nobody started leading within a minute")
			}
		}
	}
	for range 3 {
		startNode()
	}
	leader := nextStarted()
	var took []time.Duration
	b.ResetTimer()
	for range b.N {
		stopAt := time.Now()
		nodes[leader.ID].cancel()
		next := nextStarted()
		took = append(took, next.At.Sub(stopAt))
		b.StopTimer()
		<-nodes[leader.ID].e.Done()
		delete(nodes, leader.ID)
		startNode()
		leader = next
		b.StartTimer()
	}
	b.StopTimer()
	slices.Sort(took)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(took[len(took)/2]), "p50-ms/handover")
	b.ReportMetric(ms(took[len(took)*9/10]), "p90-ms/handover")
}

// BenchmarkHandoverPeerConfig measures the handover after a release among
// three Tenure electors, each on a client of its own, with the peer
// timings: p50 and p90 of the time from the leader's stop to its successor
// leading, and the median of each step. One op is testcluster.Handovers
// (20 unless TENURE_HANDOVERS says) handovers.
func BenchmarkHandoverPeerConfig(b *testing.B) {
	e := testcluster.PackageEtcd(b)
	prefix := uniquePrefix(b)
	for b.Loop() {
		hs := testcluster.MeasureHandover(b, "handover", testcluster.PeerConfig(), testcluster.Handovers(b), func(tb testing.TB) store.Store[meta] {
			st, err := etcdstore.New[meta](newClient(tb, e), etcdstore.WithPrefix(prefix))
			if err != nil {
				tb.Fatal(err)
			}
			return st
		})
		testcluster.ReportHandover(b, "etcdstore", hs)
	}
}

// BenchmarkSteadyStateTraffic measures what three electors, each on a
// client of its own, send in steady state with the peer timings (L=3s,
// RenewDeadline 2s, RetryInterval 400ms): unary gRPC calls per second per
// follower (watch streams apart), and the leader's calls per renewal. One
// op is a 30s window: run it with -benchtime 1x.
func BenchmarkSteadyStateTraffic(b *testing.B) {
	prefix := uniquePrefix(b)
	for b.Loop() {
		stores := make([]testcluster.Counted[meta], 3)
		for i := range stores {
			n := &rpcCounter{}
			st, err := etcdstore.New[meta](countedClient(b, n), etcdstore.WithPrefix(prefix))
			if err != nil {
				b.Fatal(err)
			}
			stores[i] = testcluster.Counted[meta]{Store: st, Requests: n.unary.Load}
		}
		t := testcluster.MeasureTraffic(b, "traffic", testcluster.PeerConfig(), stores, 30*time.Second)
		b.Logf("etcdstore: %v", t)
		b.ReportMetric(t.FollowerPerSecond, "follower-req/s")
		b.ReportMetric(t.LeaderPerRenewal, "leader-req/renewal")
	}
}

// BenchmarkHandoverNamed measures, with the peer timings, the handover to
// a named successor (Elector.HandOver) beside the handover after a plain
// release, alternated in one run: p50 and p90 of each, from the stop or
// the HandOver call to the successor leading. One op is
// testcluster.Handovers (20 unless TENURE_HANDOVERS says) of each.
func BenchmarkHandoverNamed(b *testing.B) {
	e := testcluster.PackageEtcd(b)
	prefix := uniquePrefix(b)
	for b.Loop() {
		plain, named := testcluster.MeasureNamedHandover(b, "handover", testcluster.PeerConfig(), testcluster.Handovers(b), func(tb testing.TB) store.Store[meta] {
			st, err := etcdstore.New[meta](newClient(tb, e), etcdstore.WithPrefix(prefix))
			if err != nil {
				tb.Fatal(err)
			}
			return st
		})
		testcluster.ReportNamedHandover(b, "etcdstore", plain, named)
	}
}
