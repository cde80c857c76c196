package sim

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenure-go/tenure/lease"
	"pgregory.net/rapid"
)

var flagAdvSeed = flag.Uint64("sim.advseed", 0, "the seed of TestSimSeedSweepAdversary that TestSimAdversarySeedReplaysKeepEveryCheck runs with a trace")

// shortConfig is a short lease on a fast network: L=2s, R=1.5s,
// RetryInterval 200ms.
func shortConfig() lease.Config {
	c := lease.DefaultConfig()
	c.LeaseDuration, c.RenewDeadline, c.RetryInterval, c.BackendTimeout = 2*time.Second, 1500*time.Millisecond, 200*time.Millisecond, time.Second
	return c
}

// advSweepOptions are the options of one seed of the adversary's sweep.
// One seed in five runs an extreme config (extremeOptions); the others run
// every fault with the adversary on five nodes with the default config, or
// on three nodes with the short config (shortConfig), with and without data loss,
// with records that fail validation refused (as lead does) or fed to the
// machine as they are.
func advSweepOptions(seed uint64) Options {
	if seed%5 == 0 {
		return extremeOptions(seed)
	}
	o := Options{Seed: seed, Nodes: 5, Duration: 5 * time.Minute, Faults: AdversaryFaults(), MaxEvents: 2_000_000}
	h := seed * 0x9e3779b97f4a7c15
	if h>>60&1 == 1 {
		o.Nodes, o.Config, o.Duration = 3, shortConfig(), 2*time.Minute
	}
	o.Faults.DataLoss = h>>61&1 == 1
	o.Store.MayLoseRecords = o.Faults.DataLoss
	o.Faults.CorruptAsValid = h>>62&1 == 1
	o.Store.NoWatch = h>>57&7 == 0
	o.Faults.WatchChaos = h>>54&7 == 0
	o.Store.GuardedRelease = h>>50&1 == 1
	return o
}

// advReplay says how to run one seed of the adversary's sweep again.
func advReplay(seed uint64) string {
	return fmt.Sprintf("go test ./sim -run 'TestSimAdversarySeedReplaysKeepEveryCheck$' -sim.advseed=%d -v", seed)
}

