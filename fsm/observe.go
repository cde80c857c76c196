package fsm

import (
	"time"

	"github.com/tenure-go/tenure/lease"
)

// What the node accepts from the store's answers, and what follows from it
// for every state: when a follower may take over, how long it waits. No
// function here changes the state; answer (machine.go) applies each
// state's rules to the verdict.

// storeView is what the node knows of the store: what it accepted from
// the store's answers (reads and swap replies; watch events are only
// hints, see hintTracker), the maxima it keeps across them, and the wait a
// rollback imposes. observe takes every answer in, and guardHeld the
// record a guarded swap that succeeded was guarded by, both through keep;
// only hold writes holdUntil.
type storeView struct {
	seen      bool           // anything accepted yet (false again after an unknown outcome: forget)
	absent    bool           // the last answer found no record
	obs       Lease          // the last record accepted (if !absent)
	rev       lease.Revision // its revision (0 if absent)
	firstSeen time.Duration  // when the node first received rev (or absence)
	maxRev    lease.Revision // newest revision accepted (a rollback resets it to what the store shows)
	topRev    lease.Revision // newest revision ever accepted (a rollback keeps it; see witnessed)
	last      Lease          // the record accepted at maxRev
	maxToken  uint64         // largest token ever accepted
	maxTrans  uint64         // largest Transitions ever accepted
	maxLease  time.Duration  // largest LeaseDuration accepted (lossy stores; decays, see decayMaxLease)
	lossWait  bool           // lossy: an absence was seen and not yet waited out in full
	corrupt   bool           // the store's last answer was a record the machine refused
	holdUntil time.Duration  // no new term before this: after a rollback, a contradiction, or a create refused with no record (see hold)
}

// keep takes in l, accepted at rev, as the newest record the node knows
// of, and raises the maxima to it.
func (v *storeView) keep(rev lease.Revision, l Lease) {
	v.maxRev, v.last = rev, l
	v.topRev = max(v.topRev, rev)
	v.maxToken = max(v.maxToken, l.Token)
	v.maxTrans = max(v.maxTrans, l.Transitions)
	v.maxLease = max(v.maxLease, l.LeaseDuration)
}

// hold starts no term before until (or before the wait already in force,
// if it ends later).
func (v *storeView) hold(until time.Duration) { v.holdUntil = max(v.holdUntil, until) }

// forget makes the next answer news again, as after a swap whose outcome
// is unknown: the record it shows restarts the node's patience.
func (v *storeView) forget() { v.seen = false }

// verdict is what observe made of an answer.
type verdict uint8

const (
	refused  verdict = iota // corrupt or out of bounds: not accepted
	same                    // the record already accepted: nothing new
	fresh                   // accepted: a newer revision, or an absence
	wentBack                // accepted, but older than what was accepted before
)

// observe takes in the store's answer to a read or a swap and says what it
// made of it. Only one request is in flight at a time and each is sent
// after the previous answer came, so every answer shows the store as it is
// now, later than every answer before it: a revision below the newest one
// accepted is a rollback. It reports a refused record and a rollback; it
// changes no state (see answer).
func (m *Machine) observe(ev Event) verdict {
	m.answered(ev)
	if ev.Corrupt || !ev.Absent && (ev.Revision == 0 || !InBounds(ev.Lease)) || ev.Kind == SwapDone && ev.Absent {
		// Anyone who can write the store can write anything: never let such
		// a record into the state (no token, wait or revision from it).
		// Nobody takes the lease over until it is replaced or removed. (A
		// swap that succeeded and left no record is as unreadable.)
		m.view.corrupt = true
		// Its revision is still the store's word that the record moved
		// on: an answer showing the accepted record again, at a lower
		// revision, is the store going back (see contradicted).
		if ev.Kind != SwapDone && ev.Revision > m.view.maxRev {
			m.hear(ev.Revision)
			m.hints.heardTop = max(m.hints.heardTop, ev.Revision)
		}
		m.emit(Action{Kind: Report, Problem: ProblemCorrupt, Revision: ev.Revision})
		return refused
	}
	m.view.corrupt = false
	if ev.Absent {
		return m.observeAbsent()
	}
	v := fresh
	switch {
	case ev.Revision > m.view.maxRev:
	case ev.Revision == m.view.maxRev && !m.view.absent && ev.Lease == m.view.last:
		if m.view.seen {
			return same
		}
		// After a swap with an unknown outcome the node forgot what it
		// saw: the newest revision is news again (its patience restarts).
	default:
		// Older than the newest accepted (or the same revision with
		// another record, or back after the record vanished): the store
		// was restored, failed over or edited. Follow what it holds now,
		// but start no term before a full lease has passed.
		m.rollback(ev.Revision)
		v = wentBack
	}
	m.view.keep(ev.Revision, ev.Lease)
	m.view.seen, m.view.absent = true, false
	m.view.obs, m.view.rev, m.view.firstSeen = ev.Lease, ev.Revision, m.now
	if ev.Lease.Holder != "" && ev.Lease.Holder != m.id || ev.Lease.Token > m.yieldToken {
		// Another node took over (and may have released since, with a
		// larger token than the resigned term's): a resign's wait is over.
		m.yieldUntil = 0
	}
	return v
}

