package sim

// Checks that catch what a hostile store does to a machine's arithmetic
// and pacing, run on every node after every step and on every action:
//
//   - "budget": no busy loop. A node sends at most one store request per
//     RetryInterval, plus a few sent at once because something new
//     arrived. It is a token bucket on the node's own clock: it holds at
//     most budgetCap requests and refills one per RetryInterval (the
//     smallest of the run's configs). Every new observation (the machine
//     accepted another revision, or absence), unless it is a watch event
//     showing the record the node itself last wrote, adds budgetNews; a
//     watch event that claims something newer than the machine accepted
//     (a higher revision the node did not write, absence, a corrupt
//     record; after the node followed the store back, any revision above
//     the record it observes now, even of a write of its own from before
//     the rollback) adds one, for the read that may check it; a Stop or a
//     Reconfigure adds one. So over any window W of local
//     time a node sends at most
//
//     budgetCap + W/RetryInterval + budgetNews·news + hints + stops and reconfigurations
//
//     requests, counting what arrived in W. The node's own writes coming
//     back on the watch feed earn nothing, nor does a reply or watch event
//     the machine ignores: a loop of swaps answered by conflicts the
//     machine throws away is a livelock, and a node
//     that answers its own writes with more writes loops too.
//   - "overflow": every time the driver reads from the machine is sane:
//     NextWake is Never or after the node's now; while it leads,
//     LeaderUntil is after now, LastConfirmed and the term's Since lie
//     between the node's boot and now (Since first), and the belief lasts
//     no longer after LastConfirmed than the largest RenewDeadline.
//   - "tokens": an acquiring swap proposes a token in [1, lease.MaxToken]
//     above the token of every record in bounds (fsm.InBounds) that the
//     store answered the node with (a read, a swap's reply; a watch event
//     is only a hint, and the machine refuses a record out of bounds); a
//     term starts with a
//     token in [1, lease.MaxToken], not below the one its acquire proposed
//     (the store may raise it, never lower it).
//   - "recovery" is the liveness check when it counts from the end of an
//     adversary's action (adversary.go).

import (
	"time"

	"github.com/tenure-go/tenure/fsm"
	"github.com/tenure-go/tenure/lease"
)

// The request budget: see the top of this file.
const (
	budgetCap  = 4
	budgetNews = 2
)

// nodeAdv is what the checks of this file keep per node.
type nodeAdv struct {
	// The request budget.
	bucket   float64
	bucketAt time.Duration // local time of the last refill
	recent   [budgetCap + 4]int64
	nrecent  int
	// What the machine observes.
	obsOK, obsAbsent, obsFree bool
	obsRev                    lease.Revision
	obsLease                  fsm.Lease
	obsFirst                  int64          // real time it accepted obsRev
	maxRev                    lease.Revision // newest revision it ever accepted
	lastRev                   lease.Revision // revision of the last record it observed (kept while it observes nothing)
	sawBackAt                 int64          // real time its observed revision last went down (-1: never)
	holdEnd                   int64          // real time it may lead again after that (holdEnd)
	maxToken                  uint64         // largest valid token the store answered with
	lastLease                 time.Duration  // LeaseDuration of the last valid record it accepted
	prevLease                 time.Duration  // lastLease before that record
	longestLease              time.Duration  // the longest LeaseDuration of a valid record it accepted
	// Tokens and terms.
	proposed  uint64
	bootLocal time.Duration
	termStart int64     // real time the current term's acquiring swap was sent
	wrote     fsm.Lease // the record of the last swap it sent
}

// advBoot resets the checks for a new process on n.
func (s *Cluster) advBoot(n *node) {
	now := n.local(s.now)
	n.adv = nodeAdv{bucket: budgetCap, bucketAt: now, bootLocal: now, obsFirst: -1, termStart: -1, sawBackAt: -1}
}

