package sim

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/fsm"
	"github.com/tenure-go/tenure/lease"
)

// Faults switches the fault kinds the random schedule draws from. Each is
// drawn from the seed; a zero Faults runs a calm cluster.
type Faults struct {
	// Drift gives every node a clock rate within ±Rho of real time.
	Drift bool
	// DriftBeyond gives clock rates at ±BeyondRho, a drift larger than the
	// configuration tolerates ((L−R)/(L+R)); it can make two leaders.
	DriftBeyond bool
	// Crash crashes nodes (local state lost) and restarts them, with the
	// same identity or a new one.
	Crash bool
	// Pause freezes a process for longer than the lease: nothing runs, its
	// timers fire late, replies queue.
	Pause bool
	// Partition cuts a node's requests, its responses, or both.
	Partition bool
	// Loss drops requests (not applied) and responses (applied; the caller
	// times out) at random for a while.
	Loss bool
	// Slow makes the store answer later than BackendTimeout for a while.
	Slow bool
	// WatchChaos delays, duplicates and reorders watch events.
	WatchChaos bool
	// DataLoss makes the record vanish (a Redis restart without
	// persistence); revisions and the token floor survive. The machines run
	// with LossyStore.
	DataLoss bool
	// Release stops a node gracefully (it releases the lease) and starts it
	// again later.
	Release bool
	// Reconfigure gives nodes other valid timings.
	Reconfigure bool

	// The adversary (adversary.go, targeted.go). While any of Forge,
	// ForgeWatch, Rollback, Restore, Targeted, Jitter or Extreme is on, the
	// random schedule is drawn by advSchedule, on a time scale set by the
	// lease, and every reconfiguration keeps the initial LeaseDuration.

	// Forge lets an outside writer store forged records for a while:
	// extreme LeaseDurations (math.MinInt64 to math.MaxInt64), tokens near
	// lease.MaxToken and beyond it, foreign and invalid holders. At the end
	// of its window it removes its record if it still stands.
	Forge bool
	// ForgeWatch pushes records the store does not hold, with huge
	// revisions, to some nodes' watch feeds.
	ForgeWatch bool
	// Rollback rewinds the store's record and revision to an earlier
	// revision (a replica failover, an AOF rollback).
	Rollback bool
	// Restore restores a stale backup: revision 1, holder cleared.
	Restore bool
	// CorruptAsValid makes the store and the node driver hand records that
	// fail store.ValidateStored to the machine as valid observations, so
	// that the machine itself must defend against them. Otherwise the
	// simulation does what a validating store and lead do: a read or a
	// swap of such a record fails with ErrCorruptRecord (nothing written)
	// and the machine gets the answer with Event.Corrupt; a watch event
	// carrying it is a corrupt hint.
	CorruptAsValid bool
	// Targeted aims faults at the leader when events trigger them: a
	// reconfiguration while a renewal is in flight followed by a cut, and a
	// follower's operation held in flight before the leader goes silent.
	Targeted bool
	// Jitter delays single messages, each drawn on its own.
	Jitter bool
	// Extreme draws reconfigurations over the whole valid range of
	// lease.Config, keeping the initial LeaseDuration (advschedule.go).
	Extreme bool
}

// AllFaults returns every fault switched on, except DriftBeyond.
func AllFaults() Faults {
	return Faults{Drift: true, Crash: true, Pause: true, Partition: true, Loss: true,
		Slow: true, WatchChaos: true, DataLoss: true, Release: true, Reconfigure: true}
}

// Options configure a simulation.
type Options struct {
	// Seed draws everything random: latencies, clock rates, faults.
	Seed uint64
	// Nodes is the number of nodes (default 5).
	Nodes int
	// Duration is the simulated real time (default 10 minutes).
	Duration time.Duration
	// Config holds the timings every node starts with (default
	// lease.DefaultConfig()).
	Config lease.Config
	// Rho is the clock drift bound of Faults.Drift (default 0.05). It must
	// stay within (L−R)/(L+R) of every config used.
	Rho float64
	// BeyondRho is the drift of Faults.DriftBeyond (default 0.4).
	BeyondRho float64
	// LatencyMin and LatencyMax bound one-way network latency in calm
	// times (defaults 1ms and 20ms).
	LatencyMin, LatencyMax time.Duration
	// NoWatch turns the store's watch feed off: nodes only poll.
	NoWatch bool
	// Faults says which faults the random schedule draws.
	Faults Faults
	// Schedule, if not nil, replaces the random fault schedule.
	Schedule []Fault
	// LossyStore overrides the machines' LossyStore setting; by default it
	// is on exactly when Faults.DataLoss is, or Schedule holds a data loss.
	LossyStore *bool
	// Trace, if not nil, receives one line per simulated event.
	Trace io.Writer
	// Record keeps the timeline that Timeline and SVG render.
	Record bool
	// MaxEvents stops a run that processes more events (a livelock); zero
	// means 50 million.
	MaxEvents uint64
}

