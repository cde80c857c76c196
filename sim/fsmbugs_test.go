package sim

import (
	"testing"
	"time"
)

// These schedules failed against fsm as committed; they pass once fsm has
// the fixes described in each test. The checks they trip are not weakened.

// TestSimFsmForgetsNewestRevision: after a Candidate's swap fails (the
// machine sets seen=false) or after it observes an absent record, the
// machine forgets the highest revision it accepted, so a watch event that
// lags behind the reads makes it step back to an older record (check 4:
// "n observes revision 137 after revision 138"). Fix: keep the largest
// revision ever accepted and ignore any later observation below it (and,
// once absence has been observed, at or below it).
func TestSimFsmForgetsNewestRevision(t *testing.T) {
	o := beforeClockStops(sweepOptions)(2518)
	o.Faults.DataLoss, o.Store.MayLoseRecords = false, false
	res, err := RunSeed(o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Violation != nil {
		t.Fatalf("%v\n\treplay: %s", res.Violation, replay(2518)+" (with DataLoss off)")
	}
}

// TestSimFsmAbsenceSpansALostRecord: with a store that loses records, a
// follower that observed absence starts its patience then; if a record is
// created and lost before the follower next looks (here n0 creates it and
// the store loses it within microseconds), the follower sees absence again,
// cannot tell it from the old absence (absence carries no revision), and
// takes over at once while n0 still believes it leads. Rapid found and
// shrank this schedule. Fix (a contract change): a store reports absence
// with a revision (its revision floor: the counter that survives the loss),
// and the machine orders absent observations by it like records, restarting
// its patience on a newer absence.
func TestSimFsmAbsenceSpansALostRecord(t *testing.T) {
	o := Options{
		Seed: 1, Nodes: 4, Duration: 3 * time.Minute,
		Faults: Faults{Drift: true, WatchChaos: true},
		Store:  StoreModel{MayLoseRecords: true},
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
