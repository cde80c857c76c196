package sim

import "testing"

// resignOptions are the options of one seed of the resign sweep: the
// adversary's, with the leader resigning now and then (FaultResign).
func resignOptions(seed uint64) Options {
	o := advSweepOptions(seed)
	o.Faults.Resign = true
	return o
}

// A leader that resigns steps down before it releases, and takes no term
// again before another holder or a lease: every check holds through the
// adversary's faults, with resigns among them.
func TestSimResignSweep(t *testing.T) {
	seeds := sweepSeeds(t)
	n := int(max(seeds.Len()/4, 1))
	if raceOn {
		n = int(max(seeds.Len()/20, 1))
	}
	failed, _ := advSweep(t, 1, n, resignOptions)
	for i, r := range failed {
		if i == 20 {
			t.Errorf("... and %d more", len(failed)-20)
			break
		}
		t.Errorf("seed %d: %v", r.Seed, r.Violation)
	}
}

// The resign sweep draws resigns: a schedule without one would test
// nothing new.
func TestSimResignSweepDrawsResigns(t *testing.T) {
	resigns := 0
	for seed := uint64(1); seed <= 20; seed++ {
		c, err := New(resignOptions(seed))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range c.faults {
			if f.Kind == FaultResign {
				resigns++
			}
		}
	}
	if resigns < 20 {
		t.Fatalf("20 schedules of the resign sweep draw %d resigns, want at least 20", resigns)
	}
}

// TestSimResignSeedsKeepEveryCheck replays resign schedules that reach
// corners of the checker: a contradiction's wait it must count (1379,
// 16785), and a history whose watch events queue behind a paused node's
// acquire (2492).
func TestSimResignSeedsKeepEveryCheck(t *testing.T) {
	replaySeeds(t, resignOptions, 1379, 2492, 16785)
}