// Violation is a failed check.
type Violation struct {
	// At is the real time of the failure.
	At time.Duration
	// Check names the check: "one-leader", "tokens", "fence", "liveness",
	// "handover", "monotonic", "transition", "livelock", and those of
	// budget.go: "budget", "overflow", "recovery".
	Check string
	// Msg says what went wrong.
	Msg string
}

func (v Violation) Error() string {
	return fmt.Sprintf("%s: %s check failed: %s", fmtTime(int64(v.At)), v.Check, v.Msg)
}

// Result sums up a run.
type Result struct {
	// Seed is the seed that was run.
	Seed uint64
	// Events is the number of simulated events processed.
	Events uint64
	// Terms is the number of leadership terms started.
	Terms int
	// FenceAccepted and FenceRejected count fenced writes.
	FenceAccepted, FenceRejected int
	// Violation is the first failed check, or nil.
	Violation *Violation
}

// Err returns the violation as an error, or nil.
func (r Result) Err() error {
	if r.Violation == nil {
		return nil
	}
	return r.Violation
}

// Cluster is one simulated cluster. Build it with New and run it with Run;
// it is single-threaded and deterministic: the same Options give the same
// run, event for event.
type Cluster struct {
	opt    Options
	rng    *rand.Rand
	now    int64
	seq    uint64
	queue  eventHeap
	nodes  []*node
	store  simStore
	net    network
	chk    checker
	reg    fence.Register
	lossy  bool
	rho    float64 // largest |rate−1| of any node
	events uint64
	tl     *timeline
	faults []Fault
	res    Result
	buf    []byte // trace line buffer
	adv    adversary
}

// New validates o, fills in defaults and builds a simulation.
func New(o Options) (*Cluster, error) {
	if o.Nodes == 0 {
		o.Nodes = 5
	}
	if o.Duration == 0 {
		o.Duration = 10 * time.Minute
	}
	if o.Config == (lease.Config{}) {
		o.Config = lease.DefaultConfig()
	}
	if o.Rho == 0 {
		o.Rho = 0.05
	}
	if o.BeyondRho == 0 {
		o.BeyondRho = 0.4
	}
	if o.LatencyMin == 0 {
		o.LatencyMin = time.Millisecond
	}
	if o.LatencyMax == 0 {
		o.LatencyMax = 20 * time.Millisecond
	}
	if o.MaxEvents == 0 {
		o.MaxEvents = 50_000_000
	}
	switch {
	case o.Nodes < 1 || o.Nodes > 64:
		return nil, fmt.Errorf("sim: Nodes is %d, must be in [1, 64]", o.Nodes)
	case o.Duration < 0:
		return nil, errors.New("sim: Duration is negative")
	case o.Rho < 0 || o.Rho >= 1 || o.BeyondRho < 0 || o.BeyondRho >= 1:
		return nil, errors.New("sim: Rho and BeyondRho must be in [0, 1)")
	case o.LatencyMin < 0 || o.LatencyMax < o.LatencyMin:
		return nil, errors.New("sim: need 0 <= LatencyMin <= LatencyMax")
	}
	if err := o.Config.Validate(); err != nil {
		return nil, err
	}
	if o.Faults.Drift && !o.Faults.DriftBeyond {
		if lim := tolerance(o.Config); o.Rho > lim {
			return nil, fmt.Errorf("sim: Rho %v exceeds the config's tolerance (L−R)/(L+R) = %.3f; use Faults.DriftBeyond to go past it", o.Rho, lim)
		}
	}
	s := &Cluster{opt: o, rng: rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15))}
	s.res.Seed = o.Seed
	s.lossy = o.Faults.DataLoss
	for _, f := range o.Schedule {
		if f.Kind == FaultDataLoss {
			s.lossy = true
		}
	}
	if o.LossyStore != nil {
		s.lossy = *o.LossyStore
	}
	if o.Record {
		s.tl = &timeline{}
	}
	s.net = network{min: int64(o.LatencyMin), max: int64(o.LatencyMax)}
	s.chk.init(s)
	s.nodes = make([]*node, o.Nodes)
	for i := range s.nodes {
		s.nodes[i] = s.newNode(i)
	}
	schedule := o.Schedule
	if schedule == nil {
		schedule = randomSchedule(s)
	}
	cfgs := []lease.Config{o.Config}
	for i, f := range schedule {
		if err := f.validate(o.Nodes); err != nil {
			return nil, err
		}
		if f.Kind == FaultReconfigure || f.Kind == FaultRenewCut {
			cfgs = append(cfgs, f.Config)
		}
		s.push(simEvent{at: int64(f.At), kind: evFault, count: i})
	}
	s.faults = schedule
	s.chk.setBounds(cfgs)
	s.advInit(cfgs)
	for _, n := range s.nodes {
		s.boot(n)
	}
	s.push(simEvent{at: int64(time.Second), kind: evCheck})
	return s, nil
}

