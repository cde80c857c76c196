package sim

import (
	"testing"
	"time"

	"github.com/tenure-go/tenure/fsm"
)

// TestSimForgedShortLease: a forger touches the leader's record and sets
// its LeaseDuration to 1ns, which store.ValidateStored and fsm.InBounds
// accept. Followers wait at least their own LeaseDuration; a follower that
// waited only the record's would take the lease over while the leader
// still believes it leads (one-leader).
func TestSimForgedShortLease(t *testing.T) {
	for _, d := range []time.Duration{1, time.Millisecond, time.Second} {
		c := hostileCase{sched: []Fault{{At: 5 * time.Second, Kind: FaultForge, Record: fsm.Lease{LeaseDuration: d}, Dur: 5 * time.Second}}}
		for seed := uint64(1); seed <= 5; seed++ {
			res, err := c.run(seed)
			if err != nil {
				t.Fatal(err)
			}
			if res.Violation != nil {
				t.Errorf("forged LeaseDuration %v, seed %d: %v", d, seed, res.Violation)
			}
		}
	}
}
