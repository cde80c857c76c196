//go:build linux

package scale_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/kubestore"
)

// kubeBackend is a kube-apiserver's Leases, one namespace per run.
func kubeBackend() backend {
	var ns string
	return backend{
		name: "kube",
		store: func(b *testing.B, group int) store.Store[meta] {
			k := testcluster.PackageKube(b)
			if group == 0 {
				ns = k.Namespace(b, "shards")
			}
			st, err := kubestore.New[meta](k.Client(b).CoordinationV1(), ns)
			if err != nil {
				b.Fatal(err)
			}
			return st
		},
		conns: func(*testing.B) int { return -1 },
	}
}

// shardOps counts one replica's store requests (lead.WithInstruments:
// its electors' and its looks'), and times its renewals, releases and
// acquires into times.
type shardOps struct {
	n     atomic.Int64
	times *opTimes
}

func (c *shardOps) StoreOp(_, op string, took time.Duration, _ error) {
	c.n.Add(1)
	switch op {
	case lead.OpRenew, lead.OpRelease, lead.OpAcquire:
		c.times.add(op, took)
	}
}

// opTimes are the durations of the replicas' store operations, by kind,
// since it was last taken.
type opTimes struct {
	mu  sync.Mutex
	ops map[string][]time.Duration
}

func (o *opTimes) add(op string, took time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ops[op] = append(o.ops[op], took)
}

// take returns the p50 and p99 of each kind, and forgets them.
func (o *opTimes) take() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for _, op := range []string{lead.OpRenew, lead.OpRelease, lead.OpAcquire} {
		ds := o.ops[op]
		slices.Sort(ds)
		out = append(out, fmt.Sprintf("%s %d, p50 %v p99 %v", op, len(ds), quantile(ds, 0.5).Round(time.Microsecond), quantile(ds, 0.99).Round(time.Microsecond)))
	}
	clear(o.ops)
	return strings.Join(out, "; ")
}

// shardGaps records, per shard, when its last term ended (Stopped, on any
// replica) and when the next began (Started), paired by token whatever
// the order the observers run in: the time without a leader of a move.
type shardGaps struct {
	mu      sync.Mutex
	stopped map[string]termAt
	started map[string]termAt
	gaps    []time.Duration
}

type termAt struct {
	token uint64
	at    time.Time
}

func (g *shardGaps) observe(c lead.Change) {
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	t := termAt{uint64(c.Term.Token), now}
	name := c.Term.Name
	switch c.Kind {
	case lead.Stopped:
		if s, ok := g.started[name]; ok && s.token > t.token {
			g.gaps = append(g.gaps, max(0, s.at.Sub(now)))
			delete(g.started, name)
			return
		}
		g.stopped[name] = t
	case lead.Started:
		if s, ok := g.stopped[name]; ok && s.token < t.token {
			g.gaps = append(g.gaps, max(0, now.Sub(s.at)))
			delete(g.stopped, name)
			return
		}
		g.started[name] = t
	}
}

func (g *shardGaps) take() []time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := g.gaps
	g.gaps = nil
	clear(g.stopped)
	clear(g.started)
	slices.Sort(out)
	return out
}

func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[min(len(d)-1, int(q*float64(len(d))))]
}

// BenchmarkShards runs TENURE_SHARDS_N (default 1000) shards of one
// lead.Shards over three replicas (each its own store client) at the
// default timings, on memstore, Redis, PostgreSQL and a kube-apiserver.
// Once the three are balanced it measures over TENURE_SCALE_WINDOW
// (default 30s) each replica's store requests per second (reads, swaps
// and the looks' reads; watches not counted); then one replica leaves
// (its Run's ctx ends) and it reports the time to balance over two, and
// joins again for the time to balance over three. Each move's time
// without a leader is from the old term's end (Stopped, before the
// release) to the new one's start (Started), p50 and p99. Against it,
// during the window, it times TENURE_HANDOVERS lone handovers (default
// 20, plain and named: twice as many) of an election of three electors
// of its own on the replicas' store clients, with
// testcluster.PeerConfig's timings: one handover under the same load.
// It logs the p50 and p99 of the replicas' renewals, releases and
// acquires in each phase.
// TENURE_SHARDS_MOVES sets ShardsConfig.MaxMoves (default its default).
// Run it with -benchtime 1x; pick a backend with -bench 'Shards/redis'.
func BenchmarkShards(b *testing.B) {
	n := 1000
	if s := os.Getenv("TENURE_SHARDS_N"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil {
			b.Fatalf("TENURE_SHARDS_N: %v", err)
		}
		n = v
	}
	moves := 0
	if s := os.Getenv("TENURE_SHARDS_MOVES"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil {
			b.Fatalf("TENURE_SHARDS_MOVES: %v", err)
		}
		moves = v
	}
	window := envDuration(b, "TENURE_SCALE_WINDOW", 30*time.Second)
	for _, be := range append(backends(), kubeBackend()) {
		b.Run(be.name, func(b *testing.B) {
			for range b.N {
				runShards(b, be, n, moves, window)
			}
		})
	}
}

