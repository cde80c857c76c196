package simtest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/sim"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/memstore"
)

// TestRuntimeSweep is the library's own runtime-mode sweep: every fault
// (drift within the bound, crashes, pauses, partitions, losses, a slow
// store, watch chaos, data loss, releases, reconfiguration) on memstore,
// 3 electors, 3 virtual minutes a seed, seeds 1-40. TENURE_SIM_SEEDS changes
// the seeds, TENURE_SIM_BUDGET (alone) runs seeds for that long,
// TENURE_SIM_FAULTS changes the faults (as sim.ParseFaults reads them) and
// the TENURE_* timings apply: "tenure sim -runtime" points here.
func TestRuntimeSweep(t *testing.T) {
	faults := sim.AllFaults()
	if v := os.Getenv("TENURE_SIM_FAULTS"); v != "" {
		var err error
		if faults, err = sim.ParseFaults(v); err != nil {
			t.Fatal(err)
		}
	}
	seeds := "1-40"
	switch {
	case os.Getenv(sim.EnvBudget) != "":
		seeds = "" // as many seeds as the budget allows
	case testing.Short():
		seeds = "1-10"
	}
	// The timings of the election "sim", as the tenure CLI reads them.
	env, err := lease.Load("sim", lease.DefaultConfig(), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	Check(t, Options[struct{}]{Config: env.Config, Faults: faults, Seeds: seeds})
}

// TestRuntimeSeedsFoundByTheSweep: seeds of `make sim`'s runtime sweep
// whose schedules reach a corner of lead, run on every `make test`. Seed
// 516: a loop held while it performs a step (the pause of its logger as
// the term starts); a timer counted from the step's start would bring the
// first renewal after the renew deadline, and end the term before the
// observers heard it started (lead's arm counts from the time after the
// step). Seed 7580: a Group leader's retry due within a grain of its
// deadline; shared on the Group's grid, it would wake the machine past the
// deadline while its observers still held Started and Term said not
// leading (lead's sharesWakes keeps such a wake the leader's own). Seeds
// pick schedules, and a change anywhere may move the schedule a seed
// makes: this keeps the seeds, the sweep keeps the search.
func TestRuntimeSeedsFoundByTheSweep(t *testing.T) {
	env, err := lease.Load("sim", lease.DefaultConfig(), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	Check(t, Options[struct{}]{Config: env.Config, Faults: sim.AllFaults(), Seeds: "516,7580"})
}

// TestRuntimeDefaultFaultsFiveElectors: the default faults, five electors,
// ten virtual minutes.
func TestRuntimeDefaultFaultsFiveElectors(t *testing.T) {
	Check(t, Options[struct{}]{Nodes: 5, Duration: 10 * time.Minute, Faults: sim.DefaultFaults(), Seeds: "1-5"})
}

// TestRuntimeDriftBeyondMakesTwoLeaders: the checks bite. With clocks
// drifting by 40% against timings that tolerate 20%, some seed makes two
// electors lead at once, and the check that sees it first says so.
func TestRuntimeDriftBeyondMakesTwoLeaders(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		res, err := Run(t, Options[struct{}]{Seed: seed, Duration: 5 * time.Minute,
			Faults: sim.Faults{DriftBeyond: true, Crash: true, Partition: true, Pause: true}})
		if err != nil {
			t.Fatal(err)
		}
		if v := res.Violation; v != nil {
			if v.Check != sim.CheckOneLeader {
				t.Fatalf("seed %d: want a one-leader violation, got %v", seed, v)
			}
			var b bytes.Buffer
			if err := res.WriteTimeline(&b, 80); err != nil || !strings.Contains(b.String(), "checks: VIOLATION") {
				t.Fatalf("timeline (%v):\n%s", err, b.String())
			}
			t.Logf("seed %d: %v", seed, v)
			return
		}
	}
	t.Fatal("no seed of 40 made two leaders with 40% drift")
}

// sloppyStore is a store that breaks the contract: its CompareAndSwap
// ignores the expected revision (a "last write wins" store). Runtime mode
// must catch it.
type sloppyStore struct{ *memstore.Store[struct{}] }

func (s sloppyStore) CompareAndSwap(ctx context.Context, name string, _ lease.Revision, next lease.Record[struct{}]) (lease.Record[struct{}], lease.Revision, error) {
	_, rev, err := s.Store.Get(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		rev = 0
	}
	return s.Store.CompareAndSwap(ctx, name, rev, next)
}

func TestRuntimeCatchesABrokenStore(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		res, err := Run(t, Options[struct{}]{Seed: seed, Faults: sim.DefaultFaults(),
			NewStore: func() store.Store[struct{}] { return sloppyStore{memstore.New[struct{}]()} }})
		if err != nil {
			t.Fatal(err)
		}
		if res.Violation != nil {
			t.Logf("seed %d: %v", seed, res.Violation)
			return
		}
	}
	t.Fatal("a store whose CompareAndSwap ignores the revision passed 20 seeds")
}

