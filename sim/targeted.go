package sim

// Faults aimed at the leader, triggered by what the nodes do rather than
// drawn at a random time, and per-message latency.
//
//   - FaultRenewCut waits for the leader to send a renewal; while it is in
//     flight, the leader is reconfigured, then cut off both ways (the
//     renewal lands, its reply is lost).
//   - FaultHold waits for a follower to send a read, or a swap that will
//     lose, while some node leads; it holds that operation in flight (the
//     request, applied late, or the reply, delivered late) for about
//     LeaseDuration − RenewDeadline while the leader goes on renewing, and
//     then silences the leader (cut off both ways).
//   - FaultRollback with a Window waits for a follower to send a read
//     while the store holds a renewal of the record the follower last
//     accepted, and rewinds the store to that record just before the read
//     arrives: a quiet follower that heard the renewals, not read them,
//     sees the record it waited out again.
//   - FaultForgeWatch with Released and a Window waits for the leader to
//     send a renewal, and tells the followers that the revision the
//     renewal will be stored at is released: a follower that swapped from
//     it without a guard would overwrite the renewal.
//   - FaultForgeWatch with Renewal and a Window waits for the leader to
//     send a renewal, and tells the followers that the renewal after it
//     has landed, a retry pause before it is sent; the leader's renewal
//     after that is cut off. A follower that counted its wait from the
//     forged event, once a read shows the revision it predicted, would
//     take over while the leader still believes.
//   - FaultRelease with a Window waits for a node to send a create (an
//     acquire expecting no record) and stops it, releasing, while the
//     create is in flight; Dur later it starts again. In a store that
//     loses records that create is only a claim.
//   - FaultJitter draws a delay for each message on its own.
//
// A trigger acts once; a fault whose Window passes without its trigger
// does nothing.

import (
	"time"

	"github.com/tenure-go/tenure/fsm"
	"github.com/tenure-go/tenure/lease"
)

// holdState is the one operation held in flight.
type holdState struct {
	node int // -1: none
	gen  uint32
	op   uint32
	req  bool // hold the request (else the reply)
	d    int64
}

// Phases of a targeted fault (simEvent.token of evAdv).
const (
	phaseReconfigure uint64 = iota + 1 // reconfigure and cut the leader
	phaseSilence                       // cut the leader off after a hold
	phaseHeal                          // end the cut
	phaseStop                          // stop a node whose create is in flight
)

// trigger checks the armed faults against the action n is about to
// perform.
func (s *Cluster) trigger(n *node, a fsm.Action) {
	if c := &s.adv.aheadCut; c.on && a.Kind == fsm.Swap && a.Swap == fsm.Renew && n.idx == c.node && n.gen == c.gen && a.Expected >= c.expected {
		c.on = false
		s.tracef(n.idx, "TARGETED: its renewal from the forged revision %d is cut off, with the leader, for %v", c.expected, time.Duration(c.d))
		s.cut(n, c.fault, c.d)
	}
	armed := s.adv.armed
	for j := 0; j < len(armed); j++ {
		i := armed[j]
		f := s.faults[i]
		if s.now > int64(f.At+f.Window) {
			armed = append(armed[:j], armed[j+1:]...)
			j--
			continue
		}
		fired := false
		switch f.Kind {
		case FaultRenewCut:
			if a.Kind == fsm.Swap && a.Swap == fsm.Renew && n.m.State() == fsm.Leader {
				s.push(simEvent{at: s.now, kind: evAdv, node: int32(n.idx), gen: n.gen, count: i, token: phaseReconfigure})
				fired = true
			}
		case FaultForgeWatch:
			if f.Renewal {
				fired = s.forgeAhead(n, a, i)
				break
			}
			if a.Kind == fsm.Swap && a.Swap == fsm.Renew && n.m.State() == fsm.Leader && s.store.present && s.store.rev == a.Expected {
				s.tracef(n.idx, "TARGETED: its renewal is in flight; the followers are told that the revision it will get is released")
				s.forgeWatch(f, 1)
				fired = true
			}
		case FaultRollback:
			if to := s.quietRewind(n, a); to != 0 {
				s.tracef(n.idx, "TARGETED: the store goes back to the revision it last read, %d, before its read arrives", to)
				s.rollbackTo(f, to)
				fired = true
			}
		case FaultRelease:
			if a.Kind == fsm.Swap && a.Swap == fsm.Acquire && a.Expected == 0 {
				s.push(simEvent{at: s.now, kind: evAdv, node: int32(n.idx), gen: n.gen, count: i, token: phaseStop})
				fired = true
			}
		case FaultHold:
			losing := a.Kind == fsm.Swap && a.Swap == fsm.Acquire && a.Expected != s.store.rev
			if (a.Kind == fsm.Read || losing) && n.m.State() != fsm.Leader && s.adv.hold.node < 0 {
				if l := s.leaderOtherThan(n); l >= 0 {
					s.adv.hold = holdState{node: n.idx, gen: n.gen, op: n.op + 1, req: f.Requests, d: int64(f.Dur)}
					s.chk.active++
					s.push(simEvent{at: s.now + int64(f.Dur), kind: evAdv, node: int32(l), count: i, token: phaseSilence})
					s.tracef(n.idx, "TARGETED: its %v is held in flight for %v", a.Kind, f.Dur)
					fired = true
				}
			}
		}
		if fired {
			armed = append(armed[:j], armed[j+1:]...)
			break
		}
	}
	s.adv.armed = armed
}

