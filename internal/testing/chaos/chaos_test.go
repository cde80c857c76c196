package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/redis/go-redis/v9"

	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/fence/redisfence"
	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/sim"
	"github.com/tenure-go/tenure/store"
)

// Environment variables of the chaos runs.
const (
	// seedEnv sets the seed of the first schedule (the others take the
	// next ones); unset, it is drawn from the time and logged.
	seedEnv = "TENURE_CHAOS_SEED"
	// durationEnv, when set (say "30m"), makes each backend run schedules
	// of random faults until that much time has passed, instead of the
	// short schedule that has every fault kind once.
	durationEnv = "TENURE_CHAOS_DURATION"
	// backendsEnv limits the run to some backends, comma-separated.
	backendsEnv = "TENURE_CHAOS_BACKENDS"
	// summaryEnv names a file the summary table is written to, too.
	summaryEnv = "TENURE_CHAOS_SUMMARY"
	// timelineEnv=1 logs the timeline of every schedule, failed or not.
	timelineEnv = "TENURE_CHAOS_TIMELINE"
)

type meta struct{}

// kind is a kind of fault.
type kind string

// The fault kinds. Network faults strike the proxy of one elector or of
// all; server faults strike the server; crash stops an elector without
// releasing and starts it again.
const (
	kLatency   kind = "latency"
	kJitter    kind = "jitter"
	kHoldUp    kind = "hold-requests"
	kHoldDown  kind = "hold-replies"
	kHoldBoth  kind = "partition"
	kReset     kind = "reset"
	kHalfOpen  kind = "half-open"
	kSlow      kind = "slow-link"
	kRefuse    kind = "refuse"
	kPause     kind = "server-pause"
	kKill      kind = "server-kill"
	kTerminate kind = "pg-terminate"
	kCrash     kind = "elector-crash"
)

var networkKinds = []kind{kLatency, kJitter, kHoldUp, kHoldDown, kHoldBoth, kReset, kHalfOpen, kSlow, kRefuse}

// step is one fault of a schedule.
type step struct {
	kind   kind
	target int // elector index; -1: all of them
	dur    time.Duration
	calm   time.Duration // after the heal
	param  int64         // the fault's parameter: latency, rate...
}

func (s step) String() string {
	who := "all"
	if s.target >= 0 {
		who = fmt.Sprint("e", s.target)
	}
	return fmt.Sprintf("%s on %s for %v (param %d), then calm %v", s.kind, who, s.dur, s.param, s.calm)
}

// schedule draws a schedule of faults from rng: in short mode each of
// kinds once (and at least 6 faults), in a random order, else n faults
// drawn at random.
func schedule(rng *rand.Rand, kinds []kind, n, electors int, short bool) []step {
	var ks []kind
	if short {
		// Every kind once, and at least 6 faults.
		ks = append(ks, kinds...)
		for len(ks) < 6 {
			ks = append(ks, kinds[rng.IntN(len(kinds))])
		}
		rng.Shuffle(len(ks), func(i, j int) { ks[i], ks[j] = ks[j], ks[i] })
	} else {
		for range n {
			ks = append(ks, kinds[rng.IntN(len(kinds))])
		}
	}
	durs := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(rng.Int64N(int64(hi-lo))) }
	var steps []step
	for _, k := range ks {
		s := step{kind: k, target: -1}
		if rng.IntN(2) == 0 {
			s.target = rng.IntN(electors)
		}
		if short {
			s.dur, s.calm = durs(300*time.Millisecond, 1500*time.Millisecond), durs(300*time.Millisecond, time.Second)
		} else {
			s.dur, s.calm = durs(200*time.Millisecond, 4*time.Second), durs(100*time.Millisecond, 3*time.Second)
		}
		switch k {
		case kLatency:
			s.param = int64(durs(10*time.Millisecond, 300*time.Millisecond))
		case kJitter:
			s.param = int64(durs(50*time.Millisecond, 400*time.Millisecond))
		case kSlow:
			s.param = 1000 + rng.Int64N(30000) // bytes per second
		}
		steps = append(steps, s)
	}
	return steps
}

