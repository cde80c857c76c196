package fsm

import "github.com/tenure-go/tenure/lease"

// The two shortcuts: a follower may act on a watch event showing the
// lease released without reading the record first, where the store makes
// that safe. Each is guarded by named predicates, listed with the reason
// for each in the package documentation ("Shortcuts").

// witnessed takes in an authentic watch event showing the record released
// as an answer (see Options.AuthenticWatch), and reports whether it did.
// A request the follower sends from then on is served after the event's
// revision was committed, so every answer that follows shows the store
// later than the event, as observe requires. Where a guard fails, a read
// decides. The event opens a fresh allowance of quick requests, as the
// read it replaces would: only a write by someone else makes such an
// event, so this costs no more than the budget's N.
func (m *Machine) witnessed(ev Event) bool {
	if !(m.authentic && m.following() && m.idle() && m.holdOver() &&
		showsRelease(ev.Revision, ev.Lease, ev.Absent, ev.Corrupt) && m.openTo(ev.Lease) &&
		m.aboveAccepted(ev.Revision) && m.aboveEvents(ev.Revision)) {
		return false
	}
	m.quick = 0
	ev.Kind = ReadDone
	m.answer(ev)
	return true
}

// takeHeardRelease takes over, with a guarded swap (Options.GuardedRelease),
// the release the watch hint shows, instead of reading the record first,
// and reports whether it did. The swap succeeds only if the store holds
// that very record at that revision when it writes, so it acts on exactly
// what a read at that instant would have shown, and a forged hint makes it
// fail with the record the store holds, which the machine then takes in
// like any answer. Nothing the hint claims is taken in before the store
// confirms it (guardHeld). The machine does it only where it would take
// over at once after such a read. Like the read it replaces, it is not
// counted against the request budget; a hint it does not confirm mutes
// hints for a RetryInterval (see answered), so forged hints cost at most
// one swap per RetryInterval.
func (m *Machine) takeHeardRelease() bool {
	h, rev := m.hints.newsLease, m.hints.newsRev
	if !(m.guarded && showsRelease(rev, h, m.hints.newsAbsent, m.hints.newsCorrupt) && m.openTo(h) &&
		m.aboveAccepted(rev) && m.aboveRenewals(rev) && m.notBelowEvents(rev) &&
		m.waitsOver() && m.tokenLeft(h)) {
		return false
	}
	next := Lease{
		Holder:        m.id,
		Token:         max(m.view.maxToken, h.Token) + 1,
		Transitions:   min(max(m.view.maxTrans, h.Transitions)+1, lease.MaxToken),
		LeaseDuration: m.cfg.LeaseDuration,
	}
	// A new attempt, as in acquire: only this one's outcome may be
	// confirmed (a term's token is never below one the node proposed
	// since), so an earlier acquire whose outcome is unknown, if a
	// conflict shows it landed, is waited out like anyone's record. Like
	// the read it replaces, it leaves the retry schedule alone.
	m.unknownToken = 0
	sched := m.nextOp
	m.state = Candidate
	m.sendSwap(Action{Kind: Swap, Swap: Acquire, Expected: rev, Next: next, Guarded: true, Was: h})
	m.nextOp = sched
	return true
}

// guardHeld takes in, when a guarded swap succeeded, the released record
// it was guarded by: the store held it at the expected revision when it
// wrote, as a read at that instant would have shown.
func (m *Machine) guardHeld() {
	m.view.keep(max(m.view.maxRev, m.req.expected), m.req.was)
}

// The guards' predicates (see the package documentation for why each).

// following reports whether the node is a Follower.
func (m *Machine) following() bool { return m.state == Follower }

// idle reports whether no request is in flight.
func (m *Machine) idle() bool { return !m.req.pending }

// holdOver reports whether a rollback's wait is over (or none was imposed).
func (m *Machine) holdOver() bool { return m.now >= m.view.holdUntil }

// waitsOver reports whether neither a rollback's wait nor a resign's is in
// force.
func (m *Machine) waitsOver() bool { return m.reached(max(m.view.holdUntil, m.yieldUntil)) }

// showsRelease reports whether a watch event (or the hint it left) shows a
// readable released record: present, not flagged corrupt, at a revision,
// with no holder, within bounds.
func showsRelease(rev lease.Revision, l Lease, absent, corrupt bool) bool {
	return !absent && !corrupt && rev != 0 && l.Holder == "" && InBounds(l)
}

// aboveAccepted reports whether rev is above every revision the node ever
// accepted (topRev, which a rollback does not lower).
func (m *Machine) aboveAccepted(rev lease.Revision) bool {
	return rev > max(m.view.maxRev, m.view.topRev)
}

// aboveEvents reports whether rev is above every revision a watch event
// showed that no answer has settled (heardTop).
func (m *Machine) aboveEvents(rev lease.Revision) bool { return rev > m.hints.heardTop }

// notBelowEvents reports whether no watch event showed a revision above
// rev that no answer has settled (the hint's own event raised heardTop to
// rev).
func (m *Machine) notBelowEvents(rev lease.Revision) bool { return m.hints.heardTop <= rev }

// aboveRenewals reports whether rev is above every renewal heard that no
// answer has settled (heardMax, quietRev).
func (m *Machine) aboveRenewals(rev lease.Revision) bool {
	return rev > max(m.hints.heardMax, m.hints.quietRev)
}

// tokenLeft reports whether a token is left above l's and every token the
// node accepted.
func (m *Machine) tokenLeft(l Lease) bool { return max(m.view.maxToken, l.Token) < lease.MaxToken }
