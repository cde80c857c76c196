package lease

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Plan is what an operator can tolerate, from which Plan.Config derives
// the timings of an election.
type Plan struct {
	// StoreOutage is how long the store may be unreachable without the
	// leader losing its term. Required: above 0, at most MaxDuration.
	StoreOutage time.Duration
	// ClockDrift is the largest rate ρ at which a node's clock may run
	// fast or slow against real time (0.05: 5%). In [0, 1).
	ClockDrift float64
	// Failover is the longest the election may go without a leader after
	// its leader crashes (the worst case, see Report.Failover). Required:
	// above 0, at most MaxDuration.
	Failover time.Duration
	// Latency is the one-way store latency δ in calm times. At least 0,
	// at most MaxDuration.
	Latency time.Duration
	// Elections is how many elections share the store, for
	// Report.WritesPerMinute. At least 0.
	Elections int
}

// Report is what a Config planned by Plan.Config guarantees.
type Report struct {
	// Failover is the worst-case time without a leader after the leader
	// crashes: (L + max(T, I + P/2))/(1−ρ) + 6δ + 1ms, with L, T, P and I
	// the Config's LeaseDuration, BackendTimeout, RetryInterval and
	// MaxRetryInterval (the liveness bound of docs/design.md, "Liveness",
	// which the simulator checks).
	Failover time.Duration
	// Handover is how soon after a leader releases its lease in calm
	// times a watching follower leads: 6δ + 1ms, the bound the simulator
	// checks (docs/design.md, "Liveness", derives 5δ).
	Handover time.Duration
	// StoreOutage is the longest store outage the leader survives:
	// (R − I − max(I, T))/(1+ρ) − 4δ, with R the RenewDeadline. A term
	// ends R after its last successful renewal was sent. In the worst case
	// that renewal was sent about I before the outage began (renewals
	// follow each other by at most I), so R − I of the term is left when
	// it begins. Within the outage each renewal fails, at most T after it
	// was sent, and the next follows at the later of its failure and the
	// retry pause: the first one sent after the outage leaves at most
	// max(I, T) after its end, and must be answered before the deadline.
	// Durations are measured on the leader's clock, which may run fast by
	// ρ; each round trip takes 2δ.
	StoreOutage time.Duration
	// WritesPerMinute is the most renewals a minute that Elections
	// elections send to the store while each has a leader: one per
	// RetryInterval per leader. Acquires and releases, rare in steady
	// state, and followers' reads are not counted.
	WritesPerMinute float64
}

// planJitter is the RetryJitter of a planned Config: the default's.
const planJitter = 0.1

// Config returns timings that meet the plan, and what they guarantee, or
// an error naming the requirement that is out of range or cannot be met,
// wrapping ErrInvalidPlan. The Config passes Validate and satisfies the
// safety rule of docs/design.md for the drift asked,
// ρ ≤ (L − R)/(L + R).
//
// It sets RenewDeadline R = 1.25·(StoreOutage + 4δ)·(1+ρ), RetryInterval
// P = R/11 with RetryJitter 0.1, so that the longest pause I = 1.1·P is
// R/10, and BackendTimeout T = I: the tolerated outage
// (R − I − max(I, T))/(1+ρ) − 4δ = 0.8·R/(1+ρ) − 4δ is then StoreOutage.
// LeaseDuration is the least that the drift allows, R·(1+ρ)/(1−ρ), plus
// R/10 for scheduling delay. R and LeaseDuration are rounded up to a
// millisecond, P and T down (P to at least MinDuration); the Report is
// computed from the rounded Config, and a requirement it then misses is
// an error.
func (p Plan) Config() (Config, Report, error) {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidPlan}, args...)...))
	}
	for _, d := range []struct {
		name     string
		v        time.Duration
		required bool
	}{{"StoreOutage", p.StoreOutage, true}, {"Failover", p.Failover, true}, {"Latency", p.Latency, false}} {
		switch {
		case d.required && d.v <= 0:
			bad("%s is %v, must be above 0", d.name, d.v)
		case d.v < 0:
			bad("%s is %v, must be at least 0", d.name, d.v)
		case d.v > MaxDuration:
			bad("%s is %v, must be at most %v (lease.MaxDuration)", d.name, d.v, MaxDuration)
		}
	}
	rho := p.ClockDrift
	if !(rho >= 0 && rho < 1) { // false for NaN
		bad("ClockDrift is %v, must be in [0, 1)", rho)
	}
	if p.Elections < 0 {
		bad("Elections is %d, must be at least 0", p.Elections)
	}
	if len(errs) > 0 {
		return Config{}, Report{}, errors.Join(errs...)
	}
	// The outage on the leader's clock, with the round trips: R − 2I.
	need := float64(p.StoreOutage+4*p.Latency) * (1 + rho)
	r := float64(ceilMilli(need * 1.25)) // R − 2I = R − R/5
	l := r*(1+rho)/(1-rho) + r/10
	if l > float64(MaxDuration) {
		return Config{}, Report{}, fmt.Errorf("%w: StoreOutage %v with ClockDrift %v needs LeaseDuration %v, above %v (lease.MaxDuration)",
			ErrInvalidPlan, p.StoreOutage, rho, satDuration(l), MaxDuration)
	}
	c := Config{
		LeaseDuration: ceilMilli(l),
		RenewDeadline: ceilMilli(r),
		RetryInterval: max(MinDuration, time.Duration(r/10/(1+planJitter)).Truncate(time.Millisecond)),
		RetryJitter:   planJitter,
		ErrorInterval: DefaultConfig().ErrorInterval,
	}
	c.BackendTimeout = c.MaxRetryInterval().Truncate(time.Millisecond)
	if err := c.Validate(); err != nil {
		return Config{}, Report{}, fmt.Errorf("%w: StoreOutage %v is too short for any Config: %w", ErrInvalidPlan, p.StoreOutage, err)
	}
	rep, err := PlanReport(c, rho, p.Latency, p.Elections)
	if err != nil {
		return Config{}, Report{}, err
	}
	if !SafeDrift(c, rho) {
		return Config{}, Report{}, fmt.Errorf("%w: ClockDrift %v exceeds (L−R)/(L+R) of LeaseDuration %v and RenewDeadline %v", ErrInvalidPlan, rho, c.LeaseDuration, c.RenewDeadline)
	}
	if rep.StoreOutage < p.StoreOutage {
		return Config{}, Report{}, fmt.Errorf("%w: StoreOutage %v cannot be met by a planned Config: its RetryInterval is at least %v (lease.MinDuration), and so at most %v is tolerated; a Config written by hand may tolerate more",
			ErrInvalidPlan, p.StoreOutage, MinDuration, rep.StoreOutage)
	}
	if rep.Failover > p.Failover {
		return Config{}, Report{}, fmt.Errorf("%w: Failover %v cannot be met with StoreOutage %v, ClockDrift %v and Latency %v: the worst case is %v, (L + max(T, I + P/2))/(1−ρ) + 6δ + 1ms",
			ErrInvalidPlan, p.Failover, p.StoreOutage, rho, p.Latency, rep.Failover)
	}
	return c, rep, nil
}

