package sim

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/fsm"
	"github.com/tenure-go/tenure/internal/oracle"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/sim/internal/timeline"
)

// Violation is a failed check.
type Violation struct {
	// At is the real (virtual) time of the failure since the run started.
	At time.Duration
	// Check names the check: one of the Check* constants.
	Check string
	// Msg says what went wrong.
	Msg string
}

// Error describes the violation: when, which check, what went wrong.
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
	// FenceAccepted counts fenced writes the resource accepted.
	FenceAccepted int
	// FenceRejected counts fenced writes the resource refused (writes of
	// terms that had ended, as fencing intends).
	FenceRejected int
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
	tl     *timeline.Timeline
	faults []Fault
	res    Result
	buf    []byte // trace line buffer
	adv    adversary
	or     *oracle.Oracle    // the judge of one leader and tokens (judge.go)
	snaps  []oracle.Snapshot // the snapshots of swaps in flight (judge.go)
	free   []uint32          // slots of snaps free again
}

// New validates o, fills in defaults and builds a simulation. An error
// wraps ErrInvalidOptions.
func New(o Options) (*Cluster, error) {
	o = o.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	s := &Cluster{opt: o, rng: rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15))}
	s.res.Seed = o.Seed
	s.lossy = o.Store.MayLoseRecords
	if o.Store.CreateGate && o.markerAged {
		// A healthy dataset: its marker was attested long ago.
		s.store.nonces, s.store.markerID, s.store.markerPresent, s.store.markerAttested = 1, 1, true, lease.MaxDuration
	}
	if o.Record {
		s.tl = &timeline.Timeline{}
	}
	lat := o.Store.Latency
	s.net = network{min: int64(lat.Min), max: int64(lat.Max), tail: lat.Tail, tailMax: int64(lat.TailMax)}
	s.chk.init(s)
	s.nodes = make([]*node, o.Nodes)
	for i := range s.nodes {
		s.nodes[i] = s.newNode(i)
	}
	var schedule []Fault
	if o.Schedule != nil {
		schedule = append([]Fault{}, o.Schedule...)
	} else {
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
	names := make([]string, len(s.nodes))
	for i, n := range s.nodes {
		names[i] = n.id
	}
	s.or = oracle.New(oracle.Params{Drift: s.rho, MaxRenewDeadline: s.adv.maxRenew, Complete: true, LossyStore: s.lossy, Names: names})
	for _, n := range s.nodes {
		s.boot(n)
	}
	s.push(simEvent{at: int64(time.Second), kind: evCheck})
	return s, nil
}

// Schedule returns the run's fault schedule: Options.Schedule, or the one
// drawn from the seed. A fault aimed at the leader names, once it has
// started, the node it hit.
func (s *Cluster) Schedule() []Fault { return append([]Fault(nil), s.faults...) }

// RunSeed runs one simulation with the given options and returns its
// result; an error (wrapping ErrInvalidOptions) means the options were
// invalid.
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
		s.samplePending(ev.at)
		s.now = ev.at
		s.events++
		if s.events > s.opt.MaxEvents {
			s.fail(CheckLivelock, "more than %d events", s.opt.MaxEvents)
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
		s.closeTimeline()
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
		if ev.result != resCorrupt {
			s.or.Deliver(n.onode(), s.now, ev.rev, orec(ev.lease), !ev.absent)
		}
		s.step(n, fsm.Event{Kind: fsm.Watched, Lease: ev.lease, Revision: ev.rev, Absent: ev.absent, Corrupt: ev.result == resCorrupt, Stamp: s.stampOf(ev.stamp)})
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
