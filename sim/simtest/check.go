package simtest

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-go/tenure/sim"
	"github.com/tenure-go/tenure/sim/internal/rt"
	"github.com/tenure-go/tenure/sim/internal/sweep"
)

// Run runs one seed (o.Seed) of runtime mode in a fresh synctest bubble
// and returns its result. Call it from a test, never from inside a bubble.
// An error (wrapping sim.ErrInvalidOptions) means the options are invalid.
func Run[M any](t *testing.T, o Options[M]) (Result, error) {
	t.Helper()
	ro := o.WithDefaults()
	if err := ro.Validate(); err != nil {
		return Result{}, fmt.Errorf("simtest: %w", err)
	}
	return runBubble(t, ro)
}

// runBubble runs validated options in a bubble, in virtual time.
func runBubble[M any](t *testing.T, o rt.Options[M]) (Result, error) {
	var (
		res Result
		err error
	)
	synctest.Test(t, func(*testing.T) {
		if res, err = rt.Run(o, rt.Driver{Wait: synctest.Wait}); err != nil {
			err = fmt.Errorf("simtest: %w", err)
		}
	})
	return res, err
}

// Summary sums up a sweep of seeds.
type Summary struct {
	// Seeds is the number of seeds run.
	Seeds int
	// ElectorTime is the virtual time the electors ran, summed over every
	// elector of every seed.
	ElectorTime time.Duration
	// Failed holds the result of every seed that violated a check, in seed
	// order.
	Failed []Result
	// Elapsed is the wall-clock time the sweep took.
	Elapsed time.Duration
}

// Check runs runtime mode for many seeds and fails t for every seed that
// violates a check, with the seed, the violation, the text timeline of the
// run, the path of its picture (Result.WriteHTML) and the command that
// replays it. The picture goes to the test's artifact directory when go
// test runs with -artifacts (t.ArtifactDir, kept under -outputdir), else
// to tenure-sim/<test name>/seed-<seed>.html under os.TempDir. It runs the seeds of o.Seeds, or
// seeds 1, 2, 3, ... for o.Budget (default sim.DefaultBudget), on
// GOMAXPROCS goroutines, each seed in a bubble of its own; the environment
// variables sim.EnvSeeds, sim.EnvBudget, sim.EnvSVG and sim.EnvTrace
// override the options. Invalid options fail t at once.
//
//	func TestElection(t *testing.T) {
//		simtest.Check(t, simtest.Options[Meta]{
//			NewStore: func() store.Store[Meta] { return mystore.New[Meta]() },
//			Faults:   sim.DefaultFaults(),
//		})
//	}
func Check[M any](t *testing.T, o Options[M]) Summary {
	t.Helper()
	ro := o.WithDefaults()
	if err := ro.Validate(); err != nil {
		t.Fatalf("simtest.Check: simtest: %v", err)
	}
	spec := o.Seeds
	if v, ok := sweep.Env(sim.EnvSeeds); ok {
		spec = v
	}
	var seeds sim.Seeds
	if spec != "" {
		var err error
		if seeds, err = sim.ParseSeeds(spec); err != nil {
			t.Fatalf("simtest.Check: %v", err)
		}
	}
	budget := o.Budget
	if budget == 0 {
		budget = sim.DefaultBudget
	}
	budget, err := sweep.Budget(budget)
	if err != nil {
		t.Fatalf("simtest.Check: %v", err)
	}
	svgDir := o.SVGDir
	if v, ok := sweep.Env(sim.EnvSVG); ok {
		svgDir = v
	}
	single := seeds.Len() == 1

	var (
		mu   sync.Mutex
		sum  Summary
		errs []error
	)
	start := time.Now()
	all, deadline := sweep.Naturals, start.Add(budget)
	if seeds != nil {
		all, deadline = seeds.All(), time.Time{}
	}
	sum.Seeds = sweep.Run(all, 0, deadline, func(seed uint64) {
		run := ro
		run.Seed, run.Trace = seed, nil
		if single {
			run.Trace = traceFile(t)
		}
		res, err := runBubble(t, run)
		if f, ok := run.Trace.(*os.File); ok {
			_ = f.Close()
		}
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs = append(errs, err)
			return
		}
		sum.ElectorTime += res.ElectorTime
		if res.Violation != nil {
			sum.Failed = append(sum.Failed, res)
		}
		if single {
			var b bytes.Buffer
			_ = res.WriteTimeline(&b, 100)
			t.Logf("seed %d:\n%s", seed, b.String())
		}
	})
	sum.Elapsed = time.Since(start)
	if len(errs) > 0 {
		t.Fatalf("simtest.Check: %v", errs[0])
	}
	slices.SortFunc(sum.Failed, func(a, b Result) int { return cmp.Compare(a.Seed, b.Seed) })
	t.Logf("simtest.Check: %d seeds (%d electors, %v each, faults %v), %v of elector time in %v (%.0f elector-seconds/s); %d failed",
		sum.Seeds, ro.Nodes, ro.Duration, ro.Faults, sum.ElectorTime, sum.Elapsed.Round(time.Millisecond),
		sum.ElectorTime.Seconds()/max(sum.Elapsed.Seconds(), 1e-9), len(sum.Failed))
	for i, r := range sum.Failed {
		if i == 3 {
			var rest []uint64
			for _, r := range sum.Failed[i:] {
				rest = append(rest, r.Seed)
			}
			t.Errorf("... and %d more failing seeds: %v", len(rest), rest)
			break
		}
		msg := fmt.Sprintf("seed %d: %v\n\treplay: %s=%d go test -run '%s' -v", r.Seed, r.Violation, sim.EnvSeeds, r.Seed, sweep.RunPattern(t.Name()))
		if !single {
			var b bytes.Buffer
			_ = r.WriteTimeline(&b, 100)
			msg += "\n" + b.String()
		}
		if path, err := sweep.WritePicture(t, t.Name(), r.Seed, r.WriteHTML); err != nil {
			t.Errorf("simtest.Check: %v", err)
		} else {
			msg += "picture: " + path + "\n"
		}
		if svgDir != "" {
			path := filepath.Join(svgDir, fmt.Sprintf("seed-%d.svg", r.Seed))
			var b bytes.Buffer
			_ = r.WriteSVG(&b)
			if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
				t.Errorf("simtest.Check: %v", err)
			} else {
				msg += "SVG timeline: " + path + "\n"
			}
		}
		t.Errorf("%s", msg)
	}
	return sum
}

// traceFile opens the file sim.EnvTrace names, if any.
func traceFile(t *testing.T) *os.File {
	path, ok := sweep.Env(sim.EnvTrace)
	if !ok {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		t.Errorf("simtest.Check: %v", err)
		return nil
	}
	return f
}
