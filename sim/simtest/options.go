package simtest

import (
	"io"
	"time"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/sim"
	"github.com/tenure-go/tenure/sim/internal/rt"
	"github.com/tenure-go/tenure/store"
)

// Options configure a runtime-mode simulation (Run, Check). M is the
// metadata type of the store under test.
type Options[M any] struct {
	// Seed draws everything random: the fault schedule, latencies, clock
	// rates, the electors' jitter. Check ignores it and runs the seeds of
	// Seeds.
	Seed uint64
	// Nodes is the number of electors (default 3, at most 16).
	Nodes int
	// Duration is the virtual time a run lasts (default 3 minutes).
	Duration time.Duration
	// Name is the election's name (default "sim").
	Name string
	// Config holds the timings every elector starts with (default
	// lease.DefaultConfig()). To run the timings a deployment reads from
	// its environment, pass the Config of lease.Load(name,
	// lease.DefaultConfig(), os.LookupEnv), as lead.New does.
	Config lease.Config
	// NewStore returns a fresh, empty store for one seed (default
	// memstore.New). Check calls it concurrently, once per seed, from the
	// GOMAXPROCS goroutines that run seeds: it must be safe to call from
	// several goroutines at once, and each call must return a store of its
	// own that shares no records with another call's (not one store kept
	// in a variable, nor a shared server without a key prefix per call).
	// Seeds that share a store see each other's electors and fail with
	// misleading verdicts, such as "no elector leads". It is called
	// inside the synctest bubble, so the store
	// may start goroutines and timers, which then run in virtual time; it
	// must not wait on the network or on goroutines from outside the
	// bubble. The store should pass storetest. For Faults.DataLoss it must
	// have a method Delete(name string) that loses the record, as
	// memstore's does. Besides Name, some runs also elect Name+"-decoy-1"
	// and Name+"-decoy-2" in the same store (a Group whose store operations
	// wait behind each other; not checked); a store that refuses those
	// names runs without them.
	NewStore func() store.Store[M]
	// Latency is the one-way latency of every request and reply between an
	// elector and the store, and of every watch event.
	Latency sim.Latency
	// Faults says which faults the random schedule draws (zero: none; see
	// sim.DefaultFaults). WatchChaos applies only to stores that implement
	// store.Watcher.
	Faults sim.Faults
	// Rho is the clock drift bound of Faults.Drift (default 0.05).
	Rho float64
	// BeyondRho is the drift of Faults.DriftBeyond (default 0.4).
	BeyondRho float64
	// Schedule, if not nil, replaces the random fault schedule.
	Schedule []sim.Fault
	// CheckEvery is how often, in virtual time, the checks look at every
	// elector at an instant when every goroutine is idle (default 100ms).
	// Term starts are checked as they happen, whatever it is.
	CheckEvery time.Duration
	// Trace, if not nil, receives one line per event: store operations,
	// leadership changes, fenced writes, faults.
	Trace io.Writer

	// Seeds, for Check only: the seeds to run, as sim.ParseSeeds reads
	// them. Empty: seeds 1, 2, 3, ... for as long as Budget lasts.
	// TENURE_SIM_SEEDS overrides it.
	Seeds string
	// Budget, for Check only: when Seeds is empty, how long to keep
	// starting new seeds (default sim.DefaultBudget; TENURE_SIM_BUDGET
	// overrides it).
	Budget time.Duration
	// SVGDir, for Check only: where the SVG timeline of each failing seed
	// is written (TENURE_SIM_SVG overrides it).
	SVGDir string
}

// core returns the options of one run, as package rt reads them.
func (o Options[M]) core() rt.Options[M] {
	return rt.Options[M]{
		Seed: o.Seed, Nodes: o.Nodes, Duration: o.Duration, Name: o.Name, Config: o.Config,
		NewStore: o.NewStore, Latency: o.Latency, Faults: o.Faults, Rho: o.Rho, BeyondRho: o.BeyondRho,
		Schedule: o.Schedule, CheckEvery: o.CheckEvery, Trace: o.Trace,
	}
}

// Result sums up one runtime-mode run: its seed, the terms, store
// operations and fenced writes it saw, the elector-time it simulated, the
// fault schedule that ran and the first failed check (Violation), if any.
// Its methods Err, WriteTimeline (one lane per elector: L while its
// observers say it leads, F otherwise, blank while down; the terms, the
// store's changes of holder, the faults and the verdict) and WriteSVG
// render it. Lag and Tolerance are zero: a bubble's checks need no
// tolerance.
type Result = rt.Result
