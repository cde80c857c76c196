package realtime

import (
	"context"
	"fmt"

	"github.com/tenure-go/tenure/sim/internal/rt"
	"github.com/tenure-go/tenure/store"
)

// Options configure one run. They are simtest.Options: Seed, Nodes,
// Duration, Name, Config, NewStore, Latency, Faults, Rho, BeyondRho,
// Schedule, CheckEvery and Trace as there, and Speed: how many seconds of
// the electors' time pass in one real second (default DefaultSpeed, at
// most MaxSpeed); Run ignores Seeds, Budget and SVGDir, which are for
// simtest.Check. NewStore is called outside any bubble: the store may
// start goroutines and use the network. Runs of several seeds at once
// call it concurrently, and each call must return a store of its own that
// shares no records with another call's.
type Options[M any] = rt.Options[M]

// Result sums up one run, as simtest.Result does, with Lag (the largest
// scheduling delay measured, in the electors' time) and Tolerance (how
// long the checks of timely notification let a disagreement last).
type Result = rt.Result

const (
	// DefaultSpeed is the default Options.Speed.
	DefaultSpeed = rt.DefaultSpeed
	// MaxSpeed is the largest Options.Speed.
	MaxSpeed = rt.MaxSpeed
)

// ErrInterrupted is wrapped by Run's error when ctx ended the run early.
var ErrInterrupted = rt.ErrInterrupted

// Run runs one seed (o.Seed) of runtime mode in real time, scaled by
// o.Speed: it takes about o.Duration/o.Speed of wall-clock time. An error
// wrapping sim.ErrInvalidOptions means the options are invalid; a nil
// ctx gets store.ErrNilArgument. When ctx
// ends first, the faults stop, the electors wind down, and Run returns what
// it saw with an error wrapping ErrInterrupted.
func Run[M any](ctx context.Context, o Options[M]) (Result, error) {
	if ctx == nil {
		return Result{}, fmt.Errorf("realtime: Run: %w: ctx is nil", store.ErrNilArgument)
	}
	o = o.WithDefaults()
	if err := o.Validate(); err != nil {
		return Result{}, fmt.Errorf("realtime: %w", err)
	}
	res, err := rt.Run(o, rt.Driver{Done: ctx.Done()})
	if err != nil {
		return res, fmt.Errorf("realtime: %w", err)
	}
	return res, nil
}
