package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/sim"
	"github.com/tenure-go/tenure/sim/realtime"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/memstore"
)

// simUsage is printed by "tenure sim -h".
const simUsage = `usage: tenure sim [flags]

Runs Tenure's state machine on simulated nodes against a simulated store, in
virtual time, with faults drawn from the seed (model mode), and checks after
every event that at most one node believes it leads, that tokens and fenced
writes only go forward, that nobody reads an older record, that only legal
transitions happen, and that a leader appears within the liveness bound
once faults heal. The same seeds and flags give the same output, byte for
byte. It exits 1 when a check fails for any seed.

One seed (-seeds 7) prints a text timeline: one lane per node (F follower,
C candidate, L leader, E expiring), the terms and tokens, the store's
changes of holder, the faults and the verdict. Several seeds (-seeds
1-10000, or a list such as 1-100,200,300-310) print one line per failing
seed with the command that replays it, and a summary. -json prints one
JSON object per seed ("type":"seed") and a summary ("type":"summary").

-html out.html draws one run as a self-contained HTML page (an SVG with a
lane per node: its follower, candidate, leader and expiring spans, each
term's token, the faults where they hit, the store's accepted and
conflicting writes, and the verdict marked at its instant, the leader
spans that overlap at a violation outlined in red; nothing is fetched).
The run drawn is the seed given; with several seeds, the first seed that
fails, or the last seed when every seed passes.

Faults. With no fault flag the default set runs: -drift -crash -pause
-partition -loss -slow -release. Naming any fault flag runs exactly the
faults named. -calm runs none. Not in the default set: -reconfigure (live
changes of timings), -watch-chaos (watch events beyond the store contract),
-mute-watch (watches that silently stop delivering), -dataloss (the store loses the record; implies -lossy),
-dataswap (the dataset swapped for an older copy; implies -lossy), -resend (a loss after which a resent call
makes the create gate's marker anew; needs -gate), -clock-stop (a
process and its clock stopped together, as a paused VM or a suspend does,
the stop revealed on resume), -clock-stop-hidden (such stops that nothing
reveals: expect two leaders, fencing refuses the stale writes) and
-drift-beyond (drift past what the timings tolerate: expect two leaders).

Timings come from lease.DefaultConfig, then the TENURE_* environment
variables as the library reads them for the election -name (for example
TENURE_LEASE_DURATION=6s or TENURE_SIM_LEASE_DURATION=6s), then the timing
flags.

Runtime mode (-runtime) runs the real lead.Electors (Run, a Lead body and
an Every body writing through a fence.Register, the observers, the
watchdog) on memstore, each behind a fault-injecting store wrapper, with
the same faults and checks as "go test" with sim/simtest, but in real time
on a scaled clock: -speed 10 (the default) makes one real second ten
seconds of the electors' time, so a seed of -duration 3m (the runtime
default, with -nodes 3) takes 18 s; -parallel seeds run at once. It honours
-seeds, -json, the fault flags, the TENURE_* timings, the timing and
latency flags, -no-watch, -svg, -html, -trace and -width; -lossy and -gate are
model-only (memstore never loses a record; -dataloss deletes it).
Runtime mode is NOT reproducible byte for byte: the seed fixes the fault
schedule and every random draw, but the Go scheduler decides when each
goroutine runs, and a delay of 10ms is 0.1s of the electors' time. The
checks that two electors lead at once, that tokens and fenced writes go
forward, report only what the reads prove; the checks of timely
notification (observers, bodies' contexts) and the liveness bound allow a
tolerance of 2×100ms plus 4× the largest scheduling delay measured in the
run, printed with each verdict. For a reproducible run use go test with
sim/simtest (simtest.Check, or the command each failing seed prints).

Examples:
  tenure sim -seeds 7
  tenure sim -seeds 1-10000                            # a sweep, failures only
  tenure sim -seeds 1-500 -json | jq 'select(.ok == false)'
  tenure sim -seeds 7 -nodes 3 -duration 2m -crash -pause -svg run.svg
  tenure sim -seeds 1-200 -clock-stop-hidden -html run.html # draws the first failing seed
  tenure sim -seeds 3 -drift-beyond -crash -partition  # drift past the bound: two leaders
  tenure sim -seeds 1-200 -lossy -dataloss -reconfigure
  TENURE_LEASE_DURATION=6s TENURE_RENEW_DEADLINE=4s tenure sim -seeds 1 -calm
  tenure sim -seeds 9 -trace | less                    # every event
  tenure sim -runtime -seeds 1-20                      # real electors on memstore, in real time
  tenure sim -runtime -seeds 4 -crash -partition -trace # one seed, every event

Flags:
`

// simFlags holds the parsed flags of "tenure sim".
type simFlags struct {
	fs       *flag.FlagSet
	seeds    sim.Seeds
	opt      sim.Options
	width    int
	svg      string
	html     string // the picture's file: of the first failing seed, or the last
	trace    bool
	jsonOut  bool
	verbose  bool
	single   bool
	runtime  bool
	parallel int                        // runtime mode: seeds at once
	rtOpt    realtime.Options[struct{}] // runtime mode: the options, with defaults
	replayed []string                   // the flags that shape a run, to print replay commands
}

