package sim

import (
	"time"

	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/fsm"
	"github.com/tenure-go/tenure/lease"
)

// checker holds what the checks need to remember across events.
type checker struct {
	s      *Cluster
	owners map[uint64]owner // token → the term that started with it
	terms  []owner          // terms[k] is the k-th term to start (terms[0] is none)
	// Liveness.
	active     int           // faults in force
	calmFrom   int64         // no disturbance since
	lastLeader int64         // the last real time some node believed it leads
	bound      int64         // LivenessBound, in real time
	handoverIn int64         // HandoverBound
	settle     int64         // calm needed before a handover is checked: ops lost earlier have timed out
	maxRenew   time.Duration // the largest RenewDeadline of the configs in use
	// Fencing: the token and the term of the last write the resource
	// accepted.
	lastAccepted uint64
	lastTerm     int
	lastOwner    owner
}

// owner is one term: a node's incarnation and its token.
type owner struct {
	node   int
	gen    uint32
	id     string
	token  uint64
	ahead  bool  // the store issued its token above its clock
	issued int64 // when it first issued it (if ahead)
}

func (c *checker) init(s *Cluster) {
	c.s = s
	c.owners = make(map[uint64]owner)
	c.terms = []owner{{}}
}

// taken reports whether o's token may be reused or undercut by a later
// term: the store issued it above its clock, and a rollback or restore
// came after it did. Only a token someone else stored (a
// forger, an operator) gets a floor past the clock; when a restore takes
// that floor back, the clock floor no longer covers the tokens issued
// over it (docs/design.md, the threat model).
func (c *checker) taken(o owner) bool {
	return o.ahead && c.s.adv.releasedAt > o.issued
}

// setBounds computes the liveness bounds from every config the run uses.
func (c *checker) setBounds(cfgs []lease.Config) {
	lat := c.s.opt.Store.Latency.Bound()
	c.bound = int64(LivenessBound(cfgs, c.s.rho, lat))
	if c.s.opt.Faults.WatchChaos {
		// A renewal's watch event delayed by up to 3 retry intervals
		// (beyond the store contract) keeps a follower quiet that much
		// longer: it is news to it, having read nothing newer.
		var r time.Duration
		for _, cfg := range cfgs {
			r = max(r, cfg.RetryInterval)
		}
		c.bound += int64(float64(3*r) / (1 - c.s.rho))
	}
	c.handoverIn = int64(HandoverBound(lat))
	var t time.Duration
	for _, cfg := range cfgs {
		t = max(t, cfg.BackendTimeout)
		c.maxRenew = max(c.maxRenew, cfg.RenewDeadline)
	}
	c.settle = int64(float64(t)/(1-c.s.rho)) + 4*int64(lat)
}

// LivenessBound is the longest real time a cluster may go without a leader
// once faults have healed and a node is up and connected: for the largest
// LeaseDuration L, BackendTimeout T, RetryInterval R and
// RetryInterval·(1+RetryJitter) I of the configs in use, clock drift rho
// and one-way latency lat,
//
//	(L + max(T, I + R/2)) / (1 − rho) + 6·lat
//
// I + R/2 is how long a follower that hears renewals on its watch stays
// silent after the last one before it reads (the silence bound); the
// leader's last renewal reaches it through the watch (two latencies). A
// watch that silently stops delivering is noticed the same way. See
// docs/design.md, "Liveness", for the derivation.
func LivenessBound(cfgs []lease.Config, rho float64, lat time.Duration) time.Duration {
	var l, t, i, r time.Duration
	for _, c := range cfgs {
		l, t, i, r = max(l, c.LeaseDuration), max(t, c.BackendTimeout), max(i, c.MaxRetryInterval()), max(r, c.RetryInterval)
	}
	return time.Duration(float64(l+max(t, i+r/2))/(1-rho)) + 6*lat + time.Millisecond
}

// HandoverBound is how soon after a release is stored some watching node
// leads, in calm times: the watch event (one latency), the follower's
// in-flight operation (a round trip) and its acquire (a round trip).
func HandoverBound(lat time.Duration) time.Duration {
	return 6*lat + time.Millisecond
}

// legal[before][after] says which state changes one Step may make: the
// table of docs/design.md, plus the compositions one Step can chain
// (Leader→Expiring→Follower→Candidate after a long pause, and
// Expiring→Follower→Candidate).
var legal = [4][4]bool{
	fsm.Follower:  {fsm.Candidate: true},
	fsm.Candidate: {fsm.Leader: true, fsm.Follower: true, fsm.Expiring: true},
	fsm.Leader:    {fsm.Follower: true, fsm.Expiring: true, fsm.Candidate: true},
	fsm.Expiring:  {fsm.Follower: true, fsm.Candidate: true},
}

