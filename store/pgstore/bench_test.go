package pgstore_test

import (
	"context"
	"fmt"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/pgstore"
	"github.com/tenure-go/tenure/store/storetest"
)

// queryCounter is a pgx tracer that counts the queries sent, a batch as
// one (the first read on a connection runs the swap statement there in a
// batch: see warmSwap).
type queryCounter struct{ n atomic.Int64 }

var _ pgx.BatchTracer = (*queryCounter)(nil)

func (q *queryCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	q.n.Add(1)
	return ctx
}

func (q *queryCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (q *queryCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

func (q *queryCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	q.n.Add(1)
	return ctx
}

func (q *queryCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// writeCounter counts the writes to the server's sockets: one per round
// trip, since pgx sends a whole request (bind, execute, sync) in one write
// and then waits for the answer.
type writeCounter struct {
	net.Conn
	n *atomic.Int64
}

func (c writeCounter) Write(b []byte) (int, error) {
	c.n.Add(1)
	return c.Conn.Write(b)
}

// BenchmarkRenewRoundTrips renews one lease over and over and reports the
// queries and network round trips per renewal (each must be 1).
func BenchmarkRenewRoundTrips(b *testing.B) {
	tracer := &queryCounter{}
	var writes atomic.Int64
	pool := newPool(b, func(c *pgxpool.Config) {
		c.MaxConns = 1
		c.ConnConfig.Tracer = tracer
		c.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return writeCounter{conn, &writes}, nil
		}
	})
	st := newStore(b, pool)
	ctx := context.Background()
	r, rev, err := st.CompareAndSwap(ctx, "job", 0, rec("a", 1))
	if err != nil {
		b.Fatal(err)
	}
	// Warm up: the first use of a statement on a connection prepares it.
	for range 3 {
		r.RenewedAt = time.Now()
		if r, rev, err = st.CompareAndSwap(ctx, "job", rev, r); err != nil {
			b.Fatal(err)
		}
	}
	tracer.n.Store(0)
	writes.Store(0)
	b.ResetTimer()
	for b.Loop() {
		r.RenewedAt = time.Now()
		if r, rev, err = st.CompareAndSwap(ctx, "job", rev, r); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(writes.Load())/float64(b.N), "roundtrips/op")
	b.ReportMetric(float64(tracer.n.Load())/float64(b.N), "queries/op")
}

// BenchmarkRenewals1000 renews 1,000 leases, each by a goroutine of its own
// as 1,000 electors in one process would, on one pool, and reports the
// renewals per second the pool sustains.
func BenchmarkRenewals1000(b *testing.B) {
	const elections = 1000
	pool := newPool(b, func(c *pgxpool.Config) { c.MaxConns = 16 })
	st := newStore(b, pool)
	ctx := context.Background()
	type lease1 struct {
		r   lease.Record[storetest.Meta]
		rev lease.Revision
	}
	leases := make([]lease1, elections)
	for i := range leases {
		r, rev, err := st.CompareAndSwap(ctx, fmt.Sprint("election-", i), 0, rec(fmt.Sprint("holder-", i), 1))
		if err != nil {
			b.Fatal(err)
		}
		leases[i] = lease1{r, rev}
	}
	var next atomic.Int64
	var failed atomic.Value
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for i := range leases {
		wg.Go(func() {
			l := &leases[i]
			name := fmt.Sprint("election-", i)
			for next.Add(1) <= int64(b.N) {
				l.r.RenewedAt = time.Now()
				r, rev, err := st.CompareAndSwap(ctx, name, l.rev, l.r)
				if err != nil {
					failed.Store(err)
					return
				}
				l.r, l.rev = r, rev
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "renewals/s")
}

// BenchmarkHandoverAfterRelease measures the time from a leader's release
// (the end of its Run) to its follower leading, with RetryInterval 2s: the
// follower learns of the release by LISTEN/NOTIFY, so the figure does not
// depend on RetryInterval.
func BenchmarkHandoverAfterRelease(b *testing.B) {
	pool := newPool(b, func(c *pgxpool.Config) { c.MaxConns = 8 })
	st := newStore(b, pool)
	cfg := lease.DefaultConfig() // RetryInterval 2s
	var total, worst time.Duration
	samples := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		name := fmt.Sprint("handover-", i)
		started := make(chan string, 2)
		observe := lead.WithObserver(func(c lead.Change) {
			if c.Kind == lead.Started {
				started <- c.Term.Identity
			}
		})
		run := func(id string) (*lead.Elector[storetest.Meta], context.CancelFunc) {
			e, err := lead.New(name, st, lead.WithIdentity(id), lead.WithConfig(cfg), observe)
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			go func() { _ = e.Run(ctx) }()
			return e, cancel
		}
		a, stopA := run("a")
		if id := <-started; id != "a" {
			b.Fatalf("%s led first", id)
		}
		f, stopF := run("b")
		waitSees(b, st, name, f, "a")
		b.StartTimer()
		t0 := time.Now()
		stopA()
		<-a.Done()
		if id := <-started; id != "b" {
			b.Fatalf("%s led second", id)
		}
		d := time.Since(t0)
		b.StopTimer()
		stopF()
		<-f.Done()
		total += d
		worst = max(worst, d)
		samples = append(samples, d)
		b.StartTimer()
	}
	b.StopTimer()
	sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
	b.ReportMetric(float64(total.Microseconds())/1000/float64(len(samples)), "ms/handover")
	b.ReportMetric(float64(samples[len(samples)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(worst.Microseconds())/1000, "max-ms")
}

// BenchmarkSteadyStateTraffic measures what three electors, each on a pool
// of its own, send in steady state with the peer timings (L=3s,
// RenewDeadline 2s, RetryInterval 400ms): queries per second per follower
// (its watch's reads included), and the leader's queries per renewal. One
// op is a 30s window: run it with -benchtime 1x.
func BenchmarkSteadyStateTraffic(b *testing.B) {
	table := freshTable()
	for b.Loop() {
		stores := make([]testcluster.Counted[storetest.Meta], 3)
		for i := range stores {
			tracer := &queryCounter{}
			pool := newPool(b, func(c *pgxpool.Config) { c.MaxConns = 4; c.ConnConfig.Tracer = tracer })
			st, err := pgstore.New[storetest.Meta](pool, pgstore.WithTable(table))
			if err != nil {
				b.Fatal(err)
			}
			stores[i] = testcluster.Counted[storetest.Meta]{Store: st, Requests: tracer.n.Load}
		}
		t := testcluster.MeasureTraffic(b, "traffic", testcluster.PeerConfig(), stores, 30*time.Second)
		b.Logf("pgstore: %v", t)
		b.ReportMetric(t.FollowerPerSecond, "follower-req/s")
		b.ReportMetric(t.LeaderPerRenewal, "leader-req/renewal")
	}
}

// BenchmarkHandoverPeerConfig measures the handover after a release among
// three electors, each on a pool of its own, with the peer timings: p50
// and p90 of the time from the leader's stop to its successor leading. One
// op is testcluster.Handovers (20 unless
// TENURE_HANDOVERS says) handovers.
func BenchmarkHandoverPeerConfig(b *testing.B) {
	benchHandoverPeerConfig(b, func(c *pgxpool.Config) { c.MaxConns = 4 })
}

// BenchmarkHandoverGenericPlans is BenchmarkHandoverPeerConfig on pools
// whose sessions run prepared statements on their generic plans
// (plan_cache_mode force_generic_plan), as docs/backends/postgres.md
// suggests for a pool of Tenure's own.
func BenchmarkHandoverGenericPlans(b *testing.B) {
	benchHandoverPeerConfig(b, func(c *pgxpool.Config) {
		c.MaxConns = 4
		c.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
	})
}

// BenchmarkHandoverPaired alternates BenchmarkHandoverFloor's handovers
// (pgx alone) with BenchmarkHandoverPeerConfig's, one of each, in one run:
// each of the electors' handovers comes testcluster.FloorSettle after one
// of the floor's, so that both meet the machine at the same moments (a
// host that takes CPU from this machine for a minute and not the next
// falls on both alike). It reports the p50 and p90 of each, the floor's as
// floor-p50-ms and floor-p90-ms; -test.v prints each pair in the order
// taken.
//
// Between two of its handovers the floor idles about a second, as the
// electors' followers do (so pgxpool pings its connections before using
// them, as it does the followers'), where BenchmarkHandoverFloor idles
// FloorSettle.
func BenchmarkHandoverPaired(b *testing.B) {
	newStore := peerStores(func(c *pgxpool.Config) { c.MaxConns = 4 })
	for b.Loop() {
		f := newPgFloor(b)
		hs, floor := testcluster.MeasureHandoverPaired(b, "handover", testcluster.PeerConfig(), testcluster.Handovers(b), newStore,
			func() testcluster.Handover { return f.handover(b) })
		testcluster.ReportPairedHandover(b, "pgx alone", floor, "pgstore", hs)
	}
}

func benchHandoverPeerConfig(b *testing.B, configure func(*pgxpool.Config)) {
	newStore := peerStores(configure)
	for b.Loop() {
		hs := testcluster.MeasureHandover(b, "handover", testcluster.PeerConfig(), testcluster.Handovers(b), newStore)
		testcluster.ReportHandover(b, "pgstore", hs)
	}
}

// peerStores returns the handover benchmarks' newStore: a Store on a
// table of its own (the same for every Store it makes), each on a pool of
// its own that configure sets up.
func peerStores(configure func(*pgxpool.Config)) func(testing.TB) store.Store[storetest.Meta] {
	table := freshTable()
	return func(tb testing.TB) store.Store[storetest.Meta] {
		st, err := pgstore.New[storetest.Meta](newPool(tb, configure), pgstore.WithTable(table))
		if err != nil {
			tb.Fatal(err)
		}
		return st
	}
}

// BenchmarkHandoverNamed measures, with the peer timings, the handover to
// a named successor (Elector.HandOver) beside the handover after a plain
// release, alternated in one run: p50 and p90 of each, from the stop or
// the HandOver call to the successor leading. One op is
// testcluster.Handovers (20 unless TENURE_HANDOVERS says) of each.
func BenchmarkHandoverNamed(b *testing.B) {
	newStore := peerStores(func(c *pgxpool.Config) { c.MaxConns = 4 })
	for b.Loop() {
		plain, named := testcluster.MeasureNamedHandover(b, "handover", testcluster.PeerConfig(), testcluster.Handovers(b), newStore)
		testcluster.ReportNamedHandover(b, "pgstore", plain, named)
	}
}
