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

Faults. With no fault flag the default set runs: -drift -crash -pause
-partition -loss -slow -release. Naming any fault flag runs exactly the
faults named. -calm runs none. Not in the default set: -reconfigure (live
changes of timings), -watch-chaos (watch events beyond the store contract),
-mute-watch (watches that silently stop delivering), -dataloss (the store loses the record; implies -lossy) and -drift-beyond
(drift past what the timings tolerate: expect two leaders).

Timings come from lease.DefaultConfig, then the TENURE_* environment
variables as the library reads them for the election -name (for example
TENURE_LEASE_DURATION=6s or TENURE_SIM_LEASE_DURATION=6s), then the timing
flags.

Runtime mode (-runtime: the real lead.Electors on a real store, in virtual
time) needs testing/synctest, which only a test binary has; the tenure
binary does not link package testing, so -runtime prints the go test
command that runs it.

Examples:
  tenure sim -seeds 7
  tenure sim -seeds 1-10000                            # a sweep, failures only
  tenure sim -seeds 1-500 -json | jq 'select(.ok == false)'
  tenure sim -seeds 7 -nodes 3 -duration 2m -crash -pause -svg run.svg
  tenure sim -seeds 3 -drift-beyond -crash -partition  # drift past the bound: two leaders
  tenure sim -seeds 1-200 -lossy -dataloss -reconfigure
  TENURE_LEASE_DURATION=6s TENURE_RENEW_DEADLINE=4s tenure sim -seeds 1 -calm
  tenure sim -seeds 9 -trace | less                    # every event
  tenure sim -runtime -seeds 1-50 -crash -partition    # prints the go test command

