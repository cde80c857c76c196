package lease_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/tenure-go/tenure/fsm"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/sim"
)

// planGen draws plans over the ranges operators use and beyond: outages
// from a millisecond to a day, drift up to 0.5, latency up to a second
// (and up to a tenth of the outage), and a failover from half the outage to thirty
// times it, so that some plans can be met and some cannot.
func planGen() *rapid.Generator[lease.Plan] {
	return rapid.Custom(func(t *rapid.T) lease.Plan {
		// Log-uniform: as many short outages as long ones.
		outage := int64(float64(time.Millisecond) * math.Pow(10, rapid.Float64Range(0, math.Log10(float64(24*time.Hour/time.Millisecond))).Draw(t, "log10(outage/ms)")))
		failover := float64(outage) * rapid.Float64Range(0.5, 30).Draw(t, "failover/outage")
		return lease.Plan{
			StoreOutage: time.Duration(outage),
			ClockDrift:  rapid.Float64Range(0, 0.5).Draw(t, "drift"),
			Failover:    time.Duration(min(failover, float64(lease.MaxDuration))),
			Latency:     time.Duration(rapid.Int64Range(0, min(outage/10, int64(time.Second))).Draw(t, "latency")),
			Elections:   rapid.IntRange(0, 1_000_000).Draw(t, "elections"),
		}
	})
}

func TestPlanConfigIsValidSafeAndMeetsThePlan(t *testing.T) {
	met := 0
	rapid.Check(t, func(t *rapid.T) {
		p := planGen().Draw(t, "plan")
		c, rep, err := p.Config()
		if err != nil {
			if !errors.Is(err, lease.ErrInvalidPlan) {
				t.Fatalf("error %v does not wrap ErrInvalidPlan", err)
			}
			if c != (lease.Config{}) || rep != (lease.Report{}) {
				t.Fatalf("error %v came with Config %+v and Report %+v", err, c, rep)
			}
			return
		}
		met++
		if err := c.Validate(); err != nil {
			t.Fatalf("planned Config %+v is invalid: %v", c, err)
		}
		if !lease.SafeDrift(c, p.ClockDrift) {
			t.Fatalf("planned Config %+v breaks ρ ≤ (L−R)/(L+R) for ρ = %v", c, p.ClockDrift)
		}
		if l, r := float64(c.LeaseDuration), float64(c.RenewDeadline); p.ClockDrift > (l-r)/(l+r) {
			t.Fatalf("planned Config %+v: ρ = %v > (L−R)/(L+R) = %v", c, p.ClockDrift, (l-r)/(l+r))
		}
		if rep.StoreOutage < p.StoreOutage {
			t.Fatalf("planned Config %+v tolerates a %v outage, %v was asked", c, rep.StoreOutage, p.StoreOutage)
		}
		if rep.Failover > p.Failover {
			t.Fatalf("planned Config %+v fails over in %v, %v was asked", c, rep.Failover, p.Failover)
		}
		if want := sim.LivenessBound([]lease.Config{c}, p.ClockDrift, p.Latency); rep.Failover != want {
			t.Fatalf("Report.Failover %v, sim.LivenessBound %v", rep.Failover, want)
		}
		if want := sim.HandoverBound(p.Latency); rep.Handover != want {
			t.Fatalf("Report.Handover %v, sim.HandoverBound %v", rep.Handover, want)
		}
	})
	t.Logf("%d of the drawn plans were met", met)
	if met == 0 {
		t.Fatal("no drawn plan could be met: the property checked nothing")
	}
}