// faultFlagNames are the flags that switch a fault on.
var faultFlagNames = sim.FaultNames()

func parseSimFlags(args []string, stderr io.Writer) (*simFlags, error) {
	a := &simArgs{}
	fs := a.define(stderr)
	p, err := parseArgs(fs, args, -1)
	if err != nil {
		return nil, err
	}
	if extra := append(p.positional, p.rest...); len(extra) > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", extra)
	}
	a.set = map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { a.set[fl.Name] = true })
	if err := a.contradictions(); err != nil {
		return nil, err
	}
	if len(a.namedFaults()) == 0 && !a.calm {
		a.faults = sim.DefaultFaults()
	}
	seeds, err := a.parseSeeds()
	if err != nil {
		return nil, err
	}
	cfg, err := a.config()
	if err != nil {
		return nil, err
	}
	sf := a.simFlags(fs, seeds, cfg)
	if sf.runtime {
		if err := a.runtimeOptions(sf); err != nil {
			return nil, err
		}
		return sf, nil
	}
	// Check the options once, before any seed runs.
	if _, err := sim.New(sf.opt); err != nil {
		return nil, err
	}
	return sf, nil
}

// simArgs are the flags of "tenure sim" as given, and which were set.
type simArgs struct {
	seedList, name, svg, html              string
	seed                                   uint64
	runtime, jsonOut, verbose, trace, calm bool
	lossy, gate, noWatch                   bool
	speed, parallel, nodes, width          int
	duration, latMin, latMax, latTailMax   time.Duration
	latTail, rho, beyond                   float64
	faults                                 sim.Faults
	cfg                                    lease.Config    // the timing flags
	set                                    map[string]bool // the flags given
}

// define makes the flag set of "tenure sim", parsing into a.
func (a *simArgs) define(stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&a.seedList, "seeds", "", "seeds to run: one (7), a range (1-10000) or a list (1-100,200,300-310) (default 1)")
	fs.Uint64Var(&a.seed, "seed", 0, "one seed to run (the same as -seeds N)")
	fs.BoolVar(&a.runtime, "runtime", false, "runtime mode: the real lead.Electors on memstore, in real time scaled by -speed (not byte-reproducible)")
	fs.IntVar(&a.speed, "speed", realtime.DefaultSpeed, "runtime mode: seconds of the electors' time per real second")
	fs.IntVar(&a.parallel, "parallel", 0, "runtime mode: seeds run at once (default 8×GOMAXPROCS: a seed mostly waits, about 1% of a core)")
	fs.BoolVar(&a.jsonOut, "json", false, "print one JSON verdict object per seed and a summary object")
	fs.BoolVar(&a.verbose, "v", false, "with several seeds, print a line for every seed, not only the failing ones")
	fs.StringVar(&a.name, "name", "sim", "election name whose TENURE_<NAME>_* variables are read (after the shared TENURE_*)")
	fs.IntVar(&a.nodes, "nodes", 5, "number of nodes (runtime mode: default 3)")
	fs.DurationVar(&a.duration, "duration", 10*time.Minute, "simulated real time (runtime mode: default 3m)")
	fs.IntVar(&a.width, "width", 100, "columns of the text timeline")
	fs.StringVar(&a.svg, "svg", "", "also write an SVG timeline to this file (one seed only)")
	fs.StringVar(&a.html, "html", "", "also draw a run as an HTML page in this file: the seed given, or of several the first failing seed, or the last when all pass")
	fs.BoolVar(&a.trace, "trace", false, "write every event before the timeline (one seed only)")
	fs.BoolVar(&a.calm, "calm", false, "no faults at all (excludes every fault flag)")
	fs.BoolVar(&a.lossy, "lossy", false, "the store may lose records (as Redis without persistence); nodes run as lead does on a store.Lossy store")
	fs.BoolVar(&a.gate, "gate", false, "the store vouches for creates with a dataset marker, as redisstore does (sim.StoreModel.CreateGate; implies -lossy)")
	fs.BoolVar(&a.noWatch, "no-watch", false, "the store pushes no watch events: nodes only poll")
	fs.DurationVar(&a.latMin, "latency-min", time.Millisecond, "least one-way store latency")
	fs.DurationVar(&a.latMax, "latency-max", 20*time.Millisecond, "largest one-way store latency (outside the tail)")
	fs.Float64Var(&a.latTail, "latency-tail", 0, "probability of a message in the latency tail")
	fs.DurationVar(&a.latTailMax, "latency-tail-max", 0, "largest one-way latency in the tail")
	fs.Float64Var(&a.rho, "rho", 0.05, "clock drift bound of -drift")
	fs.Float64Var(&a.beyond, "beyond-rho", 0.4, "clock drift of -drift-beyond")
	a.defineFaults(fs)
	a.defineTimings(fs)
	fs.Usage = func() {
		fmt.Fprint(stderr, simUsage)
		fs.PrintDefaults()
	}
	return fs
}

