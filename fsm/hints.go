package fsm

import (
	"time"

	"github.com/tenure-go/tenure/lease"
)

// Watch events. They are hints: none changes what the node believes or
// waits for. A hint that claims news makes the node ask the store (hinted,
// news, answered); a renewal of the record a follower follows postpones
// its scheduled reads, within bounds (renewal, quietEnd, pollAt).

// hintTracker is what watch events told the node, kept apart from what it
// accepted (storeView): the news hint a request is to settle, the renewals
// heard that postpone a follower's reads, and the revisions events showed
// that no answer has settled yet. Every answer settles it (answered); a
// contradiction (distrust) and a lost watch (lost) reset what they undo.
type hintTracker struct {
	// The news hint not yet settled by an answer (see hinted, news).
	news        bool
	newsRev     lease.Revision
	newsLease   Lease
	newsAbsent  bool
	newsCorrupt bool
	newsSeq     uint64         // requests sent when it arrived
	newsBase    lease.Revision // the newest revision accepted when it arrived
	newsOwn     bool           // shown by the node's own write sent before it
	muteUntil   time.Duration  // hints are ignored until then (one was contradicted)

	// Renewal hints: watch events showing the record the node follows
	// (same holder and token) at a newer revision. They make a follower
	// skip its scheduled reads for a while (see pollAt); they never start
	// or move a wait.
	heard       bool           // a renewal hint arrived since the watch was last lost
	heardAt     time.Duration  // when the latest one arrived
	heardLease  Lease          // the record it showed
	quietRev    lease.Revision // its revision, until an answer settles it (0: none)
	quietSeq    uint64         // requests sent when it arrived
	heardMax    lease.Revision // the newest renewal heard and not yet settled by an answer (kept when the watch is lost)
	heardHolder string         // the holder and token of the record followed when heardMax was heard (see hear)
	heardToken  uint64
	distrust    bool           // an answer contradicted a renewal hint; none counts until a read shows progress
	heardTop    lease.Revision // the newest revision any readable watch event showed, not yet settled by an answer
	lastAnswer  time.Duration  // when the store last answered a read or a swap

	// The latest renewal hint, kept until a read settles it: a read that
	// shows it (see confirmed) counts the follower's wait from its
	// receipt.
	proof        heardProof
	confirmedRev lease.Revision // the revision whose wait counts from a renewal's receipt (see quietWait)
}

// heardProof is a renewal hint that a read may confirm: its revision,
// record and stamp, and when it arrived.
type heardProof struct {
	rev   lease.Revision
	at    time.Duration
	lease Lease
	stamp uint64
}

// lost forgets the renewals heard when the watch is lost: the follower
// polls until it hears them again.
func (h *hintTracker) lost() { h.heard, h.quietRev = false, 0 }

// distrustAll drops every renewal heard and revision shown, and counts no
// event as a renewal until a read shows the record move on (contradicted).
func (h *hintTracker) distrustAll() {
	h.heard, h.quietRev, h.heardMax, h.distrust = false, 0, 0, true
	h.heardTop, h.proof = 0, heardProof{}
}

// hinted handles a watch event. Anyone who can publish on the store's
// channel can forge one, so it changes nothing the node believes or waits
// for: if it claims something that would change what the node does, it
// makes the node read the record (a leader renews instead) soon: at once,
// or after the request in flight. The answer is what counts.
func (m *Machine) hinted(ev Event) {
	if m.stopping {
		return
	}
	if m.witnessed(ev) {
		return
	}
	if !ev.Absent && !ev.Corrupt && ev.Revision > m.view.maxRev {
		// Kept whatever the event claims, even while hints are muted: a
		// revision the store announced and a later answer does not show
		// is a rollback, unless the event was forged (see contradicted).
		m.hints.heardTop = max(m.hints.heardTop, ev.Revision)
	}
	if m.renewalLike(ev) {
		// Kept even while hints are muted or distrusted: a renewal heard
		// and then not seen by a read is what tells a rollback (see
		// contradicted). Only safety uses it, never to postpone a read.
		m.hear(ev.Revision)
	}
	if m.now < m.hints.muteUntil {
		return
	}
	if m.renewal(ev) {
		m.hints.heard, m.hints.heardAt, m.hints.heardLease = true, m.now, ev.Lease
		m.hints.quietRev, m.hints.quietSeq = ev.Revision, m.sent
		m.hints.proof = heardProof{rev: ev.Revision, at: m.now, lease: ev.Lease, stamp: ev.Stamp}
		return
	}
	if !m.news(ev) {
		return
	}
	m.hints.news, m.hints.newsRev, m.hints.newsLease, m.hints.newsAbsent, m.hints.newsCorrupt, m.hints.newsSeq = true, ev.Revision, ev.Lease, ev.Absent, ev.Corrupt, m.sent
	m.hints.newsBase, m.hints.newsOwn = m.view.maxRev, false
	if ev.Absent {
		m.hints.newsRev, m.hints.newsLease, m.hints.newsCorrupt = 0, Lease{}, false
	}
}

