package failover_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/etcdstore"
	"github.com/tenure-go/tenure/store/kubestore"
	"github.com/tenure-go/tenure/store/memstore"
	"github.com/tenure-go/tenure/store/pgstore"
	"github.com/tenure-go/tenure/store/redisstore"
)

func TestMain(m *testing.M) { testcluster.Main(m) }

// The timings of the comparison: what client-go's users run at, scaled.
const (
	leaseDuration = 3 * time.Second
	renewDeadline = 2 * time.Second
	retryPeriod   = 400 * time.Millisecond
	candidates    = 3
	// steady is how long follower requests are counted before the crash,
	// from L after the first leader started.
	steady = 2 * leaseDuration
)

// trials is how many crashes each system runs (TENURE_FAILOVER_TRIALS, 10
// by default).
func trials() int {
	if n, err := strconv.Atoi(os.Getenv("TENURE_FAILOVER_TRIALS")); err == nil && n > 0 {
		return n
	}
	return 10
}

func config() lease.Config {
	c := lease.DefaultConfig()
	c.LeaseDuration, c.RenewDeadline, c.RetryInterval, c.BackendTimeout = leaseDuration, renewDeadline, retryPeriod, time.Second
	return c
}

// election is one trial's candidates, whatever runs them.
type election struct {
	mu       sync.Mutex
	leader   string                 // who leads now ("" before the first)
	started  chan string            // a candidate started leading
	armed    bool                   // kill the leader after its next renewal lands
	killedAt time.Time              // when it was killed
	killed   chan struct{}          // closed when it was
	times    map[string][]time.Time // when each candidate sent its requests
	kill     map[string]func()      // stops a candidate without a release
}

func newElection(ids []string) *election {
	e := &election{started: make(chan string, 16), killed: make(chan struct{}), times: map[string][]time.Time{}, kill: map[string]func(){}}
	for _, id := range ids {
		e.times[id] = nil
	}
	return e
}

// request counts a store request of id.
func (e *election) request(id string) {
	e.mu.Lock()
	e.times[id] = append(e.times[id], time.Now())
	e.mu.Unlock()
}

// rate is id's requests per second between from and to: those after the
// first burst (the requests within 50 ms of the first: a pool's ping and
// the read it precedes) over the time from the first to the last (a
// window's edges would count a period's requests more or less), or their
// number over the window if all came in one burst.
func (e *election) rate(id string, from, to time.Time) float64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	var in []time.Time
	for _, t := range e.times[id] {
		if !t.Before(from) && t.Before(to) {
			in = append(in, t)
		}
	}
	burst := 0
	for burst < len(in) && in[burst].Sub(in[0]) < 50*time.Millisecond {
		burst++
	}
	if burst == len(in) {
		return float64(len(in)) / to.Sub(from).Seconds()
	}
	return float64(len(in)-burst) / in[len(in)-1].Sub(in[0]).Seconds()
}

// renewed is called when id's renewal has landed: the armed crash kills
// id at once if it leads.
func (e *election) renewed(id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.armed || id != e.leader {
		return
	}
	e.armed = false
	e.kill[id]()
	e.killedAt = time.Now()
	close(e.killed)
}

// lead is called when id starts leading.
func (e *election) lead(id string) {
	e.mu.Lock()
	e.leader = id
	e.mu.Unlock()
	e.started <- id
}

// sample is one crash: failover − L, and the followers' requests per
// second before it.
type sample struct {
	over time.Duration
	rate float64
}

// run runs one trial on e, whose candidates the caller started: it waits
// for a leader, counts the followers' requests for steady, crashes the
// leader right after its next renewal lands, and times the next leader.
func (e *election) run(tb testing.TB) sample {
	tb.Helper()
	first := waitLeader(tb, e.started, 30*time.Second)
	time.Sleep(leaseDuration) // the start settles (not a wait for an event)
	t0 := time.Now()
	time.Sleep(steady) // a measuring window, likewise
	t1 := time.Now()
	var sum float64
	for id := range e.times {
		if id != first {
			sum += e.rate(id, t0, t1)
		}
	}
	e.mu.Lock()
	e.armed = true
	e.mu.Unlock()
	select {
	case <-e.killed:
	case <-time.After(10 * time.Second):
		tb.Fatalf("%s led but did not renew", first)
	}
	next := waitLeader(tb, e.started, 30*time.Second)
	at := time.Now()
	if next == first {
		tb.Fatalf("the killed %s led again", first)
	}
	e.mu.Lock()
	killed := e.killedAt
	e.mu.Unlock()
	return sample{over: at.Sub(killed) - leaseDuration, rate: sum / float64(candidates-1)}
}

func waitLeader(tb testing.TB, ch <-chan string, d time.Duration) string {
	tb.Helper()
	select {
	case id := <-ch:
		return id
	case <-time.After(d):
		tb.Fatalf("no leader within %v", d)
		return ""
	}
}

