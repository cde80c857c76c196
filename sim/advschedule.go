package sim

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/tenure-go/tenure/fsm"
	"github.com/tenure-go/tenure/lease"
)

// advSchedule draws the random schedule of a run with the adversary: the
// kinds of randomSchedule and the adversary's, on a time scale u set by
// the lease (u = min(LeaseDuration, Duration/40), which is randomSchedule's
// scale for the default config), starting in the first 80% of the run so
// that the rest is calm and recovery is checked.
func advSchedule(s *Cluster) []Fault {
	f := s.opt.Faults
	var kinds []FaultKind
	add := func(on bool, k ...FaultKind) {
		if on {
			kinds = append(kinds, k...)
		}
	}
	add(f.Crash, FaultCrash)
	add(f.Pause, FaultPause)
	add(f.Partition, FaultPartition)
	add(f.Loss, FaultLoss)
	add(f.Slow, FaultSlow)
	add(f.DataLoss, FaultDataLoss)
	add(f.DataSwap, FaultDataSwap)
	add(f.Resend, FaultResend)
	add(f.Release, FaultRelease)
	add(f.Reconfigure || f.Extreme, FaultReconfigure)
	add(f.Forge, FaultForge, FaultForge)
	add(f.ForgeWatch, FaultForgeWatch)
	add(f.Rollback, FaultRollback)
	add(f.Restore, FaultRestore)
	add(f.Targeted, FaultRenewCut, FaultHold)
	add(f.Jitter, FaultJitter)
	add(f.MuteWatch, FaultMuteWatch)
	add(f.ForgeRelease, FaultForgeRelease)
	add(f.Resign, FaultResign)
	add(f.HandOver, FaultHandOver)
	if len(kinds) == 0 {
		return []Fault{}
	}
	cfg := s.opt.Config
	u := max(min(int64(cfg.LeaseDuration), int64(s.opt.Duration)/40), 1)
	bt := int64(cfg.BackendTimeout)
	end := int64(s.opt.Duration) * 8 / 10
	dur := func(lo, hi int64) time.Duration { return time.Duration(s.uniform(lo, hi)) }
	var out []Fault
	for t := s.uniform(u/3, 4*u/3); t < end; t += s.uniform(u/3, 8*u/3) {
		fl := Fault{At: time.Duration(t), Kind: kinds[s.rng.IntN(len(kinds))], Node: s.rng.IntN(s.opt.Nodes)}
		switch fl.Kind {
		case FaultCrash:
			fl.Dur = dur(u/15, 3*u)
			fl.NewIdentity = s.chance(0.5)
		case FaultPause:
			fl.Dur = dur(u/2, 3*u)
		case FaultPartition:
			fl.Dur = dur(u/15, 3*u)
			switch s.rng.IntN(3) {
			case 0:
				fl.Requests = true
			case 1:
				fl.Responses = true
			default:
				fl.Requests, fl.Responses = true, true
			}
		case FaultLoss:
			fl.Prob = 0.1 + 0.6*s.rng.Float64()
			fl.Dur = dur(u/15, 2*u)
		case FaultSlow:
			fl.Latency = dur(bt, 2*bt)
			fl.Dur = dur(u/15, 2*u)
		case FaultRelease:
			fl.Dur = dur(u/15, 2*u)
		case FaultReconfigure:
			fl.Config = advConfig(s)
		case FaultResign:
			fl.AtLeader = true
		case FaultHandOver:
			fl.AtLeader, fl.Successor = true, drawSuccessor(s.rng.IntN, s.opt.Nodes)
		case FaultForge:
			fl.Record = forgedRecord(s)
			fl.Dur = dur(u/15, 3*u)
		case FaultForgeWatch:
			switch {
			case s.chance(0.4):
				// The release of the live lease, to the followers: now,
				// or when the leader renews next.
				fl.Released = true
				if s.chance(0.5) {
					fl.Window = dur(u, 4*u)
				}
			case s.opt.Faults.ForgeRenewal && s.chance(0.4):
				// The renewal after the leader's next one, ahead of it,
				// then the leader cut off.
				fl.Renewal, fl.Window, fl.Dur = true, dur(u, 4*u), dur(u/15, 2*u)
			default:
				fl.Record = forgedWatchRecord(s)
				fl.Revision = forgedRevision(s.rng)
				fl.Mask = 1 + s.rng.Uint64N(1<<s.opt.Nodes-1)
			}
		case FaultRollback:
			if s.chance(0.3) {
				fl.Window = dur(u, 4*u)
			}
			fl.Touch = s.chance(0.5)
			if s.chance(0.5) {
				fl.Revision = lease.Revision(s.uniform(1, 5))
			} else {
				fl.Revision = lease.Revision(s.uniform(1, 1000))
			}
			// Drawn only when on, so that the seeds of the sweeps without
			// it keep their schedules.
			fl.Reuse = f.ReuseRevisions && s.chance(0.5)
		case FaultRestore:
			fl.Reuse = f.ReuseRevisions && s.chance(0.5)
		case FaultRenewCut:
			fl.Window = dur(u, 4*u)
			fl.Dur = dur(u/2, 3*u)
			fl.Config = advConfig(s)
		case FaultHold:
			fl.Window = dur(u, 4*u)
			lr := float64(cfg.LeaseDuration - cfg.RenewDeadline)
			fl.Dur = time.Duration(lr * (0.6 + 0.5*s.rng.Float64()))
			fl.Cut = dur(u/2, 3*u)
			fl.Requests = s.chance(0.3)
		case FaultJitter:
			fl.Prob = 0.05 + 0.45*s.rng.Float64()
			fl.Latency = dur(bt/4, 2*bt)
			fl.Dur = dur(u/15, 2*u)
		case FaultMuteWatch:
			fl.Dur = dur(u/15, 6*u)
			if s.chance(0.5) {
				fl.Mask = 1<<s.opt.Nodes - 1
			}
		}
		out = append(out, fl)
	}
	return out
}