Flags:
`

// simFlags holds the parsed flags of "tenure sim".
type simFlags struct {
	fs       *flag.FlagSet
	seeds    sim.Seeds
	opt      sim.Options
	width    int
	svg      string
	trace    bool
	jsonOut  bool
	verbose  bool
	single   bool
	runtime  bool
	replayed []string // the flags that shape a run, to print replay commands
}

// faultFlagNames are the flags that switch a fault on.
var faultFlagNames = sim.FaultNames()

func parseSimFlags(args []string, stderr io.Writer) (*simFlags, error) {
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		seedList   = fs.String("seeds", "", "seeds to run: one (7), a range (1-10000) or a list (1-100,200,300-310) (default 1)")
		seed       = fs.Uint64("seed", 0, "one seed to run (the same as -seeds N)")
		runtimeArg = fs.Bool("runtime", false, "runtime mode: print how to run it with go test (it needs testing/synctest)")
		jsonOut    = fs.Bool("json", false, "print one JSON verdict object per seed and a summary object")
		verbose    = fs.Bool("v", false, "with several seeds, print a line for every seed, not only the failing ones")
		name       = fs.String("name", "sim", "election name whose TENURE_<NAME>_* variables are read (after the shared TENURE_*)")
		nodes      = fs.Int("nodes", 5, "number of nodes")
		duration   = fs.Duration("duration", 10*time.Minute, "simulated real time")
		width      = fs.Int("width", 100, "columns of the text timeline")
		svg        = fs.String("svg", "", "also write an SVG timeline to this file (one seed only)")
		trace      = fs.Bool("trace", false, "write every event before the timeline (one seed only)")
		calm       = fs.Bool("calm", false, "no faults at all (excludes every fault flag)")
		lossy      = fs.Bool("lossy", false, "the store may lose records (as Redis without persistence); nodes run as lead does on a store.Lossy store")
		noWatch    = fs.Bool("no-watch", false, "the store pushes no watch events: nodes only poll")
		latMin     = fs.Duration("latency-min", time.Millisecond, "least one-way store latency")
		latMax     = fs.Duration("latency-max", 20*time.Millisecond, "largest one-way store latency (outside the tail)")
		latTail    = fs.Float64("latency-tail", 0, "probability of a message in the latency tail")
		latTailMax = fs.Duration("latency-tail-max", 0, "largest one-way latency in the tail")
		rho        = fs.Float64("rho", 0.05, "clock drift bound of -drift")
		beyond     = fs.Float64("beyond-rho", 0.4, "clock drift of -drift-beyond")
		f          sim.Faults
		cfgFlags   lease.Config
	)
	fs.BoolVar(&f.Drift, "drift", false, "clock rates drift within ±rho")
	fs.BoolVar(&f.DriftBeyond, "drift-beyond", false, "clock rates drift by ±beyond-rho, past what the timings tolerate")
	fs.BoolVar(&f.Crash, "crash", false, "crash and restart nodes (same identity or a new one)")
	fs.BoolVar(&f.Pause, "pause", false, "pause processes for up to 3 leases")
	fs.BoolVar(&f.Partition, "partition", false, "cut a node's requests and/or responses")
	fs.BoolVar(&f.Loss, "loss", false, "lose requests and responses at random for a while")
	fs.BoolVar(&f.Slow, "slow", false, "slow store: latency beyond BackendTimeout for a while")
	fs.BoolVar(&f.WatchChaos, "watch-chaos", false, "delay, duplicate and reorder watch events (beyond the store contract)")
	fs.BoolVar(&f.DataLoss, "dataloss", false, "the store loses the record (implies -lossy)")
	fs.BoolVar(&f.Release, "release", false, "stop nodes gracefully (release) and start them again")
	fs.BoolVar(&f.Reconfigure, "reconfigure", false, "give nodes other valid timings (opt-in)")
	fs.BoolVar(&f.MuteWatch, "mute-watch", false, "watches silently stop delivering for a while (one node's or all)")
	def := lease.DefaultConfig()
	fs.DurationVar(&cfgFlags.LeaseDuration, "lease", def.LeaseDuration, "LeaseDuration (overrides TENURE_*)")
	fs.DurationVar(&cfgFlags.RenewDeadline, "renew", def.RenewDeadline, "RenewDeadline (overrides TENURE_*)")
	fs.DurationVar(&cfgFlags.RetryInterval, "retry", def.RetryInterval, "RetryInterval (overrides TENURE_*)")
	fs.Float64Var(&cfgFlags.RetryJitter, "jitter", def.RetryJitter, "RetryJitter (overrides TENURE_*)")
	fs.DurationVar(&cfgFlags.BackendTimeout, "backend-timeout", def.BackendTimeout, "BackendTimeout (overrides TENURE_*)")
	fs.Usage = func() {
		fmt.Fprint(stderr, simUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })

	// Contradictions.
	var named []string
	for _, n := range faultFlagNames {
		if set[n] {
			named = append(named, "-"+n)
		}
	}
	switch {
	case set["seed"] && set["seeds"]:
		return nil, errors.New("-seed and -seeds exclude each other (use -seeds)")
	case *calm && len(named) > 0:
		return nil, fmt.Errorf("-calm runs no fault, but %s named some", strings.Join(named, " "))
	case f.Drift && f.DriftBeyond:
		return nil, errors.New("-drift and -drift-beyond exclude each other")
	case f.DataLoss && set["lossy"] && !*lossy:
		return nil, errors.New("-dataloss needs a store that may lose records, but -lossy=false says it never does")
	case set["rho"] && !f.Drift && !(len(named) == 0 && !*calm):
		return nil, errors.New("-rho is the bound of -drift, which is off")
	case set["beyond-rho"] && !f.DriftBeyond:
		return nil, errors.New("-beyond-rho is the drift of -drift-beyond, which is off")
	case (set["latency-tail"] || set["latency-tail-max"]) && !(*latTail > 0 && *latTailMax > 0):
		return nil, errors.New("-latency-tail and -latency-tail-max go together, both above zero")
	case *jsonOut && *trace:
		return nil, errors.New("-json and -trace exclude each other")
	case *width < 20:
		return nil, fmt.Errorf("-width is %d, must be at least 20", *width)
	}
	if len(named) == 0 && !*calm {
		f = sim.DefaultFaults()
	}

	spec := "1"
	switch {
	case set["seeds"]:
		spec = *seedList
	case set["seed"]:
		spec = fmt.Sprint(*seed)
	}
	seeds, err := sim.ParseSeeds(spec)
	if err != nil {
		return nil, fmt.Errorf("-seeds: %w", err)
	}
	single := seeds.Len() == 1
	if *runtimeArg {
		return &simFlags{runtime: true, seeds: seeds, opt: sim.Options{Faults: f}}, nil
	}
	if !single && (*svg != "" || *trace) {
		return nil, errors.New("-svg and -trace need a single seed")
	}

	// Timings: defaults, then TENURE_* as lead.New reads them, then flags.
	env, err := lease.Load(*name, lease.DefaultConfig(), os.LookupEnv)
	if err != nil {
		return nil, err
	}
	cfg := env.Config
	for flagName, apply := range map[string]func(){
		"lease":           func() { cfg.LeaseDuration = cfgFlags.LeaseDuration },
		"renew":           func() { cfg.RenewDeadline = cfgFlags.RenewDeadline },
		"retry":           func() { cfg.RetryInterval = cfgFlags.RetryInterval },
		"jitter":          func() { cfg.RetryJitter = cfgFlags.RetryJitter },
		"backend-timeout": func() { cfg.BackendTimeout = cfgFlags.BackendTimeout },
	} {
		if set[flagName] {
			apply()
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}

	sf := &simFlags{
		fs: fs, seeds: seeds, width: *width, svg: *svg, trace: *trace,
		jsonOut: *jsonOut, verbose: *verbose, single: single,
		opt: sim.Options{
			Nodes: *nodes, Duration: *duration, Config: cfg, Faults: f,
			Rho: *rho, BeyondRho: *beyond,
			Store: sim.StoreModel{
				MayLoseRecords: *lossy || f.DataLoss,
				NoWatch:        *noWatch,
				Latency:        sim.Latency{Min: *latMin, Max: *latMax, Tail: *latTail, TailMax: *latTailMax},
			},
		},
	}
	// The flags that shape a run, for replay commands.
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "seeds", "seed", "json", "v", "svg", "trace", "width":
			return
		}
		sf.replayed = append(sf.replayed, fmt.Sprintf("-%s=%s", fl.Name, fl.Value))
	})
	// Check the options once, before any seed runs.
	if _, err := sim.New(sf.opt); err != nil {
		return nil, err
	}
	return sf, nil
}

// runtimeHelp explains -runtime; %s is the go test command for the
// seeds and faults asked for.
const runtimeHelp = `tenure sim -runtime: runtime mode is not run by this binary.

