package fsm

import (
	"errors"
	"time"

	"github.com/tenure-go/tenure/lease"
)

// ErrInvalidOptions is wrapped by the errors New returns.
var ErrInvalidOptions = errors.New("fsm: invalid options")

// This file reads top to bottom: the Machine, Step (every event goes the
// same way), answer (every store answer goes the same way), then one
// section per state, each with the becomeX that enters it and the state's
// rules (answerX, advanceX). What the node accepts from the store's answers
// is in observe.go, watch hints in hints.go, the requests and their budget
// in requests.go, the two shortcuts a watch event may take in shortcuts.go.

// Machine is one node's state machine for one election. It is not safe for
// concurrent use: one driver owns it.
//
// Each concern has a type of its own: the term (reset by becomeLeader,
// term.begin), the request in flight (reset by every request sent,
// request.start), what the node knows of the store (storeView) and what
// watch events told it (hintTracker). The last two outlive every state, as
// a raft log outlives a role: no becomeX resets them; the events that undo
// what they hold do (a rollback, a contradiction, a lost watch).
type Machine struct {
	id        string
	cfg       lease.Config
	rand      Rand
	lossy     bool
	authentic bool // watch events are authentic (Options.AuthenticWatch)
	guarded   bool // the store guards swaps from a release (Options.GuardedRelease)
	out       []Action
	now       time.Duration

	// The state and the fields the becomeX functions own.
	state State
	again bool // Leader, Expiring: a swap is wanted before nextOp (a renewal after a conflict showing our own record, a release after a term ended)
	term  term // Leader: the current term; Expiring: the one that ended

	// Stopping (see stop and finish): two ideas, two names.
	stopping bool // a Stop arrived: finish up (end the term, release), then stop
	keep     bool // that Stop had Release false: keep a held lease, do not release it
	stopped  bool // Done was emitted: every later event is ignored (Stopped)

	// The request budget (see allowed), and the one request in flight.
	nextOp time.Duration // when the next scheduled request is due
	quick  int           // requests sent before nextOp since the last scheduled or hinted one
	sent   uint64        // requests sent so far
	req    request

	// What the node accepted from the store's answers (see observe), and
	// what watch events told it (see hinted).
	view  storeView
	hints hintTracker

	// Waits and marks that outlive a state.
	unknownToken uint64 // token of an acquire whose outcome is unknown (see confirmable)
	exhausted    uint64 // requests sent when tokens were last reported exhausted
	// After a Resign: no new term before yieldUntil, unless a record
	// held by another node, or one with a token above the resigned
	// term's (yieldToken), is accepted first (observe clears it).
	yieldUntil time.Duration
	yieldToken uint64
	// After a Resign with a Successor: the identity the release names
	// (advanceExpiring), until the node follows again.
	successor string
}

// New returns a Machine in state Follower. It issues its first read at the
// first Tick.
func New(o Options) (*Machine, error) {
	if o.Identity == "" {
		return nil, errors.Join(ErrInvalidOptions, errors.New("fsm: Identity is empty"))
	}
	if err := o.Config.Validate(); err != nil {
		return nil, errors.Join(ErrInvalidOptions, err)
	}
	return &Machine{
		id:        o.Identity,
		cfg:       o.Config,
		rand:      o.Rand,
		lossy:     o.LossyStore,
		authentic: o.AuthenticWatch,
		guarded:   o.GuardedRelease,
		out:       make([]Action, 0, 2),
	}, nil
}

// State returns the current state.
func (m *Machine) State() State { return m.state }

// Identity returns the node's identity.
func (m *Machine) Identity() string { return m.id }

// Config returns the timings in force.
func (m *Machine) Config() lease.Config { return m.cfg }

// Stopped reports whether the machine has emitted Done. A machine that got
// Stop is stopping until then: it may still end its term and release.
func (m *Machine) Stopped() bool { return m.stopped }

// Leading reports whether the node leads at time now: it is Leader and its
// renew deadline has not passed. The driver uses it to answer questions
// between steps, when a timer may be late.
func (m *Machine) Leading(now time.Duration) bool {
	return m.state == Leader && now < m.term.until
}

// Term returns the token of the current term and when it started, if the
// machine is Leader.
func (m *Machine) Term() (token uint64, since time.Duration, ok bool) {
	if m.state != Leader {
		return 0, 0, false
	}
	return m.term.token, m.term.since, true
}