// advConfig draws the timings of a reconfiguration: over the whole valid
// range with Faults.Extreme, else as randomConfig does; the LeaseDuration
// is the initial one either way.
func advConfig(s *Cluster) lease.Config {
	if !s.opt.Faults.Extreme {
		return randomConfig(s)
	}
	rho := 0.0
	if s.opt.Faults.Drift {
		rho = s.opt.Rho
	}
	// BackendTimeout stays above four one-way latencies, as in the initial
	// config: a node whose every operation times out while landing is
	// another story (TestSimBackendTimeoutBelowRoundTrip).
	// RetryInterval stays above a third of the initial one, so that the
	// run's event count stays bounded.
	c, ok := extremeConfig(s.rng, s.opt.Config.LeaseDuration, rho, 4*s.opt.Store.Latency.Max, s.opt.Config.RetryInterval/3)
	if !ok {
		// The caller's latency leaves no such config under its lease
		// (a Latency.Max above a quarter of RenewDeadline, say):
		// reconfigure to the timings the run started with.
		return s.opt.Config
	}
	return c
}

// forgedDurations are the LeaseDurations a forger writes, besides the
// honest one: the bounds of int64 and of lease.MaxDuration, an hour, the
// smallest and zero, negative ones.
var forgedDurations = [...]time.Duration{
	math.MaxInt64, math.MaxInt64 - time.Second, lease.MaxDuration + 1, lease.MaxDuration,
	time.Hour, 1, 0, -1, math.MinInt64,
}

// openProblem reports whether a forged record with LeaseDuration d is one
// the sweep does not draw: in a store that loses records, a valid lease
// longer than the honest one l. Once that record is gone the machines wait
// it out in full (its holder might still believe it leads: docs/design.md,
// "Stores that lose records"), where the recovery check wants a leader
// within l plus a retry interval. A valid lease shorter than l is drawn:
// followers wait at least their own LeaseDuration (TestSimForgedShortLease).
func openProblem(d, l time.Duration, lossy bool) bool {
	valid := d > 0 && d <= lease.MaxDuration
	return valid && lossy && d > l
}