// SafeDrift reports whether clocks drifting at rate rho keep at most one
// node believing it leads under c: ρ ≤ (L − R)/(L + R), that is
// R/(1−ρ) ≤ L/(1+ρ) (docs/design.md, "Why at most one node believes it
// leads"). It is false for a rho outside [0, 1) and for NaN.
func SafeDrift(c Config, rho float64) bool {
	if !(rho >= 0 && rho < 1) {
		return false
	}
	return float64(c.RenewDeadline)*(1+rho) <= float64(c.LeaseDuration)*(1-rho)
}

// PlanReport returns what c guarantees with clocks drifting at rate rho,
// a one-way store latency lat and elections elections: the figures of
// Report, each saturating at the largest time.Duration. The figures
// assume a round trip fits in a retry pause (2·lat < RetryInterval), so
// that renewals follow each other by at most MaxRetryInterval while the
// store answers. An invalid c, a rho outside [0, 1), a lat outside
// [0, MaxDuration], a round trip longer than the pause or a negative
// elections is an error wrapping ErrInvalidPlan.
func PlanReport(c Config, rho float64, lat time.Duration, elections int) (Report, error) {
	if err := c.Validate(); err != nil {
		return Report{}, fmt.Errorf("%w: %w", ErrInvalidPlan, err)
	}
	switch {
	case !(rho >= 0 && rho < 1): // false for NaN
		return Report{}, fmt.Errorf("%w: ClockDrift is %v, must be in [0, 1)", ErrInvalidPlan, rho)
	case lat < 0 || lat > MaxDuration:
		return Report{}, fmt.Errorf("%w: Latency is %v, must be in [0, %v] (lease.MaxDuration)", ErrInvalidPlan, lat, MaxDuration)
	case 2*lat >= c.RetryInterval:
		return Report{}, fmt.Errorf("%w: Latency %v is too long for RetryInterval %v: a round trip (2·Latency) must be shorter than the pause", ErrInvalidPlan, lat, c.RetryInterval)
	case elections < 0:
		return Report{}, fmt.Errorf("%w: Elections is %d, must be at least 0", ErrInvalidPlan, elections)
	}
	// Every duration of a valid Config is at most MaxDuration: the sums
	// below stay far inside a time.Duration.
	l, t, i, p := c.LeaseDuration, c.BackendTimeout, c.MaxRetryInterval(), c.RetryInterval
	rep := Report{
		Failover:    satAdd(satAdd(satDuration(float64(l+max(t, i+p/2))/(1-rho)), 6*lat), time.Millisecond),
		Handover:    6*lat + time.Millisecond,
		StoreOutage: max(0, time.Duration(float64(c.RenewDeadline-i-max(i, t))/(1+rho))-4*lat),
	}
	if elections > 0 {
		rep.WritesPerMinute = float64(elections) * float64(time.Minute) / float64(p)
	}
	return rep, nil
}

// satDuration converts f nanoseconds to a Duration, saturating at the
// largest one (NaN too).
func satDuration(f float64) time.Duration {
	if !(f < math.MaxInt64) {
		return math.MaxInt64
	}
	return time.Duration(f)
}

// satAdd is a+b for non-negative a and b, saturating.
func satAdd(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// ceilMilli rounds f nanoseconds up to a millisecond.
func ceilMilli(f float64) time.Duration {
	return time.Duration(math.Ceil(f/float64(time.Millisecond))) * time.Millisecond
}
