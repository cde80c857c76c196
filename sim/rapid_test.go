package sim

import (
	"time"

	"testing"

	"github.com/tenure-go/tenure/lease"
	"pgregory.net/rapid"
)

// genSchedule draws a fault schedule: a list of faults at increasing times,
// each kind with its parameters. rapid shrinks a failing one towards fewer,
// shorter and simpler faults.
func genSchedule(t *rapid.T, nodes int, cfg lease.Config, withDataLoss bool) []Fault {
	kinds := []FaultKind{FaultCrash, FaultPause, FaultPartition, FaultLoss, FaultSlow, FaultRelease, FaultReconfigure}
	if withDataLoss {
		kinds = append(kinds, FaultDataLoss)
	}
	l := cfg.LeaseDuration
	count := rapid.IntRange(0, 12).Draw(t, "faults")
	var out []Fault
	at := time.Duration(0)
	for range count {
		at += time.Duration(rapid.Int64Range(0, int64(40*time.Second)).Draw(t, "gap"))
		f := Fault{At: at, Kind: rapid.SampledFrom(kinds).Draw(t, "kind"), Node: rapid.IntRange(0, nodes-1).Draw(t, "node")}
		dur := func(lo, hi time.Duration) time.Duration {
			return time.Duration(rapid.Int64Range(int64(lo), int64(hi)).Draw(t, "dur"))
		}
		switch f.Kind {
		case FaultCrash:
			f.Dur = dur(time.Second, 3*l)
			f.NewIdentity = rapid.Bool().Draw(t, "newIdentity")
		case FaultPause:
			f.Dur = dur(0, 3*l)
		case FaultPartition:
			f.Dur = dur(0, 3*l)
			f.Requests = rapid.Bool().Draw(t, "requests")
			f.Responses = !f.Requests || rapid.Bool().Draw(t, "responses")
		case FaultLoss:
			f.Dur = dur(0, 2*l)
			f.Prob = rapid.Float64Range(0, 1).Draw(t, "prob")
		case FaultSlow:
			f.Dur = dur(0, 2*l)
			f.Latency = dur(0, 2*cfg.BackendTimeout)
		case FaultRelease:
			f.Dur = dur(time.Second, 2*l)
		case FaultReconfigure:
			// On a store that loses records every LeaseDuration must
			// exceed every RenewDeadline (docs/design.md, "Stores that
			// lose records"): one shared LeaseDuration guarantees it.
			keep := time.Duration(0)
			if withDataLoss {
				keep = cfg.LeaseDuration
			}
			f.Config = genConfig(t, keep)
		}
		out = append(out, f)
	}
	return out
}

// genConfig draws valid timings that tolerate 10% drift, with
// LeaseDuration keep if it is not 0.
func genConfig(t *rapid.T, keep time.Duration) lease.Config {
	l := keep
	if l == 0 {
		l = time.Duration(rapid.Int64Range(int64(5*time.Second), int64(20*time.Second)).Draw(t, "L"))
	}
	r := time.Duration(float64(l) * rapid.Float64Range(0.5, 0.8).Draw(t, "R/L"))
	return lease.Config{
		LeaseDuration:  l,
		RenewDeadline:  r,
		RetryInterval:  time.Duration(float64(r) * rapid.Float64Range(0.1, 0.3).Draw(t, "I/R")),
		RetryJitter:    rapid.Float64Range(0, 0.5).Draw(t, "J"),
		BackendTimeout: time.Duration(float64(r) * rapid.Float64Range(0.2, 0.6).Draw(t, "T/R")),
		ErrorInterval:  30 * time.Second,
	}
}

// TestSimRapidSchedules lets rapid draw fault schedules (crash, restart,
// pause, partition, loss, slow store, release, reconfigure, and data loss
// with a lossy store); a failing schedule shrinks to a minimal one, and
// rapid keeps it under testdata/rapid/ to replay first.
func TestSimRapidSchedules(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nodes := rapid.IntRange(2, 5).Draw(t, "nodes")
		cfg := lease.DefaultConfig()
		o := Options{
			Seed:   rapid.Uint64().Draw(t, "seed"),
			Nodes:  nodes,
			Config: cfg,
			Store:  StoreModel{NoWatch: rapid.Bool().Draw(t, "noWatch")},
			Faults: Faults{Drift: true, WatchChaos: rapid.Bool().Draw(t, "watchChaos")},
		}
		dataLoss := rapid.Bool().Draw(t, "dataLoss")
		o.Schedule = genSchedule(t, nodes, cfg, dataLoss)
		o.Store.MayLoseRecords = dataLoss
		end := time.Duration(0)
		for _, f := range o.Schedule {
			end = max(end, f.At+f.Dur)
		}
		// A calm tail long enough for the liveness bound.
		o.Duration = end + 2*time.Minute
		res, err := RunSeed(o)
		if err != nil {
			t.Fatal(err)
		}
		if res.Violation != nil {
			for _, f := range o.Schedule {
				t.Logf("  %8v %v", f.At, f)
			}
			t.Fatalf("%v (seed %d)", res.Violation, o.Seed)
		}
	})
}