// report logs and reports the samples of one system.
func report(b *testing.B, what string, ss []sample) {
	overs := make([]time.Duration, len(ss))
	var rate float64
	for i, s := range ss {
		overs[i], rate = s.over, rate+s.rate
	}
	slices.Sort(overs)
	rate /= float64(len(ss))
	// Nearest rank: the smallest sample at or above a fraction p of them.
	q := func(p float64) time.Duration { return overs[max(0, int(math.Ceil(p*float64(len(overs))))-1)] }
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	med, p90, hi, lo := q(0.5), q(0.9), overs[len(overs)-1], overs[0]
	load, _ := os.ReadFile("/proc/loadavg")
	b.Logf("%s: crash failover − L median %.1f ms, p90 %.1f ms, max %.1f ms, min %.1f ms (%d trials: %v); follower requests %.3f/s; load %s",
		what, ms(med), ms(p90), ms(hi), ms(lo), len(overs), overs, rate, load)
	b.ReportMetric(ms(med), "ms-median")
	b.ReportMetric(ms(p90), "ms-p90")
	b.ReportMetric(ms(hi), "ms-max")
	b.ReportMetric(ms(lo), "ms-min")
	b.ReportMetric(rate, "follower-req/s")
}

// counter is the lead.Instruments of one Tenure candidate.
type counter struct {
	id string
	e  *election
}

func (c counter) StoreOp(_, op string, _ time.Duration, err error) {
	c.e.request(c.id)
	if op == lead.OpRenew && err == nil {
		c.e.renewed(c.id)
	}
}

// tenure runs trials of three Tenure electors, each on a store from
// newStore (the trial's election name is name).
func tenure(b *testing.B, newStore func(tb testing.TB, id string, e *election) store.Store[struct{}]) {
	var ss []sample
	for i := range trials() {
		ids := []string{"a", "b", "c"}
		e := newElection(ids)
		name := fmt.Sprintf("failover-%d-%d", i, time.Now().UnixNano())
		var wg sync.WaitGroup
		for _, id := range ids {
			ctx, cancel := context.WithCancel(context.Background())
			el, err := lead.New[struct{}](name, newStore(b, id, e), lead.WithIdentity(id), lead.WithConfig(config()),
				lead.WithReleaseOnStop(false), lead.WithInstruments(counter{id, e}),
				lead.WithObserver(func(c lead.Change) {
					if c.Kind == lead.Started {
						e.lead(id)
					}
				}))
			if err != nil {
				b.Fatal(err)
			}
			e.kill[id] = cancel
			wg.Add(1)
			go func() { defer wg.Done(); _ = el.Run(ctx) }()
		}
		ss = append(ss, e.run(b))
		for _, k := range e.kill {
			k()
		}
		wg.Wait()
	}
	report(b, b.Name(), ss)
}

// BenchmarkCrashFailover is the side-by-side comparison of crash
// failover: Tenure on every backend, client-go's leaderelection on the
// test API server, etcd's concurrency.Election on the test etcd; three
// candidates, L=3s, RenewDeadline=2s, retries 0.4s. Each trial counts the
// followers' requests for 2L from L after the first leader, then stops the leader (no release) right
// after one of its renewals landed, and times the next leader from then,
// less L. Run it with -benchtime 1x (each run is TENURE_FAILOVER_TRIALS
// trials, 10 by default).
func BenchmarkCrashFailover(b *testing.B) {
	b.Run("tenure/memstore", func(b *testing.B) {
		st := memstore.New[struct{}]()
		for range b.N {
			tenure(b, func(testing.TB, string, *election) store.Store[struct{}] { return st })
		}
	})
	b.Run("tenure/redis", func(b *testing.B) {
		srv := testcluster.NewRedis(b)
		for range b.N {
			tenure(b, func(tb testing.TB, _ string, _ *election) store.Store[struct{}] {
				st, err := redisstore.New[struct{}](srv.Client(tb), redisstore.WithPrefix("failover"))
				if err != nil {
					tb.Fatal(err)
				}
				return st
			})
		}
	})
	b.Run("tenure/postgres", func(b *testing.B) {
		pg := testcluster.PackagePostgres(b)
		for range b.N {
			tenure(b, func(tb testing.TB, id string, e *election) store.Store[struct{}] {
				cfg, err := pgxpool.ParseConfig(pg.DSN())
				if err != nil {
					tb.Fatal(err)
				}
				// pgstore.ShouldPing over pgx's own rule (a connection
				// idle for a second is pinged when acquired, except for
				// the Store's reads), with each ping counted as a request.
				should := pgstore.ShouldPing(nil)
				cfg.ShouldPing = func(ctx context.Context, p pgxpool.ShouldPingParams) bool {
					if should(ctx, p) {
						e.request(id)
						return true
					}
					return false
				}
				pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
				if err != nil {
					tb.Fatal(err)
				}
				tb.Cleanup(pool.Close)
				st, err := pgstore.New[struct{}](pool, pgstore.WithTable("failover"))
				if err != nil {
					tb.Fatal(err)
				}
				return st
			})
		}
	})
	b.Run("tenure/kubernetes", func(b *testing.B) {
		k := testcluster.NewKube(b, testcluster.KubeOptions{})
		ns := k.Namespace(b, "failover")
		for range b.N {
			tenure(b, func(tb testing.TB, _ string, _ *election) store.Store[struct{}] {
				st, err := kubestore.New[struct{}](k.Leases(tb), ns)
				if err != nil {
					tb.Fatal(err)
				}
				return st
			})
		}
	})
	b.Run("tenure/etcd", func(b *testing.B) {
		srv := testcluster.NewEtcd(b)
		for range b.N {
			tenure(b, func(tb testing.TB, _ string, _ *election) store.Store[struct{}] {
				st, err := etcdstore.New[struct{}](etcdClient(tb, srv), etcdstore.WithPrefix("failover/"))
				if err != nil {
					tb.Fatal(err)
				}
				return st
			})
		}
	})
	b.Run("client-go/kubernetes", func(b *testing.B) {
		k := testcluster.NewKube(b, testcluster.KubeOptions{})
		ns := k.Namespace(b, "failover")
		for range b.N {
			clientGo(b, k, ns)
		}
	})
	b.Run("etcd-election/etcd", func(b *testing.B) {
		srv := testcluster.NewEtcd(b)
		for range b.N {
			etcdElection(b, srv)
		}
	})
}

