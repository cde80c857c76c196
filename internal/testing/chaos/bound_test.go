package chaos

import (
	"testing"
	"time"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
)

// TestBoundCountsFromFirstAnswer: a heal is over the liveness bound when
// the leader came later than the bound after the store's first answer
// following the heal, not after the heal itself (docs/reliability.md, "The
// liveness bound after a heal").
func TestBoundCountsFromFirstAnswer(t *testing.T) {
	const name = "test-bound"
	t.Cleanup(func() {
		totalsMu.Lock()
		delete(totals, name)
		totalsMu.Unlock()
	})
	bound := 1201 * time.Millisecond
	record(result{
		backend: name, seed: 1, bound: bound,
		report: testcluster.CheckReport{ToLeader: []testcluster.HealTime{
			{What: "reconnect then a lease", D: 1250 * time.Millisecond},
			{What: "two leases", D: 2300 * time.Millisecond},
			{What: "no answer measured", D: 1250 * time.Millisecond},
			{What: "never", D: -1},
		}},
		reconnect: []time.Duration{150 * time.Millisecond, 100 * time.Millisecond, -1, -1},
	})
	totalsMu.Lock()
	tt := *totals[name]
	totalsMu.Unlock()
	if len(tt.overBound) != 3 || tt.noLeader != 1 {
		t.Fatalf("over the bound: %q, no leader %d; want the two-lease heal, the unmeasured one and the one without a leader", tt.overBound, tt.noLeader)
	}
	want := []time.Duration{1100 * time.Millisecond, 2200 * time.Millisecond, 1250 * time.Millisecond}
	for i, d := range want {
		if tt.afterAnswer[i] != d {
			t.Errorf("after first answer %d = %v, want %v", i, tt.afterAnswer[i], d)
		}
	}
	if tt.reconnect != 150*time.Millisecond {
		t.Errorf("longest reconnect %v, want 150ms", tt.reconnect)
	}
}
