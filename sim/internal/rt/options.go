package rt

import (
	"fmt"
	"io"
	"time"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/sim"
	"github.com/tenure-go/tenure/sim/internal/picture"
	"github.com/tenure-go/tenure/sim/internal/timeline"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/memstore"
)

// Options configure one runtime-mode run, in a synctest bubble
// (simtest.Run, simtest.Check) or in real time (realtime.Run): both
// packages' Options are this type. M is the metadata type of the store
// under test.
type Options[M any] struct {
	// Seed draws everything random: the fault schedule, latencies, clock
	// rates, the electors' jitter. simtest.Check ignores it and runs the
	// seeds of Seeds.
	Seed uint64
	// Nodes is the number of electors (default 3, at most 16).
	Nodes int
	// Duration is the time a run lasts, in the electors' time (default 3
	// minutes; in real time it takes Duration/Speed of wall-clock time).
	Duration time.Duration
	// Name is the election's name (default "sim").
	Name string
	// Config holds the timings every elector starts with (default
	// lease.DefaultConfig()). To run the timings a deployment reads from
	// its environment, pass the Config of lease.Load(name,
	// lease.DefaultConfig(), os.LookupEnv), as lead.New does.
	Config lease.Config
	// NewStore returns a fresh, empty store for one seed (default
	// memstore.New). Runs of several seeds at once (simtest.Check, from
	// the GOMAXPROCS goroutines that run seeds; tenure sim -runtime) call
	// it concurrently: it must be safe to call from several goroutines at
	// once, and each call must return a store of its own that shares no
	// records with another call's (not one store kept in a variable, nor a
	// shared server without a key prefix per call). Seeds that share a
	// store see each other's electors and fail with misleading verdicts,
	// such as "no elector leads". In a synctest bubble it is called inside
	// the bubble, so the store may start goroutines and timers, which then
	// run in virtual time; it must not wait on the network or on
	// goroutines from outside the bubble. In real time it is called on the
	// caller's goroutine, outside any bubble: the store may start
	// goroutines and use the network, and its own timers run on the wall
	// clock, not the scaled one. The store should pass storetest. For
	// Faults.DataLoss it must have a method Delete(name string) that loses
	// the record, as memstore's does. Besides Name, some runs also elect
	// Name+"-decoy-1" and Name+"-decoy-2" in the same store (a Group whose
	// store operations wait behind each other; not checked); a store that
	// refuses those names runs without them.
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

	// Speed, in real time only, is how many seconds of the electors'
	// time pass in one real second (default DefaultSpeed, at most
	// MaxSpeed). A synctest bubble ignores it.
	Speed int

	// Seeds, for simtest.Check only: the seeds to run, as sim.ParseSeeds
	// reads them. Empty: seeds 1, 2, 3, ... for as long as Budget lasts.
	// TENURE_SIM_SEEDS overrides it.
	Seeds string
	// Budget, for simtest.Check only: when Seeds is empty, how long to
	// keep starting new seeds (default sim.DefaultBudget;
	// TENURE_SIM_BUDGET overrides it).
	Budget time.Duration
	// SVGDir, for simtest.Check only: where the SVG timeline of each
	// failing seed is written (TENURE_SIM_SVG overrides it).
	SVGDir string
}

// deleter is what a store needs for Faults.DataLoss: a way to lose the
// record, as memstore's Delete does.
type deleter interface{ Delete(name string) }

// WithDefaults fills in the zero fields.
func (o Options[M]) WithDefaults() Options[M] {
	if o.Nodes == 0 {
		o.Nodes = 3
	}
	if o.Duration == 0 {
		o.Duration = 3 * time.Minute
	}
	if o.Name == "" {
		o.Name = "sim"
	}
	if o.Config == (lease.Config{}) {
		o.Config = lease.DefaultConfig()
	}
	if o.NewStore == nil {
		o.NewStore = func() store.Store[M] { return memstore.New[M]() }
	}
	if o.Latency == (sim.Latency{}) {
		o.Latency = sim.Latency{Min: time.Millisecond, Max: 20 * time.Millisecond}
	}
	if o.Rho == 0 {
		o.Rho = 0.05
	}
	if o.BeyondRho == 0 {
		o.BeyondRho = 0.4
	}
	if o.CheckEvery == 0 {
		o.CheckEvery = 100 * time.Millisecond
	}
	if o.Speed == 0 {
		o.Speed = DefaultSpeed
	}
	return o
}