// transition checks one Step: only legal state changes; a term starts
// exactly when the node enters Leader and stops exactly when it leaves.
func (c *checker) transition(n *node, before, after fsm.State, acts []fsm.Action) {
	if before != after && !legal[before][after] {
		c.s.fail(CheckTransition, "%s went %s → %s", n.id, before, after)
		return
	}
	var started, stopped int
	for _, a := range acts {
		switch a.Kind {
		case fsm.StartedLeading:
			started++
		case fsm.StoppedLeading:
			stopped++
		}
	}
	wantStart := before != fsm.Leader && after == fsm.Leader
	wantStop := before == fsm.Leader && after != fsm.Leader
	if started != b2i(wantStart) || stopped != b2i(wantStop) {
		c.s.fail(CheckTransition, "%s went %s → %s with %d StartedLeading and %d StoppedLeading", n.id, before, after, started, stopped)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// started notes a new term, for the fence and liveness checks; the oracle
// judges that at most one node leads (check 1) and the term's token
// (check 2) from the beliefs it samples (judge.go).
func (c *checker) started(n *node, a fsm.Action) {
	s := c.s
	c.liveness(true)
	issued, ahead := s.store.ahead[a.Token]
	o := owner{node: n.idx, gen: n.gen, id: n.id, token: a.Token, ahead: ahead, issued: issued}
	c.owners[a.Token] = o
	c.terms = append(c.terms, o)
	n.token = a.Token
	n.beliefEnd = n.realAt(n.m.LeaderUntil())
	s.res.Terms++
	n.term = s.res.Terms
	if s.tl != nil {
		s.tl.AddTerm(s.now, n.idx, a.Token)
	}
}

// stopped ends n's belief now.
func (c *checker) stopped(n *node, a fsm.Action) {
	if a.Token != n.token {
		c.s.fail(CheckTokens, "%s stopped a term with token %d, but its term has token %d", n.id, a.Token, n.token)
	}
	n.beliefEnd = min(n.beliefEnd, c.s.now)
}

// ended is a process going away (crash or Done): its belief ends.
func (c *checker) ended(n *node) {
	n.beliefEnd = min(n.beliefEnd, c.s.now)
	c.lastLeader = max(c.lastLeader, n.beliefEnd)
}

// afterStep updates n's belief interval and checks what it observed: never a
// revision older than one it already accepted, and always what the store
// stored at that revision (check 4).
func (c *checker) afterStep(n *node) {
	s := c.s
	if n.m.State() == fsm.Leader {
		n.beliefEnd = n.realAt(n.m.LeaderUntil())
	}
	l, rev, absent, ok := n.m.Observed()
	if !ok || absent || s.madeUp(rev, l) {
		return
	}
	if rev < n.maxRev && !s.rewound(rev) {
		s.fail(CheckMonotonic, "%s observes revision %d after revision %d", n.id, rev, n.maxRev)
		return
	}
	n.maxRev = rev
	if !s.store.storedOnce(rev, l) {
		stored, _ := s.store.storedAt(rev)
		s.fail(CheckMonotonic, "%s observes %+v at revision %d, but the store stored %+v", n.id, l, rev, stored)
	}
}

// fenced is a write reaching the fenced resource (check 2): a register
// never accepts a token lower than one it accepted, nor a write of
// another term with the token it accepted last (two terms that share a
// token), every accepted token belongs to a term, and a leader that still
// believes it leads is never refused. A write's term is the one its node
// led when it sent it (ev.count).
func (c *checker) fenced(ev *simEvent) {
	s := c.s
	n := s.nodes[ev.node]
	err := s.reg.Do(fence.Token(ev.token), nil)
	if err != nil {
		s.res.FenceRejected++
		if s.tracing() {
			s.tracef(n.idx, "fenced write token %d refused: %v", ev.token, err)
		}
		if n.up && n.gen == ev.gen && n.token == ev.token && n.beliefEnd > s.now && !s.or.Erased(n.onode(), ev.token) && !c.aheadAccepted() {
			s.fail(CheckFence, "the resource refused token %d of %s, which still believes it leads", ev.token, n.id)
		}
		return
	}
	s.res.FenceAccepted++
	if s.tracing() {
		s.tracef(n.idx, "fenced write token %d accepted", ev.token)
	}
	if ev.token < c.lastAccepted {
		s.fail(CheckFence, "the resource accepted token %d after token %d", ev.token, c.lastAccepted)
	} else if ev.token == c.lastAccepted && ev.count != c.lastTerm && !c.aheadAccepted() {
		s.fail(CheckFence, "the resource accepted a write of term %d (%s) with token %d after one of term %d with the same token", ev.count, n.id, ev.token, c.lastTerm)
	}
	if _, ok := c.owners[ev.token]; !ok {
		s.fail(CheckFence, "the resource accepted token %d, which no term started with", ev.token)
	}
	c.lastAccepted, c.lastTerm = ev.token, ev.count
	c.lastOwner = c.terms[ev.count]
}

// aheadAccepted reports whether the term of the last write the resource
// accepted has a token a restore has taken since (taken): the resource
// then rightly refuses the lower tokens of later terms.
func (c *checker) aheadAccepted() bool { return c.taken(c.lastOwner) }

// disturbed notes a fault event at real time t: liveness counts from the
// last one.
func (c *checker) disturbed(t int64) { c.calmFrom = max(c.calmFrom, t) }

// eligible reports whether some node is up, not paused and connected.
func (c *checker) eligible() bool {
	for _, n := range c.s.nodes {
		if n.up && n.pausedUntil <= c.s.now && !n.reqCut && !n.respCut {
			return true
		}
	}
	return false
}

// liveness checks that, in calm times, the cluster has not gone without a
// leader for longer than the bound (check 3). starting says a term is just
// starting (so nobody leads yet).
func (c *checker) liveness(starting bool) {
	s := c.s
	for _, n := range s.nodes {
		c.lastLeader = max(c.lastLeader, min(n.beliefEnd, s.now))
	}
	if c.active > 0 || !c.eligible() {
		return
	}
	from := max(c.calmFrom, c.lastLeader)
	if gap := s.now - from; gap > c.bound+max(s.livenessExtra(), s.renewalForgeryExtra(from)) {
		what := "no node leads"
		if starting {
			what = "a node starts leading only now"
		}
		s.fail(s.livenessCheck(), "%s, %s after faults healed (at %s) and the last leader (at %s); bound %s",
			what, time.Duration(gap), fmtTime(c.calmFrom), fmtTime(c.lastLeader), time.Duration(c.bound))
	}
}

// periodic runs the liveness check and cross-checks the belief intervals
// against the machines' own Leading.
func (c *checker) periodic() {
	s := c.s
	for _, n := range s.nodes {
		if !n.up {
			continue
		}
		leading := n.m.Leading(n.local(s.now))
		if believes := n.beliefEnd > s.now; leading != believes {
			s.fail(CheckOneLeader, "%s: Leading is %v but its belief interval ends at %s", n.id, leading, fmtTime(n.beliefEnd))
		}
	}
	c.liveness(false)
}

// final runs the checks at the end of the run.
func (c *checker) final() { c.periodic() }

// released is a release stored by node by, naming successor ("" for
// none): in calm times (no fault for long enough that operations lost
// earlier have timed out), with a watching store, some node leads within
// HandoverBound. A release naming a successor that is not a live node
// (down, paused, cut off, or no node at all) is waited out by the others
// as a held lease: the liveness check bounds it (LivenessBound from the
// end of the last leader's belief).
func (c *checker) released(by int, successor string) {
	s := c.s
	if s.opt.Store.NoWatch || s.opt.Faults.WatchChaos || c.active > 0 || s.now-c.calmFrom < c.settle || s.holding() || s.muted() {
		return
	}
	if successor != "" && !s.live(successor) {
		return
	}
	s.push(simEvent{at: s.now + c.handoverIn, kind: evHandover, node: int32(by), count: s.res.Terms, rev: lease.Revision(s.now), expected: s.store.rev})
}

// live reports whether a node with identity id is up, running and
// connected.
func (s *Cluster) live(id string) bool {
	for _, n := range s.nodes {
		if n.id == id && n.up && n.pausedUntil <= s.now && !n.reqCut && !n.respCut {
			return true
		}
	}
	return false
}

// muted reports whether some node's watch is silenced (FaultMuteWatch): a
// handover then waits for a poll, and is not checked.
func (s *Cluster) muted() bool {
	for _, n := range s.nodes {
		if n.mutedUntil > s.now {
			return true
		}
	}
	return false
}

// handover checks the deadline that released set.
func (c *checker) handover(ev *simEvent) {
	s := c.s
	releasedAt := int64(ev.rev)
	if c.active > 0 || c.calmFrom > releasedAt || s.res.Terms != ev.count || s.store.rev != ev.expected || s.holding() {
		// Disturbed meanwhile, or handed over; or the store moved on: an
		// acquire took the lease (whose taker may have stopped before it
		// led, and released again: that release is checked by itself); or
		// a node waits out what its answer contradicted (a watch event
		// forged before the release, whose revision the answer after the
		// release does not show).
		return
	}
	for _, n := range s.nodes {
		if n.idx != int(ev.node) && n.up && n.pausedUntil <= s.now && !n.reqCut && !n.respCut {
			s.fail(CheckHandover, "%s released the lease at %s and nobody leads %s later (bound %s)",
				s.nodes[ev.node].id, fmtTime(releasedAt), time.Duration(s.now-releasedAt), time.Duration(c.handoverIn))
			return
		}
	}
}
