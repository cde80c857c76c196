package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/sim"
)

// simUsage is printed by "tenure sim -h".
const simUsage = `usage: tenure sim [flags]

Runs Tenure's state machine on simulated nodes against a simulated store, in
virtual time, with faults drawn from the seed, and checks after every event
that at most one node believes it leads, that tokens and fenced writes only
go forward, that nobody reads an older record, that only legal transitions
happen, and that a leader appears within the liveness bound once faults heal.
It writes a text timeline (one lane per node: F follower, C candidate,
L leader, E expiring), the terms and tokens, the store's changes of holder,
the faults and the verdict. The same seed and flags give the same output,
byte for byte. It exits 1 when a check fails.

With no fault flag, every fault except -drift-beyond is on; -calm turns all
of them off.

Examples:
  tenure sim -seed 7
  tenure sim -seed 7 -nodes 3 -duration 2m -crash -pause -svg run.svg
  tenure sim -seed 3 -drift-beyond -crash -partition   # drift past the bound: two leaders
  tenure sim -seed 1 -calm -lease 6s -renew 4s -retry 1s -backend-timeout 2s
  tenure sim -seed 9 -trace | less                     # every event

Flags:
`

func runSim(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	def := lease.DefaultConfig()
	var (
		seed     = fs.Uint64("seed", 1, "seed: draws latencies, clock rates and faults")
		nodes    = fs.Int("nodes", 5, "number of nodes")
		duration = fs.Duration("duration", 10*time.Minute, "simulated real time")
		width    = fs.Int("width", 100, "columns of the text timeline")
		svg      = fs.String("svg", "", "also write an SVG timeline to this file")
		trace    = fs.Bool("trace", false, "write every event before the timeline")
		calm     = fs.Bool("calm", false, "no faults at all")
		noWatch  = fs.Bool("no-watch", false, "the store pushes no watch events: nodes only poll")
		rho      = fs.Float64("rho", 0.05, "clock drift bound of -drift")
		beyond   = fs.Float64("beyond-rho", 0.4, "clock drift of -drift-beyond")
		cfg      = def
		f        sim.Faults
	)
	fs.BoolVar(&f.Drift, "drift", false, "clock rates drift within ±rho")
	fs.BoolVar(&f.DriftBeyond, "drift-beyond", false, "clock rates drift by ±beyond-rho, past what the timings tolerate")
	fs.BoolVar(&f.Crash, "crash", false, "crash and restart nodes (same identity or a new one)")
	fs.BoolVar(&f.Pause, "pause", false, "pause processes for up to 3 leases")
	fs.BoolVar(&f.Partition, "partition", false, "cut a node's requests and/or responses")
	fs.BoolVar(&f.Loss, "loss", false, "lose requests and responses at random for a while")
	fs.BoolVar(&f.Slow, "slow", false, "slow store: latency beyond BackendTimeout for a while")
	fs.BoolVar(&f.WatchChaos, "watch-chaos", false, "delay, duplicate and reorder watch events")
	fs.BoolVar(&f.DataLoss, "dataloss", false, "the store loses the record (machines run with LossyStore)")
	fs.BoolVar(&f.Release, "release", false, "stop nodes gracefully (release) and start them again")
	fs.BoolVar(&f.Reconfigure, "reconfigure", false, "give nodes other valid timings")
	fs.DurationVar(&cfg.LeaseDuration, "lease", def.LeaseDuration, "LeaseDuration")
	fs.DurationVar(&cfg.RenewDeadline, "renew", def.RenewDeadline, "RenewDeadline")
	fs.DurationVar(&cfg.RetryInterval, "retry", def.RetryInterval, "RetryInterval")
	fs.Float64Var(&cfg.RetryJitter, "jitter", def.RetryJitter, "RetryJitter")
	fs.DurationVar(&cfg.BackendTimeout, "backend-timeout", def.BackendTimeout, "BackendTimeout")
	fs.Usage = func() {
		fmt.Fprint(stderr, simUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *calm {
		f = sim.Faults{}
	} else if f == (sim.Faults{}) {
		f = sim.AllFaults()
	}
	if *width < 20 {
		return fmt.Errorf("-width is %d, must be at least 20", *width)
	}
	o := sim.Options{
		Seed: *seed, Nodes: *nodes, Duration: *duration, Config: cfg,
		Rho: *rho, BeyondRho: *beyond, NoWatch: *noWatch, Faults: f, Record: true,
	}
	if *trace {
		o.Trace = stdout
	}
	s, err := sim.New(o)
	if err != nil {
		return err
	}
	res := s.Run()
	if err := s.WriteTimeline(stdout, *width); err != nil {
		return err
	}
	if *svg != "" {
		out, err := os.Create(*svg)
		if err != nil {
			return err
		}
		err = s.WriteSVG(out)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	if res.Violation != nil {
		return errors.New("a check failed (see above)")
	}
	return nil
}
