package sim

import (
	"math"
	"testing"
	"time"

	"github.com/tenure-go/tenure/fsm"
	"github.com/tenure-go/tenure/lease"
)

// issue10Case is a schedule of the adversary that failed a check on the
// fsm before issue 10's fixes.
type issue10Case struct {
	name   string
	asIs   bool // Faults.CorruptAsValid
	lossy  bool
	sched  []Fault
	before string // the check it failed before the fixes
}

// issue10Cases are the four bugs of issue 10, each as a small schedule on
// the issue's config (three nodes, L=2s, R=1.5s, RetryInterval 200ms); a
// node leads by 5s.
var issue10Cases = []issue10Case{
	{name: "1: LeaseDuration MaxInt64 on the leader's record", asIs: true, before: "one-leader",
		sched: []Fault{{At: 5 * time.Second, Kind: FaultForge, Record: fsm.Lease{LeaseDuration: math.MaxInt64}, Dur: 5 * time.Second}}},
	{name: "2: a huge LeaseDuration, then DEL, in a lossy store", asIs: true, lossy: true, before: "recovery",
		sched: []Fault{{At: 5 * time.Second, Kind: FaultForge, Record: fsm.Lease{Holder: mallory, LeaseDuration: lease.MaxDuration + 1}, Dur: 3 * time.Second}}},
	{name: "3: a token of 2^64-1", asIs: true, before: "tokens",
		sched: []Fault{{At: 5 * time.Second, Kind: FaultForge, Record: fsm.Lease{Token: math.MaxUint64, LeaseDuration: 2 * time.Second}, Dur: 5 * time.Second}}},
	{name: "4: rollback to the term's first revision", before: "budget",
		sched: []Fault{{At: 5 * time.Second, Kind: FaultRollback, Touch: true}}},
	{name: "4: rollback by 1000 revisions", before: "budget",
		sched: []Fault{{At: 250 * time.Second, Kind: FaultRollback, Revision: 1000}}},
	{name: "4: restore of a backup: revision 1, no holder", before: "budget",
		sched: []Fault{{At: 5 * time.Second, Kind: FaultRestore}}},
	{name: "4: forged watch event with a huge revision", before: "budget",
		sched: []Fault{{At: 5 * time.Second, Kind: FaultForgeWatch, Record: fsm.Lease{Holder: mallory, LeaseDuration: 2 * time.Second}, Revision: 1 << 62, Mask: 0b111}}},
}

// run runs c with seed.
func (c issue10Case) run(seed uint64) (Result, error) {
	end := time.Duration(0)
	for _, f := range c.sched {
		end = max(end, f.At+f.Dur)
	}
	o := Options{Seed: seed, Nodes: 3, Config: issueConfig(), Duration: end + time.Minute,
		Faults: Faults{CorruptAsValid: c.asIs}, Schedule: c.sched, Store: StoreModel{MayLoseRecords: c.lossy}}
	return RunSeed(o)
}

// TestSimIssue10 replays the four bugs of issue 10 as small schedules (each
// failed the check named in issue10Cases on the fsm before the fixes): no
// check fails now, for a few seeds each.
func TestSimIssue10(t *testing.T) {
	for _, c := range issue10Cases {
		t.Run(c.name, func(t *testing.T) {
			for seed := uint64(1); seed <= 5; seed++ {
				res, err := c.run(seed)
				if err != nil {
					t.Fatal(err)
				}
				if res.Violation != nil {
					t.Fatalf("seed %d: %v (before issue 10's fixes: a %s violation)", seed, res.Violation, c.before)
				}
			}
		})
	}
}

// TestSimBackendTimeoutBelowRoundTrip: with a BackendTimeout below most
// round trips to the store (10ms against 2–40ms), swaps land but time out.
// Before issue 10's fixes a node confirmed such an acquire with a renewal
// as soon as the watch event of the last one showed its record, one per
// round trip, unpaced by RetryInterval (the budget check caught it in an
// extreme config: T=4ns under a slow store).
func TestSimBackendTimeoutBelowRoundTrip(t *testing.T) {
	cfg := lease.Config{LeaseDuration: 2 * time.Second, RenewDeadline: 1500 * time.Millisecond,
		RetryInterval: time.Second, BackendTimeout: 10 * time.Millisecond, ErrorInterval: time.Second}
	// Few operations finish in time, so no leader is expected: a
	// loss window that loses nothing keeps the liveness check off. A busy
	// loop is not expected.
	quiet := []Fault{{Kind: FaultLoss, Dur: time.Minute}}
	for seed := uint64(1); seed <= 5; seed++ {
		res, err := RunSeed(Options{Seed: seed, Nodes: 3, Config: cfg, Duration: time.Minute, Schedule: quiet})
		if err != nil {
			t.Fatal(err)
		}
		if res.Violation != nil {
			t.Fatalf("seed %d: %v", seed, res.Violation)
		}
	}
}