// aheadCut is the cut armed by a forged renewal ahead of the leader
// (FaultForgeWatch with Renewal): the leader's renewal from revision
// expected (or later) is cut off, with the leader, for d.
type aheadCut struct {
	on       bool
	node     int
	gen      uint32
	expected lease.Revision
	fault    int
	d        int64
}

// forgeAhead fires fault i (FaultForgeWatch with Renewal) if n, leading,
// is about to send a renewal from the stored revision E: it tells the
// followers that the stored record was renewed at E+2, the revision of
// the renewal after this one, with the stamp the store holds now, and
// arms the cut of the renewal from E+2. It reports whether it fired.
func (s *Cluster) forgeAhead(n *node, a fsm.Action, i int) bool {
	st := &s.store
	if a.Kind != fsm.Swap || a.Swap != fsm.Renew || n.m.State() != fsm.Leader || !st.present || st.rev != a.Expected || st.rec.Holder == "" {
		return false
	}
	f := s.faults[i]
	rev := st.rev + 2
	stamp := st.stamp
	if s.opt.Store.predictableStamp {
		stamp = uint64(rev)
	}
	s.tracef(n.idx, "TARGETED: its renewal is in flight; the followers are told of the renewal after it, at revision %d", rev)
	s.adv.backAt = s.now
	s.adv.lookalikeAt = s.now
	if s.adv.madeUp == nil {
		s.adv.madeUp = make(map[lease.Revision][]fsm.Lease)
	}
	s.adv.madeUp[rev] = append(s.adv.madeUp[rev], st.rec)
	for _, o := range s.nodes {
		if o == n || !o.up || f.Mask != 0 && f.Mask&(1<<o.idx) == 0 {
			continue
		}
		w := simEvent{kind: evWatch, node: int32(o.idx), gen: o.gen, lease: st.rec, rev: rev, stamp: stamp, at: s.now + s.latency()}
		if !s.opt.Faults.WatchChaos {
			w.at = max(w.at, o.watchLast)
			o.watchLast = w.at
		}
		s.push(w)
	}
	s.adv.aheadCut = aheadCut{on: true, node: n.idx, gen: n.gen, expected: rev, fault: i, d: int64(f.Dur)}
	return true
}

