package sim

import (
	"testing"
	"time"
)

// These schedules each reach a corner of what the machine observes; a
// machine without the rule each test names fails its check.

// TestSimNewestRevisionIsNeverForgotten: the machine keeps the largest
// revision it ever accepted, across a Candidate's failed swap and an
// absent record, and ignores any later observation below it (and, once
// absence has been observed, at or below it). A machine that forgot it
// would step back to an older record when a watch event lags behind the
// reads (the monotonic check: "n observes revision 137 after revision
// 138").
func TestSimNewestRevisionIsNeverForgotten(t *testing.T) {
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

// TestSimAbsenceAcrossALostRecordKeepsOneLeader: with a store that loses
// records, a follower that observed absence starts its patience then; a
// record created and lost before the follower next looks (here n0 creates
// it and the store loses it within microseconds) leaves absence again,
// which the follower cannot tell from the old one (absence carries no
// revision). A create on such a store is only a claim: n0 leads on it only
// once it has stood a LeaseDuration, so the follower that takes the
// absence over at once overlaps no leader. Rapid found and shrank this
// schedule.
func TestSimAbsenceAcrossALostRecordKeepsOneLeader(t *testing.T) {
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