// watchLost handles WatchLost: changes may have been missed, so the node
// polls as without a watch until the next renewal hint (a follower whose
// reads were postponed reads at once, its schedule being due).
func (m *Machine) watchLost() { m.hints.lost() }

// news reports whether a watch event claims something that would change what
// the node does: a record gone, or a newer revision with another holder or
// token (or unreadable). A renewal of the record the node follows is not
// news: its next poll sees it.
func (m *Machine) news(ev Event) bool {
	switch {
	case ev.Absent:
		return !m.view.seen || !m.view.absent
	case ev.Revision < m.view.maxRev, ev.Revision == m.view.maxRev && m.view.seen:
		return false
	}
	return !m.view.seen || ev.Corrupt || m.view.absent || ev.Lease.Holder != m.view.obs.Holder || ev.Lease.Token != m.view.obs.Token ||
		ev.Lease.Successor != m.view.obs.Successor
}

// renewal reports whether a watch event shows a renewal of the record the
// node follows: a valid record with its holder and token at a revision
// newer than any the node accepted or heard of since its last answer. It
// is what a healthy watch delivers every retry pause while the lease is
// held, and what it says is taken on trust for nothing but when to read
// next (see pollAt): a forged one postpones reads, within bounds.
func (m *Machine) renewal(ev Event) bool {
	return !m.hints.distrust && !m.view.corrupt && ev.Revision > m.hints.quietRev && m.renewalLike(ev)
}

// renewalLike reports whether a watch event shows the record the node
// follows (a valid record, same holder and token) at a revision newer than
// any it accepted: a renewal, if it is not forged. Also while the store's
// last answer was a record the node refused: the one it accepted before is
// still what it would take over.
func (m *Machine) renewalLike(ev Event) bool {
	return !ev.Absent && !ev.Corrupt && m.view.seen && !m.view.absent && m.view.obs.Holder != "" &&
		ev.Revision > m.view.maxRev && InBounds(ev.Lease) &&
		ev.Lease.Holder == m.view.obs.Holder && ev.Lease.Token == m.view.obs.Token
}

// quietEnd is when a follower that heard renewals of the record it follows
// reads again, unless another renewal is heard meanwhile: a silence of
// MaxRetryInterval plus half a RetryInterval after the latest one (a
// leader renews every retry pause: longer silence means it stopped, or
// the watch did), and never later than LeaseDuration after the store's
// last answer (the safety net: forged renewals cannot postpone reads for
// longer). 0 (nothing postponed) if no renewal of the record it follows
// was heard since the watch was last lost, or it no longer shows that record.
func (m *Machine) quietEnd() time.Duration {
	if !m.hints.heard || !m.stealable() || m.view.corrupt || m.hints.heardLease.Holder != m.view.obs.Holder || m.hints.heardLease.Token != m.view.obs.Token {
		return 0
	}
	silence := sat(m.cfg.MaxRetryInterval(), m.cfg.RetryInterval/2)
	return min(sat(m.hints.heardAt, silence), sat(m.hints.lastAnswer, m.cfg.LeaseDuration))
}

// quietWait reports whether a follower whose wait on the revision it
// follows counts from a renewal's receipt (confirmed) holds back the read
// before taking over: renewals of it are still heard, and the quiet has
// not ended (quietEnd, at the latest LeaseDuration after the last answer).
func (m *Machine) quietWait() bool {
	return m.hints.confirmedRev != 0 && m.hints.confirmedRev == m.view.rev && !m.reached(m.quietEnd())
}

