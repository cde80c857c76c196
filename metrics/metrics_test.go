package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/metrics"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/memstore"
)

func fastConfig() lease.Config {
	return lease.Config{
		LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryInterval: 500 * time.Millisecond,
		RetryJitter: 0, BackendTimeout: time.Second, ErrorInterval: 10 * time.Second,
	}
}

// flaky fails every operation while down is set.
type flaky struct {
	store.Store[struct{}]
	down atomic.Bool
}

// MayLoseRecords forwards store.Lossy, as every wrapper should.
func (f *flaky) MayLoseRecords() bool { return store.MayLoseRecords(f.Store) }

func (f *flaky) CompareAndSwap(ctx context.Context, name string, exp lease.Revision, next lease.Record[struct{}]) (lease.Record[struct{}], lease.Revision, error) {
	if f.down.Load() {
		return lease.Record[struct{}]{}, 0, errors.New("unreachable")
	}
	return f.Store.CompareAndSwap(ctx, name, exp, next)
}

func TestMetricsFollowTransitions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		m := metrics.New()
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(m)
		f := &flaky{Store: memstore.New[struct{}]()}
		changes := make(chan lead.Change, 10)
		opts := append(m.Options(), lead.WithIdentity("a"), lead.WithConfig(fastConfig()), lead.WithLookupEnv(nil),
			lead.WithObserver(func(c lead.Change) { changes <- c }))
		e, err := lead.New("job", f, opts...)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer func() { cancel(); <-e.Done() }()
		go e.Run(ctx)
		<-changes
		time.Sleep(1100 * time.Millisecond) // two renewals, at 0.5s and 1s
		synctest.Wait()

		want := `
# HELP tenure_leader 1 while this process leads the election, 0 otherwise.
# TYPE tenure_leader gauge
tenure_leader{name="job"} 1
# HELP tenure_leadership_changes_total Terms this process started and stopped.
# TYPE tenure_leadership_changes_total counter
tenure_leadership_changes_total{change="started",name="job"} 1
# HELP tenure_term_token Fencing token of this process's current or last term.
# TYPE tenure_term_token gauge
tenure_term_token{name="job"} 1
# HELP tenure_last_renewal_timestamp_seconds Unix time when the last successful acquire or renewal returned.
# TYPE tenure_last_renewal_timestamp_seconds gauge
tenure_last_renewal_timestamp_seconds{name="job"} ` + seconds(start.Add(time.Second)) + `
`
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "tenure_leader", "tenure_leadership_changes_total", "tenure_term_token", "tenure_last_renewal_timestamp_seconds"); err != nil {
			t.Fatal(err)
		}
		if n := testutil.CollectAndCount(m, "tenure_renewal_duration_seconds"); n != 1 {
			t.Fatalf("renewal histogram series: %d", n)
		}

		// The store goes away: renewals fail and the term ends.
		f.down.Store(true)
		if c := <-changes; c.Kind != lead.Stopped {
			t.Fatalf("change %+v", c)
		}
		synctest.Wait()
		want = `
# HELP tenure_leader 1 while this process leads the election, 0 otherwise.
# TYPE tenure_leader gauge
tenure_leader{name="job"} 0
# HELP tenure_leadership_changes_total Terms this process started and stopped.
# TYPE tenure_leadership_changes_total counter
tenure_leadership_changes_total{change="started",name="job"} 1
tenure_leadership_changes_total{change="stopped",name="job"} 1
# HELP tenure_renewal_failures_total Renewals that failed or timed out (conflicts excluded).
# TYPE tenure_renewal_failures_total counter
tenure_renewal_failures_total{name="job"} 3
`
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "tenure_leader", "tenure_leadership_changes_total", "tenure_renewal_failures_total"); err != nil {
			t.Fatal(err)
		}
	})
}

func seconds(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixNano())/1e9, 'e', -1, 64)
}

// A missing record or a conflict is the store's answer, not a failure.
func TestAnswersAreNotErrors(t *testing.T) {
	m := metrics.New()
	m.StoreOp("job", lead.OpRead, time.Millisecond, fmt.Errorf("get: %w", store.ErrNotFound))
	m.StoreOp("job", lead.OpAcquire, time.Millisecond, fmt.Errorf("cas: %w", store.ErrConflict))
	m.StoreOp("job", lead.OpRenew, time.Millisecond, fmt.Errorf("cas: %w", store.ErrConflict))
	if n := testutil.CollectAndCount(m, "tenure_store_errors_total", "tenure_renewal_failures_total"); n != 0 {
		t.Fatalf("%d error series after answers, want 0", n)
	}
	m.StoreOp("job", lead.OpRead, time.Millisecond, errors.New("connection refused"))
	want := `
# HELP tenure_store_errors_total Store operations that failed or timed out (conflicts and missing records excluded).
# TYPE tenure_store_errors_total counter
tenure_store_errors_total{name="job",op="read"} 1
`
	if err := testutil.CollectAndCompare(m, strings.NewReader(want), "tenure_store_errors_total"); err != nil {
		t.Fatal(err)
	}
}