// LeaderUntil returns when the current term's belief ends (valid while
// Leader).
func (m *Machine) LeaderUntil() time.Duration { return m.term.until }

// LastConfirmed returns when the last successful acquire or renewal of the
// current term was sent (valid while Leader).
func (m *Machine) LastConfirmed() time.Duration { return m.term.confirmed }

// Observed returns the last record observed, its revision, and whether no
// record existed. ok is false before the first observation.
func (m *Machine) Observed() (l Lease, rev lease.Revision, absent, ok bool) {
	return m.view.obs, m.view.rev, m.view.absent, m.view.seen
}

// HoldUntil returns when the wait that the last rollback imposed ends: the
// machine starts no term before it (see ProblemRollback). It is 0 if the
// machine never saw a rollback.
func (m *Machine) HoldUntil() time.Duration { return m.view.holdUntil }

// TokensExhausted reports whether the largest token the machine accepted is
// lease.MaxToken: no new term can start (a term in progress may go on
// renewing). The machine then keeps polling and reports
// ProblemTokensExhausted whenever it would have started a term.
func (m *Machine) TokensExhausted() bool { return m.view.maxToken >= lease.MaxToken }

// NextWake returns when the machine next wants a Tick (Never if it waits only
// for a store result or a watch event). After a Step it is always later than
// the Step's time, or Never: nothing the machine could do at once is left
// for a timer.
func (m *Machine) NextWake() time.Duration {
	if m.stopped {
		return Never
	}
	wake := Never
	at := func(t time.Duration) {
		if t < wake {
			wake = t
		}
	}
	switch m.state {
	case Follower:
		if !m.req.pending {
			at(m.pollAt())
			if m.staleByHints() && m.reached(m.acquireAt()) {
				// The read before taking over (see takeOver).
				if m.quietWait() {
					at(m.quietEnd())
				} else {
					at(m.nextOp)
				}
			}
			if t := m.acquireAt(); t > m.now && !m.TokensExhausted() {
				at(t)
			}
		}
	case Leader:
		at(m.term.until)
		if !m.req.pending {
			at(m.nextOp)
		}
	case Expiring:
		if !m.req.pending {
			at(m.nextOp)
			at(m.term.expires())
		}
	}
	return wake
}

// Step handles ev and returns the actions to perform, in order. The slice is
// reused by the next Step.
//
// Every event goes the same way: time moves on (a leader whose deadline
// has passed steps down first, whatever the event says); the event is
// handled (an answer by observe, then by the rules of the state the node
// is in: see answer); then advance does what the state calls for now,
// the next request included.
func (m *Machine) Step(ev Event) []Action {
	m.out = m.out[:0]
	if m.stopped {
		return m.out
	}
	if ev.Now > m.now {
		m.now = ev.Now
	}
	m.checkDeadline()
	switch ev.Kind {
	case Tick:
	case ReadDone, SwapDone, SwapConflict:
		if m.awaits(ev.Kind) {
			m.req.pending = false
			m.answer(ev)
		}
	case ReadFailed, SwapFailed:
		if m.awaits(ev.Kind) {
			m.req.pending = false
			m.failed(ev)
		}
	case Watched:
		m.hinted(ev)
	case WatchLost:
		m.watchLost()
	case Stop:
		m.stop(ev.Release)
	case Resign:
		m.resign(ev.Successor)
	case Reconfigure:
		m.reconfigure(ev.Config)
	}
	m.advance()
	return m.out
}

// awaits reports whether a result of kind k answers the request in flight
// (a result with none in flight, or of the other kind, is ignored).
func (m *Machine) awaits(k EventKind) bool {
	if !m.req.pending {
		return false
	}
	if k == ReadDone || k == ReadFailed {
		return m.req.kind == Read
	}
	return m.req.kind == Swap
}

