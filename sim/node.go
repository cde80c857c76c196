package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/tenure-go/tenure/fsm"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/sim/internal/timeline"
)

// node is one simulated process: a real fsm.Machine, its clock, and the
// driver that performs the machine's actions as lead does.
type node struct {
	idx         int
	id          string
	incarnation int
	gen         uint32 // bumped by every crash and restart: old messages are dropped
	m           *fsm.Machine
	cfg         lease.Config // the timings the next incarnation starts with
	up          bool         // a process runs (false when crashed or stopped)
	offset      int64        // local = offset + rate*(real - the clock's stops before real)
	rate        float64
	stops       []clockStop // the clock's stops (FaultClockStop), in order
	pausedUntil int64
	timerAt     int64 // real time of the armed timer (orig of its event), -1 if none
	reqCut      bool
	respCut     bool
	watchLast   int64 // delivery time of the last watch event (FIFO)
	mutedUntil  int64 // real time until which its watch silently delivers nothing
	// The one outstanding store operation.
	op        uint32
	opPending bool
	opKind    opKind
	// Checks.
	// The store's marker (StoreModel.CreateGate): the identity this
	// process saw last (0: none) and its local time when it first did.
	markerID   uint64
	markerSeen time.Duration
	beliefEnd  int64 // real time at which the current belief ends
	oLead      bool  // the belief the oracle last sampled
	oTok       uint64
	token      uint64
	term       int // the checker's number of the node's last term (1, 2, ...)
	maxRev     lease.Revision
	adv        nodeAdv // the checks of budget.go
}

// clockStop is a span of real time [from, until) during which a node's
// clock stood still (FaultClockStop, when the node's driver does not count
// it: see stopClock).
type clockStop struct{ from, until int64 }

// local is the node's monotonic clock at real time real: it runs at rate,
// except during its stops.
func (n *node) local(real int64) time.Duration {
	run := real
	for _, st := range n.stops {
		if real > st.from {
			run -= min(real, st.until) - st.from
		}
	}
	return time.Duration(n.offset + int64(float64(run)*n.rate))
}

// realAt is the first real time at which the node's clock reads t.
func (n *node) realAt(t time.Duration) int64 {
	if t == fsm.Never {
		return math.MaxInt64
	}
	r := int64(math.Ceil(float64(int64(t)-n.offset) / n.rate))
	for _, st := range n.stops {
		if r > st.from { // the clock reads t only after this stop
			r += st.until - st.from
		}
	}
	for n.local(r) < t {
		r++
	}
	for r > 0 && n.local(r-1) >= t {
		r--
	}
	return r
}

func (s *Cluster) newNode(i int) *node {
	n := &node{idx: i, id: fmt.Sprintf("n%d", i), cfg: s.opt.Config, rate: 1, timerAt: -1}
	n.offset = s.uniform(0, int64(time.Hour)) // offsets do not matter
	f := s.opt.Faults
	switch {
	case f.DriftBeyond:
		// Extremes make the excess visible: some clocks slow, some fast.
		if s.chance(0.5) {
			n.rate = 1 - s.opt.BeyondRho
		} else {
			n.rate = 1 + s.opt.BeyondRho
		}
	case f.Drift:
		n.rate = 1 + (2*s.rng.Float64()-1)*s.opt.Rho
	}
	s.rho = max(s.rho, math.Abs(n.rate-1))
	return n
}

