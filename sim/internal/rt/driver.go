package rt

import (
	"context"
	"errors"
	"time"
)

// DefaultSpeed is the default Speed of real time: 10 seconds of the
// electors' time in one real second. With the default timings (RetryInterval
// 2s, BackendTimeout 5s) a scheduling delay of 10ms looks like 0.1s to the
// electors, well inside what their timings tolerate.
const DefaultSpeed = 10

// MaxSpeed is the largest Speed.
const MaxSpeed = 1000

// Driver is how time passes in a run.
type Driver struct {
	// Wait, if not nil, returns once every other goroutine of the run is
	// idle: synctest.Wait, in a bubble whose virtual time Speed 1 reads.
	// Nil: real time, scaled by Options.Speed; the checks that depend on
	// instants then allow Result.Tolerance.
	Wait func()
	// Done, if not nil, ends the run early when closed (real time only):
	// faults stop, the electors wind down, and Run returns ErrInterrupted
	// with what the run saw until then.
	Done <-chan struct{}
}

// ErrInterrupted is what Run returns when Driver.Done ended a run early.
var ErrInterrupted = errors.New("sim: runtime-mode run interrupted")

// timebase reads and waits on the run's time: real time (or a bubble's
// virtual time) multiplied by speed.
type timebase struct {
	start time.Time
	speed int64
}

// since is the run's time since start.
func (tb timebase) since() time.Duration {
	d := time.Since(tb.start)
	if tb.speed == 1 {
		return d
	}
	return satMul(d, tb.speed)
}

// real is the real time in which d of the run's time passes (rounded up).
func (tb timebase) real(d time.Duration) time.Duration {
	if tb.speed == 1 || d <= 0 {
		return d
	}
	return (d + time.Duration(tb.speed) - 1) / time.Duration(tb.speed)
}

// newTimer is a timer that fires once d of the run's time has passed.
func (tb timebase) newTimer(d time.Duration) *time.Timer { return time.NewTimer(tb.real(d)) }

// afterFunc calls f once d of the run's time has passed.
func (tb timebase) afterFunc(d time.Duration, f func()) *time.Timer {
	return time.AfterFunc(tb.real(d), f)
}

// sleep waits d of the run's time, or until ctx ends; it reports whether d
// passed. It models time spent on the network, not waiting for something
// to happen.
func (tb timebase) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := tb.newTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// satMul is d×k, saturating at the largest duration.
func satMul(d time.Duration, k int64) time.Duration {
	if d > 0 && d > time.Duration(1<<63-1)/time.Duration(k) {
		return time.Duration(1<<63 - 1)
	}
	return d * time.Duration(k)
}