// answer handles the store's answer to the request in flight (a read's
// record, a swap's success or conflict). First observe takes in what the
// answer shows, the same way in every state, changing no state. Then a
// leader whose term the answer shows lost steps down (termLost), before
// anything else: a Follower now, it does nothing more with this answer.
// Then the wait the answer imposes is reported if long, and the state's own
// rules for the answer follow.
func (m *Machine) answer(ev Event) {
	if ev.Kind == SwapDone && m.req.guarded {
		m.guardHeld()
	}
	v := m.observe(ev)
	if ev.Kind == ReadDone && m.state == Follower && v == fresh {
		if at, ok := m.confirmed(ev); ok {
			// The write the hint announced existed when it arrived.
			m.view.firstSeen, m.hints.confirmedRev = at, ev.Revision
		}
	}
	if m.state == Leader && m.termLost(ev, v) {
		m.stepDown(ReasonLost)
	}
	m.warnLongWait(v)
	switch m.state {
	case Follower:
		// A follower only reads: what it saw is taken in; advance acts on it.
	case Candidate:
		m.answerCandidate(ev, v)
	case Leader:
		m.answerLeader(ev, v)
	case Expiring:
		m.answerExpiring(ev)
	}
}

// failed handles a request that failed. A hint it was meant to settle is
// dropped (see dropHint); a Candidate's swap has an unknown outcome.
func (m *Machine) failed(ev Event) {
	m.dropHint()
	if ev.Kind == SwapFailed && m.state == Candidate {
		m.candidateFailed()
	}
}

// stop handles Stop (only the first counts): the machine is stopping. A
// leader's term ends at once; advance then releases the lease (unless
// release is false) and finishes (see advanceExpiring, advanceFollower).
func (m *Machine) stop(release bool) {
	if m.stopping {
		return
	}
	m.stopping, m.keep = true, !release
	if m.state == Leader {
		m.stepDown(ReasonStopped)
	}
}

// resign handles Resign: a leader that is not stopping ends its term and
// releases (Expiring), then follows; it starts no term before
// LeaseDuration has passed, unless it accepts a record held by another
// node first (see observe), so that another candidate takes the released
// lease over rather than this node taking it straight back. Delaying a
// term never harms safety. With a successor (other than this node) the
// release names it: a handover, which only the successor may take at
// once (see openTo).
func (m *Machine) resign(successor string) {
	if m.state != Leader || m.stopping {
		return
	}
	m.yieldUntil, m.yieldToken = sat(m.now, m.cfg.LeaseDuration), m.term.token
	if successor != "" && successor != m.id {
		m.successor = successor
		m.stepDown(ReasonHandedOver)
		return
	}
	m.stepDown(ReasonResigned)
}

// reconfigure handles Reconfigure: valid timings replace the old ones
// (invalid ones are ignored). A leader's belief never outlasts the new
// RenewDeadline counted from its last confirmation.
func (m *Machine) reconfigure(c lease.Config) {
	if c.Validate() != nil {
		return
	}
	m.cfg = c
	// The next scheduled request was set by the old RetryInterval: a
	// shorter one brings it in, else a leader would renew only after the
	// old pause, past its new RenewDeadline, and lose its term.
	m.nextOp = min(m.nextOp, sat(m.now, m.cfg.RetryInterval))
	if m.state == Leader {
		m.term.until = min(m.term.until, sat(m.term.confirmed, m.cfg.RenewDeadline))
		m.checkDeadline()
	}
}

// advance performs every transition that the current time and observations
// allow, then issues the next store operation if one is due.
func (m *Machine) advance() {
	switch m.state {
	case Follower:
		m.advanceFollower()
	case Candidate:
		// Waiting for the swap's answer (answerCandidate).
	case Leader:
		m.advanceLeader()
	case Expiring:
		m.advanceExpiring()
	}
}

// finish emits Done: the machine has stopped (Stopped) and ignores every
// later event.
func (m *Machine) finish() {
	m.stopped = true
	m.req.pending = false
	m.emit(Action{Kind: Done})
}

// ---- Follower: another node leads, or nobody does yet. ----

// becomeFollower enters Follower. A follower's requests keep to its
// schedule: again is not its own.
func (m *Machine) becomeFollower() {
	m.state = Follower
	m.again = false
	m.successor = ""
}

// advanceFollower: a stopping follower finishes (once no swap is in
// flight); otherwise, with no request in flight, it takes the lease over if
// it may (takeOver), else reads for a hint or on its schedule (pollAt).
func (m *Machine) advanceFollower() {
	if m.stopping {
		if !m.req.pending || m.req.kind == Read {
			m.finish()
		}
		return
	}
	if m.req.pending {
		return
	}
	m.decayMaxLease()
	if m.takeOver() {
		return
	}
	switch {
	case m.hints.news:
		if !m.takeHeardRelease() {
			m.read(true)
		}
	case m.reached(m.pollAt()):
		m.read(false)
	}
}