// hintsOnly is memstore claiming nothing of its watch events: electors read
// before they act on one, as on Redis or PostgreSQL.
type hintsOnly struct{ *memstore.Store[struct{}] }

func (hintsOnly) WatchCapabilities() store.WatchCapabilities { return store.WatchCapabilities{} }

// TestRuntimeSweepHintsOnly runs the sweep's faults on a store whose watch
// events are hints (memstore's are authentic), seeds 1-10.
func TestRuntimeSweepHintsOnly(t *testing.T) {
	Check(t, Options[struct{}]{Faults: sim.AllFaults(), Seeds: "1-10",
		NewStore: func() store.Store[struct{}] { return hintsOnly{memstore.New[struct{}]()} }})
}

// forgingStore is memstore with a forger on its watch channel that claims
// its events authentic: it replaces every event showing a holder with the
// same record released, at the same revision (a live lease). Runtime mode
// must catch the two leaders this makes.
type forgingStore struct{ *memstore.Store[struct{}] }

func (forgingStore) WatchCapabilities() store.WatchCapabilities {
	return store.WatchCapabilities{Authentic: true}
}

func (s forgingStore) Watch(ctx context.Context, name string) (<-chan store.Event[struct{}], error) {
	in, err := s.Store.Watch(ctx, name)
	if err != nil {
		return nil, err
	}
	out := make(chan store.Event[struct{}])
	go func() {
		defer close(out)
		send := func(ev store.Event[struct{}]) bool {
			select {
			case out <- ev:
				return true
			case <-ctx.Done():
				return false
			}
		}
		for ev := range in {
			if !ev.Absent && ev.Err == nil && ev.Record.Holder != "" {
				ev.Record.Holder = ""
			}
			if !send(ev) {
				return
			}
		}
	}()
	return out, nil
}

// WatchFunc delivers the forged events of Watch too: memstore's own
// WatchFunc must not be promoted past the forger.
func (s forgingStore) WatchFunc(ctx context.Context, name string, fn func(store.Event[struct{}], bool)) error {
	return store.WatchFuncVia[struct{}](ctx, s, name, fn)
}

func TestRuntimeCatchesForgedEventsTakenAsAuthentic(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		res, err := Run(t, Options[struct{}]{Seed: seed, Duration: time.Minute,
			NewStore: func() store.Store[struct{}] { return forgingStore{memstore.New[struct{}]()} }})
		if err != nil {
			t.Fatal(err)
		}
		if v := res.Violation; v != nil {
			// The oracle's verdict: the forged release is no record the
			// store held, so nothing excuses the overlap.
			if v.Check != sim.CheckOneLeader || !strings.Contains(v.Msg, "both lead") {
				t.Fatalf("seed %d: want two leaders found by the oracle, got %v", seed, v)
			}
			t.Logf("seed %d: %v", seed, v)
			return
		}
	}
	t.Fatal("forged releases taken as authentic passed 20 seeds")
}