func TestPlanReportFailoverIsSimLivenessBound(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ms := func(label string, lo, hi int64) time.Duration {
			return time.Duration(rapid.Int64Range(lo, hi).Draw(t, label)) * time.Millisecond
		}
		r := ms("R", 2, 3_600_000)
		c := lease.Config{
			LeaseDuration:  r + ms("L-R", 1, 3_600_000),
			RenewDeadline:  r,
			RetryInterval:  ms("P", 1, int64(r/time.Millisecond)/2),
			RetryJitter:    rapid.Float64Range(0, 0.99).Draw(t, "J"),
			BackendTimeout: ms("T", 1, int64(r/time.Millisecond)-1),
			ErrorInterval:  time.Second,
		}
		if c.Validate() != nil {
			t.Skip("jitter too large for the drawn RetryInterval")
		}
		rho := rapid.Float64Range(0, 0.99).Draw(t, "rho")
		lat := time.Duration(rapid.Int64Range(0, int64(c.RetryInterval-1)/2).Draw(t, "lat"))
		rep, err := lease.PlanReport(c, rho, lat, 0)
		if err != nil {
			t.Fatal(err)
		}
		if want := sim.LivenessBound([]lease.Config{c}, rho, lat); rep.Failover != want {
			t.Fatalf("PlanReport(%+v, %v, %v).Failover = %v, sim.LivenessBound = %v", c, rho, lat, rep.Failover, want)
		}
		if want := sim.HandoverBound(lat); rep.Handover != want {
			t.Fatalf("PlanReport(%+v, %v, %v).Handover = %v, sim.HandoverBound = %v", c, rho, lat, rep.Handover, want)
		}
	})
}

func TestPlanReportRefusesWhatItCannotVouchFor(t *testing.T) {
	c := lease.DefaultConfig()
	for _, tc := range []struct {
		name      string
		c         lease.Config
		rho       float64
		lat       time.Duration
		elections int
		want      string
	}{
		{"invalid config", lease.Config{}, 0, 0, 0, "LeaseDuration is 0s"},
		{"NaN drift", c, math.NaN(), 0, 0, "ClockDrift is NaN"},
		{"drift of 1", c, 1, 0, 0, "ClockDrift is 1"},
		{"negative latency", c, 0, -1, 0, "Latency is -1ns"},
		{"huge latency", c, 0, math.MaxInt64, 0, "Latency is 2562047h47m16.854775807s"},
		{"round trip longer than the pause", c, 0, time.Second, 0, "Latency 1s is too long for RetryInterval 2s"},
		{"negative elections", c, 0, 0, -1, "Elections is -1"},
	} {
		_, err := lease.PlanReport(tc.c, tc.rho, tc.lat, tc.elections)
		if !errors.Is(err, lease.ErrInvalidPlan) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: PlanReport error %v, want one wrapping ErrInvalidPlan containing %q", tc.name, err, tc.want)
		}
	}
}