// observeAbsent takes in an answer showing no record.
func (m *Machine) observeAbsent() verdict {
	v := fresh
	if m.view.maxRev > 0 && !m.lossy {
		// A store that keeps its records never shows none after one (a
		// release keeps the record): it went back in time.
		m.rollback(0)
		m.view.maxRev, m.view.last = 0, Lease{}
		v = wentBack
	}
	if !m.view.seen || !m.view.absent {
		m.view.firstSeen = m.now
		m.view.lossWait = m.lossy
	}
	m.view.seen, m.view.absent = true, true
	m.view.obs, m.view.rev = Lease{}, 0
	return v
}

// rollback handles an answer showing revision to, older than the newest one
// accepted (0: no record). The holder of the newest record may still
// believe it leads: wait out the longest lease the node knows of, counted
// from now, before starting a term. (A leader steps down: see termLost.)
func (m *Machine) rollback(to lease.Revision) {
	wait := m.rollbackWait()
	m.view.hold(sat(m.now, wait))
	m.unknownToken = 0 // the old history is not ours to confirm
	m.emit(Action{Kind: Report, Problem: ProblemRollback, Revision: to, Newest: m.view.maxRev, Until: m.view.holdUntil, Wait: wait})
}

// rollbackWait is how long the node starts no term after a rollback, or an
// answer that contradicts what watch events announced (see contradicted):
// the longest lease the holder of the newest record it accepted may believe
// it has (its own LeaseDuration at least, and in a lossy store the longest
// promise seen, for a record that may have vanished).
func (m *Machine) rollbackWait() time.Duration {
	wait := max(m.cfg.LeaseDuration, m.view.last.LeaseDuration)
	if m.lossy {
		wait = max(wait, m.view.maxLease)
	}
	return wait
}

// warnLongWait reports, for a record just accepted, a wait longer than the
// node's own LeaseDuration before it may take the record over.
func (m *Machine) warnLongWait(v verdict) {
	if (v == fresh || v == wentBack) && m.stealable() {
		if w := m.patience(); w > m.cfg.LeaseDuration {
			m.emit(Action{Kind: Report, Problem: ProblemLongWait, Revision: m.view.rev, Wait: w, Until: m.patienceEnds()})
		}
	}
}

// ours reports whether l is this node's current term.
func (m *Machine) ours(l Lease) bool {
	return l.Holder == m.id && l.Token == m.term.token
}

// stored reports whether l, stored by a successful acquire or renew swap,
// is what the swap asked for. A store that reports success but stores
// another holder, or a token other than ours (a store may raise a new
// term's token, never lower it), breaks its contract; never lead on it.
func (m *Machine) stored(l Lease) bool {
	want := m.req.next
	return l.Holder == m.id && !(m.req.swap == Acquire && l.Token < want.Token) && !(m.req.swap == Renew && l.Token != want.Token)
}

// stealable reports whether the observed record is one the node waits out
// before taking it over: held, or released to another successor.
func (m *Machine) stealable() bool {
	return m.view.seen && !m.view.absent && !m.openTo(m.view.obs)
}

// openTo reports whether l, a readable record, is free for this node to
// take at once: released, naming no successor or this node. A release
// that names another is waited out as a held record is: only the named
// successor takes it at once, and a successor that never comes costs the
// others one lease.
func (m *Machine) openTo(l Lease) bool {
	return l.Holder == "" && (l.Successor == "" || l.Successor == m.id)
}

// patience is how long a follower waits out the observed record: the
// LeaseDuration its holder promised, but never less than its own (anyone
// who can write the store can shorten the promise on a live leader's
// record, and the leader's belief still lasts its own RenewDeadline), and in
// a lossy store at least the longest promise this node has seen (the record
// may stand in for one that vanished, whose holder promised more).
func (m *Machine) patience() time.Duration {
	d := max(m.view.obs.LeaseDuration, m.cfg.LeaseDuration)
	if m.lossy {
		d = max(d, m.view.maxLease)
	}
	return d
}

// patienceEnds is when a follower may take over the observed record.
func (m *Machine) patienceEnds() time.Duration { return sat(m.view.firstSeen, m.patience()) }

// acquireAt is when the follower may start a term on what it observed
// (Never while it knows nothing or the store's record is unreadable): at
// once if the lease is free, when its patience ends if it is held, and
// never before a rollback has been waited out, nor before a resign's wait
// (see resign) is over.
func (m *Machine) acquireAt() time.Duration {
	if !m.view.seen || m.view.corrupt {
		return Never
	}
	hold := max(m.view.holdUntil, m.yieldUntil)
	if m.view.absent || m.openTo(m.view.obs) {
		return hold
	}
	return max(m.patienceEnds(), hold)
}

// confirmable reports whether a read shows the acquire whose outcome was
// unknown as landed, so that a renewing swap may confirm it.
func (m *Machine) confirmable() bool {
	return m.view.seen && !m.view.absent && !m.view.corrupt && m.unknownToken != 0 &&
		m.view.obs.Holder == m.id && m.view.obs.Token == m.unknownToken && m.view.obs.Token == m.view.maxToken &&
		m.reached(m.view.holdUntil)
}
