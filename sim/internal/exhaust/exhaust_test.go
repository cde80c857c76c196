package exhaust

import (
	"os"
	"strings"
	"testing"
	"time"
)

// runBound runs b and fails the test on a violation, printing the
// schedule that reached it.
func runBound(t *testing.T, b Bound) Result {
	t.Helper()
	r, err := run(b, newJudge, func(depth, frontier, states int, d time.Duration) {
		if testing.Verbose() && os.Getenv("TENURE_EXHAUSTIVE_PROGRESS") != "" {
			t.Logf("%s: level %d, frontier %d, states %d, %v", b.Name, depth, frontier, states, d)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(r)
	if r.Violation != "" {
		t.Fatalf("%s\n%s", r.Violation, r.Schedule)
	}
	if r.Truncated {
		t.Fatalf("%s: stopped at %d states", b.Name, r.States)
	}
	return r
}

func runBounds(t *testing.T, bs []Bound, nodes func(int) bool) {
	for _, b := range bs {
		if !nodes(b.Nodes) {
			continue
		}
		t.Run(b.Name, func(t *testing.T) { runBound(t, b) })
	}
}

// TestExhaustiveTwoNodes explores the 2-node bounds of `make test` (or, with
// TENURE_EXHAUSTIVE=large, of `make sim`) and finds no violation.
func TestExhaustiveTwoNodes(t *testing.T) {
	runBounds(t, bounds(), func(n int) bool { return n == 2 })
}

// TestExhaustiveThreeNodes explores the 3-node bounds.
func TestExhaustiveThreeNodes(t *testing.T) {
	runBounds(t, bounds(), func(n int) bool { return n == 3 })
}

func bounds() []Bound {
	if os.Getenv("TENURE_EXHAUSTIVE") == "large" {
		return LargeBounds()
	}
	bs := TestBounds()
	if raceOn {
		// The search runs on one goroutine and shares nothing: the race
		// detector finds nothing in it and slows it sixfold. CI, which
		// runs every test with it, explores each bound two ticks shorter
		// (make test without it, the full bounds).
		var short []Bound
		for _, b := range bs {
			if b.Name == "two-nodes-lossy-stop" {
				// Shorter than 7 ticks, no term starts on its claim (a
				// LeaseDuration, 6 ticks, after the create): nothing to
				// find, for a minute of CI.
				continue
			}
			b.Horizon = max(b.Horizon-2, 3)
			short = append(short, b)
		}
		bs = short
	}
	return bs
}

// TestExhaustiveFindsABrokenStore: a store that applies every swap,
// whatever revision it expects, lets two nodes lead at once, and the
// search says so with the schedule.
func TestExhaustiveFindsABrokenStore(t *testing.T) {
	b := TestBounds()[0]
	b.brokenCAS = true
	r, err := Run(b)
	if err != nil {
		t.Fatal(err)
	}
	if r.Violation == "" || !strings.Contains(r.Schedule, "store applies") {
		t.Fatalf("no violation found: %v", r)
	}
	t.Logf("%v\n%s", r, r.Schedule)
}

// TestMachineEncodingCoversEveryField: every field of fsm.Machine but the
// two it skips is encoded, those of its nested structs included, so two
// machines that differ in any of them are different states.
func TestMachineEncodingCoversEveryField(t *testing.T) {
	c := machineCodec()
	seen := map[string]bool{}
	for _, l := range c.leaves {
		for p := l.path; p != ""; {
			seen[p] = true
			i := strings.LastIndexByte(p, '.')
			if i < 0 {
				break
			}
			p = p[:i]
		}
	}
	for _, want := range []string{"id", "cfg", "state", "view.holdUntil", "hints.heardMax", "req.renewDeadline", "unknownToken", "term.writeDur", "view.last.Token"} {
		if !seen[want] {
			t.Errorf("field %s is not encoded", want)
		}
	}
	if seen["out"] || seen["rand"] {
		t.Error("out or rand is encoded")
	}
}

// TestExhaustiveProbe runs one bound described by the environment
// (TENURE_EXHAUSTIVE_PROBE=name, see probeBounds), to measure a bound or
// search for a change's counterexample.
func TestExhaustiveProbe(t *testing.T) {
	name := os.Getenv("TENURE_EXHAUSTIVE_PROBE")
	if name == "" {
		t.Skip("TENURE_EXHAUSTIVE_PROBE is not set")
	}
	b, ok := probeBounds()[name]
	if !ok {
		t.Fatalf("no probe bound %q", name)
	}
	runBound(t, b)
}

func probeBounds() map[string]Bound {
	c := smallConfig()
	return map[string]Bound{
		"watch-rollback": {Name: "watch-rollback", Nodes: 2, Horizon: 9, Config: c, MaxOrphans: 1, Watch: true, WatchAtTick: true,
			Budget: Budget{Rollbacks: 1, Faults: 1}},
		"watch-guarded-resign-rollback": {Name: "watch-guarded-resign-rollback", Nodes: 2, Horizon: 10, Config: c, MaxOrphans: 1, Watch: true, WatchAtTick: true, Guarded: true,
			Budget: Budget{Rollbacks: 1, Resigns: 1, Faults: 2}},
		"watch-guarded-stop-rollback": {Name: "watch-guarded-stop-rollback", Nodes: 2, Horizon: 10, Config: c, MaxOrphans: 1, Watch: true, WatchAtTick: true, Guarded: true,
			Budget: Budget{Rollbacks: 1, Stops: 1, Faults: 2}},
		"watch-authentic-rollback": {Name: "watch-authentic-rollback", Nodes: 2, Horizon: 9, Config: c, MaxOrphans: 1, Watch: true, WatchAtTick: true, Authentic: true,
			Budget: Budget{Rollbacks: 1, Faults: 1}},
		"watch-losses": {Name: "watch-losses", Nodes: 2, Horizon: 9, Config: c, MaxOrphans: 1, Watch: true, MaxLatency: 1, WatchAtTick: true,
			Budget: Budget{Losses: 1, Rollbacks: 1, Faults: 1}},
	}
}