func TestPlanConfigNamesTheRequirementItCannotMeet(t *testing.T) {
	ok := lease.Plan{StoreOutage: 30 * time.Second, ClockDrift: 0.05, Failover: time.Minute, Elections: 10}
	for _, tc := range []struct {
		name string
		edit func(*lease.Plan)
		want string
	}{
		{"zero outage", func(p *lease.Plan) { p.StoreOutage = 0 }, "StoreOutage is 0s, must be above 0"},
		{"negative outage", func(p *lease.Plan) { p.StoreOutage = -time.Second }, "StoreOutage is -1s, must be above 0"},
		{"huge outage", func(p *lease.Plan) { p.StoreOutage = math.MaxInt64 }, "must be at most 168h0m0s (lease.MaxDuration)"},
		{"outage needing a lease above MaxDuration", func(p *lease.Plan) { p.StoreOutage = 6 * 24 * time.Hour; p.Failover = lease.MaxDuration }, "needs LeaseDuration"},
		{"outage too short for any Config", func(p *lease.Plan) { p.StoreOutage = time.Microsecond }, "too short for any Config"},
		{"NaN drift", func(p *lease.Plan) { p.ClockDrift = math.NaN() }, "ClockDrift is NaN, must be in [0, 1)"},
		{"negative drift", func(p *lease.Plan) { p.ClockDrift = -0.1 }, "ClockDrift is -0.1, must be in [0, 1)"},
		{"drift of 1", func(p *lease.Plan) { p.ClockDrift = 1 }, "ClockDrift is 1, must be in [0, 1)"},
		{"infinite drift", func(p *lease.Plan) { p.ClockDrift = math.Inf(1) }, "ClockDrift is +Inf"},
		{"zero failover", func(p *lease.Plan) { p.Failover = 0 }, "Failover is 0s, must be above 0"},
		{"huge failover", func(p *lease.Plan) { p.Failover = math.MaxInt64 }, "Failover is 2562047h47m16.854775807s, must be at most"},
		{"negative latency", func(p *lease.Plan) { p.Latency = -1 }, "Latency is -1ns, must be at least 0"},
		{"huge latency", func(p *lease.Plan) { p.Latency = math.MaxInt64 }, "Latency is 2562047h47m16.854775807s, must be at most"},
		{"negative elections", func(p *lease.Plan) { p.Elections = -1 }, "Elections is -1, must be at least 0"},
		{"failover shorter than the outage allows", func(p *lease.Plan) { p.Failover = 30 * time.Second }, "Failover 30s cannot be met"},
		{"drift too large for the failover", func(p *lease.Plan) { p.ClockDrift = 0.5 }, "Failover 1m0s cannot be met"},
		{"outage below what the shortest RetryInterval allows", func(p *lease.Plan) {
			*p = lease.Plan{StoreOutage: 5 * time.Millisecond, Failover: time.Hour}
		}, "StoreOutage 5ms cannot be met by a planned Config: its RetryInterval is at least 1ms (lease.MinDuration), and so at most 4.8ms is tolerated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := ok
			tc.edit(&p)
			c, _, err := p.Config()
			if !errors.Is(err, lease.ErrInvalidPlan) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Config() = %+v, %v; want an error wrapping ErrInvalidPlan containing %q", c, err, tc.want)
			}
		})
	}
	if _, _, err := ok.Config(); err != nil {
		t.Fatalf("the base plan: %v", err)
	}
}

func TestSafeDriftIsTheDesignBound(t *testing.T) {
	c := lease.DefaultConfig() // L = 15s, R = 10s: ρ ≤ 0.2
	for _, tc := range []struct {
		rho  float64
		want bool
	}{{0, true}, {0.1, true}, {0.2, true}, {0.2001, false}, {0.9, false}, {-0.01, false}, {1, false}, {math.NaN(), false}} {
		if got := lease.SafeDrift(c, tc.rho); got != tc.want {
			t.Errorf("SafeDrift(L=15s, R=10s, %v) = %v, want %v", tc.rho, got, tc.want)
		}
	}
}

func TestPlanReportSaturates(t *testing.T) {
	c := lease.Config{LeaseDuration: lease.MaxDuration, RenewDeadline: lease.MaxDuration - 1, RetryInterval: time.Millisecond, BackendTimeout: time.Millisecond, ErrorInterval: time.Second}
	rep, err := lease.PlanReport(c, 0.999999999999, 0, math.MaxInt)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Failover != math.MaxInt64 {
		t.Errorf("Failover = %v, want the largest Duration", rep.Failover)
	}
	if math.IsInf(rep.WritesPerMinute, 0) || rep.WritesPerMinute <= 0 {
		t.Errorf("WritesPerMinute = %v", rep.WritesPerMinute)
	}
	short := lease.Config{LeaseDuration: 20 * time.Millisecond, RenewDeadline: 10 * time.Millisecond, RetryInterval: 4 * time.Millisecond, BackendTimeout: time.Millisecond, ErrorInterval: time.Second}
	if rep, err := lease.PlanReport(short, 0, time.Millisecond, 0); err != nil || rep.StoreOutage != 0 {
		t.Errorf("StoreOutage = %v, %v; want 0 when the round trips exceed what the deadline leaves", rep.StoreOutage, err)
	}
}