// decayMaxLease: in a lossy store, once an absence has been waited out in
// full with the longest lease seen, every holder of a record that vanished
// before it has stopped believing it leads. Forget older promises
// (docs/design.md, "maxLease decays").
func (m *Machine) decayMaxLease() {
	if m.view.lossWait && m.stealable() && m.reached(m.patienceEnds()) {
		m.view.maxLease = max(m.cfg.LeaseDuration, m.view.obs.LeaseDuration)
		m.view.lossWait = false
	}
}

// takeOver starts a term if the follower may (acquireAt), or confirms its
// own acquire whose outcome was unknown, and reports whether it sent a
// request.
func (m *Machine) takeOver() bool {
	switch {
	case m.confirmable():
		// Our acquire went through after all: confirm it with a renewal
		// before leading on it. The renewal promises our own
		// LeaseDuration, whatever the store shows: followers wait what the
		// record promises.
		if m.allowed() {
			next := m.view.obs
			next.LeaseDuration = m.cfg.LeaseDuration
			m.becomeCandidate(Renew, next)
			return true
		}
	case m.reached(m.acquireAt()):
		if m.staleByHints() {
			// Renewals were heard since the revision waited out was read,
			// and no answer to a request sent after them settled them:
			// read before taking over. (Also when the last answer came
			// after the wait ended: a renewal heard while its request was
			// in flight may have been written before the store answered,
			// and then lost in a rollback. A forged renewal costs one
			// read, or two and a lease's wait: see contradicted.) If the last
			// request was sent after the wait ended (a read that failed),
			// the next one waits for the retry schedule: failing reads
			// never loop.
			// A wait counted from a renewal's receipt (confirmed) ends
			// before the safety net's read: while renewals are still
			// heard, that read waits for the quiet to end, so that it
			// adds none to the one per LeaseDuration.
			if m.quietWait() {
				return false
			}
			if m.req.sentAt < m.acquireAt() || m.reached(m.nextOp) {
				m.read(false)
				return true
			}
		} else if m.TokensExhausted() {
			// Nothing above lease.MaxToken may be issued, and no token
			// twice: no new term, ever, until an operator intervenes.
			// Reported once per answer.
			if m.exhausted != m.sent {
				m.exhausted = m.sent
				m.emit(Action{Kind: Report, Problem: ProblemTokensExhausted, Token: m.view.maxToken})
			}
		} else if m.allowed() {
			m.acquire()
			return true
		}
	}
	return false
}

// ---- Candidate: an acquiring (or confirming) swap is in flight. ----

// becomeCandidate enters Candidate by sending the swap it waits for: an
// Acquire (see acquire), or a Renew confirming our own acquire whose
// outcome was unknown.
func (m *Machine) becomeCandidate(kind SwapKind, next Lease) {
	m.state = Candidate
	m.swap(kind, next)
}