// backend is one store under test.
type backend struct {
	name  string
	cfg   lease.Config
	kinds []kind
	// setup starts what the backend needs for t (a server of its own) and
	// returns its environment.
	setup func(t *testing.T) *env
}

// env is a started backend: how to reach its server, and how to strike
// it.
type env struct {
	network, addr string // the server, for the proxies; "" for memstore
	// newSchedule prepares a fresh election for one schedule and returns
	// its name and how to make each elector's store on a proxy's address.
	newSchedule func(t *testing.T, seed uint64) (name string, newStore func(t *testing.T, proxyAddr string) store.Store[meta])
	// strike starts a server fault and returns its heal; lose is set when
	// the fault loses the store's data.
	strike func(k kind) (heal func() error, lose bool, err error)
}

var backends = []backend{
	{name: "memstore", cfg: testcluster.FastConfig(), kinds: []kind{kCrash}, setup: setupMem},
	{name: "redis", cfg: testcluster.FastConfig(), kinds: append(slicesOf(networkKinds), kPause, kKill, kCrash), setup: setupRedis},
	{name: "postgres", cfg: testcluster.FastConfig(), kinds: append(slicesOf(networkKinds), kKill, kTerminate, kCrash), setup: setupPostgres},
	{name: "kube", cfg: kubeConfig(), kinds: append(slicesOf(networkKinds), kPause, kKill, kCrash), setup: setupKube},
	{name: "etcd", cfg: testcluster.FastConfig(), kinds: append(slicesOf(networkKinds), kPause, kKill, kCrash), setup: setupEtcd},
}

func slicesOf(ks []kind) []kind { return append([]kind(nil), ks...) }

// kubeConfig is the timing of the kubestore electors, in the whole seconds
// a Lease counts in.
func kubeConfig() lease.Config {
	return lease.Config{
		LeaseDuration:  2 * time.Second,
		RenewDeadline:  1500 * time.Millisecond,
		RetryInterval:  200 * time.Millisecond,
		RetryJitter:    0.1,
		BackendTimeout: time.Second,
		ErrorInterval:  time.Second,
	}
}

func TestChaos(t *testing.T) {
	seed := uint64(time.Now().UnixNano() % 1_000_000_000)
	if s := os.Getenv(seedEnv); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", seedEnv, s, err)
		}
	}
	var long time.Duration
	if d := os.Getenv(durationEnv); d != "" {
		var err error
		if long, err = time.ParseDuration(d); err != nil || long <= 0 {
			t.Fatalf("%s=%q: want a positive duration (%v)", durationEnv, d, err)
		}
	}
	only := os.Getenv(backendsEnv)
	t.Logf("chaos: first seed %d (replay with %s=%d %s=<backend>)", seed, seedEnv, seed, backendsEnv)
	for _, b := range backends {
		if only != "" && !strings.Contains(","+only+",", ","+b.name+",") {
			continue
		}
		t.Run(b.name, func(t *testing.T) {
			e := b.setup(t)
			newFence := redisFence(t)
			if e.network == "" {
				// memstore needs no server: its fence is in process too.
				newFence = registerFence
			}
			end := time.Now().Add(long)
			for i := uint64(0); ; i++ {
				s := seed + i
				rng := rand.New(rand.NewPCG(s, 0x7e17e))
				steps := schedule(rng, b.kinds, 20, 3, long == 0)
				res := runSchedule(t, b, e, newFence, s, steps)
				record(res)
				if t.Failed() || long == 0 || time.Now().After(end) {
					return
				}
			}
		})
	}
}

// redisFence returns a maker of fenced resources: a fresh key each, on the
// package's redis-server (not the one under test), through a connection
// without faults.
func redisFence(t *testing.T) func() testcluster.FenceWriteFunc {
	return func() testcluster.FenceWriteFunc {
		srv := testcluster.PackageRedis(t)
		c := redis.NewClient(&redis.Options{Network: srv.Network(), Addr: srv.Addr(), ContextTimeoutEnabled: true})
		t.Cleanup(func() { _ = c.Close() })
		key := fmt.Sprintf("chaos/%s/%d", t.Name(), time.Now().UnixNano())
		return func(ctx context.Context, tok fence.Token, v string) error {
			return redisfence.Set(ctx, c, tok, key, v, 0)
		}
	}
}

