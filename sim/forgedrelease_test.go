package sim

import (
	"testing"
	"time"
)

// forgedReleaseOptions are the options of one seed of the forged-release
// sweep: every fault but the adversary's others, with releases stored
// behind the leader's back, on the stores the sweeps model.
func forgedReleaseOptions(seed uint64) Options {
	o := Options{Seed: seed, Nodes: 3 + int(seed%3), Duration: 3 * time.Minute, Faults: AllFaults(), MaxEvents: 2_000_000}
	o.Faults.ForgeRelease = true
	h := seed * 0x9e3779b97f4a7c15
	o.Faults.DataLoss = h>>61&1 == 1
	o.Store.MayLoseRecords = o.Faults.DataLoss
	o.Store.GuardedRelease = h>>50&1 == 1
	o.Store.AuthenticWatch = !o.Store.GuardedRelease && h>>51&1 == 1
	o.Store.NoWatch = !o.Store.AuthenticWatch && h>>57&7 == 0
	if h>>60&1 == 1 {
		o.Config = shortConfig()
	}
	return o
}

// A writer who stores a release over a live lease cannot be told from the
// holder: a follower takes the lease over at once, and the leader believes
// it leads until its next renewal meets the new record. The check allows
// exactly that overlap, for at most RenewDeadline after the forged
// release; everything else holds.
func TestSimForgedReleaseSweep(t *testing.T) {
	seeds := sweepSeeds(t)
	n := int(max(seeds.Len()/4, 1))
	if raceOn {
		n = int(max(seeds.Len()/20, 1))
	}
	failed, _ := advSweep(t, 1, n, forgedReleaseOptions)
	for i, r := range failed {
		if i == 20 {
			t.Errorf("... and %d more", len(failed)-20)
			break
		}
		t.Errorf("seed %d: %v", r.Seed, r.Violation)
	}
}

// TestSimForgedReleaseSeedsExcuseTheTermAcquiredFirst replays schedules
// where a node's acquire lands just before a forged release of it and its
// reply comes after the taker of the forged release has started: the
// earlier term starts second, with the lower token (56581, 60842). The
// checker takes its overlap and its token as those of a term acquired
// before the forgery.
func TestSimForgedReleaseSeedsExcuseTheTermAcquiredFirst(t *testing.T) {
	replaySeeds(t, forgedReleaseOptions, 56581, 60842)
}
