package sim

import (
	"fmt"
	"testing"
	"time"
)

// handOverOptions are the options of one seed of the handover sweep: the
// adversary's, with the leader handing the lease over now and then
// (FaultHandOver) to a node, up or not, or to an identity no node has.
func handOverOptions(seed uint64) Options {
	o := advSweepOptions(seed)
	o.Faults.HandOver = true
	return o
}

// A leader that hands over steps down before it releases naming its
// successor; only the successor takes the release at once, and a
// successor that is down, cut off or absent is waited out by the others
// within the liveness bound: every check holds through the adversary's
// faults, with handovers among them.
func TestSimHandOverSweep(t *testing.T) {
	seeds := sweepSeeds(t)
	n := int(max(seeds.Len()/4, 1))
	if raceOn {
		n = int(max(seeds.Len()/20, 1))
	}
	failed, _ := advSweep(t, 1, n, handOverOptions)
	for i, r := range failed {
		if i == 20 {
			t.Errorf("... and %d more", len(failed)-20)
			break
		}
		t.Errorf("seed %d: %v", r.Seed, r.Violation)
	}
}

// The handover sweep draws handovers, to nodes and to identities no node
// has: a schedule without them would test nothing new.
func TestSimHandOverSweepDrawsHandOvers(t *testing.T) {
	named, ghosts := 0, 0
	for seed := uint64(1); seed <= 20; seed++ {
		o := handOverOptions(seed)
		c, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range c.faults {
			if f.Kind == FaultHandOver {
				named++
				if f.Successor == fmt.Sprintf("n%d", o.Nodes) {
					ghosts++
				}
			}
		}
	}
	if named < 20 || ghosts == 0 {
		t.Fatalf("20 schedules of the handover sweep draw %d handovers, %d to no node; want at least 20, and some to no node", named, ghosts)
	}
}

// A handover to a node that is down: the others wait the named release
// out as a held lease and one of them leads within the liveness bound
// (the run's liveness check), with one leader at a time throughout.
func TestSimHandOverToACrashedSuccessorIsWaitedOut(t *testing.T) {
	cfg := shortConfig()
	for seed := uint64(1); seed <= 5; seed++ {
		o := Options{Seed: seed, Nodes: 3, Config: cfg, Duration: time.Minute,
			Schedule: []Fault{
				{At: 5 * time.Second, Kind: FaultCrash, Node: 2, Dur: 40 * time.Second},
				{At: 10 * time.Second, Kind: FaultHandOver, AtLeader: true, Successor: "n2"},
			}}
		res, err := RunSeed(o)
		if err != nil {
			t.Fatal(err)
		}
		if res.Violation != nil {
			t.Fatalf("seed %d: %v", seed, res.Violation)
		}
		if res.Terms < 2 {
			t.Fatalf("seed %d: %d terms, want a term after the handover", seed, res.Terms)
		}
	}
}

// Two schedules of the handover sweep keep every check:
//   - 1390: a restore takes the token floor back, and the store issues a
//     node the token of its own earlier acquire, whose reply was lost,
//     again. The judge takes the later write as the one its term rests
//     on, so the overlap with the term the restore erased is excused
//     (the erased history's rule), not judged from the earlier write.
//   - 24380: the leader heard its own acquire's event before the reply;
//     the reply, showing that very record, settles the event instead of
//     leaving it unconfirmed, which muted the node's watch for a
//     RetryInterval (100 hours in this config) and kept it from taking a
//     release handed to it.
//   - 18325: a follower heard the watch's first event (no record) after
//     its read was sent, and the next read showed the record created
//     meanwhile; that record, newer than any accepted when the absence
//     was heard, settles the absence instead of contradicting it, which
//     muted the follower's watch for a RetryInterval likewise.
func TestSimHandOverSeedsKeepEveryCheck(t *testing.T) {
	replaySeeds(t, handOverOptions, 1390, 24380, 18325)
}
