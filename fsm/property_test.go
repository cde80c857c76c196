package fsm

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/tenure-go/tenure/lease"
	"pgregory.net/rapid"
)

// The generators below cover the whole range of every field, with its
// edges drawn often: the bounds of the type, the bounds of lease, and
// their neighbours.

func anyDuration() *rapid.Generator[time.Duration] {
	return rapid.OneOf(
		rapid.SampledFrom([]time.Duration{math.MinInt64, -1, 0, 1, lease.MaxDuration - 1, lease.MaxDuration, lease.MaxDuration + 1, math.MaxInt64 - 1, math.MaxInt64}),
		rapid.Map(rapid.Int64(), func(v int64) time.Duration { return time.Duration(v) }),
		rapid.Map(rapid.Int64Range(0, int64(lease.MaxDuration)), func(v int64) time.Duration { return time.Duration(v) }),
	)
}

func anyToken() *rapid.Generator[uint64] {
	return rapid.OneOf(
		rapid.SampledFrom([]uint64{0, 1, 2, lease.MaxToken - 1, lease.MaxToken, lease.MaxToken + 1, math.MaxUint64 - 1, math.MaxUint64}),
		rapid.Uint64(),
		rapid.Uint64Range(0, 20),
	)
}

func anyFloat() *rapid.Generator[float64] {
	return rapid.OneOf(
		rapid.SampledFrom([]float64{math.NaN(), math.Inf(1), math.Inf(-1), -1, 0, 0.5, math.Nextafter(1, 0), 1, 2, 1e300}),
		rapid.Float64(),
	)
}

func anyConfig(t *rapid.T, label string) lease.Config {
	return lease.Config{
		LeaseDuration:  anyDuration().Draw(t, label+".LeaseDuration"),
		RenewDeadline:  anyDuration().Draw(t, label+".RenewDeadline"),
		RetryInterval:  anyDuration().Draw(t, label+".RetryInterval"),
		RetryJitter:    anyFloat().Draw(t, label+".RetryJitter"),
		BackendTimeout: anyDuration().Draw(t, label+".BackendTimeout"),
		ErrorInterval:  anyDuration().Draw(t, label+".ErrorInterval"),
	}
}

// validConfig draws a Config that Validate accepts, from the smallest
// durations it accepts (lease.MinDuration, lease.MinErrorInterval) up to
// lease.MaxDuration.
func validConfig(t *rapid.T, label string) lease.Config {
	upTo := func(lo, hi int64, name string) time.Duration {
		return time.Duration(rapid.OneOf(rapid.Just(hi), rapid.Just(lo), rapid.Int64Range(lo, hi)).Draw(t, label+"."+name))
	}
	low := int64(lease.MinDuration)
	c := lease.Config{LeaseDuration: upTo(low+2, int64(lease.MaxDuration), "LeaseDuration")}
	c.RenewDeadline = upTo(low+1, int64(c.LeaseDuration)-1, "RenewDeadline")
	c.BackendTimeout = upTo(low, int64(c.RenewDeadline)-1, "BackendTimeout")
	c.RetryJitter = rapid.OneOf(rapid.Just(0.0), rapid.Float64Range(0, 0.999)).Draw(t, label+".RetryJitter")
	c.RetryInterval = upTo(low, max(low, int64(float64(c.RenewDeadline-1)/(1+c.RetryJitter))-1), "RetryInterval")
	c.ErrorInterval = upTo(int64(lease.MinErrorInterval), int64(lease.MaxDuration), "ErrorInterval")
	if c.Validate() != nil {
		c.RetryJitter = 0
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("validConfig drew an invalid config: %v", err)
	}
	return c
}

// hostileRand returns numbers from anywhere, not only [0, 1).
type hostileRand struct {
	t *rapid.T
}

func (r hostileRand) Float64() float64 { return anyFloat().Draw(r.t, "rand") }