// defineFaults defines the flags that switch a fault on.
func (a *simArgs) defineFaults(fs *flag.FlagSet) {
	f := &a.faults
	fs.BoolVar(&f.Drift, "drift", false, "clock rates drift within ±rho")
	fs.BoolVar(&f.DriftBeyond, "drift-beyond", false, "clock rates drift by ±beyond-rho, past what the timings tolerate")
	fs.BoolVar(&f.Crash, "crash", false, "crash and restart nodes (same identity or a new one)")
	fs.BoolVar(&f.Pause, "pause", false, "pause processes for up to 3 leases")
	fs.BoolVar(&f.Partition, "partition", false, "cut a node's requests and/or responses")
	fs.BoolVar(&f.Loss, "loss", false, "lose requests and responses at random for a while")
	fs.BoolVar(&f.Slow, "slow", false, "slow store: latency beyond BackendTimeout for a while")
	fs.BoolVar(&f.WatchChaos, "watch-chaos", false, "delay, duplicate and reorder watch events (beyond the store contract)")
	fs.BoolVar(&f.DataLoss, "dataloss", false, "the store loses the record (implies -lossy)")
	fs.BoolVar(&f.DataSwap, "dataswap", false, "the dataset is swapped for a copy taken before the last create, marker included (implies -lossy)")
	fs.BoolVar(&f.Resend, "resend", false, "the store loses the record and a resent call makes the create gate's marker anew (needs -gate)")
	fs.BoolVar(&f.Release, "release", false, "stop nodes gracefully (release) and start them again")
	fs.BoolVar(&f.Reconfigure, "reconfigure", false, "give nodes other valid timings (opt-in)")
	fs.BoolVar(&f.MuteWatch, "mute-watch", false, "watches silently stop delivering for a while (one node's or all)")
	fs.BoolVar(&f.ClockStop, "clock-stop", false, "stop a process and its clock together for up to 3 leases (a paused VM, a suspend), revealed on resume (model mode)")
	fs.BoolVar(&f.ClockStopHidden, "clock-stop-hidden", false, "clock stops that nothing reveals: only fencing covers them, expect two leaders (model mode)")
}

// defineTimings defines the flags that override the lease timings.
func (a *simArgs) defineTimings(fs *flag.FlagSet) {
	def := lease.DefaultConfig()
	fs.DurationVar(&a.cfg.LeaseDuration, "lease", def.LeaseDuration, "LeaseDuration (overrides TENURE_*)")
	fs.DurationVar(&a.cfg.RenewDeadline, "renew", def.RenewDeadline, "RenewDeadline (overrides TENURE_*)")
	fs.DurationVar(&a.cfg.RetryInterval, "retry", def.RetryInterval, "RetryInterval (overrides TENURE_*)")
	fs.Float64Var(&a.cfg.RetryJitter, "jitter", def.RetryJitter, "RetryJitter (overrides TENURE_*)")
	fs.DurationVar(&a.cfg.BackendTimeout, "backend-timeout", def.BackendTimeout, "BackendTimeout (overrides TENURE_*)")
	// The names of tenure run's timing flags, for the same fields.
	fs.DurationVar(&a.cfg.LeaseDuration, "lease-duration", def.LeaseDuration, "the same as -lease")
	fs.DurationVar(&a.cfg.RenewDeadline, "renew-deadline", def.RenewDeadline, "the same as -renew")
	fs.DurationVar(&a.cfg.RetryInterval, "retry-interval", def.RetryInterval, "the same as -retry")
}

// simTimingFlags are the timing flags of tenure sim for each lease.Config
// field, by both their names.
var simTimingFlags = map[string][]string{
	"LeaseDuration":  {"lease", "lease-duration"},
	"RenewDeadline":  {"renew", "renew-deadline"},
	"RetryInterval":  {"retry", "retry-interval"},
	"RetryJitter":    {"jitter"},
	"BackendTimeout": {"backend-timeout"},
}

// timingFlag returns the flag that set field, as "-name", or "" when none
// did.
func (a *simArgs) timingFlag(field string) string {
	for _, name := range simTimingFlags[field] {
		if a.set[name] {
			return "-" + name
		}
	}
	return ""
}

// namedFaults returns the fault flags given, as -name.
func (a *simArgs) namedFaults() []string {
	var named []string
	for _, n := range faultFlagNames {
		if a.set[n] {
			named = append(named, "-"+n)
		}
	}
	return named
}