// boot starts a new process on n: a fresh machine, nothing remembered.
func (s *Cluster) boot(n *node) {
	m, err := fsm.New(fsm.Options{
		Identity:       n.id,
		Config:         n.cfg,
		Rand:           rand.New(rand.NewPCG(s.rng.Uint64(), s.rng.Uint64())),
		LossyStore:     s.lossy,
		AuthenticWatch: s.opt.Store.AuthenticWatch,
		GuardedRelease: s.opt.Store.GuardedRelease || s.opt.Store.guardIgnored,
	})
	if err != nil {
		panic(err) // configs are validated before they get here
	}
	n.m, n.up, n.gen = m, true, n.gen+1
	n.oLead, n.oTok = false, 0
	s.or.Boot(n.onode(), s.now)
	n.opPending, n.timerAt, n.maxRev, n.token, n.beliefEnd = false, -1, 0, 0, 0
	n.markerID, n.markerSeen = 0, 0 // a new process has seen no marker
	s.advBoot(n)
	s.tracef(n.idx, "boot as %s", n.id)
	s.chk.disturbed(s.now)
	if s.tl != nil {
		s.tl.State(s.now, n.idx, timeline.Follower)
	}
	if !s.opt.Store.NoWatch && n.mutedUntil <= s.now {
		// A watch opens with the current state (unless it is silenced).
		st := &s.store
		n.watchLast = s.now + s.latency()
		s.push(simEvent{at: n.watchLast, kind: evWatch, node: int32(n.idx), gen: n.gen,
			lease: st.rec, rev: st.rev, absent: !st.present, stamp: s.stampOf(st.stamp)})
	}
	s.step(n, fsm.Event{Kind: fsm.Tick})
}

// crash kills n's process: its local state is lost, in-flight replies to it
// are dropped.
func (s *Cluster) crash(n *node) {
	if !n.up {
		return
	}
	s.tracef(n.idx, "CRASH")
	s.chk.ended(n)
	s.or.Down(n.onode(), s.now)
	n.up, n.gen, n.m = false, n.gen+1, nil
	n.pausedUntil = 0
	// A machine stopped with its clock (FaultClockStop) and killed: what
	// starts later starts on a machine whose clock runs, so the stop ends
	// here, not under a process that runs.
	if k := len(n.stops) - 1; k >= 0 && n.stops[k].until > s.now {
		n.stops[k].until = s.now
	}
	if s.tl != nil {
		s.tl.State(s.now, n.idx, timeline.Down)
	}
	s.chk.disturbed(s.now)
}

// step feeds one event to n's machine at n's local time, checks the step,
// performs the actions and re-arms the timer.
func (s *Cluster) step(n *node, ev fsm.Event) {
	ev.Now = n.local(s.now)
	before := n.m.State()
	acts := n.m.Step(ev)
	after := n.m.State()
	if s.opt.Trace != nil {
		s.traceStep(n, ev, acts, before, after)
	}
	s.chk.transition(n, before, after, acts)
	s.advStepped(n, &ev)
	for _, a := range acts {
		s.perform(n, a)
	}
	if !n.up {
		return
	}
	s.sample(n, false)
	s.chk.afterStep(n)
	if s.tl != nil {
		s.tl.State(s.now, n.idx, stateMark(after))
	}
	s.arm(n)
}

// arm schedules a Tick at the machine's NextWake.
func (s *Cluster) arm(n *node) {
	w := n.m.NextWake()
	if w == fsm.Never {
		n.timerAt = -1
		return
	}
	at := max(n.realAt(w), s.now+1)
	if at == n.timerAt {
		return
	}
	n.timerAt = at
	s.push(simEvent{at: at, kind: evTimer, node: int32(n.idx), gen: n.gen})
}

// perform carries out one action as lead's driver does.
func (s *Cluster) perform(n *node, a fsm.Action) {
	if a.Kind == fsm.Report && s.opt.hideReports {
		return
	}
	s.advAction(n, a)
	switch a.Kind {
	case fsm.Read, fsm.Swap:
		n.op++
		n.opPending = true
		ev := simEvent{op: n.op, opKind: opRead}
		if a.Kind == fsm.Swap {
			ev.opKind, ev.expected, ev.lease = opSwap, a.Expected, a.Next
			ev.guarded, ev.was = a.Guarded, a.Was
			ev.snap = s.sent(n, a)
		}
		n.opKind = ev.opKind
		s.send(n, ev)
		// The driver's context times the op out after BackendTimeout.
		deadline := n.local(s.now) + n.m.Config().BackendTimeout
		s.push(simEvent{at: n.realAt(deadline), kind: evTimeout, node: int32(n.idx), gen: n.gen, op: n.op})
	case fsm.StartedLeading:
		s.chk.started(n, a)
		s.sampleAll()
		s.push(simEvent{at: s.now + s.uniform(0, int64(time.Second)), kind: evWork, node: int32(n.idx), gen: n.gen, token: a.Token})
	case fsm.StoppedLeading:
		s.chk.stopped(n, a)
	case fsm.Done:
		s.tracef(n.idx, "done")
		s.chk.ended(n)
		s.or.Down(n.onode(), s.now)
		n.up, n.gen, n.m = false, n.gen+1, nil
		if s.tl != nil {
			s.tl.State(s.now, n.idx, timeline.Down)
		}
	}
}

