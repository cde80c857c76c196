package sim

import (
	"math"
	"testing"
	"time"

	"github.com/tenure-go/tenure/fsm"
	"github.com/tenure-go/tenure/lease"
)

// hostileCase is a schedule of the adversary that writes an extreme value
// into the store (a forged record, a rollback, a restore, a forged watch
// event) under a live leader.
type hostileCase struct {
	name  string
	asIs  bool // Faults.CorruptAsValid
	lossy bool
	sched []Fault
	check string // the check a machine that trusts the value fails
}

// hostileCases are the extreme values, each as a small schedule on the
// short config (three nodes, L=2s, R=1.5s, RetryInterval 200ms); a node
// leads by 5s.
var hostileCases = []hostileCase{
	{name: "LeaseDuration MaxInt64 on the leader's record", asIs: true, check: "one-leader",
		sched: []Fault{{At: 5 * time.Second, Kind: FaultForge, Record: fsm.Lease{LeaseDuration: math.MaxInt64}, Dur: 5 * time.Second}}},
	{name: "a huge LeaseDuration, then DEL, in a lossy store", asIs: true, lossy: true, check: "recovery",
		sched: []Fault{{At: 5 * time.Second, Kind: FaultForge, Record: fsm.Lease{Holder: mallory, LeaseDuration: lease.MaxDuration + 1}, Dur: 3 * time.Second}}},
	{name: "a token of 2^64-1", asIs: true, check: "tokens",
		sched: []Fault{{At: 5 * time.Second, Kind: FaultForge, Record: fsm.Lease{Token: math.MaxUint64, LeaseDuration: 2 * time.Second}, Dur: 5 * time.Second}}},
	{name: "rollback to the term's first revision", check: "budget",
		sched: []Fault{{At: 5 * time.Second, Kind: FaultRollback, Touch: true}}},
	{name: "rollback by 1000 revisions", check: "budget",
		sched: []Fault{{At: 250 * time.Second, Kind: FaultRollback, Revision: 1000}}},
	{name: "restore of a backup: revision 1, no holder", check: "budget",
		sched: []Fault{{At: 5 * time.Second, Kind: FaultRestore}}},
	{name: "forged watch event with a huge revision", check: "budget",
		sched: []Fault{{At: 5 * time.Second, Kind: FaultForgeWatch, Record: fsm.Lease{Holder: mallory, LeaseDuration: 2 * time.Second}, Revision: 1 << 62, Mask: 0b111}}},
}

// run runs c with seed.
func (c hostileCase) run(seed uint64) (Result, error) {
	end := time.Duration(0)
	for _, f := range c.sched {
		end = max(end, f.At+f.Dur)
	}
	o := Options{Seed: seed, Nodes: 3, Config: shortConfig(), Duration: end + time.Minute,
		Faults: Faults{CorruptAsValid: c.asIs}, Schedule: c.sched, Store: StoreModel{MayLoseRecords: c.lossy}}
	return RunSeed(o)
}

// TestSimHostileValuesKeepEveryCheck runs each of hostileCases for a few
// seeds: no check fails, the one a machine that trusts the value would
// fail (named in each case) among them.
func TestSimHostileValuesKeepEveryCheck(t *testing.T) {
	for _, c := range hostileCases {
		t.Run(c.name, func(t *testing.T) {
			for seed := uint64(1); seed <= 5; seed++ {
				res, err := c.run(seed)
				if err != nil {
					t.Fatal(err)
				}
				if res.Violation != nil {
					t.Fatalf("seed %d: %v (the case aims at the %s check)", seed, res.Violation, c.check)
				}
			}
		})
	}
}

// TestSimBackendTimeoutBelowRoundTrip: with a BackendTimeout below most
// round trips to the store (10ms against 2–40ms), swaps land but time out.
// A node that confirmed such an acquire with a renewal as soon as the watch
// event of the last one showed its record would renew once per round trip,
// unpaced by RetryInterval (the budget check catches that in an extreme
// config: T=4ns under a slow store).
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