// runOutage drives a leader's fsm.Machine with config c against a store
// that answers at once, except that every renewal sent in the outage
// [o, o+d) fails, and keeps the term alive as long as it can: the one
// whose timeout would end after o+d fails just before o+d instead, so
// that the next goes out just before the outage ends and fails in turn,
// after the full BackendTimeout. The outage begins with the first
// renewal, a pause after the acquire: the term has R − I left then. It
// reports whether the leader still leads, with a renewed term, at
// 2·RenewDeadline after the acquire.
func runOutage(t *testing.T, c lease.Config, d time.Duration) bool {
	t.Helper()
	m, err := fsm.New(fsm.Options{Identity: "a", Config: c})
	if err != nil {
		t.Fatal(err)
	}
	o, e := c.RetryInterval, c.RetryInterval+d
	var (
		rev     lease.Revision
		pending *fsm.Event // the answer to the request in flight
		lost    bool
	)
	handle := func(acts []fsm.Action, now time.Duration) {
		for _, a := range acts {
			switch a.Kind {
			case fsm.Read:
				pending = &fsm.Event{Kind: fsm.ReadDone, Now: now, Absent: true}
			case fsm.Swap:
				if now >= o && now < e {
					fail := now + c.BackendTimeout
					if fail >= e-1 && now+c.RetryInterval <= e-1 && now < e-1 {
						fail = e - 1
					}
					pending = &fsm.Event{Kind: fsm.SwapFailed, Now: fail}
					continue
				}
				rev++
				pending = &fsm.Event{Kind: fsm.SwapDone, Now: now, Lease: a.Next, Revision: rev}
			case fsm.StoppedLeading:
				lost = true
			}
		}
	}
	handle(m.Step(fsm.Event{Kind: fsm.Tick}), 0)
	for now := time.Duration(0); now < 2*c.RenewDeadline && !lost; {
		if pending != nil && pending.Now <= m.NextWake() {
			ev := *pending
			pending, now = nil, ev.Now
			handle(m.Step(ev), now)
			continue
		}
		now = m.NextWake()
		handle(m.Step(fsm.Event{Kind: fsm.Tick, Now: now}), now)
	}
	return !lost && m.State() == fsm.Leader
}

func TestReportedStoreOutageIsWhatTheLeaderSurvives(t *testing.T) {
	for _, c := range []lease.Config{
		{LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryInterval: time.Second, BackendTimeout: 1500 * time.Millisecond, ErrorInterval: time.Second},
		{LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryInterval: 2 * time.Second, BackendTimeout: 500 * time.Millisecond, ErrorInterval: time.Second},
		{LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryInterval: 400 * time.Millisecond, BackendTimeout: 400 * time.Millisecond, ErrorInterval: time.Second},
	} {
		rep, err := lease.PlanReport(c, 0, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		d := rep.StoreOutage
		if !runOutage(t, c, d) {
			t.Errorf("%+v: the leader lost its term in a %v outage, the tolerated one", c, d)
		}
		if runOutage(t, c, d+time.Millisecond) {
			t.Errorf("%+v: the leader kept its term in a %v outage, beyond the tolerated %v", c, d+time.Millisecond, d)
		}
	}
}

func ExamplePlan_Config() {
	// Survive a 30s store outage, with clocks off by up to 5%, and fail
	// over within a minute.
	p := lease.Plan{StoreOutage: 30 * time.Second, ClockDrift: 0.05, Failover: time.Minute, Elections: 1000}
	c, rep, err := p.Config()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.LeaseDuration, c.RenewDeadline, c.RetryInterval, c.BackendTimeout)
	fmt.Println("failover within", rep.Failover.Round(time.Millisecond))
	fmt.Println("survives an outage of", rep.StoreOutage.Truncate(time.Millisecond))
	fmt.Printf("%.0f writes a minute\n", rep.WritesPerMinute)

	p.Failover = 40 * time.Second
	_, _, err = p.Config()
	fmt.Println(errors.Is(err, lease.ErrInvalidPlan))
	// Output:
	// 47.458s 39.375s 3.579s 3.936s
	// failover within 55.985s
	// survives an outage of 30.001s
	// 16764 writes a minute
	// true
}
