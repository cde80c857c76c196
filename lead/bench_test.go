package lead_test

import (
	"context"
	"testing"
	"time"

	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store/memstore"
)

// benchPair starts a leader and a follower on a fresh memstore with cfg and
// waits until the leader leads and the follower has read the record. It
// returns the leader's stop function and a channel on which the follower
// reports when it starts leading.
func benchPair(b *testing.B, cfg lease.Config, release bool) (stopLeader func(), followerLeads <-chan time.Time, cleanup func()) {
	st := memstore.New[meta]()
	ctx, cancel := context.WithCancel(context.Background())
	leads := make(chan struct{}, 1)
	a, err := lead.New("bench", st, lead.WithIdentity("a"), lead.WithConfig(cfg), lead.WithLookupEnv(nil),
		lead.WithReleaseOnStop(release),
		lead.WithObserver(func(c lead.Change) {
			if c.Kind == lead.Started {
				leads <- struct{}{}
			}
		}))
	if err != nil {
		b.Fatal(err)
	}
	actx, acancel := context.WithCancel(ctx)
	go a.Run(actx)
	<-leads
	at := make(chan time.Time, 1)
	f, err := lead.New("bench", st, lead.WithIdentity("b"), lead.WithConfig(cfg), lead.WithLookupEnv(nil),
		lead.WithObserver(func(c lead.Change) {
			if c.Kind == lead.Started {
				at <- time.Now()
			}
		}))
	if err != nil {
		b.Fatal(err)
	}
	go f.Run(ctx)
	<-f.Ready()
	return func() { acancel(); <-a.Done() }, at, func() { cancel(); <-f.Done() }
}

// BenchmarkHandoverAfterRelease measures the time from a leader's release to
// its successor leading, with the default timings (RetryInterval 2s): the
// successor learns of the release through Watch, not by polling.
func BenchmarkHandoverAfterRelease(b *testing.B) {
	cfg := lease.DefaultConfig()
	var total time.Duration
	for b.Loop() {
		b.StopTimer()
		stop, leads, cleanup := benchPair(b, cfg, true)
		b.StartTimer()
		released := time.Now()
		stop()
		total += (<-leads).Sub(released)
		b.StopTimer()
		cleanup()
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N), "µs/handover")
}

// BenchmarkCrashFailover measures, with a 300ms lease, how long after a
// leader stops renewing (without releasing) its successor leads, reported
// as failover time minus LeaseDuration: the successor counts the lease from
// when it first saw the leader's last renewal, so the figure lies within
// one retry interval either side of zero.
func BenchmarkCrashFailover(b *testing.B) {
	cfg := lease.Config{
		LeaseDuration:  300 * time.Millisecond,
		RenewDeadline:  200 * time.Millisecond,
		RetryInterval:  50 * time.Millisecond,
		RetryJitter:    0.1,
		BackendTimeout: 100 * time.Millisecond,
		ErrorInterval:  time.Second,
	}
	var total time.Duration
	for b.Loop() {
		b.StopTimer()
		stop, leads, cleanup := benchPair(b, cfg, false)
		crashed := time.Now()
		stop()
		total += (<-leads).Sub(crashed) - cfg.LeaseDuration
		cleanup()
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-over-lease/failover")
}