// pollAt is when a follower's scheduled read is due: its retry schedule,
// postponed while renewals are heard (quietEnd).
func (m *Machine) pollAt() time.Duration {
	return max(m.nextOp, m.quietEnd())
}

// staleByHints reports whether a renewal was heard at a revision newer than
// the one the follower waits out, or any watch event showed a revision
// newer than it that no answer settled yet (heardTop): taking the lease
// over from that revision would be a swap bound to fail unless the store
// went back and lost what the event announced, so the follower reads first
// (once per wait, see takeOver). Also a renewal of that record heard while hints
// were muted or distrusted (heardMax, which no answer settled yet): the
// swap would fail unless the store went back and lost that renewal, whose
// writer may still lead on it; the read's answer then shows the
// contradiction (see contradicted). Without that read, a renewal heard
// while muted and a rollback to the revision waited out let a swap from it
// succeed under the renewal's writer (the simulator's adversary seed 8710,
// an extreme config).
// A renewal of a record the node no longer follows (the lease changed
// hands, or was released, since) says nothing about the one it waits out.
func (m *Machine) staleByHints() bool {
	return m.hints.quietRev > m.view.rev && m.quietEnd() != 0 ||
		m.hints.heardMax > m.view.rev && m.hints.heardHolder == m.view.obs.Holder && m.hints.heardToken == m.view.obs.Token ||
		m.hints.heardTop > m.view.rev
}

// hear raises heardMax to rev, noting the record the node followed then.
func (m *Machine) hear(rev lease.Revision) {
	if rev > m.hints.heardMax {
		m.hints.heardMax, m.hints.heardHolder, m.hints.heardToken = rev, m.view.obs.Holder, m.view.obs.Token
	}
}

// answered settles the watch hint with the answer to the request that just
// returned. The answer confirms the hint if it shows the record the hint
// claimed (same revision and record), or a newer revision that someone else
// wrote: the node's own successful write confirms nothing, or a forged event
// claiming the next revision would be confirmed by the renewal it caused.
// The event of the node's own write, come before its reply (the same
// revision and record, the write sent before the event arrived), stays
// news: a new leader renews at once, since a follower may have heard of
// an acquire the store then rolls back, and the renewal finds such a
// rollback within a round trip rather than at the next scheduled renewal
// (a margin: the follower's contradiction wait is what keeps it from
// taking over, and the adversary finds no second leader without the
// renewal); the answer to that renewal, showing a newer revision of the
// node's own, confirms it.
// The hint is settled if the answer confirms it or if the request was sent
// after the hint arrived; in that second case an answer that does not
// confirm it proves it stale or forged, and hints are ignored for a
// RetryInterval, so a flood of forged events costs at most one request per
// RetryInterval.
func (m *Machine) answered(ev Event) {
	m.hints.lastAnswer = m.now
	valid := !ev.Absent && !ev.Corrupt && ev.Kind != SwapDone
	if m.hints.distrust && valid && ev.Revision > m.view.maxRev {
		// The store moved on, as a read shows: renewal hints may count again.
		m.hints.distrust = false
	}
	switch {
	case valid && ev.Revision < m.req.heardMax && m.view.seen && !m.view.absent && ev.Revision == m.view.maxRev && ev.Lease == m.view.last:
		// The record already accepted, unchanged, although a renewal at a
		// newer revision was heard before the request was sent. (A newer
		// revision restarts the wait anyway, an older one is a rollback.)
		m.contradicted(ev)
	case valid && ev.Revision < m.req.heardTop && ev.Revision >= m.view.maxRev,
		ev.Absent && !m.lossy && m.req.heardTop > 0 && m.view.maxRev == 0:
		// A revision older than one a watch event showed before the
		// request was sent, or no record in a store that keeps them: the
		// store went back, or the event was forged.
		m.contradicted(ev)
	}
	if m.hints.heardTop <= m.req.heardTop && !ev.Corrupt {
		// Settled by an answer to a request sent after it, which showed a
		// revision (an unreadable record shows none).
		m.hints.heardTop = 0
	}
	// Settled: an event taken in as an answer (witnessed) answers no
	// request.
	m.req.heardTop = 0
	if m.hints.heardMax <= m.req.heardMax {
		// Every renewal heard was heard before the request was sent: the
		// answer settles them (it shows them, a newer record, or the
		// contradiction above).
		m.hints.heardMax = 0
	}
	if m.hints.quietRev != 0 && (ev.Revision >= m.hints.quietRev || m.req.seq > m.hints.quietSeq) {
		// The answer shows the renewal heard, or was sent after it: what
		// it shows is what counts.
		m.hints.quietRev = 0
	}
	if !m.hints.news {
		return
	}
	// A guarded swap that went through confirms the release it was
	// guarded by: the store held it.
	same := ev.Revision == m.hints.newsRev && ev.Corrupt == m.hints.newsCorrupt && ev.Lease == m.hints.newsLease
	after := m.req.seq > m.hints.newsSeq
	if ev.Kind == SwapDone && !m.req.guarded && same && !ev.Corrupt && !after {
		m.hints.newsOwn = true
		return // the event of this very write: a renewal follows
	}
	confirmed := !m.hints.newsAbsent && !ev.Absent &&
		(ev.Kind != SwapDone || m.req.guarded || m.hints.newsOwn) && (ev.Revision > m.hints.newsRev || same)
	if !confirmed && !after {
		return // sent before the hint: a request follows
	}
	m.hints.news = false
	// A record newer than every one accepted when an absence was heard may
	// have been created since: it settles the absence, it does not
	// contradict it.
	if !confirmed && (!m.hints.newsAbsent || !ev.Absent && (ev.Kind == SwapDone || ev.Revision <= m.hints.newsBase)) {
		m.hints.muteUntil = sat(m.now, m.cfg.RetryInterval)
	}
}