// contradictions returns an error for flags that exclude each other, or
// that are out of range.
func (a *simArgs) contradictions() error {
	set, f, named := a.set, a.faults, a.namedFaults()
	switch {
	case set["seed"] && set["seeds"]:
		return errors.New("-seed and -seeds exclude each other (use -seeds)")
	case a.calm && len(named) > 0:
		return fmt.Errorf("-calm runs no fault, but %s named some", strings.Join(named, " "))
	case f.Drift && f.DriftBeyond:
		return errors.New("-drift and -drift-beyond exclude each other")
	case f.DataLoss && set["lossy"] && !a.lossy:
		return errors.New("-dataloss needs a store that may lose records, but -lossy=false says it never does")
	case set["rho"] && !f.Drift && !(len(named) == 0 && !a.calm):
		return errors.New("-rho is the bound of -drift, which is off")
	case set["beyond-rho"] && !f.DriftBeyond:
		return errors.New("-beyond-rho is the drift of -drift-beyond, which is off")
	case (set["latency-tail"] || set["latency-tail-max"]) && !(a.latTail > 0 && a.latTailMax > 0):
		return errors.New("-latency-tail and -latency-tail-max go together, both above zero")
	case a.jsonOut && a.trace:
		return errors.New("-json and -trace exclude each other")
	case a.width < 20:
		return fmt.Errorf("-width is %d, must be at least 20", a.width)
	case !a.runtime && (set["speed"] || set["parallel"]):
		return errors.New("-speed and -parallel are for runtime mode (-runtime)")
	case a.gate && set["lossy"] && !a.lossy:
		return errors.New("-gate models a store that may lose records, but -lossy=false says it never does")
	case a.runtime && (f.ClockStop || f.ClockStopHidden):
		return errors.New("-clock-stop and -clock-stop-hidden are for model mode: runtime mode's electors run on clocks that do not stop")
	case a.runtime && a.gate:
		return errors.New("-gate is for model mode: runtime mode runs memstore, which keeps no marker")
	case a.runtime && set["lossy"]:
		return errors.New("-lossy is for model mode: runtime mode runs memstore, which never loses a record (-dataloss deletes it)")
	case a.runtime && (a.speed < 1 || a.speed > realtime.MaxSpeed):
		return fmt.Errorf("-speed is %d, must lie in [1, %d]", a.speed, realtime.MaxSpeed)
	case a.runtime && set["parallel"] && a.parallel < 1:
		return fmt.Errorf("-parallel is %d, must be at least 1", a.parallel)
	}
	return nil
}

// parseSeeds returns the seeds of -seeds or -seed (default 1).
func (a *simArgs) parseSeeds() (sim.Seeds, error) {
	spec := "1"
	switch {
	case a.set["seeds"]:
		spec = a.seedList
	case a.set["seed"]:
		spec = fmt.Sprint(a.seed)
	}
	seeds, err := sim.ParseSeeds(spec)
	if err != nil {
		return seeds, fmt.Errorf("-seeds: %w", err)
	}
	if seeds.Len() != 1 && (a.svg != "" || a.trace) {
		return seeds, errors.New("-svg and -trace need a single seed")
	}
	return seeds, nil
}

// config returns the timings: defaults, then TENURE_* as lead.New reads
// them, then flags.
func (a *simArgs) config() (lease.Config, error) {
	env, err := lease.Load(a.name, lease.DefaultConfig(), os.LookupEnv)
	if err != nil {
		return lease.Config{}, err
	}
	cfg := env.Config
	for field, apply := range map[string]func(){
		"LeaseDuration":  func() { cfg.LeaseDuration = a.cfg.LeaseDuration },
		"RenewDeadline":  func() { cfg.RenewDeadline = a.cfg.RenewDeadline },
		"RetryInterval":  func() { cfg.RetryInterval = a.cfg.RetryInterval },
		"RetryJitter":    func() { cfg.RetryJitter = a.cfg.RetryJitter },
		"BackendTimeout": func() { cfg.BackendTimeout = a.cfg.BackendTimeout },
	} {
		if a.timingFlag(field) != "" {
			apply()
		}
	}
	if err := cfg.Validate(); err != nil {
		return lease.Config{}, fmt.Errorf("%w (%s)", err, configSources(a.name, cfg, err.Error(), os.LookupEnv, a.timingFlag))
	}
	return cfg, nil
}

// simFlags returns what parseSimFlags returns but for runtime mode's
// options. Runtime mode has its own defaults for -nodes and -duration.
func (a *simArgs) simFlags(fs *flag.FlagSet, seeds sim.Seeds, cfg lease.Config) *simFlags {
	nodes, duration := a.nodes, a.duration
	if a.runtime {
		if !a.set["nodes"] {
			nodes = 3
		}
		if !a.set["duration"] {
			duration = 3 * time.Minute
		}
	}
	return &simFlags{
		fs: fs, seeds: seeds, width: a.width, svg: a.svg, html: a.html, trace: a.trace,
		jsonOut: a.jsonOut, verbose: a.verbose, single: seeds.Len() == 1,
		runtime: a.runtime, parallel: a.parallel,
		opt: sim.Options{
			Nodes: nodes, Duration: duration, Config: cfg, Faults: a.faults,
			Rho: a.rho, BeyondRho: a.beyond,
			Store: sim.StoreModel{
				MayLoseRecords: a.lossy || a.faults.DataLoss || a.faults.DataSwap || a.gate,
				CreateGate:     a.gate,
				NoWatch:        a.noWatch,
				Latency:        sim.Latency{Min: a.latMin, Max: a.latMax, Tail: a.latTail, TailMax: a.latTailMax},
			},
		},
		replayed: replayedFlags(fs),
	}
}

// replayedFlags returns the flags that shape a run, for replay commands.
func replayedFlags(fs *flag.FlagSet) []string {
	var replayed []string
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "seeds", "seed", "json", "v", "svg", "html", "trace", "width":
			return
		}
		replayed = append(replayed, fmt.Sprintf("-%s=%s", fl.Name, fl.Value))
	})
	return replayed
}