// advStepped runs after n's machine handled ev, before its actions are
// performed.
func (s *Cluster) advStepped(n *node, ev *fsm.Event) {
	a := &n.adv
	switch ev.Kind {
	case fsm.ReadDone, fsm.SwapDone, fsm.SwapConflict:
		// Tokens the store answered with; a watch event is a hint (anyone
		// may forge one), its token need not be exceeded.
		if !ev.Absent && !ev.Corrupt && ev.Revision != 0 && fsm.InBounds(ev.Lease) {
			a.maxToken = max(a.maxToken, ev.Lease.Token)
		}
	case fsm.Stop, fsm.Reconfigure, fsm.Resign:
		a.credit(1)
	}
	// The node's own write coming back on the watch feed.
	own := ev.Kind == fsm.Watched && !ev.Absent && !ev.Corrupt && ev.Lease == a.wrote
	newsRev := a.maxRev
	if a.obsOK && !a.obsAbsent && a.obsRev < newsRev {
		// The node followed the store back: an event above the record it
		// observes now claims news to it, whatever it accepted before: one
		// from before the rollback, delivered late, say, even of its own
		// write (revisions the store issues after a rollback lie above
		// maxRev, so an echo of a write it sends since is still its own).
		newsRev = a.obsRev
	}
	if ev.Kind == fsm.Watched && (ev.Absent || ev.Corrupt || ev.Revision > newsRev && (!own || ev.Revision <= a.maxRev)) {
		// A watch event that claims news may prompt a read to check it.
		a.credit(1)
	}
	l, rev, absent, ok := n.m.Observed()
	if ok != a.obsOK || rev != a.obsRev || absent != a.obsAbsent || l != a.obsLease {
		if ok && !own {
			// News. The node's own record coming back on the watch feed
			// earns nothing: a node that answers its own writes with more
			// writes loops.
			a.credit(budgetNews)
		}
		if ok {
			a.obsFirst = s.now
			a.obsFree = absent || l.Holder == ""
			if !absent {
				a.maxRev = max(a.maxRev, rev)
				if rev < a.lastRev || a.obsOK && !a.obsAbsent && rev == a.obsRev && l != a.obsLease {
					// The machine followed the store back, below the record
					// it last observed (also when it forgot that one after
					// a swap with an unknown outcome), or to its revision
					// with another record (a restore).
					a.sawBackAt, a.holdEnd = s.now, max(a.holdEnd, s.holdEnd(n, a.lastLease))
				}
				if l.LeaseDuration > 0 && l.LeaseDuration <= lease.MaxDuration {
					a.prevLease, a.lastLease = a.lastLease, l.LeaseDuration
					a.longestLease = max(a.longestLease, l.LeaseDuration)
				}
			}
		}
		a.obsOK, a.obsRev, a.obsAbsent, a.obsLease = ok, rev, absent, l
		if ok {
			a.lastRev = rev // 0 when absent
		}
	}
	s.checkTimes(n, ev.Now)
}

func (a *nodeAdv) credit(k float64) { a.bucket = min(a.bucket+k, budgetCap+k) }

// checkTimes checks every time the driver reads from n's machine.
func (s *Cluster) checkTimes(n *node, now time.Duration) {
	m := n.m
	if w := m.NextWake(); w != fsm.Never && w <= now {
		s.fail("overflow", "%s (%v): NextWake is %v, not after its now %v", n.id, m.State(), w, now)
		return
	}
	if m.State() != fsm.Leader {
		return
	}
	lu, lc := m.LeaderUntil(), m.LastConfirmed()
	tok, since, _ := m.Term()
	boot := n.adv.bootLocal
	switch {
	case lu <= now:
		s.fail("overflow", "%s leads until %v, not after its now %v", n.id, lu, now)
	case lc < boot || lc > now:
		s.fail("overflow", "%s last confirmed its term at %v, outside [%v (boot), %v (now)]", n.id, lc, boot, now)
	case since < boot || since > lc:
		s.fail("overflow", "%s's term started at %v, outside [%v (boot), %v (last confirmed)]", n.id, since, boot, lc)
	case lu-lc > s.adv.maxRenew:
		s.fail("overflow", "%s believes it leads %v after its last confirmation, more than any RenewDeadline (%v)", n.id, lu-lc, s.adv.maxRenew)
	case tok == 0 || tok > lease.MaxToken:
		s.fail("tokens", "%s leads with token %d, outside [1, lease.MaxToken]", n.id, tok)
	}
}