func runShards(b *testing.B, be backend, n, moves int, window time.Duration) {
	cfg := lead.ShardsConfig{Name: fmt.Sprintf("bench-%d", time.Now().UnixNano()), MaxMoves: moves}
	for i := range n {
		cfg.Shards = append(cfg.Shards, lead.Shard{Name: fmt.Sprintf("%s-%d", cfg.Name, i)})
	}
	gaps := &shardGaps{stopped: map[string]termAt{}, started: map[string]termAt{}}
	type replica struct {
		s      *lead.Shards[meta]
		ops    *shardOps
		cancel context.CancelFunc
		done   chan error
	}
	stores := make([]store.Store[meta], groups)
	for i := range stores {
		stores[i] = be.store(b, i)
	}
	times := &opTimes{ops: map[string][]time.Duration{}}
	start := func(i int) *replica {
		ops := &shardOps{times: times}
		s, err := lead.NewShards(stores[i], cfg, lead.WithIdentity(fmt.Sprintf("replica-%d", i)),
			lead.WithInstruments(ops), lead.WithObserver(gaps.observe), lead.WithLookupEnv(nil))
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		r := &replica{s: s, ops: ops, cancel: cancel, done: make(chan error, 1)}
		go func() { r.done <- s.Run(ctx, nil) }()
		return r
	}
	// balanced waits until the replicas lead n shards together, each
	// ⌊n/m⌋ or ⌈n/m⌉, and returns how long that took.
	balanced := func(reps []*replica, from time.Time, limit time.Duration) time.Duration {
		m := len(reps)
		for {
			total, ok := 0, true
			var counts []int
			for _, r := range reps {
				c := len(r.s.Leading())
				counts = append(counts, c)
				total += c
				ok = ok && c >= n/m && c <= (n+m-1)/m
			}
			if ok && total == n {
				return time.Since(from)
			}
			if time.Since(from) > limit {
				b.Fatalf("not balanced over %d replicas after %v: they lead %v", m, limit, counts)
			}
			time.Sleep(20 * time.Millisecond) // a measurement's resolution
		}
	}
	began := time.Now()
	reps := []*replica{start(0), start(1), start(2)}
	defer func() {
		for _, r := range reps {
			r.cancel()
			<-r.done
		}
	}()
	first := balanced(reps, began, 5*time.Minute)
	gaps.take()
	times.take()

	var before []int64
	for _, r := range reps {
		before = append(before, r.ops.n.Load())
	}
	// Meanwhile, lone handovers of an election of their own on the
	// replicas' store clients: one handover under the same load, which
	// a move's time without a leader is set against.
	windowAt := time.Now()
	k := 0
	plain, named := testcluster.MeasureNamedHandover(b, cfg.Name+"-alone", testcluster.PeerConfig(), testcluster.Handovers(b),
		func(testing.TB) store.Store[meta] { k++; return stores[k%len(stores)] })
	var alone []time.Duration
	for _, h := range append(plain, named...) {
		alone = append(alone, h.Total)
	}
	slices.Sort(alone)
	if rest := window - time.Since(windowAt); rest > 0 {
		time.Sleep(rest) // the rest of the window
	}
	elapsed := time.Since(windowAt)
	steadyOps := times.take()
	var rates []string
	for i, r := range reps {
		rates = append(rates, fmt.Sprintf("%.1f", float64(r.ops.n.Load()-before[i])/elapsed.Seconds()))
	}

	// One leaves.
	left := reps[2]
	at := time.Now()
	left.cancel()
	leave := balanced(reps[:2], at, 5*time.Minute)
	<-left.done
	reps = reps[:2]
	leaveGaps := gaps.take()
	leaveOps := times.take()

	// It joins again.
	at = time.Now()
	reps = append(reps, start(2))
	join := balanced(reps, at, 5*time.Minute)
	joinGaps := gaps.take()
	joinOps := times.take()

	b.ReportMetric(leave.Seconds(), "leave-balance-s")
	b.ReportMetric(join.Seconds(), "join-balance-s")
	b.ReportMetric(float64(quantile(append(leaveGaps, joinGaps...), 0.5))/1e6, "gap-p50-ms")
	b.ReportMetric(float64(quantile(append(leaveGaps, joinGaps...), 0.99))/1e6, "gap-p99-ms")
	b.ReportMetric(float64(quantile(alone, 0.5))/1e6, "alone-p50-ms")
	b.ReportMetric(float64(quantile(alone, 0.99))/1e6, "alone-p99-ms")
	b.Logf("%s: a lone handover in the steady state (%d): p50 %v p90 %v p99 %v", be.name, len(alone), quantile(alone, 0.5).Round(time.Microsecond), quantile(alone, 0.9).Round(time.Microsecond), quantile(alone, 0.99).Round(time.Microsecond))
	b.Logf("%s: store operations: steady: %s; leave: %s; join: %s", be.name, steadyOps, leaveOps, joinOps)
	b.Logf("%s: %d shards: first balance %v; steady requests/s per replica %v over %v; leave: balanced in %v, %d moves, gap p50 %v p99 %v; join: balanced in %v, %d moves, gap p50 %v p99 %v",
		be.name, n, first.Round(time.Millisecond), rates, elapsed.Round(time.Millisecond),
		leave.Round(time.Millisecond), len(leaveGaps), quantile(leaveGaps, 0.5).Round(time.Microsecond), quantile(leaveGaps, 0.99).Round(time.Microsecond),
		join.Round(time.Millisecond), len(joinGaps), quantile(joinGaps, 0.5).Round(time.Microsecond), quantile(joinGaps, 0.99).Round(time.Microsecond))
}