// sweep runs n seeds from first with opts on every core and returns the
// failures, in seed order, and the number of events.
func advSweep(t *testing.T, first uint64, n int, opts func(uint64) Options) ([]Result, uint64) {
	var (
		next   atomic.Uint64
		mu     sync.Mutex
		failed []Result
		events atomic.Uint64
		wg     sync.WaitGroup
	)
	next.Store(first)
	last := first + uint64(n)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for {
				seed := next.Add(1) - 1
				if seed >= last {
					return
				}
				res, err := RunSeed(opts(seed))
				if err != nil {
					t.Errorf("seed %d: %v", seed, err)
					return
				}
				events.Add(res.Events)
				if res.Violation != nil {
					mu.Lock()
					failed = append(failed, res)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	sort.Slice(failed, func(i, j int) bool { return failed[i].Seed < failed[j].Seed })
	return failed, events.Load()
}

// TestSimSeedSweepAdversary runs the adversary's schedules: forged records and
// watch events, rollbacks and restores, faults aimed at the leader,
// per-message jitter and extreme configs, on top of every other fault. It
// runs a quarter as many seeds as TestSimSeedSweep (500 by default, 25,000
// in make sim), a twentieth with the race detector.
func TestSimSeedSweepAdversary(t *testing.T) {
	seeds := sweepSeeds(t)
	n := int(max(seeds.Len()/4, 1))
	if raceOn {
		n = int(max(seeds.Len()/20, 1))
	}
	var first uint64
	for seed := range seeds.All() {
		first = seed
		break
	}
	start := time.Now()
	failed, events := advSweep(t, first, n, advSweepOptions)
	t.Logf("%d adversary schedules, %d events in %v", n, events, time.Since(start).Round(time.Millisecond))
	byCheck := map[string]int{}
	for _, r := range failed {
		byCheck[r.Violation.Check]++
	}
	for i, r := range failed {
		if i == 20 {
			t.Errorf("... and %d more (%v)", len(failed)-20, byCheck)
			break
		}
		t.Errorf("seed %d: %v\n\treplay: %s", r.Seed, r.Violation, advReplay(r.Seed))
	}
}

// TestSimAdversarySeedReplaysKeepEveryCheck replays one seed of the
// adversary's sweep with its trace: -sim.advseed=N. Without the flag it
// replays seeds that reach the edges of the model: the adversary must not
// write a released record behind a leader's back (14690); the checks must
// excuse what no elector can see after a restore (2426, 2793), and see a
// restore that brings back a revision with another record as the store
// going back (23336); a new leader must renew at once after its own
// acquire's watch event, whose acquire the store then rolls back (30275);
// and, for the history oracle, a follower told of another node's write by
// a watch event and then shown the older revision a restore made current
// must not take it over at once (45), and a handover is checked while
// followers wait out a forged event (10186).
func TestSimAdversarySeedReplaysKeepEveryCheck(t *testing.T) {
	if *flagAdvSeed == 0 {
		for _, seed := range []uint64{2426, 2793, 14690, 23336, 30275, 45, 10186} {
			t.Run(fmt.Sprint(seed), func(t *testing.T) { replayAdvSeed(t, seed, false) })
		}
		return
	}
	replayAdvSeed(t, *flagAdvSeed, true)
}

func replayAdvSeed(t *testing.T, seed uint64, verbose bool) {
	var trace bytes.Buffer
	o := advSweepOptions(seed)
	o.Trace = &trace
	res, err := RunSeed(o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Violation != nil || verbose {
		t.Logf("options: nodes %d, duration %v, config %+v, faults %+v, no watch %v", o.Nodes, o.Duration, o.Config, o.Faults, o.Store.NoWatch)
		t.Log("\n" + trace.String())
	}
	if res.Violation != nil {
		t.Fatal(res.Violation)
	}
}

var flagFindings = flag.Int("sim.findings", 20, "TestSimAdversaryFindings: run this many seeds of each fault kind of the adversary alone")

// findingKinds are the adversary's fault kinds, each alone (with drift),
// for TestSimAdversaryFindings.
var findingKinds = []struct {
	name string
	opts func(seed uint64) Options
}{
	{"forge", func(seed uint64) Options { return kindOptions(seed, Faults{Forge: true}) }},
	{"forge, corrupt as valid", func(seed uint64) Options { return kindOptions(seed, Faults{Forge: true, CorruptAsValid: true}) }},
	{"forge, lossy store", func(seed uint64) Options { return kindOptions(seed, Faults{Forge: true, DataLoss: true}) }},
	{"forgewatch", func(seed uint64) Options { return kindOptions(seed, Faults{ForgeWatch: true}) }},
	{"forgewatch, corrupt as valid", func(seed uint64) Options { return kindOptions(seed, Faults{ForgeWatch: true, CorruptAsValid: true}) }},
	{"rollback", func(seed uint64) Options { return kindOptions(seed, Faults{Rollback: true}) }},
	{"restore", func(seed uint64) Options { return kindOptions(seed, Faults{Restore: true}) }},
	{"targeted", func(seed uint64) Options { return kindOptions(seed, Faults{Targeted: true}) }},
	{"jitter", func(seed uint64) Options { return kindOptions(seed, Faults{Jitter: true}) }},
	{"extreme configs", func(seed uint64) Options {
		o := extremeOptions(seed)
		f := &o.Faults
		f.Forge, f.ForgeWatch, f.Rollback, f.Restore, f.Targeted, f.Jitter, f.CorruptAsValid = false, false, false, false, false, false, false
		return o
	}},
}

// kindOptions runs the faults f (with drift) on the config (odd
// seeds, three nodes) or the default one (even seeds, five nodes).
func kindOptions(seed uint64, f Faults) Options {
	f.Drift = true
	o := Options{Seed: seed, Nodes: 5, Duration: 5 * time.Minute, Faults: f, MaxEvents: 2_000_000}
	if seed%2 == 1 {
		o.Nodes, o.Config, o.Duration = 3, shortConfig(), 2*time.Minute
	}
	o.Store.MayLoseRecords = f.DataLoss
	return o
}

// TestSimAdversaryFindings runs each fault kind of the adversary alone
// (-sim.findings=N seeds each) and lists, per kind, which checks fail and
// the first seed of each: it attributes a failing check to the fault
// kinds that reach it.
func TestSimAdversaryFindings(t *testing.T) {
	n := *flagFindings
	if raceOn {
		n = max(n/4, 1)
	}
	for _, k := range findingKinds {
		failed, _ := advSweep(t, 1, n, k.opts)
		first := map[string]Result{}
		count := map[string]int{}
		var checks []string
		for _, r := range failed {
			c := r.Violation.Check
			if count[c] == 0 {
				first[c] = r
				checks = append(checks, c)
			}
			count[c]++
		}
		t.Logf("%s: %d of %d seeds fail", k.name, len(failed), n)
		for _, c := range checks {
			t.Errorf("%s: %-10s %4d seeds, first %d: %v", k.name, c, count[c], first[c].Seed, first[c].Violation)
		}
	}
}

// genAdvSchedule draws a schedule of the adversary's faults mixed with the
// others, for rapid.
func genAdvSchedule(t *rapid.T, nodes int, cfg lease.Config, lossy bool) []Fault {
	kinds := []FaultKind{FaultCrash, FaultPause, FaultPartition, FaultLoss, FaultRelease, FaultReconfigure,
		FaultForge, FaultForgeWatch, FaultRollback, FaultRestore, FaultRenewCut, FaultHold, FaultJitter, FaultMuteWatch}
	if lossy {
		kinds = append(kinds, FaultDataLoss)
	}
	l := cfg.LeaseDuration
	count := rapid.IntRange(0, 10).Draw(t, "faults")
	var out []Fault
	at := time.Duration(0)
	dur := func(lo, hi time.Duration) time.Duration {
		return time.Duration(rapid.Int64Range(int64(lo), int64(hi)).Draw(t, "dur"))
	}
	durations := []time.Duration{l}
	for _, d := range forgedDurations {
		if !openProblem(d, l, lossy) {
			durations = append(durations, d)
		}
	}
	tokens := []uint64{0, 1, lease.MaxToken - 1<<20, lease.MaxToken + 1, math.MaxUint64}
	for range count {
		at += dur(0, 3*l)
		f := Fault{At: at, Kind: rapid.SampledFrom(kinds).Draw(t, "kind"), Node: rapid.IntRange(0, nodes-1).Draw(t, "node")}
		switch f.Kind {
		case FaultCrash:
			f.Dur = dur(time.Millisecond, 3*l)
			f.NewIdentity = rapid.Bool().Draw(t, "newIdentity")
		case FaultPause:
			f.Dur = dur(0, 3*l)
		case FaultPartition:
			f.Dur = dur(0, 3*l)
			f.Requests = rapid.Bool().Draw(t, "requests")
			f.Responses = !f.Requests || rapid.Bool().Draw(t, "responses")
		case FaultLoss:
			f.Dur = dur(0, 2*l)
			f.Prob = rapid.Float64Range(0, 1).Draw(t, "prob")
		case FaultRelease:
			f.Dur = dur(time.Millisecond, 2*l)
		case FaultReconfigure:
			f.Config = genAdvConfig(t, l)
		case FaultForge, FaultForgeWatch:
			f.Record.Holder = rapid.SampledFrom([]string{"", mallory, mallory + "\x00"}).Draw(t, "holder")
			f.Record.Token = rapid.SampledFrom(tokens).Draw(t, "token")
			f.Record.LeaseDuration = rapid.SampledFrom(durations).Draw(t, "leaseDuration")
			f.Dur = dur(0, 3*l)
			f.Revision = rapid.SampledFrom([]lease.Revision{1 << 40, 1 << 62, math.MaxUint64}).Draw(t, "revision")
			f.Mask = rapid.Uint64Range(1, 1<<nodes-1).Draw(t, "mask")
		case FaultRollback:
			f.Touch = rapid.Bool().Draw(t, "touch")
			f.Revision = lease.Revision(rapid.IntRange(1, 1000).Draw(t, "back"))
		case FaultRenewCut:
			f.Window = dur(0, 4*l)
			f.Dur = dur(0, 3*l)
			f.Config = genAdvConfig(t, l)
		case FaultHold:
			f.Window = dur(0, 4*l)
			f.Dur = dur(0, l-cfg.RenewDeadline+cfg.BackendTimeout)
			f.Cut = dur(0, 3*l)
			f.Requests = rapid.Bool().Draw(t, "holdRequest")
		case FaultJitter:
			f.Dur = dur(0, 2*l)
			f.Prob = rapid.Float64Range(0, 1).Draw(t, "prob")
			f.Latency = dur(0, 2*cfg.BackendTimeout)
		case FaultMuteWatch:
			f.Dur = dur(0, 6*l)
			f.Mask = rapid.Uint64Range(0, 1<<nodes-1).Draw(t, "mask")
		}
		out = append(out, f)
	}
	return out
}

// genAdvConfig draws valid timings with LeaseDuration l that tolerate 10%
// drift.
func genAdvConfig(t *rapid.T, l time.Duration) lease.Config {
	r := time.Duration(float64(l) * rapid.Float64Range(0.5, 0.8).Draw(t, "R/L"))
	return lease.Config{
		LeaseDuration:  l,
		RenewDeadline:  r,
		RetryInterval:  time.Duration(float64(r) * rapid.Float64Range(0.1, 0.3).Draw(t, "I/R")),
		RetryJitter:    rapid.Float64Range(0, 0.5).Draw(t, "J"),
		BackendTimeout: time.Duration(float64(r) * rapid.Float64Range(0.2, 0.6).Draw(t, "T/R")),
		ErrorInterval:  30 * time.Second,
	}
}

// TestSimRapidAdversary lets rapid draw schedules of the adversary's faults
// among the others; a failing schedule shrinks to a minimal one.
func TestSimRapidAdversary(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nodes := rapid.IntRange(2, 5).Draw(t, "nodes")
		cfg := rapid.SampledFrom([]lease.Config{lease.DefaultConfig(), shortConfig()}).Draw(t, "config")
		lossy := rapid.Bool().Draw(t, "dataLoss")
		o := Options{
			Seed:     rapid.Uint64().Draw(t, "seed"),
			Nodes:    nodes,
			Config:   cfg,
			Store:    StoreModel{NoWatch: rapid.Bool().Draw(t, "noWatch"), MayLoseRecords: lossy},
			Faults:   Faults{Drift: true, WatchChaos: rapid.Bool().Draw(t, "watchChaos"), CorruptAsValid: rapid.Bool().Draw(t, "corruptAsValid")},
			Schedule: genAdvSchedule(t, nodes, cfg, lossy),
		}
		end := time.Duration(0)
		for _, f := range o.Schedule {
			end = max(end, f.At+f.Dur+f.Window+f.Cut)
		}
		// A calm tail long enough for recovery.
		o.Duration = end + 10*cfg.LeaseDuration + 30*time.Second
		res, err := RunSeed(o)
		if err != nil {
			t.Fatal(err)
		}
		if res.Violation != nil {
			for _, f := range o.Schedule {
				t.Logf("  %8v %v", f.At, f)
			}
			t.Fatalf("%v (seed %d)", res.Violation, o.Seed)
		}
	})
}

func TestSimAdversarySameSeedSameTrace(t *testing.T) {
	for _, seed := range []uint64{7, 10} { // a forged run and an extreme one
		run := func() []byte {
			var trace bytes.Buffer
			o := advSweepOptions(seed)
			o.Trace = &trace
			if _, err := RunSeed(o); err != nil {
				t.Fatal(err)
			}
			return trace.Bytes()
		}
		a, b := run(), run()
		if len(a) < 1000 {
			t.Fatalf("seed %d: the trace is only %d bytes", seed, len(a))
		}
		if !bytes.Equal(a, b) {
			t.Fatalf("seed %d gave two different traces (%d and %d bytes)", seed, len(a), len(b))
		}
	}
}

// variantSweep runs a tenth of the seeds of TestSimSeedSweep (a fiftieth
// with the race detector) of the schedules of TestSimSeedSweep ("faults")
// and of the adversary's sweep ("adversary"), each on the store variant
// that wrap makes of their options, and reports every violation.
func variantSweep(t *testing.T, what string, wrap func(func(uint64) Options) func(uint64) Options) {
	seeds := sweepSeeds(t)
	n := int(max(seeds.Len()/10, 1))
	if raceOn {
		n = int(max(seeds.Len()/50, 1))
	}
	var first uint64
	for seed := range seeds.All() {
		first = seed
		break
	}
	for _, sw := range []struct {
		name string
		opts func(uint64) Options
	}{{"faults", wrap(sweepOptions)}, {"adversary", wrap(advSweepOptions)}} {
		t.Run(sw.name, func(t *testing.T) {
			start := time.Now()
			failed, events := advSweep(t, first, n, sw.opts)
			t.Logf("%d schedules %s, %d events in %v", n, what, events, time.Since(start).Round(time.Millisecond))
			for i, r := range failed {
				if i == 10 {
					t.Errorf("... and %d more", len(failed)-10)
					break
				}
				t.Errorf("seed %d: %v", r.Seed, r.Violation)
			}
		})
	}
}

// Faults.Extreme keeps reconfigurations' BackendTimeout above four one-way
// latencies, but a caller's options need not leave room for that under
// their lease (a Latency.Max of a third of the LeaseDuration, here): the
// run must go on, reconfiguring to the timings it started with, where it
// panicked ("no room under the lease").
func TestSimExtremeWithoutRoomUnderTheLease(t *testing.T) {
	cfg := lease.Config{LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryInterval: 400 * time.Millisecond,
		BackendTimeout: time.Second, ErrorInterval: time.Minute}
	for seed := uint64(1); seed <= 20; seed++ {
		o := Options{Seed: seed, Nodes: 3, Duration: time.Minute, Config: cfg,
			Store: StoreModel{Latency: Latency{Min: time.Millisecond, Max: time.Second}}, Faults: Faults{Extreme: true}}
		res, err := RunSeed(o)
		if err != nil {
			t.Fatalf("seed %d: RunSeed: %v", seed, err)
		}
		if res.Violation != nil && res.Violation.Check == CheckOneLeader {
			t.Fatalf("seed %d: %v", seed, res.Err())
		}
	}
	// What the reconfigurations were: the initial timings, since none
	// other fits.
	c, err := New(Options{Seed: 1, Nodes: 3, Config: cfg,
		Store: StoreModel{Latency: Latency{Min: time.Millisecond, Max: time.Second}}, Faults: Faults{Extreme: true}})
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		if got := advConfig(c); got != cfg {
			t.Fatalf("advConfig = %+v, want the initial %+v", got, cfg)
		}
	}
}

// Reconfigurations stay within the drift the run's clocks have, as
// Options.Rho requires of every config used: with Rho 0.5, which the
// initial timings tolerate (L 10s, R 2s: 0.67), the reconfigurations drawn
// (RenewDeadline 50–80% of the lease, 0.11 at worst) had two nodes lead at
// once in 16 of 300 seeds, a failure of the simulator's schedule, not of
// the machine.
func TestSimReconfigureWithinDrift(t *testing.T) {
	cfg := lease.Config{LeaseDuration: 10 * time.Second, RenewDeadline: 2 * time.Second, RetryInterval: 400 * time.Millisecond,
		BackendTimeout: time.Second, ErrorInterval: time.Minute}
	o := Options{Nodes: 3, Config: cfg, Rho: 0.5, Faults: Faults{Drift: true, Reconfigure: true, Crash: true, Pause: true}}
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	for range 1000 {
		if got := randomConfig(c); Tolerance(got) < o.Rho {
			t.Fatalf("randomConfig = %+v tolerates %.3f of drift, the run has %v", got, Tolerance(got), o.Rho)
		}
	}
	for seed := uint64(1); seed <= 100; seed++ {
		o.Seed = seed
		res, err := RunSeed(o)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if err := res.Err(); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}