// registerFence returns a fresh in-process fenced resource.
func registerFence() testcluster.FenceWriteFunc {
	var r fence.Register
	return func(_ context.Context, tok fence.Token, _ string) error { return r.Check(tok) }
}

// result is what one schedule found.
type result struct {
	backend  string
	seed     uint64
	faults   map[kind]int
	report   testcluster.CheckReport
	ops      int
	check    porcupine.CheckResult
	watch    testcluster.WatchReport
	bound    time.Duration
	duration time.Duration
	// reconnect holds, for each of report.ToLeader, the time from the heal
	// to the first answer of the store to any elector after it (-1: none).
	reconnect []time.Duration
}

// elector is one elector of a schedule and what it runs on.
type elector struct {
	id     string
	proxy  *testcluster.Proxy // nil on memstore
	st     store.Store[meta]
	e      *lead.Elector[meta]
	cancel context.CancelFunc
}

func runSchedule(t *testing.T, b backend, e *env, newFence func() testcluster.FenceWriteFunc, seed uint64, steps []step) result {
	t.Helper()
	began := time.Now()
	name, newStore := e.newSchedule(t, seed)
	hist := testcluster.NewHistory()
	chk := testcluster.NewChecker(2*time.Millisecond, b.cfg)
	res := result{backend: b.name, seed: seed, faults: map[kind]int{},
		bound: sim.LivenessBound([]lease.Config{b.cfg}, 0, 0)}
	write := newFence()

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var wg sync.WaitGroup
	els := make([]*elector, 3)
	start := func(el *elector) {
		ectx, cancel := context.WithCancel(ctx)
		le, err := lead.New(name, el.st,
			lead.WithIdentity(el.id), lead.WithConfig(b.cfg), lead.WithLookupEnv(nil),
			lead.WithReleaseOnStop(false), lead.WithObserver(chk.Observe(el.id)))
		if err != nil {
			t.Fatal(err)
		}
		el.e, el.cancel = le, cancel
		chk.Add(el.id, le)
		wg.Add(2)
		go func() { defer wg.Done(); _ = le.Run(ectx) }()
		go func() {
			defer wg.Done()
			chk.FenceWriter(ectx, el.id, le, 20*time.Millisecond, time.Second, write)
		}()
	}
	for i := range els {
		el := &elector{id: fmt.Sprint("e", i)}
		addr := ""
		if e.network != "" {
			p, err := testcluster.StartProxy(e.network, e.addr, seed*10+uint64(i))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = p.Close() })
			el.proxy, addr = p, p.Addr()
		}
		el.st = testcluster.RecordStore(newStore(t, addr), hist, i)
		els[i] = el
		start(el)
	}
	wg.Add(1)
	go func() { defer wg.Done(); chk.Run(ctx) }()

	proxies := func(target int) []*testcluster.Proxy {
		var ps []*testcluster.Proxy
		for i, el := range els {
			if el.proxy != nil && (target < 0 || target == i) {
				ps = append(ps, el.proxy)
			}
		}
		return ps
	}
	wait := func(d time.Duration) {
		timer := time.NewTimer(d)
		defer timer.Stop()
		<-timer.C // the fault lasts d: this is its duration, not a wait for an event
	}
	// A calm start: a leader, then the faults.
	wait(2 * b.cfg.LeaseDuration)
	for _, s := range steps {
		chk.Fault(s.String())
		res.faults[s.kind]++
		var heal func() error
		switch s.kind {
		case kLatency, kJitter, kHoldUp, kHoldDown, kHoldBoth, kSlow, kRefuse, kReset, kHalfOpen:
			f := testcluster.NetFaults{}
			switch s.kind {
			case kLatency:
				f.Latency = time.Duration(s.param)
			case kJitter:
				f.Latency, f.Jitter = 5*time.Millisecond, time.Duration(s.param)
			case kHoldUp:
				f.HoldUp = true
			case kHoldDown:
				f.HoldDown = true
			case kHoldBoth:
				f.HoldUp, f.HoldDown = true, true
			case kSlow:
				f.BytesPerSecond = int(s.param)
			case kRefuse:
				f.Refuse = true
			}
			ps := proxies(s.target)
			for _, p := range ps {
				p.SetFaults(f)
				switch s.kind {
				case kRefuse, kReset:
					p.ResetAll()
				case kHalfOpen:
					p.HalfOpenAll()
				}
			}
			heal = func() error {
				for _, p := range ps {
					p.SetFaults(testcluster.NetFaults{})
				}
				return nil
			}
		case kCrash:
			var crashed []*elector
			for i, el := range els {
				if s.target < 0 || s.target == i {
					el.cancel()
					<-el.e.Done()
					crashed = append(crashed, el)
				}
			}
			heal = func() error {
				for _, el := range crashed {
					start(el)
				}
				return nil
			}
		default:
			killed := time.Now()
			h, lose, err := e.strike(s.kind)
			if err != nil {
				t.Fatalf("seed %d: %s: %v", seed, s.kind, err)
			}
			heal = func() error {
				err := h()
				if lose {
					hist.Lose(killed, time.Now())
				}
				return err
			}
		}
		wait(s.dur)
		if err := heal(); err != nil {
			t.Fatalf("seed %d: healing %s: %v", seed, s.kind, err)
		}
		chk.Heal(time.Now(), s.String())
		wait(s.calm)
	}
	// Let the last heal be measured.
	wait(res.bound)
	stop()
	wg.Wait()
	res.report = chk.Report()
	for _, h := range res.report.ToLeader {
		d := time.Duration(-1)
		if at, ok := hist.FirstAnswer(h.At); ok {
			d = at.Sub(h.At)
		}
		res.reconnect = append(res.reconnect, d)
	}
	res.ops = hist.Len()
	res.duration = time.Since(began)
	res.check, _ = hist.Check(2 * time.Minute)
	res.watch = hist.CheckWatches()
	var why string
	if res.check == porcupine.Illegal {
		_, why = hist.Check(2 * time.Minute)
	}
	r := res.report
	t.Logf("%s seed %d: %d faults, %d terms, %d samples (longest %v), min gap between terms %v (of another elector %v), fence %d accepted %d stale %d failed, %d store ops (%v), linearizable: %v, %d watch events (%d watches), to leader after heals %+v",
		b.name, seed, len(steps), r.Terms, r.Samples, r.MaxSample, r.MinGap, r.MinGapOther, r.FenceAccepted, r.FenceStale, r.FenceFailed, res.ops, hist.Counts(), res.check, res.watch.Events, res.watch.Watches, r.ToLeader)
	if os.Getenv(timelineEnv) == "1" {
		t.Logf("timeline of seed %d:\n%s", seed, chk.Timeline(0))
	}
	w := res.watch
	if r.Failed() || res.check == porcupine.Illegal || len(w.Backwards)+len(w.Phantoms) > 0 {
		t.Errorf("%s: chaos schedule with seed %d failed (replay: %s=%d %s=%s go test -run TestChaos ./internal/testing/chaos/)\n"+
			"two leaders: %v\nfence out of order: %v\nfence refused while leading: %v\nmin gap %v\nlinearizability: %v\n%s\nwatch revisions backwards: %v\nwatch records nobody wrote: %v\nschedule:\n%s\ntimeline (last 300 events):\n%s",
			b.name, seed, seedEnv, seed, backendsEnv, b.name, r.Overlaps, r.FenceOutOfOrder, r.FenceRefusedWhileLeading, r.MinGap, res.check, why, w.Backwards, w.Phantoms, describeSteps(steps), chk.Timeline(300))
		if res.check == porcupine.Illegal {
			path := fmt.Sprintf("%s/chaos-%s-%d-history.txt", os.TempDir(), b.name, seed)
			if err := os.WriteFile(path, []byte(hist.Dump()), 0o644); err == nil {
				t.Logf("the whole history is in %s", path)
			}
		}
	}
	return res
}

func describeSteps(steps []step) string {
	var b strings.Builder
	for i, s := range steps {
		fmt.Fprintf(&b, "  %2d. %v\n", i+1, s)
	}
	return b.String()
}
