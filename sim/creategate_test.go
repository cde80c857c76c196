package sim

import (
	"testing"
	"time"
)

// gatedOptions are the options of one seed of the gated sweeps: the
// store loses its data (and its marker with it) and gates creates on the
// marker (StoreModel.CreateGate), and the nodes run as lead runs them on
// redisstore (fsm.Options.LossyStore and GatedCreates). Every check is in
// force, the request budget too.
func gatedOptions(base func(uint64) Options) func(uint64) Options {
	return func(seed uint64) Options {
		o := base(seed)
		o.Faults.DataLoss = true
		o.Store.MayLoseRecords, o.Store.CreateGate = true, true
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
	variantSweep(t, "gated", gatedOptions)
}

// The schedule that once made two leaders on a lossy store (an absence
// seen before and after a record that was created and lost unseen), on a
// gated store: the loss takes the marker with it, so the next create waits
// for a fresh marker to stand a LeaseDuration.
func TestSimCreateGateAbsenceSpansALostRecord(t *testing.T) {
	o := Options{
		Seed: 1, Nodes: 4, Duration: 3 * time.Minute,
		Faults: Faults{Drift: true, WatchChaos: true},
		Store:  StoreModel{MayLoseRecords: true, CreateGate: true},
		Schedule: []Fault{
			{At: 14342056973, Kind: FaultCrash, Node: 1, Dur: time.Second},
			{At: 14342061394, Kind: FaultDataLoss},
		},
	}
	res, err := RunSeed(o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Violation != nil {
		t.Fatal(res.Violation)
	}
}

// The store's vouch lost on its way to the machine (a wrapper that does
// not pass the context on to the store): every create is a claim again,
// as on any store that may lose records. Safe, within the request budget,
// through data loss too.
func TestSimCreateGateVouchLost(t *testing.T) {
	first, n := uint64(1), 40
	if raceOn {
		n = 8
	}
	failed, _ := advSweep(t, first, n, func(seed uint64) Options {
		o := gatedOptions(sweepOptions)(seed)
		o.vouchLost = true
		return o
	})
	for _, r := range failed {
		t.Errorf("seed %d (vouch lost): %v", r.Seed, r.Violation)
	}
}

// A brand-new name on a healthy gated store (its marker attested long
// ago) has a leader within a read and a create: two seconds is far below
// the LeaseDuration (15s) a claim waits. On a fresh dataset (no marker
// yet) the first create is a claim and nobody leads within those two
// seconds: the gate cannot tell a new dataset from a flushed one.
func TestSimCreateGateFirstLeaderAtOnce(t *testing.T) {
	for _, aged := range []bool{true, false} {
		o := Options{Seed: 5, Nodes: 3, Duration: 2 * time.Second,
			Store: StoreModel{MayLoseRecords: true, CreateGate: true}, Schedule: []Fault{}}
		o.markerAged = aged
		res, err := RunSeed(o)
		if err != nil {
			t.Fatal(err)
		}
		if res.Violation != nil {
			t.Fatal(res.Violation)
		}
		if got := res.Terms > 0; got != aged {
			t.Errorf("marker aged %v: %d terms in %v, want a leader: %v", aged, res.Terms, o.Duration, aged)
		}
	}
}

// quarterSchedule: n0 leads a name alone on a healthy store (n1 is down),
// is cut off from the store at 10s, and the store loses its data at 10.5s;
// another name's swap recreates the marker at once and attests it. n1
// starts at 15s, finds no record and creates: the marker has stood 4.5s,
// while n0, whose last renewal went out before 10s, believes it leads for
// up to its RenewDeadline (10s) after it.
func quarterSchedule(quarter bool) Options {
	o := Options{Seed: 1, Nodes: 2, Duration: time.Minute,
		Store: StoreModel{MayLoseRecords: true, CreateGate: true},
		Schedule: []Fault{
			{At: 0, Kind: FaultCrash, Node: 1, Dur: 15 * time.Second},
			{At: 10 * time.Second, Kind: FaultPartition, AtLeader: true, Requests: true, Responses: true, Dur: 30 * time.Second},
			{At: 10*time.Second + 500*time.Millisecond, Kind: FaultDataLoss},
		}}
	o.markerAged, o.gateQuarter = true, quarter
	return o
}

// A gate that lets a create through once the marker has stood a quarter
// of the lease is unsafe: on the schedule of quarterSchedule, n1 leads at
// 15s while n0 still believes it leads. The gate at the whole lease does
// not vouch for n1's create, which is then a claim. (The random sweeps rarely build
// this: it takes a node that comes back after the loss, and creates
// between a quarter and the whole of a lease after it.)
func TestSimCreateGateQuarterIsUnsafe(t *testing.T) {
	res, err := RunSeed(quarterSchedule(true))
	if err != nil {
		t.Fatal(err)
	}
	if res.Violation == nil || res.Violation.Check != CheckOneLeader {
		t.Fatalf("violation %v, want two leaders", res.Violation)
	}
	t.Log(res.Violation)
	res, err = RunSeed(quarterSchedule(false))
	if err != nil {
		t.Fatal(err)
	}
	if res.Violation != nil {
		t.Fatalf("the whole gate: %v", res.Violation)
	}
}

// A record deleted by hand (DEL of its key) leaves the marker standing;
// the name's born key, which the DEL leaves too, keeps the gate from
// vouching for the next create: every data loss of the sweep a hand
// delete, and no two leaders.
func TestSimCreateGateHandDelete(t *testing.T) {
	first, n := uint64(1), 100
	if raceOn {
		n = 20
	}
	failed, _ := advSweep(t, first, n, func(seed uint64) Options {
		o := gatedOptions(sweepOptions)(seed)
		o.handDelete = true
		return o
	})
	for _, r := range failed {
		t.Errorf("seed %d (hand delete): %v", r.Seed, r.Violation)
	}
}

// A gate without a store that may lose records is refused.
func TestSimCreateGateNeedsLossyStore(t *testing.T) {
	if _, err := RunSeed(Options{Seed: 1, Store: StoreModel{CreateGate: true}}); err == nil {
		t.Fatal("CreateGate without MayLoseRecords was accepted")
	}
}

// The schedules aimed at the marker: when a data loss leaves the marker
// standing and takes the born key (a rollback its identity did not reveal),
// the gate vouches for a create while the lost record's holder still
// leads, and the sweep finds two leaders. What the gate rests on is the marker vanishing, or changing
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
		o := gatedOptions(beforeClockStops(sweepOptions))(seed)
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
