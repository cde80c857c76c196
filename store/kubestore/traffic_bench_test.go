package kubestore_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/store"
)

// countedClient returns a clientset of e's API server whose requests n
// counts, long-running watches apart.
func countedClient(tb testing.TB, e *env, n *atomic.Int64) kubernetes.Interface {
	cfg := e.k.Config()
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.URL.Query().Get("watch") != "true" && !strings.Contains(r.URL.Path, "/watch/") {
				n.Add(1)
			}
			return rt.RoundTrip(r)
		})
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return cs
}

// BenchmarkSteadyStateTraffic measures what three Tenure electors, each on
// a client of its own, send in steady state with the peer timings (L=3s,
// RenewDeadline 2s, RetryInterval 400ms): requests per second per follower
// (watches, which are long-running, apart), and the leader's requests per
// renewal. One op is a 30s window: run it with -benchtime 1x.
func BenchmarkSteadyStateTraffic(b *testing.B) {
	e := newEnv(b, "bench-traffic")
	for b.Loop() {
		stores := make([]testcluster.Counted[meta], 3)
		for i := range stores {
			n := &atomic.Int64{}
			stores[i] = testcluster.Counted[meta]{Store: newStore[meta](b, countedClient(b, e, n), e.ns), Requests: n.Load}
		}
		t := testcluster.MeasureTraffic(b, "traffic", testcluster.PeerConfig(), stores, 30*time.Second)
		b.Logf("kubestore: %v", t)
		b.ReportMetric(t.FollowerPerSecond, "follower-req/s")
		b.ReportMetric(t.LeaderPerRenewal, "leader-req/renewal")
	}
}

// BenchmarkHandoverPeerConfig measures the handover after a release among
// three Tenure electors, each on a client of its own, with the peer
// timings: p50 and p90 of the time from the leader's stop to its successor
// leading. One op is testcluster.Handovers (20 unless
// TENURE_HANDOVERS says) handovers.
func BenchmarkHandoverPeerConfig(b *testing.B) {
	e := newEnv(b, "bench-handover-peer")
	for b.Loop() {
		hs := testcluster.MeasureHandover(b, "handover", testcluster.PeerConfig(), testcluster.Handovers(b), func(tb testing.TB) store.Store[meta] {
			return newStore[meta](tb, e.k.Client(tb), e.ns)
		})
		testcluster.ReportHandover(b, "kubestore", hs)
	}
}

// BenchmarkHandoverPaired alternates BenchmarkHandoverFloor's handovers
// (client-go alone) with BenchmarkHandoverPeerConfig's, one of each, in one
// run: each of the electors' handovers comes testcluster.FloorSettle after
// one of the floor's, so that both meet the machine at the same moments (a
// host that takes CPU from this machine for a minute and not the next
// falls on both alike). It reports the p50 and p90 of each, the floor's as
// floor-p50-ms and floor-p90-ms; -test.v prints each pair in the order
// taken.
//
// Between two of its handovers the floor idles about a second, as the
// electors' followers do, where BenchmarkHandoverFloor idles FloorSettle.
func BenchmarkHandoverPaired(b *testing.B) {
	e := newEnv(b, "bench-handover-paired")
	for b.Loop() {
		f := newKubeFloor(b, e)
		hs, floor := testcluster.MeasureHandoverPaired(b, "handover", testcluster.PeerConfig(), testcluster.Handovers(b), func(tb testing.TB) store.Store[meta] {
			return newStore[meta](tb, e.k.Client(tb), e.ns)
		}, func() testcluster.Handover { return f.handover(b) })
		testcluster.ReportPairedHandover(b, "client-go alone", floor, "kubestore", hs)
	}
}

// BenchmarkHandoverNamed measures, with the peer timings, the handover to
// a named successor (Elector.HandOver) beside the handover after a plain
// release, alternated in one run: p50 and p90 of each, from the stop or
// the HandOver call to the successor leading. One op is
// testcluster.Handovers (20 unless TENURE_HANDOVERS says) of each.
func BenchmarkHandoverNamed(b *testing.B) {
	e := newEnv(b, "bench-handover-named")
	for b.Loop() {
		plain, named := testcluster.MeasureNamedHandover(b, "handover", testcluster.PeerConfig(), testcluster.Handovers(b), func(tb testing.TB) store.Store[meta] {
			return newStore[meta](tb, e.k.Client(tb), e.ns)
		})
		testcluster.ReportNamedHandover(b, "kubestore", plain, named)
	}
}
