package fsm

import (
	"time"

	"github.com/tenure-go/tenure/lease"
)

// What the node accepts from the store's answers, and what follows from it
// for every state: when a follower may take over, how long it waits. No
// function here changes the state; answer (machine.go) applies each
// state's rules to the verdict.

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
		m.corrupt = true
		// Its revision is still the store's word that the record moved
		// on: an answer showing the accepted record again, at a lower
		// revision, is the store going back (see contradicted).
		if ev.Kind != SwapDone && ev.Revision > m.maxRev {
			m.hear(ev.Revision)
			m.heardTop = max(m.heardTop, ev.Revision)
		}
		m.emit(Action{Kind: Report, Problem: ProblemCorrupt, Revision: ev.Revision})
		return refused
	}
	m.corrupt = false
	if ev.Absent {
		return m.observeAbsent()
	}
	v := fresh
	switch {
	case ev.Revision > m.maxRev:
	case ev.Revision == m.maxRev && !m.absent && ev.Lease == m.last:
		if m.seen {
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
	m.maxRev, m.last = ev.Revision, ev.Lease
	m.topRev = max(m.topRev, ev.Revision)
	m.seen, m.absent = true, false
	m.obs, m.rev, m.firstSeen = ev.Lease, ev.Revision, m.now
	if ev.Lease.Holder != "" && ev.Lease.Holder != m.id || ev.Lease.Token > m.yieldToken {
		// Another node took over (and may have released since, with a
		// larger token than the resigned term's): a resign's wait is over.
		m.yieldUntil = 0
	}
	m.maxToken = max(m.maxToken, ev.Lease.Token)
	m.maxTrans = max(m.maxTrans, ev.Lease.Transitions)
	m.maxLease = max(m.maxLease, ev.Lease.LeaseDuration)
	return v
}

// observeAbsent takes in an answer showing no record.
func (m *Machine) observeAbsent() verdict {
	v := fresh
	if m.maxRev > 0 && !m.lossy {
		// A store that keeps its records never shows none after one (a
		// release keeps the record): it went back in time.
		m.rollback(0)
		m.maxRev, m.last = 0, Lease{}
		v = wentBack
	}
	if !m.seen || !m.absent {
		m.firstSeen = m.now
		m.lossWait = m.lossy
	}
	m.seen, m.absent = true, true
	m.obs, m.rev = Lease{}, 0
	return v
}

// rollback handles an answer showing revision to, older than the newest one
// accepted (0: no record). The holder of the newest record may still
// believe it leads: wait out the longest lease the node knows of, counted
// from now, before starting a term. (A leader steps down: see termLost.)
func (m *Machine) rollback(to lease.Revision) {
	wait := max(m.cfg.LeaseDuration, m.last.LeaseDuration)
	if m.lossy {
		wait = max(wait, m.maxLease)
	}
	m.holdUntil = max(m.holdUntil, sat(m.now, wait))
	m.unknownToken = 0 // the old history is not ours to confirm
	m.emit(Action{Kind: Report, Problem: ProblemRollback, Revision: to, Newest: m.maxRev, Until: m.holdUntil, Wait: wait})
}

// warnLongWait reports, for a record just accepted, a wait longer than the
// node's own LeaseDuration before it may take the record over.
func (m *Machine) warnLongWait(v verdict) {
	if (v == fresh || v == wentBack) && m.stealable() {
		if w := m.patience(); w > m.cfg.LeaseDuration {
			m.emit(Action{Kind: Report, Problem: ProblemLongWait, Revision: m.rev, Wait: w, Until: m.patienceEnds()})
		}
	}
}

// ours reports whether l is this node's current term.
func (m *Machine) ours(l Lease) bool {
	return l.Holder == m.id && l.Token == m.token
}

// stored reports whether l, stored by a successful acquire or renew swap,
// is what the swap asked for. A store that reports success but stores
// another holder, or a token other than ours (a store may raise a new
// term's token, never lower it), breaks its contract; never lead on it.
func (m *Machine) stored(l Lease) bool {
	want := m.pendingNext
	return l.Holder == m.id && !(m.pendingSwap == Acquire && l.Token < want.Token) && !(m.pendingSwap == Renew && l.Token != want.Token)
}

// stealable reports whether the observed record is one the node waits out
// before taking it over.
func (m *Machine) stealable() bool {
	return m.seen && !m.absent && m.obs.Holder != ""
}

// patience is how long a follower waits out the observed record: the
// LeaseDuration its holder promised, but never less than its own (anyone
// who can write the store can shorten the promise on a live leader's
// record, and the leader's belief still lasts its own RenewDeadline), and in
// a lossy store at least the longest promise this node has seen (the record
// may stand in for one that vanished, whose holder promised more).
func (m *Machine) patience() time.Duration {
	d := max(m.obs.LeaseDuration, m.cfg.LeaseDuration)
	if m.lossy {
		d = max(d, m.maxLease)
	}
	return d
}

// patienceEnds is when a follower may take over the observed record.
func (m *Machine) patienceEnds() time.Duration { return sat(m.firstSeen, m.patience()) }

// acquireAt is when the follower may start a term on what it observed
// (Never while it knows nothing or the store's record is unreadable): at
// once if the lease is free, when its patience ends if it is held, and
// never before a rollback has been waited out, nor before a resign's wait
// (see resign) is over.
func (m *Machine) acquireAt() time.Duration {
	if !m.seen || m.corrupt {
		return Never
	}
	hold := max(m.holdUntil, m.yieldUntil)
	if m.absent || m.obs.Holder == "" {
		return hold
	}
	return max(m.patienceEnds(), hold)
}

// confirmable reports whether a read shows the acquire whose outcome was
// unknown as landed, so that a renewing swap may confirm it.
func (m *Machine) confirmable() bool {
	return m.seen && !m.absent && !m.corrupt && m.unknownToken != 0 &&
		m.obs.Holder == m.id && m.obs.Token == m.unknownToken && m.obs.Token == m.maxToken &&
		m.reached(m.holdUntil)
}