// answerCandidate: the swap's answer decides. A success that stored what
// was asked, in time, starts the term; anything else returns to Follower
// (or, too late or stopping, to Expiring, to give the lease back).
func (m *Machine) answerCandidate(ev Event, v verdict) {
	switch ev.Kind {
	case SwapDone:
		if v != fresh || !m.stored(ev.Lease) {
			// A success the machine cannot lead on (refused, not newer
			// than what it had, a rollback, or not what it asked to
			// store): the store breaks its contract.
			m.becomeFollower()
			return
		}
		m.unknownToken = 0
		if m.claims() && !ev.Vouched {
			// A record created in a store that loses records is only a
			// claim: a leader whose record vanished may believe it leads
			// for up to its RenewDeadline after the loss, and absence
			// cannot be ordered against that loss. Follow our own claim
			// like anyone's record: take it (with a new token) once it has
			// stood for LeaseDuration since this reply, which came after
			// the loss. (Unless the store vouched that it lost no record
			// for a LeaseDuration before the create: Event.Vouched.)
			m.becomeFollower()
			if m.stopping {
				// Leave the claim standing: released, it would be free at
				// once, and whoever took it would lead while the lost
				// record's holder may still believe it leads.
				return
			}
			m.emit(Action{Kind: Report, Problem: ProblemClaim, Token: ev.Lease.Token, Revision: m.view.rev, Wait: m.patience(), Until: m.acquireAt()})
			return
		}
		until := sat(m.req.sentAt, m.req.renewDeadline)
		if m.stopping || m.now >= until {
			// Too late to lead (or no longer wanted): give it back.
			m.becomeExpiring(ev.Lease.Token)
			return
		}
		if m.req.guarded {
			// A guarded swap left the follower's schedule in place
			// (takeHeardRelease), which a quiet follower's reads left
			// behind long ago: the term's first renewal comes a
			// RetryInterval after the swap, not at once.
			m.nextOp = sat(m.req.sentAt, m.cfg.RetryInterval)
		}
		m.becomeLeader(ev.Lease.Token, m.req.sentAt, until)
	case SwapConflict:
		if ev.Absent && v != refused && m.req.swap == Acquire && m.req.expected == 0 {
			// A create refused while no record exists: no store of this
			// module does that (a create of an absent record succeeds),
			// but a store that breaks the contract so would otherwise be
			// asked again at once, faster than the request budget. Create
			// again no sooner than a LeaseDuration from now.
			m.view.hold(sat(m.now, m.patience()))
		}
		// Someone else wrote first: follow what the store holds.
		m.becomeFollower()
	}
}

// claims reports whether the pending swap, if it succeeds, creates only a
// claim: a create in a store that may lose records, unless the store
// vouches for it (Event.Vouched; see answerCandidate). A create whose
// outcome is unknown is never vouched for.
func (m *Machine) claims() bool {
	return m.lossy && m.req.swap == Acquire && m.req.expected == 0
}

// candidateFailed: the swap may or may not have been applied. Forget what
// we saw and read again after the usual pause.
func (m *Machine) candidateFailed() {
	if m.req.swap == Acquire && !m.claims() {
		// If it landed, a later read shows our token and we confirm it
		// (confirmable). A create in a lossy store is only a claim (see
		// answerCandidate), waited out like anyone's record.
		m.unknownToken = m.req.next.Token
	}
	if !m.req.guarded {
		m.view.forget()
	}
	// A guarded swap (takeHeardRelease) replaced a read: it could land
	// only over the released record it names, and then a later read shows
	// our token (confirmable); if it did not, what the node saw stands, as
	// after a failed read. (So a forged hint whose swap is made to time
	// out does not restart the follower's wait.)
	m.becomeFollower()
}

// ---- Leader: this node leads, until its renew deadline. ----

// term is the node's term: the current one while Leader, the one that
// ended while Expiring. becomeLeader starts it (begin); becomeExpiring
// names the term it releases; a renewal moves its deadline on
// (answerLeader), a shorter RenewDeadline moves it back (reconfigure).
type term struct {
	token     uint64
	since     time.Duration // when its acquiring request was sent
	until     time.Duration // its belief ends here (the renew deadline)
	confirmed time.Duration // send time of the swap that set until
	// The last acquire or renewal sent, in any state and whatever its
	// outcome (see sendSwap), and the LeaseDuration it promised: a lease
	// this node holds in the store has surely expired by expires.
	writeSent time.Duration
	writeDur  time.Duration
}

// begin starts the term with token, begun at since (when the acquiring
// request was sent) and believed until until.
func (t *term) begin(token uint64, since, until time.Duration) {
	t.token, t.since = token, since
	t.confirmed, t.until = since, until
}

// expires is when a lease the node's last write stored has surely
// expired.
func (t *term) expires() time.Duration { return sat(t.writeSent, t.writeDur) }

// becomeLeader starts the term with token, begun at since (when the
// acquiring request was sent) and believed until until.
func (m *Machine) becomeLeader(token uint64, since, until time.Duration) {
	m.state = Leader
	m.term.begin(token, since, until)
	m.emit(Action{Kind: StartedLeading, Token: m.term.token, Since: m.term.since})
}

// checkDeadline ends the term once the leader's belief has run out (at
// term.until, even if that saturated at Never). It is the only place a
// term ends for its deadline: Step calls it as soon as time moves on,
// before the event is handled (a renewal reply arriving now must not
// revive the term), and reconfigure when a shorter RenewDeadline moves the
// deadline back. Nothing else moves it back.
func (m *Machine) checkDeadline() {
	if m.state == Leader && m.now >= m.term.until {
		m.stepDown(ReasonDeadline)
	}
}

