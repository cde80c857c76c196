package sim

// The one-leader and token checks are the oracle's (internal/oracle),
// which judges from the history this file records and nothing else:
// every swap as it is sent and as the store applies it, every record
// delivered to a node (a reply or a watch event), every act of the
// adversary on the store, and each node's belief sampled through the
// machine's public Leading and Term. Nothing a machine reports about
// itself (its Reports, Observed, LeaderUntil) reaches it.

import (
	"github.com/tenure-go/tenure/fsm"
	"github.com/tenure-go/tenure/internal/oracle"
)

// onode is n's current incarnation as the oracle names it.
func (n *node) onode() oracle.Node { return oracle.Node{ID: n.idx, Gen: n.gen} }

// orec is l as the oracle records it.
func orec(l fsm.Lease) oracle.Rec {
	return oracle.Rec{Holder: l.Holder, Token: l.Token, Transitions: l.Transitions, LeaseDuration: l.LeaseDuration}
}

// sent records the swap a, sent by n now, and returns the index of its
// snapshot in s.snaps (kept out of the events, which stay small).
func (s *Cluster) sent(n *node, a fsm.Action) uint32 {
	sn := s.or.Send(n.onode(), s.now, a.Expected, orec(a.Next))
	if k := len(s.free); k > 0 {
		i := s.free[k-1]
		s.free = s.free[:k-1]
		s.snaps[i] = sn
		return i
	}
	s.snaps = append(s.snaps, sn)
	return uint32(len(s.snaps) - 1)
}

// arrived returns the snapshot of the swap ev, which reaches the store
// now, and frees its slot (a request reaches the store once).
func (s *Cluster) arrived(ev *simEvent) oracle.Snapshot {
	s.free = append(s.free, ev.snap)
	return s.snaps[ev.snap]
}

// sample records n's belief now, if it changed since its last sample or
// force is set.
func (s *Cluster) sample(n *node, force bool) {
	if !n.up {
		return
	}
	tok, _, ok := n.m.Term()
	leading := ok && n.m.Leading(n.local(s.now))
	if !leading {
		tok = 0
	}
	if !force && leading == n.oLead && tok == n.oTok {
		return
	}
	n.oLead, n.oTok = leading, tok
	s.or.Belief(n.onode(), s.now, leading, tok)
	s.judged()
}

// sampleAll records every node's belief now: at every term's start, any
// overlap is then seen at the instant it begins.
func (s *Cluster) sampleAll() {
	for _, n := range s.nodes {
		s.sample(n, true)
	}
}

// samplePending samples every belief at each instant up to next by which
// the oracle needs an excused overlap to have ended.
func (s *Cluster) samplePending(next int64) {
	for s.res.Violation == nil {
		p, ok := s.or.Pending()
		if !ok || p > next {
			return
		}
		s.now = max(s.now, p)
		s.sampleAll()
	}
}

// judged turns the oracle's first violation into the run's.
func (s *Cluster) judged() {
	if s.res.Violation != nil || !s.or.Failed() {
		return
	}
	v := s.or.Violations()[0]
	check := CheckOneLeader
	if v.Check == oracle.CheckTokens {
		check = CheckTokens
	}
	s.fail(check, "%s", v.Msg)
}