// advAction runs before n performs action a.
func (s *Cluster) advAction(n *node, a fsm.Action) {
	switch a.Kind {
	case fsm.Read, fsm.Swap:
		s.spend(n)
		if a.Kind == fsm.Swap {
			n.adv.wrote = a.Next
		}
		if a.Kind == fsm.Swap && a.Swap == fsm.Acquire {
			t := a.Next.Token
			if t == 0 || t > lease.MaxToken || t <= n.adv.maxToken {
				s.fail("tokens", "%s proposes token %d for a new term, having seen token %d (a token lies in [1, %d] and grows)", n.id, t, n.adv.maxToken, lease.MaxToken)
			}
			n.adv.proposed = t
		}
		if len(s.adv.armed) > 0 || s.adv.aheadCut.on {
			s.trigger(n, a)
		}
	case fsm.Report:
		switch {
		case a.Problem == fsm.ProblemContradicted && s.adv.backAt < 0:
			// A read showed a revision older than a watch event the node
			// was delivered before it sent the read: only a rollback, a
			// restore or a forged event can do that.
			s.fail("hints", "%s reports a watch event contradicted by the store (revision %d, event %d) with no rollback, restore or forged event", n.id, a.Revision, a.Newest)
		case a.Problem == fsm.ProblemContradicted:
			// It waits as after a rollback it saw: the liveness bound
			// grows by that wait, as long as a lease of a record it
			// accepted (a lease of what it accepted at its newest
			// revision, which may be older than what it observes now).
			n.adv.holdEnd = max(n.adv.holdEnd, s.holdEnd(n, max(n.adv.lastLease, min(a.Wait, n.adv.longestLease))))
		case a.Problem == fsm.ProblemRollback && !s.wentBackTo(a.Revision):
			// The store's revisions never go down but for a rollback or a
			// restore: a data loss keeps its counter (absence then comes
			// with a revision), and a record a rollback or restore made
			// current again is the only older one a read can show.
			s.fail("hints", "%s reports a revision rollback to %d, which no rollback or restore made current", n.id, a.Revision)
		case a.Problem == fsm.ProblemRollback:
			// The machine saw the store go back below a revision it keeps
			// across absence (which the observation above forgets): it
			// waits as after any rollback it saw, a lease of the record
			// it had accepted before.
			l := max(n.adv.lastLease, n.adv.prevLease)
			n.adv.sawBackAt, n.adv.holdEnd = s.now, max(n.adv.holdEnd, s.holdEnd(n, l))
		}
	case fsm.StartedLeading:
		if a.Token == 0 || a.Token > lease.MaxToken || a.Token < n.adv.proposed {
			s.fail("tokens", "%s starts a term with token %d; it proposed %d (a token lies in [1, %d])", n.id, a.Token, n.adv.proposed, lease.MaxToken)
		}
		n.adv.termStart = n.realAt(a.Since)
	}
}

// spend takes one request from n's budget.
func (s *Cluster) spend(n *node) {
	a := &n.adv
	now := n.local(s.now)
	if d := now - a.bucketAt; d > 0 && a.bucket < budgetCap {
		// Credit for news may lift the bucket above budgetCap; time
		// refills it only up to there.
		a.bucket = min(budgetCap, a.bucket+float64(d)/float64(s.adv.minRetry))
	}
	a.bucketAt = now
	a.bucket--
	a.recent[a.nrecent%len(a.recent)] = s.now
	a.nrecent++
	if a.bucket < 0 {
		k := min(a.nrecent, len(a.recent))
		first := a.recent[(a.nrecent-k)%len(a.recent)]
		s.fail("budget", "%s sent %d store requests in %v (RetryInterval %v), with nothing new observed to prompt them: a busy loop",
			n.id, k, time.Duration(s.now-first), s.adv.minRetry)
	}
}