// stepDown ends the current term for r. A term lost (the store shows that
// it does not hold the term's record) leaves nothing to release: Follower.
// A term ended by its deadline or a stop may still hold the lease in the
// store: Expiring, which releases it if it can.
func (m *Machine) stepDown(r Reason) {
	m.emit(Action{Kind: StoppedLeading, Token: m.term.token, Reason: r})
	if r == ReasonLost {
		m.becomeFollower()
	} else {
		m.becomeExpiring(m.term.token)
	}
}

// termLost reports whether an answer shows that the store does not hold
// the leader's term: a record refused, none, a rollback, or a newer record
// that is not the term's.
func (m *Machine) termLost(ev Event, v verdict) bool {
	return v == refused || ev.Absent || v == wentBack || v == fresh && !m.ours(ev.Lease)
}

// answerLeader: the answer to a renewal, when it did not show the term lost
// (see answer): the record accepted is the term's, or the one accepted
// before. A success that stored the renewal moves the deadline on; a
// conflict showing our own record is a renewal whose reply was lost. Any
// other success or conflict ends the term.
func (m *Machine) answerLeader(ev Event, v verdict) {
	switch ev.Kind {
	case SwapDone:
		if v == fresh && m.stored(ev.Lease) {
			if until := sat(m.req.sentAt, m.req.renewDeadline); until > m.term.until {
				m.term.confirmed, m.term.until = m.req.sentAt, until
			}
			return
		}
		// A success the machine cannot lead on: the store breaks its
		// contract.
		m.stepDown(ReasonLost)
	case SwapConflict:
		if m.ours(ev.Lease) {
			// Our own renewal whose reply was lost: the record is still
			// ours. Renew again from its revision; the deadline stays.
			m.again = true
			return
		}
		m.stepDown(ReasonLost)
	}
}

// advanceLeader renews on schedule, at once after a conflict that showed
// our own record, and for a watch hint.
func (m *Machine) advanceLeader() {
	if m.req.pending {
		return
	}
	hinted := m.hints.news
	if (m.reached(m.nextOp) || m.again) && m.allowed() || hinted {
		// A leader answers a watch hint with a renewal rather than a read:
		// its answer tells as much, and a read in flight could delay a
		// renewal falling due meanwhile (by up to BackendTimeout), while a
		// renewal moves the deadline on.
		if hinted {
			m.quick = 0
		}
		next := m.view.obs
		next.LeaseDuration = m.cfg.LeaseDuration
		m.swap(Renew, next)
	}
}

// ---- Expiring: the term has ended; release the lease if still held. ----

// becomeExpiring enters Expiring after the term with token ended. The
// release is wanted at once (again), without waiting for the schedule.
func (m *Machine) becomeExpiring(token uint64) {
	m.state = Expiring
	m.term.token = token
	m.again = true
}

// answerExpiring: a release that succeeded or a conflict leaves nothing to
// release: Follower. A renewal that was in flight when the term ended
// leaves the term ended: release from the revision it shows (if the store
// stored something else, nothing is held and advanceExpiring follows).
func (m *Machine) answerExpiring(ev Event) {
	switch ev.Kind {
	case SwapDone:
		if m.req.swap == Release {
			m.becomeFollower()
			return
		}
		m.again = true
	case SwapConflict:
		m.becomeFollower()
	}
}

// advanceExpiring releases the lease while it is held and may not have
// expired, unless the node stops keeping it; then it follows (a stopping
// node finishes there).
func (m *Machine) advanceExpiring() {
	if m.req.pending {
		return
	}
	held := m.view.seen && !m.view.absent && m.view.obs.Holder == m.id && m.view.obs.Token == m.term.token
	switch {
	case !held, m.reached(m.term.expires()):
		// Nothing to release, or it has surely expired.
		m.becomeFollower()
		m.advanceFollower()
	case m.stopping && m.keep:
		m.finish()
	case (m.reached(m.nextOp) || m.again) && m.allowed():
		next := m.view.obs
		next.Holder, next.Successor = "", m.successor
		m.swap(Release, next)
	case m.hints.news:
		m.read(true)
	}
}
