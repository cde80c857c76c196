package testcluster

import (
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

// PeerConfig is the timing of issue 13's comparison with client-go and etcd:
// a 3s lease, a 2s renew deadline, 400ms retries (10% jitter), a 1s backend
// timeout.
func PeerConfig() lease.Config {
	return lease.Config{
		LeaseDuration:  3 * time.Second,
		RenewDeadline:  2 * time.Second,
		RetryInterval:  400 * time.Millisecond,
		RetryJitter:    0.1,
		BackendTimeout: time.Second,
		ErrorInterval:  time.Minute,
	}
}

// Counted is the store of one elector of a traffic measurement, with a
// count of the requests it has sent to its server so far (on the wire: a
// store's own reads, such as a watch reading the record, count too).
type Counted[M any] struct {
	Store    store.Store[M]
	Requests func() int64
}

// Traffic is what the electors of one election sent in steady state.
type Traffic struct {
	// FollowerPerSecond is the mean number of requests per second each
	// follower sent.
	FollowerPerSecond float64
	// LeaderPerRenewal is the number of requests the leader sent per
	// renewal it made.
	LeaderPerRenewal float64
	// Renewals is the number of renewals the leader made.
	Renewals int64
}

// String formats t for a log.
func (t Traffic) String() string {
	return fmt.Sprintf("followers %.3f requests/s each, leader %.3f requests per renewal (%d renewals)", t.FollowerPerSecond, t.LeaderPerRenewal, t.Renewals)
}

// renewCounter is a lead.Instruments that counts renewals.
type renewCounter struct{ n atomic.Int64 }

func (r *renewCounter) StoreOp(_, op string, _ time.Duration, _ error) {
	if op == lead.OpRenew {
		r.n.Add(1)
	}
}

// MeasureTraffic runs one elector of the election name on each of stores
// with timings cfg, waits until one leads and two leases have passed (every
// follower watches and has read), then counts for window what each sent:
// requests per second per follower, and the leader's requests per renewal.
// It fails if the leadership changes meanwhile.
func MeasureTraffic[M any](tb testing.TB, name string, cfg lease.Config, stores []Counted[M], window time.Duration) Traffic {
	tb.Helper()
	next := 0
	c := NewElectors(tb, name, time.Minute, func(testing.TB) store.Store[M] {
		st := stores[next].Store
		next++
		return st
	})
	renewals := make([]*renewCounter, len(stores))
	ids := make([]string, len(stores))
	for i := range stores {
		renewals[i] = &renewCounter{}
		ids[i] = fmt.Sprint("node-", i)
		c.Start(ids[i], cfg, lead.WithInstruments(renewals[i]))
	}
	first := c.NextLeader()
	settle := time.NewTimer(2 * cfg.LeaseDuration)
	<-settle.C
	before := make([]int64, len(stores))
	renewed := renewals[slices.Index(ids, first.ID)].n.Load()
	for i, s := range stores {
		before[i] = s.Requests()
	}
	start := time.Now()
	// The measurement is a window of time: there is no event to wait for.
	if ch, ok := c.Next(window); ok {
		tb.Fatalf("leadership changed while measuring: %s %v (token %d)", ch.ID, ch.Kind, ch.Term.Token)
	}
	elapsed := time.Since(start).Seconds()
	var t Traffic
	var followers int
	for i, s := range stores {
		sent := s.Requests() - before[i]
		if ids[i] == first.ID {
			t.Renewals = renewals[i].n.Load() - renewed
			t.LeaderPerRenewal = float64(sent) / float64(max(t.Renewals, 1))
			continue
		}
		followers++
		t.FollowerPerSecond += float64(sent) / elapsed
	}
	t.FollowerPerSecond /= float64(max(followers, 1))
	return t
}

// MeasureHandover runs one elector of the election name on each of the
// stores newStore makes (three electors), with timings cfg, then n times
// stops the leader (which releases the lease), takes the time until
// another leads, and starts the stopped one again. It returns the times,
// sorted.
func MeasureHandover[M any](tb testing.TB, name string, cfg lease.Config, n int, newStore func(tb testing.TB) store.Store[M]) []time.Duration {
	tb.Helper()
	c := NewElectors(tb, name, time.Minute, newStore)
	ids := []string{"node-0", "node-1", "node-2"}
	c.StartEach(ids, cfg)
	leader := c.NextLeader()
	out := make([]time.Duration, 0, n)
	for range n {
		// Let the followers settle on the new term (watching, read).
		settle := time.NewTimer(cfg.MaxRetryInterval() + cfg.RetryInterval)
		<-settle.C
		next, took := c.Handover(leader.ID)
		out = append(out, took)
		c.Start(leader.ID, cfg)
		leader = next
	}
	slices.Sort(out)
	return out
}

// Quantile returns the q-quantile (0 to 1) of sorted, nearest rank.
func Quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted)) + 0.5)
	return sorted[min(max(i-1, 0), len(sorted)-1)]
}
