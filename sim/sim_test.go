package sim

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/sim/internal/sweep"
)

var (
	flagSeeds = flag.String("sim.seeds", "", "seeds of TestSimSeedSweep, such as 1-2000 (default $"+EnvSeeds+", else 1-2000)")
)

// sweepSeeds returns the seeds of the sweep.
func sweepSeeds(t *testing.T) Seeds {
	spec := "1-2000"
	if v := os.Getenv(EnvSeeds); v != "" {
		spec = v
	}
	if *flagSeeds != "" {
		spec = *flagSeeds
	}
	seeds, err := ParseSeeds(spec)
	if err != nil {
		t.Fatal(err)
	}
	return seeds
}

// sweepOptions are the options of one seed of the sweep: five nodes, ten
// simulated minutes, every fault; one seed in four runs without data loss,
// so that machines take the fast path for an absent record.
func sweepOptions(seed uint64) Options {
	o := Options{Seed: seed, Nodes: 5, Duration: 10 * time.Minute, Faults: AllFaults()}
	if seed%4 == 0 {
		o.Faults.DataLoss = false
	}
	o.Store.MayLoseRecords = o.Faults.DataLoss
	if seed%8 == 1 {
		o.Store.NoWatch = true
	}
	return o
}

// beforeClockStops is opts without clock stops: the seeds found before the
// sweep drew them replay their schedules as they were then (clock stops
// come from a generator of their own, but the run diverges at the first).
func beforeClockStops(opts func(uint64) Options) func(uint64) Options {
	return func(seed uint64) Options {
		o := opts(seed)
		o.Faults.ClockStop = false
		return o
	}
}

// replay says how to run one seed again with a trace.
func replay(seed uint64) string {
	return fmt.Sprintf("go test ./sim -run 'TestSimSeedReplayUnknownOutcomesKeepOneLeader$' -sim.seed=%d -v", seed)
}

var flagSeed = flag.Uint64("sim.seed", 0, "the seed TestSimSeedReplayUnknownOutcomesKeepOneLeader runs with a trace")

// TestSimSeedSweep runs 2,000 schedules (5 nodes, 10 simulated minutes,
// every fault, one seed in four without data loss, one in eight without a
// watch); $TENURE_SIM_SEEDS or -sim.seeds changes the seeds (make sim runs
// 1-100000).
func TestSimSeedSweep(t *testing.T) {
	seeds := sweepSeeds(t)
	var (
		mu     sync.Mutex
		failed []Result
		events atomic.Uint64
	)
	start := time.Now()
	n := sweep.Run(seeds.All(), 0, time.Time{}, func(seed uint64) {
		res, err := RunSeed(sweepOptions(seed))
		if err != nil {
			t.Error(err)
			return
		}
		events.Add(res.Events)
		if res.Violation != nil {
			mu.Lock()
			failed = append(failed, res)
			mu.Unlock()
		}
	})
	t.Logf("%d schedules (5 nodes, 10 simulated minutes each), %d events in %v", n, events.Load(), time.Since(start).Round(time.Millisecond))
	for i, r := range failed {
		if i == 10 {
			t.Errorf("... and %d more", len(failed)-10)
			break
		}
		t.Errorf("seed %d: %v\n\treplay: %s", r.Seed, r.Violation, replay(r.Seed))
	}
}

// TestSimSeedReplayUnknownOutcomesKeepOneLeader replays one seed of the
// sweep with its trace: -sim.seed=N. Without the flag it replays seeds
// whose schedules reach unknown outcomes: 265 (a create with an unknown
// outcome in a store that loses records, which must not be led on at
// once) and 75666 (an older acquire's unknown outcome, which must not make
// a later claim look confirmable).
func TestSimSeedReplayUnknownOutcomesKeepOneLeader(t *testing.T) {
	if *flagSeed == 0 {
		for _, seed := range []uint64{265, 75666} {
			t.Run(fmt.Sprint(seed), func(t *testing.T) { replaySeed(t, beforeClockStops(sweepOptions), seed, false) })
		}
		return
	}
	replaySeed(t, sweepOptions, *flagSeed, true)
}