// forgedRecord draws the record of a forge: zero Holder, Token and
// Transitions mean the stored ones (a touch of the current record).
func forgedRecord(s *Cluster) fsm.Lease {
	var r fsm.Lease
	switch s.rng.IntN(6) {
	case 0, 1:
		r.Holder = mallory
	case 2, 3, 4:
		// The stored holder.
	default:
		r.Holder = mallory + "\x00" // not a valid name
	}
	r.Token = forgedToken(s)
	l := s.opt.Config.LeaseDuration
	r.LeaseDuration = l
	if !s.chance(0.2) {
		if d := forgedDurations[s.rng.IntN(len(forgedDurations))]; !openProblem(d, l, s.lossy) {
			r.LeaseDuration = d
		}
	}
	switch s.rng.IntN(4) {
	case 0:
		r.Transitions = lease.MaxToken - s.rng.Uint64N(1<<10)
	case 1:
		r.Transitions = math.MaxUint64
	}
	return r
}

// forgedToken draws a forged token: the stored one (0), a low one, one
// near lease.MaxToken (leaving room for a few thousand terms), or one past
// it, up to 2^64−1.
func forgedToken(s *Cluster) uint64 {
	switch s.rng.IntN(6) {
	case 0, 1:
		return 0
	case 2:
		return 1
	case 3:
		return lease.MaxToken - 1<<16 - s.rng.Uint64N(1<<20)
	case 4:
		return math.MaxUint64 - s.rng.Uint64N(3)
	}
	return lease.MaxToken + 1 + s.rng.Uint64N(1<<40)
}

// forgedWatchRecord draws the record of a forged watch event: a foreign
// holder or the stored one, any token, the honest LeaseDuration (so that
// waiting out what the node last saw stays a lease); or, three times in
// ten, the stored record itself (at the forged, newer revision: a renewal
// lookalike).
func forgedWatchRecord(s *Cluster) fsm.Lease {
	if s.chance(0.3) {
		// The stored record at a newer revision: a renewal lookalike,
		// which may keep followers quiet (renewalForgeryExtra).
		return fsm.Lease{}
	}
	r := fsm.Lease{Token: forgedToken(s), LeaseDuration: s.opt.Config.LeaseDuration}
	if s.chance(0.5) {
		r.Holder = mallory
	}
	return r
}

// forgedRevision draws a huge revision.
func forgedRevision(r *rand.Rand) lease.Revision {
	switch r.IntN(3) {
	case 0:
		return 1<<40 + lease.Revision(r.Uint64N(1<<20))
	case 1:
		return 1 << 62
	}
	return math.MaxUint64
}

