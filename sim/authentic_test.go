package sim

import (
	"errors"
	"testing"
	"time"

	"github.com/tenure-go/tenure/fsm"
)

// authenticOptions are the options of one seed of the authentic-watch
// sweeps: the store's watch events are authentic (StoreModel.AuthenticWatch),
// so the adversary cannot forge them (ForgeWatch off, and no store without
// a watch); it still delays, duplicates and reorders them (WatchChaos),
// drops them (lost messages, partitions, muted watches), forges records
// through the store, rolls the store back and restores it.
func authenticOptions(base func(uint64) Options) func(uint64) Options {
	return func(seed uint64) Options {
		o := base(seed)
		o.Faults.ForgeWatch = false
		o.Store.NoWatch = false
		o.Store.AuthenticWatch = true
		return o
	}
}

// TestSimAuthenticWatchSweep runs the schedules of TestSimSeedSweep (every
// fault) and of the adversary's sweep, but for forged watch events, on a
// store whose watch events are authentic: a follower takes a release shown
// by an event over without reading first, and stale releases come late,
// twice and out of order. No two leaders, and every other check holds. It
// runs a tenth as many seeds as TestSimSeedSweep (200 each by default), a
// fiftieth with the race detector.
func TestSimAuthenticWatchSweep(t *testing.T) {
	variantSweep(t, "with authentic watch events", authenticOptions)
}

// TestSimAuthenticWatchSeedsKeepEveryCheck replays adversary schedules of
// TestSimAuthenticWatchSweep that reach corners of the checker:
//   - 10678, 39262 and 81161: a follower hears renewals, a rollback loses
//     them, a read contradicts them and it waits that out; a restore it
//     cannot see then wipes a newer leader's acquire and makes the
//     follower's stale record current again. Excused: what it heard
//     before the contradiction does not count against it (contraAt);
//   - 70440: a restore the nodes see only as a revision below one they
//     kept across a data loss (ProblemRollback), whose wait the recovery
//     bound counts;
//   - 80745: the request budget, for late watch events from before a
//     rollback (as TestSimGuardedReleaseSeedsKeepEveryCheck's 54649);
//   - 1163: a record the machine refuses, whose revision settles the
//     watch events it had heard before a restore went below them; and,
//     of the fault half, 776: an authentic release taken in as an answer
//     below a revision another event showed.
func TestSimAuthenticWatchSeedsKeepEveryCheck(t *testing.T) {
	replaySeeds(t, authenticOptions(advSweepOptions), 10678, 39262, 81161, 70440, 80745, 1163)
	replaySeeds(t, authenticOptions(sweepOptions), 776)
}

// The broken variant: nodes that take watch events as authentic on a
// store where anyone can publish them. A forged "released at revision r",
// where r is the revision the live leader's renewal in flight will get,
// has a follower swap from r at once and lead while the leader still
// does: the sweep must catch it.
func TestSimAuthenticWatchTrustingForgedEvents(t *testing.T) {
	var sched []Fault
	for at := 5 * time.Second; at < time.Minute; at += 10 * time.Second {
		sched = append(sched, Fault{At: at, Kind: FaultForgeWatch, Released: true, Window: 2 * time.Second})
	}
	catchesBroken(t, "trusting a forged release", sched, StoreModel{AuthenticWatch: true, trustForged: true}, func(o *Options) {
		o.Store.AuthenticWatch, o.Store.trustForged = true, true
	})
}

// catchesBroken checks that a broken variant of the store's rules is
// caught: on seeds 1–5 of a fixed schedule sched with store st (each must
// fail the one-leader check, or the hints check when the broken machine,
// having taken in a forged record, reports a rollback no act of the
// store made, before two leaders come), and on some of 50 schedules of the
// adversary's sweep (with a watch) changed by variant.
func catchesBroken(t *testing.T, what string, sched []Fault, st StoreModel, variant func(o *Options)) {
	t.Helper()
	caught := 0
	for seed := uint64(1); seed <= 5; seed++ {
		o := Options{Seed: seed, Nodes: 3, Config: shortConfig(), Duration: time.Minute, Schedule: sched, Store: st}
		res, err := RunSeed(o)
		if err != nil {
			t.Fatal(err)
		}
		if v := res.Violation; v != nil && (v.Check == CheckOneLeader || v.Check == "hints") {
			caught++
		} else {
			t.Errorf("seed %d: %s went unnoticed (violation %v)", seed, what, res.Violation)
		}
	}
	opts := func(seed uint64) Options {
		o := advSweepOptions(seed)
		o.Store.NoWatch = false
		variant(&o)
		return o
	}
	failed, _ := advSweep(t, 1, 50, opts)
	if len(failed) == 0 {
		t.Errorf("50 adversary schedules, %s: no violation", what)
	}
	t.Logf("%s: the fixed schedule caught it on %d of 5 seeds; the sweep on %d of 50 (first: seed %d, %v)", what, caught, len(failed), first(failed).Seed, first(failed).Violation)
}

func first(rs []Result) Result {
	if len(rs) == 0 {
		return Result{}
	}
	return rs[0]
}

// Forging watch events on a store whose events are authentic is a
// contradiction, as is an authentic watch on a store that does not watch.
func TestSimAuthenticWatchOptions(t *testing.T) {
	for _, o := range []Options{
		{Store: StoreModel{AuthenticWatch: true, NoWatch: true}},
		{Store: StoreModel{AuthenticWatch: true}, Faults: Faults{ForgeWatch: true}},
		{Store: StoreModel{AuthenticWatch: true}, Schedule: []Fault{{At: time.Second, Kind: FaultForgeWatch, Mask: 1, Record: fsm.Lease{}}}},
		{Store: StoreModel{trustForged: true}},
	} {
		if _, err := RunSeed(o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%+v: err = %v, want ErrInvalidOptions", o.Store, err)
		}
	}
}
