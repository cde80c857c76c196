//go:build linux

package scale_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
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
// its electors' and its looks').
type shardOps struct{ n atomic.Int64 }

func (c *shardOps) StoreOp(_, _ string, _ time.Duration, _ error) { c.n.Add(1) }

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
// release) to the new one's start (Started), p50 and p99.
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
	start := func(i int) *replica {
		ops := &shardOps{}
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

	var before []int64
	for _, r := range reps {
		before = append(before, r.ops.n.Load())
	}
	time.Sleep(window)
	var rates []string
	for i, r := range reps {
		rates = append(rates, fmt.Sprintf("%.1f", float64(r.ops.n.Load()-before[i])/window.Seconds()))
	}

	// One leaves.
	left := reps[2]
	at := time.Now()
	left.cancel()
	leave := balanced(reps[:2], at, 5*time.Minute)
	<-left.done
	reps = reps[:2]
	leaveGaps := gaps.take()

	// It joins again.
	at = time.Now()
	reps = append(reps, start(2))
	join := balanced(reps, at, 5*time.Minute)
	joinGaps := gaps.take()

	b.ReportMetric(leave.Seconds(), "leave-balance-s")
	b.ReportMetric(join.Seconds(), "join-balance-s")
	b.ReportMetric(float64(quantile(append(leaveGaps, joinGaps...), 0.5))/1e6, "gap-p50-ms")
	b.ReportMetric(float64(quantile(append(leaveGaps, joinGaps...), 0.99))/1e6, "gap-p99-ms")
	b.Logf("%s: %d shards: first balance %v; steady requests/s per replica %v over %v; leave: balanced in %v, %d moves, gap p50 %v p99 %v; join: balanced in %v, %d moves, gap p50 %v p99 %v",
		be.name, n, first.Round(time.Millisecond), rates, window,
		leave.Round(time.Millisecond), len(leaveGaps), quantile(leaveGaps, 0.5).Round(time.Microsecond), quantile(leaveGaps, 0.99).Round(time.Microsecond),
		join.Round(time.Millisecond), len(joinGaps), quantile(joinGaps, 0.5).Round(time.Microsecond), quantile(joinGaps, 0.99).Round(time.Microsecond))
}