Runtime mode runs the real lead.Electors (Run, Lead, Every, the watchdog,
the observers) on a real store.Store in virtual time. Only testing/synctest
can tell when every goroutine of the electors and the store is idle, which
virtual time needs, and synctest runs only inside a test binary (it needs a
*testing.T). The tenure binary does not link package testing, so it cannot
run runtime mode. Run it with go test instead: the library's own runtime
sweep (3 electors on memstore, 3 virtual minutes a seed, the TENURE_*
timings) with the seeds and faults asked for, from a module that requires
tenure:

  %s

  # your own store, from a _test.go file of yours:
  func TestElection(t *testing.T) {
      simtest.Check(t, simtest.Options[Meta]{
          NewStore: func() store.Store[Meta] { return mystore.New[Meta]() },
          Faults:   sim.DefaultFaults(),
      })
  }
  TENURE_SIM_SEEDS=4711 go test -run 'TestElection$' -v ./...   # replay one seed

See "Run the simulator in CI" in docs/guide.md.
`

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
}

func runSim(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	sf, err := parseSimFlags(args, stderr)
	if err != nil {
		return err
	}
	if sf.runtime {
		cmd := fmt.Sprintf("TENURE_SIM_SEEDS=%s TENURE_SIM_FAULTS=%s go test -run 'TestRuntimeSweep$' -v github.com/tenure-go/tenure/sim/simtest",
			sf.seeds, sf.opt.Faults)
		fmt.Fprintf(stderr, runtimeHelp, cmd)
		return exitCode(2)
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
	if res.Violation != nil {
		return exitCode(1)
	}
	return nil
}

func writeSVG(s *sim.Cluster, path string) error {
	if path == "" {
		return nil
	}
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	err = s.WriteSVG(out)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// runSeeds runs every seed on GOMAXPROCS goroutines and prints the
// verdicts in seed order.
func runSeeds(ctx context.Context, sf *simFlags, stdout io.Writer) error {
	type done struct {
		i   uint64
		res sim.Result
		c   *sim.Cluster
	}
	jobs := make(chan struct {
		i, seed uint64
	})
	results := make(chan done)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for j := range jobs {
				o := sf.opt
				o.Seed, o.Record = j.seed, sf.svg != ""
				c, err := sim.New(o)
				if err != nil {
					panic(err) // validated by parseSimFlags
				}
				d := done{i: j.i, res: c.Run()}
				if o.Record {
					d.c = c // for the SVG
				}
				results <- d
			}
		})
	}
	interrupted := false
	go func() {
		defer close(jobs)
		var i uint64
		for seed := range sf.seeds.All() {
			select {
			case jobs <- struct{ i, seed uint64 }{i, seed}:
				i++
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(results) }()

	sum := summaryVerdict{Type: "summary", FailedSeeds: []uint64{}, Nodes: sf.opt.Nodes, Duration: sf.opt.Duration.String(),
		Faults: sf.opt.Faults.String(), Lossy: sf.opt.Store.MayLoseRecords, Watch: !sf.opt.Store.NoWatch, Config: configJSON(sf.opt.Config)}
	pending := map[uint64]done{}
	var next uint64
	enc := json.NewEncoder(stdout)
	var werr error
	emit := func(d done) {
		r := d.res
		sum.Seeds++
		sum.Events += r.Events
		if r.Violation != nil {
			sum.Failed++
			sum.FailedSeeds = append(sum.FailedSeeds, r.Seed)
		}
		if sf.jsonOut {
			v := seedVerdict{Type: "seed", Seed: r.Seed, OK: r.Violation == nil, Events: r.Events, Terms: r.Terms,
				FenceAccepted: r.FenceAccepted, FenceRejected: r.FenceRejected}
			if r.Violation != nil {
				v.Violation = &jsonViolation{Check: r.Violation.Check, At: r.Violation.At.String(), AtNS: int64(r.Violation.At), Msg: r.Violation.Msg}
			}
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
	for d := range results {
		pending[d.i] = d
		for {
			d, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			next++
			emit(d)
		}
	}
	if ctx.Err() != nil && sum.Seeds < sf.seeds.Len() {
		interrupted = true
	}
	sum.Interrupted = interrupted
	sum.OK = sum.Failed == 0 && !interrupted
	if sf.jsonOut {
		if err := enc.Encode(sum); err != nil && werr == nil {
			werr = err
		}
	} else {
		verdict := "every check held"
		if sum.Failed > 0 {
			verdict = fmt.Sprintf("%d failed (seeds %v)", sum.Failed, sum.FailedSeeds)
		}
		if interrupted {
			verdict += fmt.Sprintf("; interrupted after %d of %d seeds", sum.Seeds, sf.seeds.Len())
		}
		fmt.Fprintf(stdout, "tenure sim: %d seeds (%d nodes, %v each, faults %s, lossy store %v, watch %v): %s\n",
			sum.Seeds, sum.Nodes, sf.opt.Duration, sum.Faults, sum.Lossy, sum.Watch, verdict)
	}
	if werr != nil {
		return werr
	}
	if !sum.OK {
		return exitCode(1)
	}
	return nil
}

// replayArgs returns the flags that shaped the run, for a replay command.
func (sf *simFlags) replayArgs() string {
	if len(sf.replayed) == 0 {
		return ""
	}
	return " " + strings.Join(sf.replayed, " ")
}