func replaySeed(t *testing.T, opts func(uint64) Options, seed uint64, verbose bool) {
	var trace bytes.Buffer
	o := opts(seed)
	o.Trace = &trace
	res, err := RunSeed(o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Violation != nil || verbose {
		t.Log("\n" + trace.String())
	}
	if res.Violation != nil {
		t.Fatal(res.Violation)
	}
}

func TestSimSameSeedSameTrace(t *testing.T) {
	run := func(seed uint64) []byte {
		var trace bytes.Buffer
		o := sweepOptions(seed)
		o.Trace = &trace
		if _, err := RunSeed(o); err != nil {
			t.Fatal(err)
		}
		return trace.Bytes()
	}
	a, b := run(42), run(42)
	if len(a) < 10000 {
		t.Fatalf("the trace is only %d bytes", len(a))
	}
	if !bytes.Equal(a, b) {
		t.Fatalf("seed 42 gave two different traces (%d and %d bytes)", len(a), len(b))
	}
	if c := run(43); bytes.Equal(a, c) {
		t.Fatal("seeds 42 and 43 gave the same trace")
	}
}

// TestSimDriftBeyondToleranceMakesTwoLeaders shows that the bound on drift
// matters: with clocks drifting by 40% against timings that tolerate 20%,
// a paused leader's belief outlasts a follower's patience.
func TestSimDriftBeyondToleranceMakesTwoLeaders(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		res, err := RunSeed(Options{Seed: seed, Nodes: 3, Duration: 5 * time.Minute,
			Faults: Faults{DriftBeyond: true, Crash: true, Partition: true}})
		if err != nil {
			t.Fatal(err)
		}
		if v := res.Violation; v != nil {
			if v.Check != "one-leader" {
				t.Fatalf("seed %d: want a one-leader violation, got %v", seed, v)
			}
			t.Logf("seed %d: %v", seed, v)
			return
		}
	}
	t.Fatal("no seed of 200 made two leaders with 40% drift")
}

// TestSimWithinToleranceHolds runs the same schedules as the test above with
// drift inside the tolerance: no violation.
func TestSimWithinToleranceHolds(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		res, err := RunSeed(Options{Seed: seed, Nodes: 3, Duration: 5 * time.Minute, Rho: 0.19,
			Faults: Faults{Drift: true, Crash: true, Partition: true}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Violation != nil {
			t.Fatalf("seed %d: %v\n\treplay with a trace to see why", seed, res.Violation)
		}
	}
}

func TestSimOptionsRejected(t *testing.T) {
	bad := lease.DefaultConfig()
	bad.RenewDeadline = bad.LeaseDuration
	tests := []struct {
		name string
		o    Options
	}{
		{"too many nodes", Options{Nodes: 65}},
		{"invalid config", Options{Config: bad}},
		{"drift beyond tolerance", Options{Rho: 0.3, Faults: Faults{Drift: true}}},
		{"latency range", Options{Store: StoreModel{Latency: Latency{Min: 2, Max: 1}}}},
		{"latency tail", Options{Store: StoreModel{Latency: Latency{Min: 1, Max: 2, Tail: 0.1, TailMax: 1}}}},
		{"both drifts", Options{Faults: Faults{Drift: true, DriftBeyond: true}}},
		{"data loss in a store that keeps records", Options{Faults: Faults{DataLoss: true}}},
		{"scheduled data loss in a store that keeps records", Options{Schedule: []Fault{{Kind: FaultDataLoss}}}},
		{"fault on missing node", Options{Schedule: []Fault{{Kind: FaultCrash, Node: 7}}}},
		{"fault with bad config", Options{Schedule: []Fault{{Kind: FaultReconfigure, Config: bad}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.o)
			if !errors.Is(err, ErrInvalidOptions) {
				t.Fatalf("New = %v, want an error wrapping ErrInvalidOptions", err)
			}
		})
	}
}

func BenchmarkSim(b *testing.B) {
	var events uint64
	for i := range b.N {
		res, err := RunSeed(sweepOptions(uint64(i + 1)))
		if err != nil {
			b.Fatal(err)
		}
		events += res.Events
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(events)/float64(b.N), "events/run")
}