// A failed run of Every is counted in tenure_every_errors_total; the
// schedule goes on.
func TestEveryErrorsAreCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := metrics.New()
		changes := make(chan lead.Change, 10)
		opts := append(m.Options(), lead.WithIdentity("a"), lead.WithConfig(fastConfig()), lead.WithLookupEnv(nil),
			lead.WithObserver(func(c lead.Change) { changes <- c }))
		e, err := lead.New("job", memstore.New[struct{}](), opts...)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer func() { cancel(); <-e.Done() }()
		go e.Run(ctx)
		<-changes
		runs := 0
		go e.Every(ctx, time.Second, func(context.Context, lead.Term) error {
			runs++
			if runs%2 == 1 {
				return errors.New("boom")
			}
			return nil
		})
		time.Sleep(3500 * time.Millisecond) // runs at 0, 1, 2, 3s: two fail
		synctest.Wait()
		want := `
# HELP tenure_every_errors_total Runs of lead.Elector.Every that returned an error while their term was still going.
# TYPE tenure_every_errors_total counter
tenure_every_errors_total{name="job"} 2
`
		if err := testutil.CollectAndCompare(m, strings.NewReader(want), "tenure_every_errors_total"); err != nil {
			t.Fatal(err)
		}
	})
}

// lossy is a memstore that says it may lose records: the first elector's
// record is a claim it waits on.
type lossy struct{ *memstore.Store[struct{}] }

func (lossy) MayLoseRecords() bool { return true }

// tenure_claim_waiting is 1 while the elector waits on its claim and 0
// once it took it over; tenure_watch_up is 1 while its watch is up;
// tenure_lease_duration_seconds is the lease its record promises.
func TestClaimAndWatchGaugesFollowTheElector(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := metrics.New()
		changes := make(chan lead.Change, 10)
		opts := append(m.Options(), lead.WithIdentity("a"), lead.WithConfig(fastConfig()), lead.WithLookupEnv(nil),
			lead.WithObserver(func(c lead.Change) { changes <- c }))
		e, err := lead.New("job", lossy{memstore.New[struct{}]()}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer func() { cancel(); <-e.Done() }()
		go e.Run(ctx)
		synctest.Wait()
		gauges := func(claim, watch int) string {
			return fmt.Sprintf(`
# HELP tenure_claim_waiting 1 while this process waits on a claim it created (a LeaseDuration during which nobody leads), 0 otherwise.
# TYPE tenure_claim_waiting gauge
tenure_claim_waiting{name="job"} %d
# HELP tenure_watch_up 1 while this process's watch of the record is up, 0 while it polls after a watch failed or ended.
# TYPE tenure_watch_up gauge
tenure_watch_up{name="job"} %d
`, claim, watch)
		}
		if err := testutil.CollectAndCompare(m, strings.NewReader(gauges(1, 1)), "tenure_claim_waiting", "tenure_watch_up"); err != nil {
			t.Fatal(err)
		}
		<-changes // the term, once the claim has stood
		synctest.Wait()
		if err := testutil.CollectAndCompare(m, strings.NewReader(gauges(0, 1)), "tenure_claim_waiting", "tenure_watch_up"); err != nil {
			t.Fatal(err)
		}
		want := `
# HELP tenure_lease_duration_seconds Lease that this process's last successful acquire or renewal promised: how long others wait after it.
# TYPE tenure_lease_duration_seconds gauge
tenure_lease_duration_seconds{name="job"} 3
`
		if err := testutil.CollectAndCompare(m, strings.NewReader(want), "tenure_lease_duration_seconds"); err != nil {
			t.Fatal(err)
		}
	})
}

// A Group on a store that batches (memstore) counts its renewals' batches:
// fewer requests than renewals.
func TestBatchesAreCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := metrics.New()
		grp, err := lead.NewGroup[struct{}](memstore.New[struct{}](), append(m.Options(), lead.WithIdentity("a"),
			lead.WithConfig(lease.DefaultConfig()), lead.WithLookupEnv(nil))...)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 20 {
			if _, err := grp.Add(fmt.Sprint("job-", i)); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- grp.Run(ctx) }()
		defer func() { cancel(); <-done }()
		time.Sleep(10 * time.Second)
		synctest.Wait()
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(m)
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for _, mf := range mfs {
			for _, mt := range mf.GetMetric() {
				switch {
				case mt.GetCounter() != nil:
					got[mf.GetName()] += mt.GetCounter().GetValue()
				case mt.GetHistogram() != nil:
					got[mf.GetName()] += float64(mt.GetHistogram().GetSampleCount())
				}
			}
		}
		renewals, batches, batched := got["tenure_renewal_duration_seconds"], got["tenure_store_batches_total"], got["tenure_store_batched_operations_total"]
		// 20 leaders renew every 2 s or so: 80 renewals at least in 10 s.
		if renewals < 80 || batched != renewals || batches == 0 || batches*4 > renewals {
			t.Fatalf("renewals %v, batches %v of %v renewals: want every renewal in a batch, several to a batch", renewals, batches, batched)
		}
	})
}