// TestRuntimeCalmRun: no fault, one leader all along, a release at the
// end; the timeline and the result say so.
func TestRuntimeCalmRun(t *testing.T) {
	var trace bytes.Buffer
	res, err := Run(t, Options[struct{}]{Seed: 1, Duration: time.Minute, Trace: &trace})
	if err != nil {
		t.Fatal(err)
	}
	if res.Violation != nil || res.Terms != 1 || res.FenceAccepted == 0 || res.FenceRejected != 0 {
		t.Fatalf("%+v\n%s", res, trace.String())
	}
	if got := res.ElectorTime; got < 3*time.Minute-time.Second || got > 3*time.Minute+time.Second {
		t.Errorf("ElectorTime %v, want about 3 electors × 1 minute", got)
	}
	for _, want := range []string{"boot", "observer: started token 1", "fenced write token 1 accepted", `holder=""`} {
		if !strings.Contains(trace.String(), want) {
			t.Errorf("trace lacks %q", want)
		}
	}
}

// watchless has neither Watch nor MayLoseRecords.
type watchless struct{ s *memstore.Store[struct{}] }

func (w watchless) Get(ctx context.Context, name string) (lease.Record[struct{}], lease.Revision, error) {
	return w.s.Get(ctx, name)
}

func (w watchless) CompareAndSwap(ctx context.Context, name string, exp lease.Revision, next lease.Record[struct{}]) (lease.Record[struct{}], lease.Revision, error) {
	return w.s.CompareAndSwap(ctx, name, exp, next)
}

func TestRuntimeOptionsRejected(t *testing.T) {
	bad := lease.DefaultConfig()
	bad.RenewDeadline = bad.LeaseDuration
	tests := []struct {
		name string
		o    Options[struct{}]
	}{
		{"too many electors", Options[struct{}]{Nodes: 17}},
		{"invalid config", Options[struct{}]{Config: bad}},
		{"both drifts", Options[struct{}]{Faults: sim.Faults{Drift: true, DriftBeyond: true}}},
		{"fault on a missing node", Options[struct{}]{Schedule: []sim.Fault{{Kind: sim.FaultCrash, Node: 3}}}},
		{"bad name", Options[struct{}]{Name: "a\x00b"}},
		{"check interval", Options[struct{}]{CheckEvery: time.Hour}},
		{"clock stop", Options[struct{}]{Schedule: []sim.Fault{{Kind: sim.FaultClockStop, Dur: time.Second}}}},
	}
	for _, tt := range tests {
		if _, err := Run(t, tt.o); !errors.Is(err, sim.ErrInvalidOptions) {
			t.Errorf("%s: Run = %v, want an error wrapping sim.ErrInvalidOptions", tt.name, err)
		}
	}
	// Data loss needs a store that can lose a record.
	_, err := Run(t, Options[struct{}]{Faults: sim.Faults{DataLoss: true},
		NewStore: func() store.Store[struct{}] { return watchless{memstore.New[struct{}]()} }})
	if !errors.Is(err, sim.ErrInvalidOptions) || !strings.Contains(err.Error(), "Delete") {
		t.Errorf("data loss on a store without Delete: %v", err)
	}
}

// TestRuntimeResignSweep runs the sweep's faults with the leader resigning
// now and then (Elector.Resign, sim.FaultResign), seeds 1-40: the bodies
// of a resigned term end before its successor's start, and every other
// check holds.
func TestRuntimeResignSweep(t *testing.T) {
	faults := sim.AllFaults()
	faults.Resign = true
	Check(t, Options[struct{}]{Faults: faults, Seeds: "1-40"})
}

// TestRuntimeHandOverSweep runs the sweep's faults with the leader handing
// over now and then (Elector.HandOver, sim.FaultHandOver) to a node, up
// or not, or to an identity no node has, seeds 1-20: the bodies of the
// handed-over term end before its successor's start, a successor that
// does not come is fallen back from, and every other check holds.
func TestRuntimeHandOverSweep(t *testing.T) {
	faults := sim.AllFaults()
	faults.HandOver = true
	Check(t, Options[struct{}]{Faults: faults, Seeds: "1-20"})
}
