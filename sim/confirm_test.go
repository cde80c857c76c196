package sim

import (
	"testing"
	"time"

	"github.com/tenure-go/tenure/lease"
)

// aheadConfig is a config in which a wait counted from a renewal event
// forged a retry pause before the renewal was sent outlasts nothing:
// RetryInterval + RenewDeadline > LeaseDuration.
func aheadConfig() lease.Config {
	c := lease.DefaultConfig()
	c.LeaseDuration, c.RenewDeadline, c.RetryInterval, c.BackendTimeout = time.Second, 800*time.Millisecond, 400*time.Millisecond, 300*time.Millisecond
	return c
}

// aheadSchedule forges, every 10 s, a renewal ahead of the leader
// (FaultForgeWatch with Renewal), cutting the leader off for 3 s.
func aheadSchedule() []Fault {
	var sched []Fault
	for at := 5 * time.Second; at < time.Minute; at += 10 * time.Second {
		sched = append(sched, Fault{At: at, Kind: FaultForgeWatch, Renewal: true, Window: 2 * time.Second, Dur: 3 * time.Second})
	}
	return sched
}

// runAhead runs seeds 1–10 of aheadSchedule on st and returns how many
// broke the one-leader check, failing the test on any other violation.
func runAhead(t *testing.T, st StoreModel) int {
	t.Helper()
	caught := 0
	for seed := uint64(1); seed <= 10; seed++ {
		res, err := RunSeed(Options{Seed: seed, Nodes: 3, Config: aheadConfig(), Duration: time.Minute, Schedule: aheadSchedule(), Store: st})
		if err != nil {
			t.Fatal(err)
		}
		switch v := res.Violation; {
		case v == nil:
		case v.Check == CheckOneLeader:
			caught++
		default:
			t.Fatalf("seed %d: %v", seed, v)
		}
	}
	return caught
}

// TestSimForgedRenewalAheadStamped: on a stamped store, a renewal event
// forged before the write it predicts (its revision and record exact,
// the stamp the store held then) never starts a follower's wait: the
// read that shows the predicted revision shows another stamp, and the
// wait counts from that read. Likewise without stamps.
func TestSimForgedRenewalAheadStamped(t *testing.T) {
	for _, st := range []StoreModel{{Stamped: true}, {}} {
		if n := runAhead(t, st); n != 0 {
			t.Errorf("stamped %v: %d of 10 seeds made two leaders", st.Stamped, n)
		}
	}
}

// TestSimForgedRenewalPredictableStamp: the broken variant whose stamp a
// forger can tell (the revision, as a confirm that checks only the
// revision) makes two leaders.
func TestSimForgedRenewalPredictableStamp(t *testing.T) {
	if n := runAhead(t, StoreModel{Stamped: true, predictableStamp: true}); n == 0 {
		t.Error("a predictable stamp: no seed of 10 made two leaders")
	}
}

// TestSimForgedRenewalTrustedAsAuthentic: taking forged renewal events
// as authentic (the broken variant of AuthenticWatch) makes two leaders.
func TestSimForgedRenewalTrustedAsAuthentic(t *testing.T) {
	if n := runAhead(t, StoreModel{AuthenticWatch: true, trustForged: true}); n == 0 {
		t.Error("forged renewals taken as authentic: no seed of 10 made two leaders")
	}
}

// forgedRenewalOptions are the options of one seed of the forged-renewal
// sweep: every fault of the adversary, with renewals forged ahead among
// its watch forgeries, on stores that keep stamps (three seeds in four)
// or not, and in one seed in two the timings in which a wait counted from
// a forged renewal would end before the leader's belief.
func forgedRenewalOptions(seed uint64) Options {
	o := Options{Seed: seed, Nodes: 3 + int(seed%3), Duration: 3 * time.Minute, Faults: AdversaryFaults(), MaxEvents: 2_000_000}
	o.Faults.ForgeRenewal = true
	h := seed * 0x9e3779b97f4a7c15
	o.Store.Stamped = h>>62 != 0
	o.Store.GuardedRelease = h>>50&1 == 1
	o.Faults.DataLoss = h>>61&1 == 1
	o.Store.MayLoseRecords = o.Faults.DataLoss
	if h>>60&1 == 1 {
		o.Config = aheadConfig()
	}
	return o
}

// Renewals forged ahead of the leader, among every other fault, never
// make two leaders: every check holds (a sweep of a quarter of the sweep
// seeds, as the other adversary sweeps).
func TestSimForgedRenewalSweep(t *testing.T) {
	seeds := sweepSeeds(t)
	n := int(max(seeds.Len()/4, 1))
	if raceOn {
		n = int(max(seeds.Len()/20, 1))
	}
	failed, _ := advSweep(t, 1, n, forgedRenewalOptions)
	for i, r := range failed {
		if i == 20 {
			t.Errorf("... and %d more", len(failed)-20)
			break
		}
		t.Errorf("seed %d: %v", r.Seed, r.Violation)
	}
}

// The forged-renewal sweep finds the unsafe variants: with a stamp a
// forger can tell, or forged renewals taken as authentic, its seeds make
// two leaders within the default budget's first seeds.
func TestSimForgedRenewalSweepFindsTheUnsafeVariants(t *testing.T) {
	for _, v := range []struct {
		name  string
		apply func(*Options)
	}{
		{"a predictable stamp", func(o *Options) { o.Store.Stamped, o.Store.predictableStamp = true, true }},
		{"forged renewals taken as authentic", func(o *Options) { o.Store.AuthenticWatch, o.Store.trustForged = true, true }},
	} {
		t.Run(v.name, func(t *testing.T) {
			for seed := uint64(1); seed <= 200; seed++ {
				o := forgedRenewalOptions(seed)
				v.apply(&o)
				res, err := RunSeed(o)
				if err != nil {
					t.Fatal(err)
				}
				if res.Violation != nil && res.Violation.Check == CheckOneLeader {
					t.Logf("seed %d: %v", seed, res.Violation)
					return
				}
			}
			t.Error("no seed of 200 made two leaders")
		})
	}
}