// Validate checks options with their defaults, using the model's rules
// for what the two modes share. Its errors wrap sim.ErrInvalidOptions and
// carry no package prefix: the caller adds its own.
func (o *Options[M]) Validate() error {
	mo := sim.Options{
		Nodes: o.Nodes, Duration: o.Duration, Config: o.Config, Faults: o.Faults,
		Rho: o.Rho, BeyondRho: o.BeyondRho, Schedule: o.Schedule,
		Store: sim.StoreModel{MayLoseRecords: true, Latency: o.Latency},
	}
	if _, err := sim.New(mo); err != nil {
		return err
	}
	switch {
	case o.Nodes > 16:
		return fmt.Errorf("%w: Nodes is %d, at most 16 in runtime mode", sim.ErrInvalidOptions, o.Nodes)
	case o.CheckEvery < 0 || o.CheckEvery > o.Config.RenewDeadline:
		return fmt.Errorf("%w: CheckEvery is %v, must lie in (0, RenewDeadline]", sim.ErrInvalidOptions, o.CheckEvery)
	}
	for _, f := range o.Schedule {
		if f.Kind == sim.FaultClockStop {
			return fmt.Errorf("%w: Schedule: %v: clock stops are model mode's only", sim.ErrInvalidOptions, f)
		}
	}
	if o.Speed < 1 || o.Speed > MaxSpeed {
		return fmt.Errorf("%w: Speed is %d, must lie in [1, %d]", sim.ErrInvalidOptions, o.Speed, MaxSpeed)
	}
	if err := store.ValidateName(o.Name); err != nil {
		return fmt.Errorf("%w: Name: %w", sim.ErrInvalidOptions, err)
	}
	return nil
}

// Result sums up one runtime-mode run (simtest.Result and
// realtime.Result are this type).
type Result struct {
	// Seed is the seed that was run.
	Seed uint64
	// Terms is the number of leadership terms the electors reported.
	Terms int
	// StoreOps is the number of store operations the electors started.
	StoreOps int
	// FenceAccepted counts the bodies' fenced writes the resource
	// accepted, FenceRejected those it refused (from terms that had ended,
	// as fencing intends).
	FenceAccepted, FenceRejected int
	// ElectorTime is the virtual time the electors ran, summed over them:
	// the elector-seconds simulated.
	ElectorTime time.Duration
	// Schedule is the fault schedule that ran (faults aimed at the leader
	// name the node they hit).
	Schedule []sim.Fault
	// Violation is the first failed check, or nil.
	Violation *sim.Violation
	// Lag is, in real time only, the largest scheduling delay measured
	// during the run, in the electors' time: how late the run's timers
	// fired. Zero in a synctest bubble.
	Lag time.Duration
	// Tolerance is, in real time only, how long the checks of timely
	// notification (observers, bodies' contexts, Status) let a disagreement
	// with Term last before they report it, and how much they add to the
	// liveness bound: 2×CheckEvery plus 4×Lag, as it stood at the end.
	// Zero in a synctest bubble, where they report it at once.
	Tolerance time.Duration

	tl *timeline.Timeline
}

// Err returns the violation as an error, or nil.
func (r *Result) Err() error {
	if r.Violation == nil {
		return nil
	}
	return r.Violation
}

// WriteTimeline writes the run as text, width columns wide (at least 20):
// one lane per elector (L while its observers say it leads, F otherwise,
// blank while down), the terms, the store's changes of holder, the faults
// and the verdict.
func (r *Result) WriteTimeline(w io.Writer, width int) error {
	if r.tl == nil {
		return sim.ErrNotRecorded
	}
	if width < 20 {
		return fmt.Errorf("sim: timeline width %d, must be at least 20", width)
	}
	return r.tl.WriteText(w, width)
}

// WriteSVG writes the run as an SVG timeline.
func (r *Result) WriteSVG(w io.Writer) error {
	if r.tl == nil {
		return sim.ErrNotRecorded
	}
	return r.tl.WriteSVG(w)
}

// WriteHTML writes the run as a self-contained HTML page with an SVG
// picture: a lane per elector, the faults, the store's writes (accepted
// and conflicting) and the verdict marked at its instant.
func (r *Result) WriteHTML(w io.Writer) error {
	if r.tl == nil {
		return sim.ErrNotRecorded
	}
	return picture.Write(w, r.tl)
}
