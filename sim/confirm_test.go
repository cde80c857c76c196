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
