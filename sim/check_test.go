package sim

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeTB records what Check says, in place of a *testing.T.
type fakeTB struct {
	logs, errs []string
	fatal      bool
}

func (f *fakeTB) Helper()      {}
func (f *fakeTB) Name() string { return "TestX/sub" }
func (f *fakeTB) Logf(format string, args ...any) {
	f.logs = append(f.logs, fmt.Sprintf(format, args...))
}
func (f *fakeTB) Errorf(format string, args ...any) {
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.Errorf(format, args...)
	f.fatal = true
}

func TestCheckPassesAndFails(t *testing.T) {
	t.Setenv(EnvSeeds, "")
	t.Setenv("TMPDIR", t.TempDir()) // for the pictures
	ok := &fakeTB{}
	sum := Check(ok, Options{Nodes: 3, Duration: 2 * time.Minute, Faults: DefaultFaults(), Seeds: "1-20"})
	if len(ok.errs) != 0 || sum.Seeds != 20 || sum.Events == 0 {
		t.Fatalf("calm sweep: %d seeds, errors %q", sum.Seeds, ok.errs)
	}

	bad := &fakeTB{}
	sum = Check(bad, Options{Nodes: 3, Duration: 5 * time.Minute, Faults: Faults{DriftBeyond: true, Crash: true, Partition: true}, Seeds: "1-10"})
	if len(sum.Failed) == 0 || len(bad.errs) == 0 {
		t.Fatalf("drift beyond the bound: no failure (%d seeds)", sum.Seeds)
	}
	first, seed := bad.errs[0], sum.Failed[0].Seed
	for _, want := range []string{fmt.Sprintf("seed %d: ", seed), "one-leader check failed",
		fmt.Sprintf("replay: TENURE_SIM_SEEDS=%d go test -run '^TestX$/^sub$' -v", seed), "checks: VIOLATION"} {
		if !strings.Contains(first, want) {
			t.Errorf("failure report lacks %q:\n%s", want, first)
		}
	}
	if !slices.IsSortedFunc(sum.Failed, func(a, b Result) int { return int(a.Seed) - int(b.Seed) }) {
		t.Error("failures not in seed order")
	}
}

func TestCheckEnvReplaysOneSeed(t *testing.T) {
	t.Setenv(EnvSeeds, "3")
	t.Setenv(EnvSVG, t.TempDir())
	t.Setenv("TMPDIR", t.TempDir()) // for the picture
	tb := &fakeTB{}
	sum := Check(tb, Options{Nodes: 3, Duration: 5 * time.Minute, Faults: Faults{DriftBeyond: true, Crash: true, Partition: true}, Seeds: "1-1000"})
	if sum.Seeds != 1 || len(sum.Failed) != 1 {
		t.Fatalf("ran %d seeds, %d failed; want seed 3 alone, failing", sum.Seeds, len(sum.Failed))
	}
	joined := strings.Join(tb.logs, "\n")
	if !strings.Contains(joined, "seed 3:\ntenure sim: seed 3") || !strings.Contains(joined, "SVG timeline: ") {
		t.Fatalf("the timeline of the replayed seed is not logged:\n%s", joined)
	}
}

func TestCheckStopsWithinItsBudget(t *testing.T) {
	t.Setenv(EnvSeeds, "")
	tb := &fakeTB{}
	start := time.Now()
	sum := Check(tb, Options{Nodes: 3, Duration: time.Minute, Budget: 200 * time.Millisecond})
	if took := time.Since(start); sum.Seeds == 0 || took > 5*time.Second {
		t.Fatalf("%d seeds in %v with a 200ms budget", sum.Seeds, took)
	}
}

func TestCheckBadOptions(t *testing.T) {
	tb := &fakeTB{}
	Check(tb, Options{Nodes: 100})
	if !tb.fatal || !strings.Contains(tb.errs[0], "Nodes") {
		t.Fatalf("Check accepted 100 nodes: %q", tb.errs)
	}
	tb = &fakeTB{}
	Check(tb, Options{Seeds: "x"})
	if !tb.fatal {
		t.Fatal("Check accepted seeds \"x\"")
	}
}

func TestParseSeeds(t *testing.T) {
	good := map[string][]uint64{
		"7":                    {7},
		"1-3":                  {1, 2, 3},
		"1-3, 10 ,20-21":       {1, 2, 3, 10, 20, 21},
		"18446744073709551615": {^uint64(0)},
	}
	for in, want := range good {
		s, err := ParseSeeds(in)
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		got := slices.Collect(s.All())
		if !slices.Equal(got, want) || s.Len() != uint64(len(want)) {
			t.Errorf("%q = %v (len %d), want %v", in, got, s.Len(), want)
		}
		if again, _ := ParseSeeds(s.String()); !slices.Equal(slices.Collect(again.All()), want) {
			t.Errorf("%q does not round trip through %q", in, s.String())
		}
	}
	for _, in := range []string{"", "a", "1-", "-3", "5-1", "1,,2", "1-2-3"} {
		if _, err := ParseSeeds(in); !errors.Is(err, ErrInvalidSeeds) {
			t.Errorf("%q: err = %v, want ErrInvalidSeeds", in, err)
		}
	}
	whole, _ := ParseSeeds("0-18446744073709551615")
	if whole.Len() != ^uint64(0) {
		t.Errorf("the whole range has Len %d", whole.Len())
	}
}

func TestParseFaults(t *testing.T) {
	f, err := ParseFaults("default,reconfigure")
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultFaults()
	want.Reconfigure = true
	if f != want || f.String() != "drift,crash,pause,partition,loss,slow,release,reconfigure" {
		t.Fatalf("got %v", f)
	}
	if f, _ := ParseFaults(f.String()); f != want {
		t.Fatalf("String does not round trip: %v", f)
	}
	if f, _ := ParseFaults("calm"); f != (Faults{}) || f.String() != "calm" {
		t.Fatalf("calm = %v", f)
	}
	if _, err := ParseFaults("crash,meteor"); !errors.Is(err, ErrUnknownFault) {
		t.Fatalf("meteor: %v", err)
	}
}