// contradicted handles an answer to a request sent after a watch event
// arrived that shows a revision older than the event's (a renewal hint of
// the record the node accepted before, or any other event): either the
// event was forged, or the store went back in time and lost the writes it
// announced. A follower that heard them instead of reading them would
// otherwise take the rolled-back record for the one it waited out, or
// take a rolled-back release at once, while the node that wrote them
// still believes it leads (it renewed or acquired within its
// RenewDeadline). The machine cannot tell forgery from rollback, so it
// waits as after a rollback: no term before a full lease of what it last
// accepted, counted from now. And it takes no watch event as a renewal
// until a read shows the record move on: hints no longer postpone its
// reads. A lookalike heard after that is still kept (heardMax) and
// contradicted by the next read, since a real renewal lost in a rollback
// looks the same: a forger who keeps publishing them keeps the follower
// from taking over for as long as it does, one lease per contradiction
// (as a writer who keeps rewriting the record would); the safety net's
// reads go on, and each contradiction is reported.
func (m *Machine) contradicted(ev Event) {
	wait := m.rollbackWait()
	m.view.hold(sat(m.now, wait))
	m.emit(Action{Kind: Report, Problem: ProblemContradicted, Revision: ev.Revision, Newest: max(m.req.heardMax, m.req.heardTop), Until: m.view.holdUntil, Wait: wait})
	m.hints.distrustAll()
	m.req.heardTop = 0
}

// dropHint drops, when a request failed, the hint it was meant to settle
// (polling goes on), so a failing store cannot make hints loop.
func (m *Machine) dropHint() {
	if m.hints.news && m.req.seq > m.hints.newsSeq {
		m.hints.news = false
	}
}

// confirmed reports whether a follower's read, just accepted as a fresh
// revision, shows the very write the latest renewal hint announced, so
// that the write existed when the hint arrived: the revision and record
// the hint showed, and either an authentic watch (only the store makes
// events, after the write) or the same nonzero stamp (drawn afresh for
// every write: a forger who sends a hint before the write exists guesses
// 64 random bits). Its wait may then count from the hint's receipt, as
// from an answer received then (at). The hint is used up either way.
func (m *Machine) confirmed(ev Event) (at time.Duration, ok bool) {
	p := m.hints.proof
	m.hints.proof = heardProof{}
	return p.at, p.rev != 0 && ev.Revision == p.rev && ev.Lease == p.lease && p.at <= m.now &&
		(m.authentic || ev.Stamp != 0 && ev.Stamp == p.stamp)
}
