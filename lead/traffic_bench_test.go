package lead_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/memstore"
)

// countedMem counts the requests one elector sends to a shared memstore;
// Watch is the memstore's own.
type countedMem struct {
	*memstore.Store[meta]
	n atomic.Int64
}

func (c *countedMem) Get(ctx context.Context, name string) (lease.Record[meta], lease.Revision, error) {
	c.n.Add(1)
	return c.Store.Get(ctx, name)
}

func (c *countedMem) CompareAndSwap(ctx context.Context, name string, expected lease.Revision, next lease.Record[meta]) (lease.Record[meta], lease.Revision, error) {
	c.n.Add(1)
	return c.Store.CompareAndSwap(ctx, name, expected, next)
}

// BenchmarkSteadyStateTraffic measures, on memstore, what three electors
// send in steady state with testcluster.PeerConfig's timings (L=3s, RenewDeadline 2s,
// RetryInterval 400ms): requests per second per follower, and the leader's
// requests per renewal. One op is a 30s window: run it with -benchtime 1x.
func BenchmarkSteadyStateTraffic(b *testing.B) {
	shared := memstore.New[meta]()
	for b.Loop() {
		stores := make([]testcluster.Counted[meta], 3)
		for i := range stores {
			c := &countedMem{Store: shared}
			stores[i] = testcluster.Counted[meta]{Store: c, Requests: c.n.Load}
		}
		t := testcluster.MeasureTraffic(b, "traffic", testcluster.PeerConfig(), stores, 30*time.Second)
		b.Logf("memstore: %v", t)
		b.ReportMetric(t.FollowerPerSecond, "follower-req/s")
		b.ReportMetric(t.LeaderPerRenewal, "leader-req/renewal")
	}
}

// BenchmarkHandoverPeerConfig measures, on memstore, the handover after a
// release among three electors with testcluster.PeerConfig's timings: p50 and p90 of the
// time from the leader's stop to its successor leading. One op is
// testcluster.Handovers (20 unless TENURE_HANDOVERS says).
func BenchmarkHandoverPeerConfig(b *testing.B) {
	shared := memstore.New[meta]()
	for b.Loop() {
		hs := testcluster.MeasureHandover(b, "handover", testcluster.PeerConfig(), testcluster.Handovers(b), func(testing.TB) store.Store[meta] { return shared })
		testcluster.ReportHandover(b, "memstore", hs)
	}
}

// BenchmarkHandoverNamed measures, with the peer timings, the handover to
// a named successor (Elector.HandOver) beside the handover after a plain
// release, alternated in one run: p50 and p90 of each, from the stop or
// the HandOver call to the successor leading. One op is
// testcluster.Handovers (20 unless TENURE_HANDOVERS says) of each.
func BenchmarkHandoverNamed(b *testing.B) {
	shared := memstore.New[meta]()
	for b.Loop() {
		plain, named := testcluster.MeasureNamedHandover(b, "handover", testcluster.PeerConfig(), testcluster.Handovers(b), func(testing.TB) store.Store[meta] { return shared })
		testcluster.ReportNamedHandover(b, "memstore", plain, named)
	}
}
