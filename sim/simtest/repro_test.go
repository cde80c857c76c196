package simtest

import (
	"bytes"
	"crypto/sha256"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/tenure-go/tenure/sim"
)

// TestRuntimeReproducible runs one seed many times and counts how many
// traces are identical to the most common one. It measures (see
// docs/benchmarks.md); it fails only when fewer than half agree.
// TENURE_SIM_REPRO=100 sets the number of runs (default 10), and
// TENURE_SIM_SEEDS the seed (default 7).
func TestRuntimeReproducible(t *testing.T) {
	runs := 10
	if v := os.Getenv("TENURE_SIM_REPRO"); v != "" {
		runs, _ = strconv.Atoi(v)
	}
	seed := uint64(7)
	if v := os.Getenv(sim.EnvSeeds); v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	counts, canon := map[[32]byte]int{}, map[[32]byte]int{}
	var lines int
	for range runs {
		var trace bytes.Buffer
		res, err := Run(t, Options[struct{}]{Seed: seed, Faults: sim.AllFaults(), Trace: &trace})
		if err != nil {
			t.Fatal(err)
		}
		if res.Violation != nil {
			t.Fatalf("seed %d: %v", seed, res.Violation)
		}
		lines = bytes.Count(trace.Bytes(), []byte("\n"))
		counts[sha256.Sum256(trace.Bytes())]++
		canon[sha256.Sum256(canonical(trace.Bytes()))]++
	}
	best, bestCanon := most(counts), most(canon)
	t.Logf("seed %d (all faults), %d runs of %d trace lines: %d distinct traces, the most common one %d times; "+
		"with the lines of each instant sorted, %d distinct, the most common %d times", seed, runs, lines, len(counts), best, len(canon), bestCanon)
	if bestCanon*2 < runs {
		t.Errorf("fewer than half of the runs agree")
	}
}

func most(m map[[32]byte]int) int {
	best := 0
	for _, c := range m {
		best = max(best, c)
	}
	return best
}

// canonical sorts the lines of a trace that share a timestamp (a trace is
// in time order): goroutines that run at the same virtual instant run in an
// order of the scheduler's choosing.
func canonical(trace []byte) []byte {
	lines := bytes.SplitAfter(trace, []byte("\n"))
	stamp := func(l []byte) string {
		if f := bytes.Fields(l); len(f) > 0 {
			return string(f[0])
		}
		return ""
	}
	for i := 0; i < len(lines); {
		j := i + 1
		for j < len(lines) && stamp(lines[j]) == stamp(lines[i]) {
			j++
		}
		slices.SortFunc(lines[i:j], bytes.Compare)
		i = j
	}
	return bytes.Join(lines, nil)
}
