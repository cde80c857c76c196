package draw

import (
	"math/rand/v2"
	"time"

	"github.com/tenure-go/tenure/lease"
)

// Config draws the valid timings of a reconfiguration: a LeaseDuration
// from 5s to 20s (base's when keepLease: a store that may lose records, or
// one an adversary writes, needs every elector's LeaseDuration above every
// other's RenewDeadline: docs/design.md, "Stores that lose records"), a RenewDeadline of 50–80% of it,
// and the rest below. The timings tolerate at least 10% of clock drift,
// and at least rho: (L−R)/(L+R) >= rho, which sim.Options.Rho requires of
// every config a run uses (rho 0 when the clocks do not drift).
func Config(r *rand.Rand, base lease.Config, keepLease bool, rho float64) lease.Config {
	for {
		l := uniform(r, int64(5*time.Second), int64(20*time.Second))
		if keepLease {
			l = int64(base.LeaseDuration)
		}
		x := r.Float64()
		f := 0.5 + 0.3*x
		if hi := (1 - rho) / (1 + rho); f > hi {
			lo := min(0.5, 0.6*hi)
			f = lo + (hi-lo)*x
		}
		rd := int64(float64(l) * f)
		c := lease.Config{
			LeaseDuration:  time.Duration(l),
			RenewDeadline:  time.Duration(rd),
			RetryInterval:  time.Duration(float64(rd) * (0.1 + 0.2*r.Float64())),
			RetryJitter:    0.5 * r.Float64(),
			BackendTimeout: time.Duration(float64(rd) * (0.2 + 0.4*r.Float64())),
			ErrorInterval:  30 * time.Second,
		}
		if tolerance(c) < rho {
			continue // float rounding at the drift bound
		}
		if c.Validate() == nil {
			return c
		}
	}
}

// tolerance is (L−R)/(L+R), as sim.Tolerance.
func tolerance(c lease.Config) float64 {
	l, r := float64(c.LeaseDuration), float64(c.RenewDeadline)
	return (l - r) / (l + r)
}

// uniform draws from [lo, hi] (lo when hi <= lo).
func uniform(r *rand.Rand, lo, hi int64) int64 {
	if hi <= lo {
		return lo
	}
	return lo + r.Int64N(hi-lo+1)
}