// tolerance is the largest clock drift the config's timings absorb.
func tolerance(c lease.Config) float64 {
	l, r := float64(c.LeaseDuration), float64(c.RenewDeadline)
	return (l - r) / (l + r)
}

// RunSeed runs one simulation with the given options and returns its
// result; an error means the options were invalid.
func RunSeed(o Options) (Result, error) {
	s, err := New(o)
	if err != nil {
		return Result{}, err
	}
	return s.Run(), nil
}

// Run runs the simulation to its end, or to the first violation.
func (s *Cluster) Run() Result {
	end := int64(s.opt.Duration)
	for len(s.queue) > 0 && s.res.Violation == nil {
		if s.queue[0].at > end {
			break
		}
		ev := s.queue.pop()
		s.now = ev.at
		s.events++
		if s.events > s.opt.MaxEvents {
			s.fail("livelock", "more than %d events", s.opt.MaxEvents)
			break
		}
		s.dispatch(&ev)
	}
	if s.res.Violation == nil {
		s.now = max(s.now, end)
		s.chk.final()
	}
	s.res.Events = s.events
	if s.tl != nil {
		s.tl.close(s)
	}
	return s.res
}

// Now returns the simulation's real time.
func (s *Cluster) Now() time.Duration { return time.Duration(s.now) }

// dispatch handles one event.
func (s *Cluster) dispatch(ev *simEvent) {
	switch ev.kind {
	case evStoreReq:
		s.storeRequest(ev)
		return
	case evFault:
		s.applyFault(ev.count)
		return
	case evFaultEnd:
		s.endFault(ev)
		return
	case evFenceWrite:
		s.fenceWrite(ev)
		return
	case evCheck:
		s.chk.periodic()
		s.push(simEvent{at: s.now + int64(time.Second), kind: evCheck})
		return
	case evHandover:
		s.chk.handover(ev)
		return
	case evAdv:
		s.advEvent(ev)
		return
	}
	// The rest is delivered to a node.
	n := s.nodes[ev.node]
	if ev.gen != n.gen || !n.up {
		return // for a process that has crashed or stopped since
	}
	if s.now < n.pausedUntil {
		// Nothing runs during a pause: deliver at its end, in order.
		ev.at = n.pausedUntil
		s.push(*ev)
		return
	}
	switch ev.kind {
	case evTimer:
		if ev.orig != n.timerAt {
			return // superseded
		}
		n.timerAt = -1
		s.step(n, fsm.Event{Kind: fsm.Tick})
	case evTimeout:
		s.timeout(n, ev)
	case evReply:
		s.reply(n, ev)
	case evWatch:
		s.step(n, fsm.Event{Kind: fsm.Watched, Lease: ev.lease, Revision: ev.rev, Absent: ev.absent, Corrupt: ev.result == resCorrupt})
	case evWork:
		s.work(n, ev)
	}
}

// push schedules ev; events at the same time run in the order pushed.
func (s *Cluster) push(ev simEvent) {
	s.seq++
	ev.seq = s.seq
	if ev.orig == 0 {
		ev.orig = ev.at
	}
	s.queue.push(ev)
}

// fail records the first violation.
func (s *Cluster) fail(check, format string, args ...any) {
	if s.res.Violation != nil {
		return
	}
	v := &Violation{At: time.Duration(s.now), Check: check, Msg: fmt.Sprintf(format, args...)}
	s.res.Violation = v
	s.tracef(-1, "VIOLATION %s: %s", check, v.Msg)
}

// uniform draws a duration in [lo, hi].
func (s *Cluster) uniform(lo, hi int64) int64 {
	if hi <= lo {
		return lo
	}
	return lo + s.rng.Int64N(hi-lo+1)
}

// chance reports true with probability p.
func (s *Cluster) chance(p float64) bool { return s.rng.Float64() < p }