// TestPropertyNewRejectsInvalidConfigs feeds New and Reconfigure configs
// from the whole range of every field: New fails exactly when Validate
// does, and an invalid Reconfigure changes nothing.
func TestPropertyNewRejectsInvalidConfigs(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := anyConfig(t, "cfg")
		m, err := New(Options{Identity: "me", Config: c})
		if verr := c.Validate(); (err == nil) != (verr == nil) {
			t.Fatalf("New = %v, Validate = %v", err, verr)
		}
		if err != nil {
			if !errors.Is(err, ErrInvalidOptions) || !errors.Is(err, lease.ErrInvalidConfig) {
				t.Fatalf("New = %v, want ErrInvalidOptions and lease.ErrInvalidConfig", err)
			}
			m, _ = New(Options{Identity: "me", Config: testConfig()})
		}
		before := m.Config()
		r := anyConfig(t, "reconf")
		m.Step(Event{Kind: Reconfigure, Now: anyDuration().Draw(t, "now"), Config: r})
		if r.Validate() != nil && m.Config() != before {
			t.Fatalf("an invalid Reconfigure changed the config to %+v", m.Config())
		}
		if w := m.NextWake(); w != Never && w < 0 {
			t.Fatalf("NextWake = %v", w)
		}
	})
}

// TestPropertyNoOverflow drives a machine with any valid Config (up to
// lease.MaxDuration) and any events: every field of every event from its
// whole range, times that jump anywhere, answers to nothing, records out of
// bounds, revisions that go back. It checks after every step:
//
//   - nothing panics, and NextWake is after the step's time, or Never;
//   - no record out of bounds is ever in the machine's state;
//   - a new term's token is above every token the machine accepted, at
//     most lease.MaxToken and never 0, and terms' tokens strictly increase;
//   - every record it asks to write passes the bounds of a stored record;
//   - after a term ends for a Resign, no acquire goes out for a
//     LeaseDuration unless a record held by another node, or one with a
//     token above the resigned term's, was accepted;
//   - no busy loop: at one instant, with W watch events, no more than
//     (1+maxQuick)·(2+W) requests go out;
//   - terms nest properly: StoppedLeading ends the open term, the state is
//     Leader exactly while a term is open, and none is open once stopped.
func TestPropertyNoOverflow(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := validConfig(t, "cfg")
		var rnd Rand
		if rapid.Bool().Draw(t, "hostile rand") {
			rnd = hostileRand{t}
		}
		lossy := rapid.Bool().Draw(t, "lossy")
		authentic := rapid.Bool().Draw(t, "authentic")
		guarded := rapid.Bool().Draw(t, "guarded")
		m, err := New(Options{Identity: "me", Config: cfg, Rand: rnd, LossyStore: lossy, AuthenticWatch: authentic, GuardedRelease: guarded})
		if err != nil {
			t.Fatal(err)
		}
		var (
			now            time.Duration // the machine's time: the largest Now so far, from 0
			maxAccepted    uint64        // the largest in-bounds token answered to a request in flight
			lastStarted    uint64
			openTerm       uint64 // the token of the term started and not yet stopped
			pendingRead    bool
			pendingSwap    bool
			lastSwap       Action
			lastRev        lease.Revision
			segment        time.Duration = -1 // the instant of the current burst
			burst, watched int                // requests and watch events at that instant
			yieldUntil     time.Duration      // a resign's wait: no acquire before it, unless another holder was accepted
			yieldToken     uint64             // the resigned term's token: a record above it ends the wait too
		)
		holders := rapid.SampledFrom([]string{"", "me", "other"})
		kinds := rapid.SampledFrom([]EventKind{Tick, ReadDone, ReadFailed, Watched, SwapDone, SwapConflict, SwapFailed, Stop, Reconfigure, Resign, 0, 200})
		steps := rapid.IntRange(1, 200).Draw(t, "steps")
		for i := 0; i < steps && !m.Stopped(); i++ {
			ev := Event{Kind: kinds.Draw(t, "kind")}
			switch rapid.IntRange(0, 5).Draw(t, "time") {
			case 0:
				ev.Now = now
			case 1, 2:
				ev.Now = sat(now, time.Duration(rapid.Int64Range(0, int64(3*cfg.LeaseDuration)).Draw(t, "dt")))
			case 3:
				ev.Now = m.NextWake()
			case 4:
				ev.Now = sat(now, anyDuration().Draw(t, "jump"))
			default:
				ev.Now = anyDuration().Draw(t, "now")
			}
			if rapid.IntRange(0, 3).Draw(t, "echo") == 0 && pendingSwap {
				// A reply that echoes the swap: the common case, to reach
				// Leader often.
				ev.Kind = SwapDone
				ev.Lease = lastSwap.Next
				ev.Revision = lastRev + 1
				if lastRev == math.MaxUint64 {
					ev.Revision = lastRev
				}
			} else {
				ev.Lease = Lease{
					Holder:        holders.Draw(t, "holder"),
					Token:         anyToken().Draw(t, "token"),
					Transitions:   anyToken().Draw(t, "transitions"),
					LeaseDuration: anyDuration().Draw(t, "leaseDuration"),
				}
				ev.Revision = rapid.OneOf(
					rapid.SampledFrom([]lease.Revision{0, 1, math.MaxUint64 - 1, math.MaxUint64}),
					rapid.Map(rapid.Uint64(), func(v uint64) lease.Revision { return lease.Revision(v) }),
					rapid.Map(rapid.Uint64Range(0, 3), func(v uint64) lease.Revision { return lastRev + lease.Revision(v) - 1 }),
				).Draw(t, "revision")
				ev.Absent = rapid.IntRange(0, 7).Draw(t, "absent") == 0
				ev.Corrupt = rapid.IntRange(0, 15).Draw(t, "corrupt") == 0
			}
			ev.Release = rapid.Bool().Draw(t, "release")
			if ev.Kind == Reconfigure {
				if rapid.Bool().Draw(t, "valid reconf") {
					ev.Config = validConfig(t, "reconf")
				} else {
					ev.Config = anyConfig(t, "reconf")
				}
			}
			if ev.Kind == Stop && rapid.IntRange(0, 3).Draw(t, "really stop") > 0 {
				ev.Kind = Tick
			}

			// What a correct machine may accept from this event.
			answer := false
			switch ev.Kind {
			case ReadDone:
				answer = pendingRead
			case SwapDone, SwapConflict:
				answer = pendingSwap
			}
			acceptable := answer && !ev.Absent && !ev.Corrupt && ev.Revision != 0 && InBounds(ev.Lease)
			maxBefore := maxAccepted
			if acceptable {
				maxAccepted = max(maxAccepted, ev.Lease.Token)
				lastRev = ev.Revision
				if ev.Lease.Holder == "other" || ev.Lease.Token > yieldToken {
					yieldUntil = 0
				}
			}
			switch ev.Kind {
			case ReadDone, ReadFailed:
				pendingRead = false
			case SwapDone, SwapConflict, SwapFailed:
				pendingSwap = false
			}
			if ev.Now > now {
				now = ev.Now
			}
			if now != segment {
				segment, burst, watched = now, 0, 0
			}
			if ev.Kind == Watched {
				watched++
			}
			// One scheduled request and one hinted read (a hint may come
			// from an earlier instant), one more hinted read per watch
			// event, each followed by at most maxQuick quick requests.
			limit := (1 + maxQuick) * (2 + watched)

			acts := m.Step(ev)
			if authentic && ev.Kind == Watched && !ev.Absent && !ev.Corrupt && ev.Revision != 0 && InBounds(ev.Lease) && ev.Lease.Holder == "" {
				// On a store whose events are authentic, a release shown by
				// one may be taken in as an observation (witnessed): what
				// the machine now observes says whether it was.
				if l, rev, absent, ok := m.Observed(); ok && !absent && rev == ev.Revision && l == ev.Lease {
					maxAccepted = max(maxAccepted, ev.Lease.Token)
					lastRev = ev.Revision
				}
			}

			for _, a := range acts {
				switch a.Kind {
				case Read:
					pendingRead = true
					burst++
				case Swap:
					pendingSwap, lastSwap = true, a
					burst++
					if !InBounds(a.Next) || a.Next.Holder != "" && a.Next.Holder != "me" || a.Next.Holder == "" && a.Swap != Release {
						t.Fatalf("step %d: swap writes %+v", i, a.Next)
					}
					if a.Swap == Acquire && (a.Next.Token <= maxAccepted || a.Next.Token > lease.MaxToken || a.Next.Token == 0) {
						t.Fatalf("step %d: acquire with token %d; largest accepted %d", i, a.Next.Token, maxAccepted)
					}
					if a.Swap == Acquire && now < yieldUntil {
						t.Fatalf("step %d: acquire at %v, before the resign's wait ends at %v", i, now, yieldUntil)
					}
					if a.Next.Holder == "me" && a.Next.LeaseDuration != m.Config().LeaseDuration {
						t.Fatalf("step %d: writes LeaseDuration %v, config says %v", i, a.Next.LeaseDuration, m.Config().LeaseDuration)
					}
				case StartedLeading:
					if a.Token < maxBefore || a.Token < maxAccepted || a.Token <= lastStarted || a.Token > lease.MaxToken || a.Token == 0 {
						t.Fatalf("step %d: term with token %d; largest accepted %d, last term %d", i, a.Token, maxAccepted, lastStarted)
					}
					lastStarted = a.Token
					if openTerm != 0 {
						t.Fatalf("step %d: term %d starts while term %d is open", i, a.Token, openTerm)
					}
					openTerm = a.Token
				case StoppedLeading:
					if a.Token != openTerm || openTerm == 0 {
						t.Fatalf("step %d: term %d stops; the open term is %d", i, a.Token, openTerm)
					}
					openTerm = 0
					if a.Reason == ReasonResigned && ev.Kind != Resign {
						t.Fatalf("step %d: %v ends term %d for %v", i, ev.Kind, a.Token, a.Reason)
					}
					if a.Reason == ReasonResigned {
						yieldUntil, yieldToken = sat(now, m.Config().LeaseDuration), a.Token
					}
				case Done:
					pendingRead, pendingSwap = false, false
				}
			}
			if burst > limit {
				t.Fatalf("step %d: %d requests at %v without time passing (limit %d)", i, burst, now, limit)
			}
			if w := m.NextWake(); w != Never && w <= now {
				t.Fatalf("step %d (%v at %v): NextWake = %v, not after now", i, ev.Kind, ev.Now, w)
			}
			if l, _, absent, ok := m.Observed(); ok && !absent && !InBounds(l) {
				t.Fatalf("step %d: the machine holds %+v, out of bounds", i, l)
			}
			if m.TokensExhausted() != (maxAccepted >= lease.MaxToken) {
				t.Fatalf("step %d: TokensExhausted = %v, largest accepted %d", i, m.TokensExhausted(), maxAccepted)
			}
			// The driver ends each term once, at its StoppedLeading: every
			// term that starts stops, before the machine stops.
			if (m.State() == Leader) != (openTerm != 0) {
				t.Fatalf("step %d: state %v with open term %d", i, m.State(), openTerm)
			}
			if m.Stopped() && openTerm != 0 {
				t.Fatalf("step %d: stopped with term %d open", i, openTerm)
			}
			if m.Leading(now) && m.State() != Leader {
				t.Fatalf("step %d: Leading in state %v", i, m.State())
			}
			if tok, _, ok := m.Term(); ok && (tok == 0 || tok > lease.MaxToken) {
				t.Fatalf("step %d: term token %d", i, tok)
			}
		}
	})
}
