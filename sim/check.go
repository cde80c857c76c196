package sim

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/tenure-go/tenure/sim/internal/sweep"
)

// Environment variables that Check (and sim/simtest's Check) read, so that
// a failing seed can be replayed, or a sweep lengthened, without editing
// the test.
const (
	// EnvSeeds replaces Options.Seeds: TENURE_SIM_SEEDS=4711 replays one
	// seed (and logs its timeline even when it passes),
	// TENURE_SIM_SEEDS=1-100000 runs a long sweep.
	EnvSeeds = sweep.EnvSeeds
	// EnvBudget replaces Options.Budget (a duration such as 30s).
	EnvBudget = sweep.EnvBudget
	// EnvSVG replaces Options.SVGDir.
	EnvSVG = sweep.EnvSVG
	// EnvTrace names a file that receives the event trace of a sweep of
	// one seed (TENURE_SIM_SEEDS=N).
	EnvTrace = sweep.EnvTrace
)

// DefaultBudget is how long Check keeps starting new seeds when no list of
// seeds is given.
const DefaultBudget = 5 * time.Second

// maxReported is how many failing seeds Check describes in full.
const maxReported = 3

// TB is the part of testing.TB that Check uses, so that this package need
// not import testing: *testing.T and *testing.B satisfy it.
type TB interface {
	Helper()
	Name() string
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// Summary sums up a sweep of seeds.
type Summary struct {
	// Seeds is the number of seeds run.
	Seeds int
	// Events is the number of simulated events over all seeds.
	Events uint64
	// Failed holds the result of every seed that violated a check, in
	// the order of the seeds.
	Failed []Result
	// Elapsed is the wall-clock time the sweep took.
	Elapsed time.Duration
}

// Check runs the model-mode simulation for many seeds and fails t for
// every seed that violates a check, with the seed, the violation, the text
// timeline of the run, the path of its picture (WriteHTML) and how to
// replay it. The picture goes to the test's artifact directory when go
// test runs with -artifacts (t.ArtifactDir, kept under -outputdir), else
// to tenure-sim/<test name>/seed-<seed>.html under os.TempDir. It runs the seeds of
// o.Seeds, or seeds 1, 2, 3, ... for o.Budget (default DefaultBudget), on
// GOMAXPROCS goroutines; the environment variables EnvSeeds, EnvBudget,
// EnvSVG and EnvTrace override the options. o.Seed is ignored. Invalid
// options fail t at once.
//
// Call it from a test:
//
//	func TestElectionModel(t *testing.T) {
//		sim.Check(t, sim.Options{Faults: sim.DefaultFaults()})
//	}
func Check(t TB, o Options) Summary {
	t.Helper()
	if _, err := New(o); err != nil {
		t.Fatalf("sim.Check: %v", err)
		return Summary{}
	}
	seedSpec := o.Seeds
	if v, ok := sweep.Env(EnvSeeds); ok {
		seedSpec = v
	}
	var seeds Seeds
	if seedSpec != "" {
		var err error
		if seeds, err = ParseSeeds(seedSpec); err != nil {
			t.Fatalf("sim.Check: %v", err)
			return Summary{}
		}
	}
	budget, err := sweep.Budget(orDefault(o.Budget, DefaultBudget))
	if err != nil {
		t.Fatalf("sim.Check: %v", err)
		return Summary{}
	}
	svgDir := o.SVGDir
	if v, ok := sweep.Env(EnvSVG); ok {
		svgDir = v
	}
	single := seeds.Len() == 1

	var (
		mu  sync.Mutex
		sum Summary
	)
	start := time.Now()
	all, deadline := sweep.Naturals, start.Add(budget)
	if seeds != nil {
		all, deadline = seeds.All(), time.Time{}
	}
	sum.Seeds = sweep.Run(all, 0, deadline, func(seed uint64) {
		run := o
		run.Seed, run.Trace, run.Record = seed, nil, false
		res, err := RunSeed(run)
		if err != nil {
			return // validated above
		}
		mu.Lock()
		defer mu.Unlock()
		sum.Events += res.Events
		if res.Violation != nil {
			sum.Failed = append(sum.Failed, res)
		}
	})
	sum.Elapsed = time.Since(start)
	slices.SortFunc(sum.Failed, func(a, b Result) int { return cmp.Compare(a.Seed, b.Seed) })

	t.Logf("sim.Check: %d seeds (%d nodes, %v each, faults %v), %d events in %v; %d failed",
		sum.Seeds, o.withDefaults().Nodes, o.withDefaults().Duration, o.Faults, sum.Events, sum.Elapsed.Round(time.Millisecond), len(sum.Failed))
	if single {
		for seed := range seeds.All() {
			s := describe(t, o, seed, svgDir, sum.Failed == nil)
			t.Logf("seed %d:\n%s", seed, s)
		}
	}
	for i, r := range sum.Failed {
		if i == maxReported {
			var rest []uint64
			for _, r := range sum.Failed[i:] {
				rest = append(rest, r.Seed)
			}
			t.Errorf("... and %d more failing seeds: %v", len(rest), rest)
			break
		}
		msg := fmt.Sprintf("seed %d: %v\n\treplay: %s=%d go test -run '%s' -v", r.Seed, r.Violation, EnvSeeds, r.Seed, sweep.RunPattern(t.Name()))
		if !single {
			msg += "\n" + describe(t, o, r.Seed, svgDir, false)
		}
		t.Errorf("%s", msg)
	}
	return sum
}

// describe runs seed again with a timeline (and a trace, if EnvTrace names
// a file) and returns the timeline as text; for a seed that failed, it
// writes the picture (sweep.WritePicture) and the SVG to svgDir.
func describe(t TB, o Options, seed uint64, svgDir string, passed bool) string {
	t.Helper()
	o.Seed, o.Record, o.Trace = seed, true, nil
	var traceFile *os.File
	if path, ok := sweep.Env(EnvTrace); ok {
		f, err := os.Create(path)
		if err != nil {
			t.Errorf("sim.Check: %v", err)
		} else {
			traceFile, o.Trace = f, f
		}
	}
	c, err := New(o)
	if err != nil {
		return err.Error()
	}
	c.Run()
	if traceFile != nil {
		if err := traceFile.Close(); err != nil {
			t.Errorf("sim.Check: %v", err)
		}
	}
	var b bytes.Buffer
	_ = c.WriteTimeline(&b, 100)
	if !passed {
		if path, err := sweep.WritePicture(t, t.Name(), seed, c.WriteHTML); err != nil {
			t.Errorf("sim.Check: %v", err)
		} else {
			b.WriteString("picture: " + path + "\n")
		}
	}
	if svgDir != "" && !passed {
		path := filepath.Join(svgDir, fmt.Sprintf("seed-%d.svg", seed))
		var svg bytes.Buffer
		_ = c.WriteSVG(&svg)
		if err := os.WriteFile(path, svg.Bytes(), 0o644); err != nil {
			t.Errorf("sim.Check: %v", err)
		} else {
			b.WriteString("SVG timeline: " + path + "\n")
		}
	}
	return b.String()
}

// orDefault returns a unless it is zero, else b.
func orDefault[T comparable](a, b T) T {
	var zero T
	if a == zero {
		return b
	}
	return a
}
