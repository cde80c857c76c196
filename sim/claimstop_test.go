package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/tenure-go/tenure/lease"
)

// A node stopped while its create is in flight, in a store that loses
// records, leaves the record it created standing: it is only a claim, and
// released it would be free at once, while the holder of the lost record,
// cut off, still believes it leads. Whoever comes next waits the claim
// out. Each seed stops the first node that creates after the loss.
func TestSimStoppedClaimantLeavesTheClaim(t *testing.T) {
	const at = 25 * time.Second // n0 leads by then, on every seed
	for seed := uint64(1); seed <= 20; seed++ {
		var trace strings.Builder
		o := Options{Seed: seed, Nodes: 3, Config: lease.DefaultConfig(), Duration: at + 2*time.Minute, Trace: &trace,
			Store: StoreModel{NoWatch: seed%2 == 0, MayLoseRecords: true}}
		o.Schedule = []Fault{
			{At: at, Kind: FaultPartition, AtLeader: true, Dur: 20 * time.Second, Requests: true, Responses: true},
			{At: at, Kind: FaultDataLoss},
			{At: at, Kind: FaultRelease, Window: 10 * time.Second, Dur: 30 * time.Second},
		}
		res, err := RunSeed(o)
		if err != nil {
			t.Fatal(err)
		}
		if res.Violation != nil {
			t.Errorf("seed %d: %v", seed, res.Violation)
			continue
		}
		if !strings.Contains(trace.String(), "TARGETED: stopped, releasing, while its create is in flight") {
			t.Errorf("seed %d: no node was stopped with its create in flight: the schedule tests nothing", seed)
		}
	}
}

// Random schedules on a store that loses records draw such stops too.
func TestSimRandomSchedulesStopCreators(t *testing.T) {
	stops := 0
	for seed := uint64(1); seed <= 40; seed++ {
		c, err := New(Options{Seed: seed, Nodes: 3, Faults: AllFaults(), Store: StoreModel{MayLoseRecords: true}})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range c.faults {
			if f.Kind == FaultRelease && f.Window > 0 {
				stops++
			}
		}
	}
	if stops < 10 {
		t.Fatalf("40 lossy schedules draw %d stops of a creator, want at least 10", stops)
	}
}