func etcdClient(tb testing.TB, srv *testcluster.Etcd) *clientv3.Client {
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.Endpoint()}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// countingLock counts a candidate's requests to the API server and tells
// its election when a renewal (an update while it leads) landed; once
// killed it fails every call, as a dead process makes none.
type countingLock struct {
	resourcelock.Interface
	id   string
	e    *election
	dead atomic.Bool
}

func (l *countingLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	if l.dead.Load() {
		return nil, nil, context.Canceled
	}
	l.e.request(l.id)
	return l.Interface.Get(ctx)
}

func (l *countingLock) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	if l.dead.Load() {
		return context.Canceled
	}
	l.e.request(l.id)
	return l.Interface.Create(ctx, r)
}

func (l *countingLock) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	if l.dead.Load() {
		return context.Canceled
	}
	l.e.request(l.id)
	err := l.Interface.Update(ctx, r)
	if err == nil {
		l.e.renewed(l.id)
	}
	return err
}

// clientGo runs trials of three client-go LeaderElectors on a Lease.
func clientGo(b *testing.B, k *testcluster.Kube, ns string) {
	var ss []sample
	for i := range trials() {
		ids := []string{"a", "b", "c"}
		e := newElection(ids)
		name := fmt.Sprintf("failover-%d-%d", i, time.Now().UnixNano())
		var wg sync.WaitGroup
		for _, id := range ids {
			ctx, cancel := context.WithCancel(context.Background())
			lock := &countingLock{Interface: &resourcelock.LeaseLock{
				LeaseMeta:  metav1.ObjectMeta{Name: name, Namespace: ns},
				Client:     k.Leases(b),
				LockConfig: resourcelock.ResourceLockConfig{Identity: id},
			}, id: id, e: e}
			le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
				Lock: lock, LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod,
				Name: name,
				Callbacks: leaderelection.LeaderCallbacks{
					OnStartedLeading: func(context.Context) { e.lead(id) },
					OnStoppedLeading: func() {},
				},
			})
			if err != nil {
				b.Fatal(err)
			}
			e.kill[id] = func() { lock.dead.Store(true); cancel() }
			wg.Add(1)
			go func() { defer wg.Done(); le.Run(ctx) }()
		}
		ss = append(ss, e.run(b))
		for _, k := range e.kill {
			k()
		}
		wg.Wait()
	}
	report(b, b.Name(), ss)
}

// etcdElection runs trials of three etcd concurrency.Elections, each on a
// session (a lease of TTL L) of a client of its own. A follower's requests
// are its session's keepalives (one response each).
func etcdElection(b *testing.B, srv *testcluster.Etcd) {
	var ss []sample
	for i := range trials() {
		ids := []string{"a", "b", "c"}
		e := newElection(ids)
		prefix := fmt.Sprintf("/failover-%d-%d", i, time.Now().UnixNano())
		var wg sync.WaitGroup
		for _, id := range ids {
			cli, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.Endpoint()}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
			if err != nil {
				b.Fatal(err)
			}
			sess, err := concurrency.NewSession(cli, concurrency.WithTTL(int(leaseDuration/time.Second)))
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			alive, err := cli.KeepAlive(ctx, sess.Lease())
			if err != nil {
				b.Fatal(err)
			}
			var once sync.Once
			// A crash: the client closes without revoking the session's
			// lease, which the server lets expire.
			// (From a goroutine of its own: the client's Close waits for
			// the keepalive loop, which may be the caller.)
			e.kill[id] = func() { go once.Do(func() { cancel(); _ = cli.Close() }) }
			wg.Add(2)
			go func() {
				defer wg.Done()
				for range alive {
					e.request(id)
					e.renewed(id)
				}
			}()
			go func() {
				defer wg.Done()
				if err := concurrency.NewElection(sess, prefix).Campaign(ctx, id); err == nil {
					e.lead(id)
				}
			}()
		}
		ss = append(ss, e.run(b))
		for _, k := range e.kill {
			k()
		}
		wg.Wait()
	}
	report(b, b.Name(), ss)
}
