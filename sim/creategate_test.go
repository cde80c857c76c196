package sim

import (
	"testing"
	"time"
)

// gatedOptions are the options of one seed of the gated sweeps: the
// store loses its data (and its marker with it) and gates creates on the
// marker (StoreModel.createGate), and the nodes run as on a store that
// keeps its records. The request budget is excused: the gate breaks it
// (TestSimCreateGateBreaksBudget), and a run stops at its first violation.
func gatedOptions(base func(uint64) Options) func(uint64) Options {
	return func(seed uint64) Options {
		o := base(seed)
		o.Faults.DataLoss = true
		o.Store.MayLoseRecords, o.Store.createGate = true, true
		o.excuseBudget = true
		return o
	}
}

// TestSimCreateGateSweep runs the schedules of TestSimSeedSweep (every
// fault, data loss always) and of the adversary's sweep (forged records and
// watch events, rollbacks, restores, faults aimed at the leader, extreme
// configs) on a store with the create gate: no two leaders, and a leader
// within the gate's liveness bound. It runs a tenth as many seeds as
// TestSimSeedSweep (200 each by default), a fiftieth with the race
// detector.
func TestSimCreateGateSweep(t *testing.T) {
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
	}{{"faults", gatedOptions(sweepOptions)}, {"adversary", gatedOptions(advSweepOptions)}} {
		t.Run(sw.name, func(t *testing.T) {
			start := time.Now()
			failed, events := advSweep(t, first, n, sw.opts)
			t.Logf("%d gated schedules, %d events in %v", n, events, time.Since(start).Round(time.Millisecond))
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

// The schedule that once made two leaders on a lossy store (an absence
// seen before and after a record that was created and lost unseen), on a
// gated store: the loss takes the marker with it, so the next create waits
// for a fresh marker to stand a LeaseDuration.
func TestSimCreateGateAbsenceSpansALostRecord(t *testing.T) {
	o := Options{
		Seed: 1, Nodes: 4, Duration: 3 * time.Minute,
		Faults: Faults{Drift: true, WatchChaos: true},
		Store:  StoreModel{MayLoseRecords: true, createGate: true},
		Schedule: []Fault{
			{At: 14342056973, Kind: FaultCrash, Node: 1, Dur: time.Second},
			{At: 14342061394, Kind: FaultDataLoss},
		},
	}
	o.excuseBudget = true
	res, err := RunSeed(o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Violation != nil {
		t.Fatal(res.Violation)
	}
}

// What the gate costs without the machine's help: a machine on a store it
// takes as keeping its records creates an absent record at once, and when
// the gate refuses (a conflict showing no record) it reads and creates
// again without waiting, faster than one request per RetryInterval. The
// gate can only ship with an fsm that knows a refused create from a lost
// race (issue 13).
func TestSimCreateGateBreaksBudget(t *testing.T) {
	res, err := RunSeed(Options{Seed: 1, Nodes: 3, Duration: time.Minute,
		Store: StoreModel{MayLoseRecords: true, createGate: true}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Violation == nil || res.Violation.Check != "budget" {
		t.Fatalf("violation %v, want the request budget's", res.Violation)
	}
	t.Log(res.Violation)
}

// A gate without a store that may lose records is refused.
func TestSimCreateGateNeedsLossyStore(t *testing.T) {
	if _, err := RunSeed(Options{Seed: 1, Store: StoreModel{createGate: true}}); err == nil {
		t.Fatal("CreateGate without MayLoseRecords was accepted")
	}
}

// The schedules aimed at the marker: when a data loss leaves the marker
// standing (a rollback its identity did not reveal), the gate lets a create
// through while the lost record's holder still leads, and the sweep finds
// two leaders. What the gate rests on is the marker vanishing, or changing
// identity, with every loss.
func TestSimCreateGateNeedsTheMarkerLost(t *testing.T) {
	// Seeds 1 and 182 of 1-200 make two leaders (with the quiet
	// followers' fsm); the race detector runs the forty seeds from the
	// second down.
	first, n := uint64(1), 200
	if raceOn {
		first, n = 160, 40
	}
	failed, _ := advSweep(t, first, n, func(seed uint64) Options {
		o := gatedOptions(sweepOptions)(seed)
		o.lossKeepsMarker = true
		return o
	})
	unsafe := 0
	for _, r := range failed {
		if r.Violation.Check == CheckOneLeader {
			unsafe++
		}
	}
	if unsafe == 0 {
		t.Fatalf("no schedule of %d made two leaders with a marker that survives data loss (%d other violations)", n, len(failed))
	}
	t.Logf("%d of %d schedules made two leaders", unsafe, n)
	for _, r := range failed {
		t.Logf("seed %d: %v", r.Seed, r.Violation)
	}
}
