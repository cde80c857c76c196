package rt

import (
	"math"
	"time"

	"github.com/tenure-go/tenure/lead"
)

// driftClock is a lead.Clock that runs at rate times the run's time: a
// node whose clock drifts. It reads the bubble's time, so it advances with
// synctest's clock, or real time scaled by the run's speed.
type driftClock struct {
	tb   timebase  // the run's time, from the clock's creation
	base time.Time // real time at creation, with a monotonic reading
	rate float64
}

var _ lead.Clock = (*driftClock)(nil)

func newDriftClock(speed int64, rate float64) *driftClock {
	now := time.Now()
	return &driftClock{tb: timebase{start: now, speed: speed}, base: now, rate: rate}
}

// local is the clock's reading after real of real time.
func (c *driftClock) local(real time.Duration) time.Duration {
	return time.Duration(float64(real) * c.rate)
}

// realFor is the least real time after which the clock reads at least
// local.
func (c *driftClock) realFor(local time.Duration) time.Duration {
	r := time.Duration(math.Ceil(float64(local) / c.rate))
	for c.local(r) < local {
		r++
	}
	for r > 0 && c.local(r-1) >= local {
		r--
	}
	return r
}

// Now returns the drifting time; its monotonic reading drifts too, since
// Add keeps the base's.
func (c *driftClock) Now() time.Time { return c.base.Add(c.local(c.tb.since())) }

// AfterFunc calls f once the clock has advanced by d.
func (c *driftClock) AfterFunc(d time.Duration, f func()) lead.Timer {
	now := c.tb.since()
	wait := c.realFor(c.local(now)+max(d, 0)) - now
	return c.tb.afterFunc(max(wait, 0), f)
}