// quietRewind returns the revision a targeted rollback rewinds the store to
// when follower n is about to perform a: the revision of the record n last
// accepted, if a is a read and the store now holds a later renewal of that
// record (same holder and token); 0 if the fault does not fire.
func (s *Cluster) quietRewind(n *node, a fsm.Action) lease.Revision {
	st := &s.store
	if a.Kind != fsm.Read || n.m.State() != fsm.Follower || !st.present || st.rec.Holder == "" {
		return 0
	}
	l, rev, absent, ok := n.m.Observed()
	if !ok || absent || rev == 0 || rev >= st.rev || s.adv.forgedRev[rev] {
		return 0
	}
	if uint64(rev) >= uint64(len(st.history)) || st.history[rev] != l || l.Holder != st.rec.Holder || l.Token != st.rec.Token {
		return 0
	}
	return rev
}

// leaderOtherThan returns a node other than n that believes it leads, or -1.
func (s *Cluster) leaderOtherThan(n *node) int {
	for _, o := range s.nodes {
		if o != n && o.up && o.beliefEnd > s.now {
			return o.idx
		}
	}
	return -1
}

// advEvent runs a phase of a targeted fault.
func (s *Cluster) advEvent(ev *simEvent) {
	f := s.faults[ev.count]
	n := s.nodes[ev.node]
	c := &s.chk
	switch ev.token {
	case phaseReconfigure:
		if !n.up || n.gen != ev.gen {
			return
		}
		s.tracef(n.idx, "TARGETED: reconfigured during its renewal, then cut off for %v", f.Dur)
		n.cfg = f.Config
		if n.pausedUntil <= s.now {
			s.step(n, fsm.Event{Kind: fsm.Reconfigure, Config: f.Config})
		}
		s.cut(n, ev.count, int64(f.Dur))
	case phaseSilence:
		// The hold is over; silence whoever leads now (or the leader of
		// the trigger).
		s.adv.hold.node = -1
		c.active--
		if l := s.leaderOtherThan(nil); l >= 0 {
			n = s.nodes[l]
		}
		s.tracef(n.idx, "TARGETED: the leader is cut off for %v", f.Cut)
		s.cut(n, ev.count, int64(f.Cut))
	case phaseStop:
		if !n.up || n.gen != ev.gen {
			return
		}
		s.faults[ev.count].Node = n.idx
		s.tracef(n.idx, "TARGETED: stopped, releasing, while its create is in flight; back after %v", f.Dur)
		if n.pausedUntil <= s.now {
			s.step(n, fsm.Event{Kind: fsm.Stop, Release: true})
		}
		if f.Dur > 0 {
			s.push(simEvent{at: s.now + int64(f.Dur), kind: evFaultEnd, node: int32(n.idx), count: ev.count})
		}
	case phaseHeal:
		n.reqCut, n.respCut = false, false
		c.active--
		s.tracef(n.idx, "targeted cut heals")
		s.advDisturbed(s.now)
	}
}

// cut cuts n off both ways for d.
func (s *Cluster) cut(n *node, i int, d int64) {
	n.reqCut, n.respCut = true, true
	s.chk.active++
	s.advDisturbed(s.now)
	s.push(simEvent{at: s.now + d, kind: evAdv, node: int32(n.idx), count: i, token: phaseHeal})
}

// heldRequest is the extra delay of n's request ev if it is held.
func (s *Cluster) heldRequest(n *node, ev *simEvent) int64 {
	h := &s.adv.hold
	if h.node != n.idx || h.gen != n.gen || h.op != ev.op || !h.req {
		return 0
	}
	h.op = 0
	return h.d
}

// heldReply is the extra delay of the reply to request ev if it is held.
func (s *Cluster) heldReply(ev *simEvent) int64 {
	h := &s.adv.hold
	if h.node != int(ev.node) || h.gen != ev.gen || h.op != ev.op || h.req {
		return 0
	}
	h.op = 0
	return h.d
}

// jitterDelay draws the extra delay of one message in a jitter window.
func (s *Cluster) jitterDelay() int64 {
	if !s.chance(s.adv.jitterP) {
		return 0
	}
	return s.uniform(0, s.adv.jitterMax)
}