// extremeConfig draws a valid Config over the whole range Validate
// accepts, bounds included: LeaseDuration from just above
// lease.MinDuration to lease.MaxDuration (or l if not zero), RenewDeadline
// up to LeaseDuration−1ns (or the limit drift rho allows), RetryJitter 0,
// up to the float64 just below 1, or between, RetryInterval from
// lease.MinDuration to its bound, BackendTimeout from lease.MinDuration (or
// from tMin if larger) to RenewDeadline−1ns; RetryInterval at least iMin;
// ErrorInterval lease.MinErrorInterval, lease.MaxDuration or 30s. With l fixed, ok is false when no config
// meets these bounds under it (or none was drawn in 1,000 tries): tMin
// and iMin come from the caller's options, which need not leave room.
func extremeConfig(rng *rand.Rand, l time.Duration, rho float64, tMin, iMin time.Duration) (c lease.Config, ok bool) {
	tlo, ilo := max(int64(lease.MinDuration), int64(tMin)), max(int64(lease.MinDuration), int64(iMin))
	logU := func(lo, hi int64) int64 {
		if hi <= lo {
			return lo
		}
		v := int64(math.Exp(math.Log(float64(lo)) + rng.Float64()*(math.Log(float64(hi))-math.Log(float64(lo)))))
		return min(max(v, lo), hi)
	}
	for try := 0; ; try++ {
		if l != 0 && try == 1000 {
			return lease.Config{}, false
		}
		L := int64(l)
		if L == 0 {
			switch rng.IntN(4) {
			case 0:
				L = int64(lease.MaxDuration)
			case 1:
				L = int64(lease.MinDuration) + 2 + rng.Int64N(60)
			case 2:
				L = logU(int64(lease.MinDuration), int64(lease.MaxDuration))
			default:
				L = logU(int64(time.Millisecond), int64(time.Minute))
			}
		}
		maxR := L - 1
		if rho > 0 {
			maxR = min(maxR, int64(float64(L)*(1-rho)/(1+rho)))
		}
		if maxR < tlo+1 {
			if l != 0 {
				return lease.Config{}, false // L was the only thing left to draw
			}
			continue
		}
		var R int64
		switch rng.IntN(3) {
		case 0:
			R = maxR
		case 1:
			R = logU(tlo+1, maxR)
		default:
			R = tlo + 1 + rng.Int64N(maxR-tlo)
		}
		var J float64
		switch rng.IntN(3) {
		case 1:
			J = math.Nextafter(1, 0)
		case 2:
			J = rng.Float64()
		}
		var T int64
		switch rng.IntN(3) {
		case 0:
			T = R - 1
		case 1:
			T = tlo
		default:
			T = logU(tlo, R-1)
		}
		maxI := int64(float64(R-1) / (1 + J))
		if maxI < ilo {
			continue
		}
		var I int64
		switch rng.IntN(3) {
		case 0:
			I = maxI
		case 1:
			I = ilo
		default:
			I = logU(ilo, maxI)
		}
		c = lease.Config{
			LeaseDuration:  time.Duration(L),
			RenewDeadline:  time.Duration(R),
			RetryInterval:  time.Duration(I),
			RetryJitter:    J,
			BackendTimeout: time.Duration(T),
			ErrorInterval:  [...]time.Duration{lease.MinErrorInterval, lease.MaxDuration, 30 * time.Second}[rng.IntN(3)],
		}
		if rho > 0 && Tolerance(c) < rho {
			continue // float rounding at the drift bound
		}
		for range 4 {
			if c.Validate() == nil {
				return c, true
			}
			if c.RetryInterval > 1 {
				c.RetryInterval-- // float rounding at the bound
			}
		}
	}
}

// extremeOptions draws a run on an extreme config: the timings from
// extremeConfig, and a duration, latencies and drift that keep the run's
// event count bounded (at most about a thousand retry intervals) and its
// operations able to finish (one-way latency at most a quarter of
// BackendTimeout). A run shorter than a lease simply sees no takeover.
func extremeOptions(seed uint64) Options {
	rng := rand.New(rand.NewPCG(seed, seed^0xda942042e4dd58b5))
	cfg, _ := extremeConfig(rng, 0, 0, 0, 0) // with l 0, always ok
	o := Options{Seed: seed, Nodes: 3 + rng.IntN(3), Config: cfg, MaxEvents: 2_000_000}
	if tol := Tolerance(cfg); tol >= 0.002 && rng.IntN(2) == 0 {
		// Drift within what the config tolerates; the reconfigurations
		// are drawn within it too.
		o.Rho = min(0.05, tol/2)
		o.Faults.Drift = true
		if c, ok := extremeConfig(rng, cfg.LeaseDuration, o.Rho, 0, 0); ok {
			o.Config = c
		} else {
			o.Rho, o.Faults.Drift = 0, false
		}
		cfg = o.Config
	}
	l, i := cfg.LeaseDuration, cfg.RetryInterval
	o.Duration = min(40*l, 1000*i, 2*time.Hour)
	o.Store.Latency.Max = max(1, min(cfg.BackendTimeout/4, 20*time.Millisecond))
	o.Store.Latency.Min = max(1, o.Store.Latency.Max/10)
	f := &o.Faults
	f.Crash, f.Pause, f.Partition, f.Loss, f.Slow, f.Release, f.Reconfigure = true, true, true, true, true, true, true
	f.Extreme, f.Targeted, f.Jitter, f.Forge, f.ForgeWatch, f.Rollback, f.Restore = true, true, true, true, true, true, true
	f.DataLoss = rng.IntN(2) == 0
	o.Store.MayLoseRecords = f.DataLoss
	f.CorruptAsValid = rng.IntN(2) == 0
	f.WatchChaos = rng.IntN(4) == 0
	o.Store.NoWatch = rng.IntN(6) == 0
	return o
}