// runtimeOptions sets runtime mode's options (and -parallel's default) in
// sf, and checks them.
func (a *simArgs) runtimeOptions(sf *simFlags) error {
	if sf.parallel == 0 {
		sf.parallel = 8 * runtime.GOMAXPROCS(0)
	}
	o := sf.opt
	noWatch := o.Store.NoWatch
	sf.rtOpt = realtime.Options[struct{}]{
		Nodes: o.Nodes, Duration: o.Duration, Name: a.name, Config: o.Config,
		Latency: o.Store.Latency, Faults: o.Faults, Rho: o.Rho, BeyondRho: o.BeyondRho,
		Speed: a.speed,
		NewStore: func() store.Store[struct{}] {
			if noWatch {
				return watchlessStore{memstore.New[struct{}]()}
			}
			return memstore.New[struct{}]()
		},
	}.WithDefaults()
	if err := sf.rtOpt.Validate(); err != nil {
		return fmt.Errorf("runtime mode: %w", err)
	}
	return nil
}

// watchlessStore is memstore without Watch (-no-watch in runtime mode):
// the electors only poll. Delete stays, for -dataloss.
type watchlessStore struct{ s *memstore.Store[struct{}] }

// Get reads the record.
func (w watchlessStore) Get(ctx context.Context, name string) (lease.Record[struct{}], lease.Revision, error) {
	return w.s.Get(ctx, name)
}

// CompareAndSwap writes the record.
func (w watchlessStore) CompareAndSwap(ctx context.Context, name string, exp lease.Revision, next lease.Record[struct{}]) (lease.Record[struct{}], lease.Revision, error) {
	return w.s.CompareAndSwap(ctx, name, exp, next)
}

// Delete loses the record (-dataloss).
func (w watchlessStore) Delete(name string) { w.s.Delete(name) }

// seedVerdict is the JSON object printed for each seed.
type seedVerdict struct {
	Type          string         `json:"type"`
	Seed          uint64         `json:"seed"`
	OK            bool           `json:"ok"`
	Events        uint64         `json:"events"`
	Terms         int            `json:"terms"`
	FenceAccepted int            `json:"fence_accepted"`
	FenceRejected int            `json:"fence_rejected"`
	Violation     *jsonViolation `json:"violation,omitempty"`
	// Runtime mode only.
	StoreOps       int     `json:"store_ops,omitempty"`
	ElectorSeconds float64 `json:"elector_seconds,omitempty"`
	LagNS          int64   `json:"scheduling_delay_ns,omitempty"`
	ToleranceNS    int64   `json:"tolerance_ns,omitempty"`
}

type jsonViolation struct {
	Check string `json:"check"`
	At    string `json:"at"`
	AtNS  int64  `json:"at_ns"`
	Msg   string `json:"msg"`
}

// jsonConfig is a lease.Config with durations as Go writes them.
type jsonConfig struct {
	LeaseDuration  string  `json:"lease_duration"`
	RenewDeadline  string  `json:"renew_deadline"`
	RetryInterval  string  `json:"retry_interval"`
	RetryJitter    float64 `json:"retry_jitter"`
	BackendTimeout string  `json:"backend_timeout"`
}

func configJSON(c lease.Config) jsonConfig {
	return jsonConfig{c.LeaseDuration.String(), c.RenewDeadline.String(), c.RetryInterval.String(), c.RetryJitter, c.BackendTimeout.String()}
}

// summaryVerdict is the JSON object printed after every seed.
type summaryVerdict struct {
	Type        string     `json:"type"`
	Mode        string     `json:"mode,omitempty"` // "runtime", or empty (model mode)
	OK          bool       `json:"ok"`
	Seeds       uint64     `json:"seeds"`
	Failed      int        `json:"failed"`
	FailedSeeds []uint64   `json:"failed_seeds"`
	Events      uint64     `json:"events"`
	Nodes       int        `json:"nodes"`
	Duration    string     `json:"duration"`
	Faults      string     `json:"faults"`
	Lossy       bool       `json:"lossy_store"`
	Watch       bool       `json:"watch"`
	Config      jsonConfig `json:"config"`
	Interrupted bool       `json:"interrupted,omitempty"`
	// Runtime mode only.
	Speed          int     `json:"speed,omitempty"`
	ElectorSeconds float64 `json:"elector_seconds,omitempty"`
	ElapsedSeconds float64 `json:"elapsed_seconds,omitempty"`
	MaxLagNS       int64   `json:"max_scheduling_delay_ns,omitempty"`
}

func runSim(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	// The simulator reads the TENURE_* timings as lead.New does, and warns
	// as it does about the variables it does not read.
	warnUnknownEnv(stderr, "tenure sim", os.Environ())
	sf, err := parseSimFlags(args, stderr)
	if err != nil {
		return err
	}
	if sf.runtime {
		return runRuntime(ctx, sf, stdout)
	}
	if sf.single && !sf.jsonOut {
		return runOneSeed(sf, stdout)
	}
	return runSeeds(ctx, sf, stdout)
}

