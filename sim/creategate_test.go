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
		o.Faults.DataLoss, o.Faults.DataSwap, o.Faults.Resend = true, true, true
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

// The schedule of TestSimAbsenceAcrossALostRecordKeepsOneLeader (an absence
// seen before and after a record that was created and lost unseen) on a
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

// mutantSweep runs n schedules from first of the gated sweeps with mutate
// applied, and returns those that made two leaders.
func mutantSweep(t *testing.T, first uint64, n int, mutate func(*Options)) []Result {
	t.Helper()
	var two []Result
	for _, base := range []func(uint64) Options{sweepOptions, advSweepOptions} {
		failed, _ := advSweep(t, first, n, func(seed uint64) Options {
			o := gatedOptions(base)(seed)
			mutate(&o)
			return o
		})
		for _, r := range failed {
			if r.Violation.Check == CheckOneLeader {
				two = append(two, r)
			}
		}
	}
	return two
}

// mutantSeed is one schedule of the gated sweeps that a broken variant
// of the gate must fail with two leaders, and the gate must pass.
type mutantSeed struct {
	base func(uint64) Options
	name string // the sweep: "faults" or "adversary"
	seed uint64
}

// checkMutant replays seeds with and without mutate: with it, each makes
// two leaders; without it, none fails. Then it runs 40 schedules (8 with
// the race detector) of both sweeps with mutate and logs how many made two
// leaders (at least one).
func checkMutant(t *testing.T, mutate func(*Options), seeds ...mutantSeed) {
	t.Helper()
	n := 40
	if raceOn {
		n = 8
	}
	for _, sd := range seeds {
		for _, broken := range []bool{true, false} {
			o := gatedOptions(sd.base)(sd.seed)
			if broken {
				mutate(&o)
			}
			res, err := RunSeed(o)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case broken && (res.Violation == nil || res.Violation.Check != CheckOneLeader):
				t.Errorf("%s seed %d, broken: violation %v, want two leaders", sd.name, sd.seed, res.Violation)
			case broken:
				t.Logf("%s seed %d, broken: %v", sd.name, sd.seed, res.Violation)
			case res.Violation != nil:
				t.Errorf("%s seed %d: %v", sd.name, sd.seed, res.Violation)
			}
		}
	}
	if two := mutantSweep(t, 1, n, mutate); len(two) == 0 {
		t.Errorf("no schedule of %d made two leaders", 2*n)
	} else {
		t.Logf("%d of %d schedules made two leaders", len(two), 2*n)
	}
}

// A dataset swapped for an older copy (FaultDataSwap: SWAPDB with a
// restored database, DEBUG RELOAD of an older file) brings back a marker
// that has stood a lease, without the record created since and without its
// born key. An identity of run_id and master_replid alone
// (swapKeepsIdentity) does not change: the next create is vouched for
// while the lost record's holder still leads. On sweep seed 10 the swap
// comes at 81.862s while every watch is muted, and n0 leads 191ms later
// beside n1. The identity that counts the commands that move data changes,
// the marker is made anew, and the create is a claim.
func TestSimCreateGateDataSwapNeedsIdentity(t *testing.T) {
	checkMutant(t, func(o *Options) { o.swapKeepsIdentity = true },
		mutantSeed{sweepOptions, "faults", 10}, mutantSeed{advSweepOptions, "adversary", 2})
}

// A marker whose nonce is the op nonce of the call that made it
// (nonceFromOp) is made again with the same nonce when the client library
// resends that call after the data was lost (FaultResend): the nodes that
// saw the lost marker attest their age for the new one, and a create is
// vouched for within a lease of the loss. On sweep seed 2 the loss comes
// at 88.476s and n0 leads 43ms later beside n2. A nonce of its own for
// every marker (the server's TIME and a counter) makes the resent call's
// marker a new one, attested by nobody.
func TestSimCreateGateResendNeedsFreshNonce(t *testing.T) {
	checkMutant(t, func(o *Options) { o.nonceFromOp = true },
		mutantSeed{sweepOptions, "faults", 2}, mutantSeed{advSweepOptions, "adversary", 26})
}
