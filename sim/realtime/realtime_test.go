package realtime_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/tenure-go/tenure/sim"
	"github.com/tenure-go/tenure/sim/realtime"
	"github.com/tenure-go/tenure/store"
)

// TestCalmRunHasOneTermAndNoViolation: no fault, 3 electors for a minute of their time at speed 30
// (2 s): one term, fenced writes accepted, no violation.
func TestCalmRunHasOneTermAndNoViolation(t *testing.T) {
	res, err := realtime.Run(context.Background(), realtime.Options[struct{}]{Seed: 1, Duration: time.Minute, Speed: 30})
	if err != nil {
		t.Fatal(err)
	}
	if res.Violation != nil || res.Terms != 1 || res.FenceAccepted == 0 {
		var b bytes.Buffer
		_ = res.WriteTimeline(&b, 100)
		t.Fatalf("%+v\n%s", res, b.String())
	}
	if res.ElectorTime < 3*time.Minute-3*time.Second {
		t.Errorf("ElectorTime %v, want about 3 electors × 1 minute", res.ElectorTime)
	}
	t.Logf("lag %v, tolerance %v", res.Lag, res.Tolerance)
}

// TestDefaultFaults runs seeds with the default faults at the default
// speed; TENURE_SIM_SEEDS picks them (default 1-2).
func TestDefaultFaults(t *testing.T) {
	spec := "1-2"
	if v := os.Getenv(sim.EnvSeeds); v != "" {
		spec = v
	}
	seeds, err := sim.ParseSeeds(spec)
	if err != nil {
		t.Fatal(err)
	}
	dur := time.Minute
	if v := os.Getenv("TENURE_RT_DURATION"); v != "" {
		dur, _ = time.ParseDuration(v)
	}
	speed := 0
	if v := os.Getenv("TENURE_RT_SPEED"); v != "" {
		speed, _ = strconv.Atoi(v)
	}
	for seed := range seeds.All() {
		res, err := realtime.Run(context.Background(), realtime.Options[struct{}]{Seed: seed, Duration: dur, Speed: speed, Faults: sim.DefaultFaults()})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("seed %d: %v; %d terms, %d ops, lag %v, tolerance %v", seed, res.Err(), res.Terms, res.StoreOps, res.Lag, res.Tolerance)
		if res.Violation != nil {
			var b bytes.Buffer
			_ = res.WriteTimeline(&b, 100)
			t.Errorf("seed %d: %v\n%s", seed, res.Violation, b.String())
		}
	}
}

func TestRunRefusesANilContextAndASpeedOutOfRange(t *testing.T) {
	var nilCtx context.Context // a nil context on purpose
	if _, err := realtime.Run(nilCtx, realtime.Options[struct{}]{}); !errors.Is(err, store.ErrNilArgument) {
		t.Errorf("nil ctx: %v", err)
	}
	for _, speed := range []int{-1, realtime.MaxSpeed + 1} {
		if _, err := realtime.Run(context.Background(), realtime.Options[struct{}]{Speed: speed}); !errors.Is(err, sim.ErrInvalidOptions) {
			t.Errorf("speed %d: %v", speed, err)
		}
	}
}

// TestInterruptedRunStopsEarlyAndSaysSo: a run whose context ends stops early and says so.
func TestInterruptedRunStopsEarlyAndSaysSo(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := realtime.Run(ctx, realtime.Options[struct{}]{Seed: 1, Duration: time.Hour})
	if !errors.Is(err, realtime.ErrInterrupted) {
		t.Fatalf("Run = %v", err)
	}
	if res.Violation != nil {
		t.Errorf("violation: %v", res.Violation)
	}
}

// TestChecksBiteInRealTime: with clocks drifting by 40% against timings
// that tolerate 20%, some seed of eight (run at once, 3 minutes of the
// electors' time at speed 30: 6 s) makes two electors lead at once, and the
// real-time checks, which report only what their reads prove, say so.
func TestChecksBiteInRealTime(t *testing.T) {
	type out struct {
		seed uint64
		res  realtime.Result
		err  error
	}
	results := make(chan out)
	for seed := uint64(1); seed <= 8; seed++ {
		go func() {
			res, err := realtime.Run(context.Background(), realtime.Options[struct{}]{Seed: seed, Duration: 3 * time.Minute, Speed: 30,
				Faults: sim.Faults{DriftBeyond: true, Crash: true, Partition: true, Pause: true}})
			results <- out{seed, res, err}
		}()
	}
	caught := 0
	for range 8 {
		o := <-results
		if o.err != nil {
			t.Fatal(o.err)
		}
		if v := o.res.Violation; v != nil {
			caught++
			t.Logf("seed %d: %v", o.seed, v)
		}
	}
	if caught == 0 {
		t.Fatal("no seed of 8 made two leaders with 40% drift")
	}
}