// runOneSeed prints one seed's timeline (and trace, SVG).
func runOneSeed(sf *simFlags, stdout io.Writer) error {
	o := sf.opt
	for seed := range sf.seeds.All() {
		o.Seed = seed
	}
	o.Record = true
	if sf.trace {
		o.Trace = stdout
	}
	s, err := sim.New(o)
	if err != nil {
		return err
	}
	res := s.Run()
	if err := s.WriteTimeline(stdout, sf.width); err != nil {
		return err
	}
	if err := writeSVG(s, sf.svg); err != nil {
		return err
	}
	if sf.html != "" {
		if err := writeFile(sf.html, s.WriteHTML); err != nil {
			return err
		}
	}
	if res.Violation != nil {
		return exitCode(1)
	}
	return nil
}

// drawSeed runs seed again, recorded, and writes its picture to -html.
func drawSeed(sf *simFlags, seed uint64) error {
	o := sf.opt
	o.Seed, o.Record = seed, true
	c, err := sim.New(o)
	if err != nil {
		return err
	}
	c.Run()
	return writeFile(sf.html, c.WriteHTML)
}

func writeSVG(s *sim.Cluster, path string) error {
	if path == "" {
		return nil
	}
	return writeFile(path, s.WriteSVG)
}

// writeFile creates path and writes it with write.
func writeFile(path string, write func(io.Writer) error) error {
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	err = write(out)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// sweepOrdered runs run for every seed on workers goroutines and calls emit
// with the results in seed order, on the calling goroutine. It starts no
// seed once ctx has ended, and reports how many seeds it emitted.
func sweepOrdered[T any](ctx context.Context, seeds sim.Seeds, workers int, run func(seed uint64) T, emit func(T)) uint64 {
	type job struct{ i, seed uint64 }
	type done struct {
		i uint64
		v T
	}
	jobs, results := make(chan job), make(chan done)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for j := range jobs {
				results <- done{j.i, run(j.seed)}
			}
		})
	}
	go func() {
		defer close(jobs)
		var i uint64
		for seed := range seeds.All() {
			select {
			case jobs <- job{i, seed}:
				i++
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(results) }()
	pending := map[uint64]T{}
	var next uint64
	for d := range results {
		pending[d.i] = d.v
		for {
			v, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			next++
			emit(v)
		}
	}
	return next
}

// runSeeds runs every seed on GOMAXPROCS goroutines and prints the
// verdicts in seed order.
func runSeeds(ctx context.Context, sf *simFlags, stdout io.Writer) error {
	type done struct {
		res sim.Result
		c   *sim.Cluster
	}
	run := func(seed uint64) done {
		o := sf.opt
		o.Seed, o.Record = seed, sf.svg != ""
		c, err := sim.New(o)
		if err != nil {
			panic(err) // validated by parseSimFlags
		}
		d := done{res: c.Run()}
		if o.Record {
			d.c = c // for the SVG
		}
		return d
	}
	sum := summaryVerdict{Type: "summary", FailedSeeds: []uint64{}, Nodes: sf.opt.Nodes, Duration: sf.opt.Duration.String(),
		Faults: sf.opt.Faults.String(), Lossy: sf.opt.Store.MayLoseRecords, Watch: !sf.opt.Store.NoWatch, Config: configJSON(sf.opt.Config)}
	enc := json.NewEncoder(stdout)
	var (
		werr   error
		drawn  uint64 // the seed -html draws: the first failing, or the last
		failed bool
	)
	emit := func(d done) {
		r := d.res
		if !failed {
			drawn, failed = r.Seed, r.Violation != nil
		}
		sum.Seeds++
		sum.Events += r.Events
		if r.Violation != nil {
			sum.Failed++
			sum.FailedSeeds = append(sum.FailedSeeds, r.Seed)
		}
		if sf.jsonOut {
			v := seedVerdict{Type: "seed", Seed: r.Seed, OK: r.Violation == nil, Events: r.Events, Terms: r.Terms,
				FenceAccepted: r.FenceAccepted, FenceRejected: r.FenceRejected, Violation: violationJSON(r.Violation)}
			if err := enc.Encode(v); err != nil && werr == nil {
				werr = err
			}
			if d.c != nil {
				if err := writeSVG(d.c, sf.svg); err != nil && werr == nil {
					werr = err
				}
			}
			return
		}
		switch {
		case r.Violation != nil:
			fmt.Fprintf(stdout, "seed %d: VIOLATION %v\n  replay: tenure sim -seeds %d%s\n", r.Seed, r.Violation, r.Seed, sf.replayArgs())
		case sf.verbose:
			fmt.Fprintf(stdout, "seed %d: ok (%d events, %d terms, %d fenced writes accepted, %d refused)\n",
				r.Seed, r.Events, r.Terms, r.FenceAccepted, r.FenceRejected)
		}
	}
	sweepOrdered(ctx, sf.seeds, runtime.GOMAXPROCS(0), run, emit)
	sum.Interrupted = ctx.Err() != nil && sum.Seeds < sf.seeds.Len()
	sum.OK = sum.Failed == 0 && !sum.Interrupted
	if sf.html != "" && sum.Seeds > 0 {
		if err := drawSeed(sf, drawn); err != nil && werr == nil {
			werr = err
		}
	}
	if sf.jsonOut {
		if err := enc.Encode(sum); err != nil && werr == nil {
			werr = err
		}
	} else {
		fmt.Fprintf(stdout, "tenure sim: %d seeds (%d nodes, %v each, faults %s, lossy store %v, watch %v): %s\n",
			sum.Seeds, sum.Nodes, sf.opt.Duration, sum.Faults, sum.Lossy, sum.Watch, sum.verdict(sf.seeds.Len()))
	}
	if werr != nil {
		return werr
	}
	if !sum.OK {
		return exitCode(1)
	}
	return nil
}

// verdict is the end of the summary line.
func (sum *summaryVerdict) verdict(total uint64) string {
	v := "every check held"
	if sum.Failed > 0 {
		v = fmt.Sprintf("%d failed (seeds %v)", sum.Failed, sum.FailedSeeds)
	}
	if sum.Interrupted {
		v += fmt.Sprintf("; interrupted after %d of %d seeds", sum.Seeds, total)
	}
	return v
}

func violationJSON(v *sim.Violation) *jsonViolation {
	if v == nil {
		return nil
	}
	return &jsonViolation{Check: v.Check, At: v.At.String(), AtNS: int64(v.At), Msg: v.Msg}
}

// runRuntime runs runtime mode in real time: one seed with its timeline,
// or a sweep of seeds, -parallel at once.
func runRuntime(ctx context.Context, sf *simFlags, stdout io.Writer) error {
	s := newRuntimeSweep(sf, stdout)
	start := time.Now()
	sweepOrdered(ctx, sf.seeds, sf.parallel, func(seed uint64) runtimeDone { return s.run(ctx, seed) }, s.emit)
	return s.finish(ctx, time.Since(start))
}

// runtimeDone is the outcome of one seed of runtime mode.
type runtimeDone struct {
	res realtime.Result
	err error
}

// runtimeSweep is the state of runRuntime: the summary so far, and the
// first error met writing the output.
type runtimeSweep struct {
	sf          *simFlags
	stdout      io.Writer
	enc         *json.Encoder
	traceMu     sync.Mutex // the trace lines of seeds that run at once
	sum         summaryVerdict
	electorTime time.Duration
	werr        error
	drawn       *realtime.Result // the run -html draws: the first failing, or the last
}

func newRuntimeSweep(sf *simFlags, stdout io.Writer) *runtimeSweep {
	o := sf.rtOpt
	return &runtimeSweep{
		sf: sf, stdout: stdout, enc: json.NewEncoder(stdout),
		sum: summaryVerdict{Type: "summary", Mode: "runtime", FailedSeeds: []uint64{}, Nodes: o.Nodes, Duration: o.Duration.String(),
			Faults: o.Faults.String(), Watch: !sf.opt.Store.NoWatch, Config: configJSON(o.Config), Speed: o.Speed},
	}
}

// keep records err if it is the first error.
func (s *runtimeSweep) keep(err error) {
	if err != nil && s.werr == nil {
		s.werr = err
	}
}

// run runs one seed (on a goroutine of sweepOrdered).
func (s *runtimeSweep) run(ctx context.Context, seed uint64) runtimeDone {
	o := s.sf.rtOpt
	o.Seed = seed
	if s.sf.trace {
		o.Trace = lockedWriter{&s.traceMu, s.stdout}
	}
	res, err := realtime.Run(ctx, o)
	return runtimeDone{res, err}
}

// emit counts a seed's result and prints it (on sweepOrdered's caller's
// goroutine, in seed order).
func (s *runtimeSweep) emit(d runtimeDone) {
	if errors.Is(d.err, realtime.ErrInterrupted) {
		return // not counted: the seed did not run to its end
	}
	if d.err != nil {
		s.keep(d.err)
		return
	}
	r := d.res
	s.count(r)
	s.print(r)
	if s.sf.svg != "" {
		s.keep(writeFile(s.sf.svg, r.WriteSVG))
	}
	if s.drawn == nil || s.drawn.Violation == nil {
		s.drawn = &r
	}
}

// count adds a seed's result to the summary.
func (s *runtimeSweep) count(r realtime.Result) {
	s.sum.Seeds++
	s.electorTime += r.ElectorTime
	s.sum.MaxLagNS = max(s.sum.MaxLagNS, int64(r.Lag))
	if r.Violation != nil {
		s.sum.Failed++
		s.sum.FailedSeeds = append(s.sum.FailedSeeds, r.Seed)
	}
}

// print prints a seed's result: its JSON verdict, its timeline (a single
// seed), its violation, or (with -v) a line saying it held.
func (s *runtimeSweep) print(r realtime.Result) {
	sf, stdout := s.sf, s.stdout
	switch {
	case sf.jsonOut:
		s.keep(s.enc.Encode(seedVerdict{Type: "seed", Seed: r.Seed, OK: r.Violation == nil, Terms: r.Terms,
			FenceAccepted: r.FenceAccepted, FenceRejected: r.FenceRejected, Violation: violationJSON(r.Violation),
			StoreOps: r.StoreOps, ElectorSeconds: r.ElectorTime.Seconds(), LagNS: int64(r.Lag), ToleranceNS: int64(r.Tolerance)}))
	case sf.single:
		s.keep(r.WriteTimeline(stdout, sf.width))
		fmt.Fprintf(stdout, "real time at speed %d: largest scheduling delay %v, tolerance %v (not byte-reproducible; reproducible in virtual time: %s)\n",
			sf.rtOpt.Speed, r.Lag.Round(time.Millisecond), r.Tolerance.Round(time.Millisecond), sf.goTestReplay(r.Seed))
	case r.Violation != nil:
		fmt.Fprintf(stdout, "seed %d: VIOLATION %v\n  replay: tenure sim -seeds %d%s\n  in virtual time: %s\n",
			r.Seed, r.Violation, r.Seed, sf.replayArgs(), sf.goTestReplay(r.Seed))
	case sf.verbose:
		fmt.Fprintf(stdout, "seed %d: ok (%d terms, %d store operations, %d fenced writes accepted, %d refused; scheduling delay %v)\n",
			r.Seed, r.Terms, r.StoreOps, r.FenceAccepted, r.FenceRejected, r.Lag.Round(time.Millisecond))
	}
}

// finish prints the summary (a JSON object, or a line unless a single seed
// ran to its end) and returns what the command exits with.
func (s *runtimeSweep) finish(ctx context.Context, elapsed time.Duration) error {
	sf, sum := s.sf, &s.sum
	sum.ElectorSeconds = s.electorTime.Seconds()
	sum.ElapsedSeconds = elapsed.Seconds()
	sum.Interrupted = ctx.Err() != nil && sum.Seeds < sf.seeds.Len()
	if sf.html != "" && s.drawn != nil {
		s.keep(writeFile(sf.html, s.drawn.WriteHTML))
	}
	sum.OK = sum.Failed == 0 && !sum.Interrupted && s.werr == nil
	if sf.jsonOut {
		s.keep(s.enc.Encode(sum))
	} else if !sf.single || sum.Interrupted {
		fmt.Fprintf(s.stdout, "tenure sim -runtime: %d seeds (%d electors on memstore, %v each, faults %s, watch %v, speed %d): %s; "+
			"%.0f elector-seconds in %v (%.0f/s), largest scheduling delay %v\n",
			sum.Seeds, sum.Nodes, sf.rtOpt.Duration, sum.Faults, sum.Watch, sf.rtOpt.Speed, sum.verdict(sf.seeds.Len()),
			sum.ElectorSeconds, elapsed.Round(time.Millisecond), sum.ElectorSeconds/max(elapsed.Seconds(), 1e-9),
			time.Duration(sum.MaxLagNS).Round(time.Millisecond))
	}
	if s.werr != nil {
		return s.werr
	}
	if !sum.OK {
		return exitCode(1)
	}
	return nil
}

// goTestReplay is the go test command that runs a seed of runtime mode
// reproducibly, in virtual time: the library's own sweep, with this run's
// faults and timings (3 electors, 3 minutes, memstore; another shape is a
// simtest.Check call of your own).
func (sf *simFlags) goTestReplay(seed uint64) string {
	var env strings.Builder
	c, def := sf.rtOpt.Config, lease.DefaultConfig()
	for _, v := range []struct {
		key       string
		val, dflt any
	}{
		{"LEASE_DURATION", c.LeaseDuration, def.LeaseDuration},
		{"RENEW_DEADLINE", c.RenewDeadline, def.RenewDeadline},
		{"RETRY_INTERVAL", c.RetryInterval, def.RetryInterval},
		{"RETRY_JITTER", c.RetryJitter, def.RetryJitter},
		{"BACKEND_TIMEOUT", c.BackendTimeout, def.BackendTimeout},
	} {
		if v.val != v.dflt {
			fmt.Fprintf(&env, "TENURE_%s=%v ", v.key, v.val)
		}
	}
	cmd := fmt.Sprintf("%sTENURE_SIM_SEEDS=%d TENURE_SIM_FAULTS=%s go test -run 'TestRuntimeSweep$' -v github.com/tenure-go/tenure/sim/simtest",
		env.String(), seed, sf.rtOpt.Faults)
	if o := sf.rtOpt; o.Nodes != 3 || o.Duration != 3*time.Minute || o.Latency != (sim.Latency{Min: time.Millisecond, Max: 20 * time.Millisecond}) || sf.opt.Store.NoWatch {
		cmd += " (that sweep runs 3 electors for 3m on memstore with the default latency: for this run's shape, call simtest.Check with the same options)"
	}
	return cmd
}

// lockedWriter serializes the trace lines of seeds that run at once.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

// Write writes p under the lock.
func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// replayArgs returns the flags that shaped the run, for a replay command.
func (sf *simFlags) replayArgs() string {
	if len(sf.replayed) == 0 {
		return ""
	}
	return " " + strings.Join(sf.replayed, " ")
}