// timeout fails n's op if it is still outstanding; a later reply is dropped,
// as lead's context timeout drops it.
func (s *Cluster) timeout(n *node, ev *simEvent) {
	if !n.opPending || ev.op != n.op {
		return
	}
	n.opPending = false
	if n.opKind == opRead {
		s.step(n, fsm.Event{Kind: fsm.ReadFailed, Err: errTimeout})
	} else {
		s.step(n, fsm.Event{Kind: fsm.SwapFailed, Err: errTimeout})
	}
}

// reply delivers a store reply to n.
func (s *Cluster) reply(n *node, ev *simEvent) {
	if !n.opPending || ev.op != n.op {
		return // timed out already
	}
	n.opPending = false
	if ev.markerID != 0 && ev.markerID != n.markerID {
		// The marker existed when the store answered, before now: counting
		// from now attests less than it lived, never more.
		n.markerID, n.markerSeen = ev.markerID, n.local(s.now)
	}
	e := fsm.Event{Lease: ev.lease, Revision: ev.rev, Absent: ev.absent, Stamp: s.stampOf(ev.stamp)}
	switch {
	case ev.result == resCorrupt && ev.opKind == opRead:
		// As lead does: the store answered, with a record it cannot read.
		e = fsm.Event{Kind: fsm.ReadDone, Corrupt: true, Err: errCorrupt}
	case ev.result == resCorrupt:
		// The store refused to overwrite it: not applied.
		e = fsm.Event{Kind: fsm.SwapConflict, Corrupt: true, Err: errCorrupt}
	case ev.result == resFailed:
		e = fsm.Event{Kind: fsm.SwapFailed, Err: errRefused}
	case ev.opKind == opRead:
		e.Kind = fsm.ReadDone
	case ev.result == resDone:
		e.Kind = fsm.SwapDone
		e.Vouched = ev.vouched && !s.opt.vouchLost
	default:
		e.Kind = fsm.SwapConflict
	}
	if !e.Corrupt && e.Kind != fsm.SwapFailed {
		s.or.Deliver(n.onode(), s.now, ev.rev, orec(ev.lease), !ev.absent)
	}
	s.step(n, e)
}

// work is a leader deciding to write to the fenced resource: if it believes
// it leads, it writes with its term's token; the write lands later.
func (s *Cluster) work(n *node, ev *simEvent) {
	tok, _, ok := n.m.Term()
	if !ok || tok != ev.token || !n.m.Leading(n.local(s.now)) {
		return
	}
	s.fenceSend(n, tok, s.latency())
	next := *ev
	next.at, next.orig = s.now+s.uniform(int64(200*time.Millisecond), int64(3*time.Second)), 0
	s.push(next)
}

// fenceSend sends a fenced write with tok that lands after delay.
func (s *Cluster) fenceSend(n *node, tok uint64, delay int64) {
	s.push(simEvent{at: s.now + delay, kind: evFenceWrite, node: int32(n.idx), gen: n.gen, token: tok, count: n.term})
}

// fenceWrite is a fenced write reaching the resource.
func (s *Cluster) fenceWrite(ev *simEvent) {
	s.chk.fenced(ev)
}

type simError string

// Error returns the error's text.
func (e simError) Error() string { return string(e) }

const errTimeout = simError("context deadline exceeded (simulated BackendTimeout)")
