package fsm

import (
	"errors"
	"math"
	"time"

	"github.com/tenure-go/tenure/lease"
)

// ErrInvalidOptions is wrapped by the errors New returns.
var ErrInvalidOptions = errors.New("fsm: invalid options")

// maxQuick is how many requests a machine sends before the next scheduled
// one (see Machine.allowed): enough for an acquire after a read and one
// retry after a conflict, never a loop.
const maxQuick = 2

// Machine is one node's state machine for one election. It is not safe for
// concurrent use: one driver owns it.
type Machine struct {
	id    string
	cfg   lease.Config
	rand  Rand
	lossy bool
	state State
	out   []Action
	now   time.Duration
	done  bool // stopped: every later event is ignored (Stopped)
	stop  bool // stopping: finish up, then done
	keep  bool // on stop, keep a held lease (Stop without Release): do not release it

	// The request budget (see allowed).
	nextOp time.Duration // when the next scheduled request is due
	quick  int           // requests sent before nextOp since the last scheduled or hinted one
	again  bool          // a swap is wanted before nextOp (a renewal after a conflict showing our own record, a release after a term ended)
	sent   uint64        // requests sent so far

	// What the node accepted from the store's answers (reads and swap
	// replies; watch events are only hints).
	seen      bool           // anything accepted yet (false again after an unknown outcome)
	absent    bool           // the last answer found no record
	obs       Lease          // the last record accepted (if !absent)
	rev       lease.Revision // its revision (0 if absent)
	firstSeen time.Duration  // when the node first received rev (or absence)
	maxRev    lease.Revision // newest revision accepted (a rollback resets it to what the store shows)
	last      Lease          // the record accepted at maxRev
	maxToken  uint64         // largest token ever accepted
	maxTrans  uint64         // largest Transitions ever accepted
	maxLease  time.Duration  // largest LeaseDuration accepted (lossy stores; decays, see advance)
	lossWait  bool           // lossy: an absence was seen and not yet waited out in full
	corrupt   bool           // the store's last answer was a record the machine refused
	holdUntil time.Duration  // after a rollback, no new term before this
	exhausted uint64         // requests sent when tokens were last reported exhausted

	// The watch hint not yet settled by an answer (see hinted).
	hint        bool
	hintRev     lease.Revision
	hintLease   Lease
	hintAbsent  bool
	hintCorrupt bool
	hintSeq     uint64        // requests sent when the latest hint arrived
	muteUntil   time.Duration // hints are ignored until then (one was contradicted)

	// Renewal hints: watch events showing the record the node follows
	// (same holder and token) at a newer revision. They make a follower
	// skip its scheduled reads for a while (see pollAt); they never start
	// or move a wait.
	heard      bool           // a renewal hint arrived since the watch was last lost
	heardAt    time.Duration  // when the latest one arrived
	heardLease Lease          // the record it showed
	quietRev   lease.Revision // its revision, until an answer settles it (0: none)
	quietSeq   uint64         // requests sent when it arrived
	lastAnswer time.Duration  // when the store last answered a read or a swap

	// The one store operation in flight, if any.
	pending     bool
	pendingKind ActionKind
	pendingSwap SwapKind
	pendingSent time.Duration
	pendingSeq  uint64 // its number (see sent)
	pendingNext Lease
	pendingExp  lease.Revision // the revision the swap expects
	pendingRD   time.Duration  // RenewDeadline in force when it was sent

	// The current term (Leader), or the last one (Expiring).
	token         uint64
	since         time.Duration
	leaderUntil   time.Duration // belief ends here
	confirmed     time.Duration // send time of the swap that set leaderUntil
	lastWriteSent time.Duration // last acquire/renew sent, any outcome
	lastWriteDur  time.Duration // the LeaseDuration it promised
	unknownToken  uint64        // token of an acquire whose outcome is unknown
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
		id:    o.Identity,
		cfg:   o.Config,
		rand:  o.Rand,
		lossy: o.LossyStore,
		out:   make([]Action, 0, 2),
	}, nil
}

// State returns the current state.
func (m *Machine) State() State { return m.state }

// Identity returns the node's identity.
func (m *Machine) Identity() string { return m.id }

// Config returns the timings in force.
func (m *Machine) Config() lease.Config { return m.cfg }

// Stopped reports whether the machine has emitted Done.
func (m *Machine) Stopped() bool { return m.done }

// Leading reports whether the node leads at time now: it is Leader and its
// renew deadline has not passed. The driver uses it to answer questions
// between steps, when a timer may be late.
func (m *Machine) Leading(now time.Duration) bool {
	return m.state == Leader && now < m.leaderUntil
}

// Term returns the token of the current term and when it started, if the
// machine is Leader.
func (m *Machine) Term() (token uint64, since time.Duration, ok bool) {
	if m.state != Leader {
		return 0, 0, false
	}
	return m.token, m.since, true
}

// LeaderUntil returns when the current term's belief ends (valid while
// Leader).
func (m *Machine) LeaderUntil() time.Duration { return m.leaderUntil }

// LastConfirmed returns when the last successful acquire or renewal of the
// current term was sent (valid while Leader).
func (m *Machine) LastConfirmed() time.Duration { return m.confirmed }

// Observed returns the last record observed, its revision, and whether no
// record existed. ok is false before the first observation.
func (m *Machine) Observed() (l Lease, rev lease.Revision, absent, ok bool) {
	return m.obs, m.rev, m.absent, m.seen
}

// HoldUntil returns when the wait that the last rollback imposed ends: the
// machine starts no term before it (see ProblemRollback). It is 0 if the
// machine never saw a rollback.
func (m *Machine) HoldUntil() time.Duration { return m.holdUntil }

// TokensExhausted reports whether the largest token the machine accepted is
// lease.MaxToken: no new term can start (a term in progress may go on
// renewing). The machine then keeps polling and reports
// ProblemTokensExhausted whenever it would have started a term.
func (m *Machine) TokensExhausted() bool { return m.maxToken >= lease.MaxToken }

// NextWake returns when the machine next wants a Tick (Never if it waits only
// for a store result or a watch event). After a Step it is always later than
// the Step's time, or Never: nothing the machine could do at once is left
// for a timer.
func (m *Machine) NextWake() time.Duration {
	if m.done {
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
		if !m.pending {
			at(m.pollAt())
			if m.staleByHints() && m.reached(m.acquireAt()) {
				at(m.nextOp) // the read before taking over (see advance)
			}
			if t := m.acquireAt(); t > m.now && !m.TokensExhausted() {
				at(t)
			}
		}
	case Leader:
		at(m.leaderUntil)
		if !m.pending {
			at(m.nextOp)
		}
	case Expiring:
		if !m.pending {
			at(m.nextOp)
			at(sat(m.lastWriteSent, m.lastWriteDur))
		}
	}
	return wake
}

// Step handles ev and returns the actions to perform, in order. The slice is
// reused by the next Step.
func (m *Machine) Step(ev Event) []Action {
	m.out = m.out[:0]
	if m.done {
		return m.out
	}
	if ev.Now > m.now {
		m.now = ev.Now
	}
	if m.state == Leader && m.now >= m.leaderUntil {
		// The deadline passed before this event was handled: the term has
		// ended, whatever the event says (a renewal reply arriving now must
		// not revive it).
		m.stepDown(ReasonDeadline, Expiring)
	}
	switch ev.Kind {
	case Tick:
	case ReadDone:
		if m.pending && m.pendingKind == Read {
			m.pending = false
			m.observe(ev)
		}
	case ReadFailed:
		if m.pending && m.pendingKind == Read {
			m.pending = false
			m.failed()
		}
	case Watched:
		m.hinted(ev)
	case WatchLost:
		// Changes may have been missed: poll as without a watch until the
		// next renewal hint (a follower whose reads were postponed reads
		// at once, its schedule being due).
		m.heard, m.quietRev = false, 0
	case SwapDone, SwapConflict, SwapFailed:
		if m.pending && m.pendingKind == Swap {
			m.pending = false
			m.swapResult(ev)
		}
	case Stop:
		if !m.stop {
			m.stop = true
			m.keep = !ev.Release
			if m.state == Leader {
				m.stepDown(ReasonStopped, Expiring)
			}
		}
	case Reconfigure:
		if ev.Config.Validate() == nil {
			m.cfg = ev.Config
			if m.state == Leader {
				if until := sat(m.confirmed, m.cfg.RenewDeadline); until < m.leaderUntil {
					m.leaderUntil = until
				}
			}
		}
	}
	m.advance()
	return m.out
}

// verdict is what observe made of an answer.
type verdict uint8

const (
	refused  verdict = iota // corrupt or out of bounds: not accepted
	same                    // the record already accepted: nothing new
	fresh                   // accepted: a newer revision, or an absence
	wentBack                // accepted, but older than what was accepted before
)

// observe handles the store's answer to a read or a swap. Only one request
// is in flight at a time and each is sent after the previous answer came,
// so every answer shows the store as it is now, later than every answer
// before it: a revision below the newest one accepted is a rollback.
func (m *Machine) observe(ev Event) verdict {
	m.answered(ev)
	if ev.Corrupt || !ev.Absent && (ev.Revision == 0 || !InBounds(ev.Lease)) || ev.Kind == SwapDone && ev.Absent {
		// Anyone who can write the store can write anything: never let such
		// a record into the state (no token, wait or revision from it).
		// Nobody takes the lease over until it is replaced or removed. (A
		// swap that succeeded and left no record is as unreadable.)
		m.corrupt = true
		m.emit(Action{Kind: Report, Problem: ProblemCorrupt, Revision: ev.Revision})
		if m.state == Leader {
			m.stepDown(ReasonLost, Follower)
		}
		return refused
	}
	m.corrupt = false
	if ev.Absent {
		v := fresh
		if m.maxRev > 0 && !m.lossy {
			// A store that keeps its records never shows none after one
			// (a release keeps the record): it went back in time.
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
		if m.state == Leader {
			m.stepDown(ReasonLost, Follower)
		}
		return v
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
	m.seen, m.absent = true, false
	m.obs, m.rev, m.firstSeen = ev.Lease, ev.Revision, m.now
	m.maxToken = max(m.maxToken, ev.Lease.Token)
	m.maxTrans = max(m.maxTrans, ev.Lease.Transitions)
	m.maxLease = max(m.maxLease, ev.Lease.LeaseDuration)
	if m.state == Leader && !m.ours(ev.Lease) {
		m.stepDown(ReasonLost, Follower)
	}
	if m.stealable() {
		if w := m.patience(); w > m.cfg.LeaseDuration {
			m.emit(Action{Kind: Report, Problem: ProblemLongWait, Revision: m.rev, Wait: w, Until: m.patienceEnds()})
		}
	}
	return v
}

// rollback handles an answer showing revision to, older than the newest one
// accepted (0: no record). The holder of the newest record may still
// believe it leads: wait out the longest lease the node knows of, counted
// from now, before starting a term.
func (m *Machine) rollback(to lease.Revision) {
	wait := max(m.cfg.LeaseDuration, m.last.LeaseDuration)
	if m.lossy {
		wait = max(wait, m.maxLease)
	}
	m.holdUntil = max(m.holdUntil, sat(m.now, wait))
	m.unknownToken = 0 // the old history is not ours to confirm
	m.emit(Action{Kind: Report, Problem: ProblemRollback, Revision: to, Newest: m.maxRev, Until: m.holdUntil, Wait: wait})
	if m.state == Leader {
		// Its term's record is not what the store holds.
		m.stepDown(ReasonLost, Follower)
	}
}

// hinted handles a watch event. Anyone who can publish on the store's
// channel can forge one, so it changes nothing the node believes or waits
// for: if it claims something that would change what the node does, it
// makes the node read the record (a leader renews instead) soon: at once,
// or after the request in flight. The answer is what counts.
func (m *Machine) hinted(ev Event) {
	if m.stop || m.now < m.muteUntil {
		return
	}
	if m.renewal(ev) {
		m.heard, m.heardAt, m.heardLease = true, m.now, ev.Lease
		m.quietRev, m.quietSeq = ev.Revision, m.sent
		return
	}
	if !m.news(ev) {
		return
	}
	m.hint, m.hintRev, m.hintLease, m.hintAbsent, m.hintCorrupt, m.hintSeq = true, ev.Revision, ev.Lease, ev.Absent, ev.Corrupt, m.sent
	if ev.Absent {
		m.hintRev, m.hintLease, m.hintCorrupt = 0, Lease{}, false
	}
}

// news reports whether a watch event claims something that would change what
// the node does: a record gone, or a newer revision with another holder or
// token (or unreadable). A renewal of the record the node follows is not
// news: its next poll sees it.
func (m *Machine) news(ev Event) bool {
	switch {
	case ev.Absent:
		return !m.seen || !m.absent
	case ev.Revision < m.maxRev, ev.Revision == m.maxRev && m.seen:
		return false
	}
	return !m.seen || ev.Corrupt || m.absent || ev.Lease.Holder != m.obs.Holder || ev.Lease.Token != m.obs.Token
}

// renewal reports whether a watch event shows a renewal of the record the
// node follows: a valid record with its holder and token at a revision
// newer than any the node accepted or heard of since its last answer. It
// is what a healthy watch delivers every retry pause while the lease is
// held, and what it says is taken on trust for nothing but when to read
// next (see pollAt): a forged one postpones reads, within bounds.
func (m *Machine) renewal(ev Event) bool {
	return !ev.Absent && !ev.Corrupt && m.seen && !m.absent && !m.corrupt && m.obs.Holder != "" &&
		ev.Revision > max(m.maxRev, m.quietRev) && InBounds(ev.Lease) &&
		ev.Lease.Holder == m.obs.Holder && ev.Lease.Token == m.obs.Token
}

// quietEnd is when a follower that heard renewals of the record it follows
// reads again, unless another renewal is heard meanwhile: a silence of
// MaxRetryInterval plus half a RetryInterval after the latest one (a
// leader renews every retry pause: longer silence means it stopped, or
// the watch did), and never later than LeaseDuration after the store's
// last answer (the safety net: forged renewals cannot postpone reads for
// longer). Never if no renewal of the record it follows was heard since
// the watch was last lost.
func (m *Machine) quietEnd() time.Duration {
	if !m.heard || !m.stealable() || m.corrupt || m.heardLease.Holder != m.obs.Holder || m.heardLease.Token != m.obs.Token {
		return 0
	}
	silence := sat(m.cfg.MaxRetryInterval(), m.cfg.RetryInterval/2)
	return min(sat(m.heardAt, silence), sat(m.lastAnswer, m.cfg.LeaseDuration))
}

// pollAt is when a follower's scheduled read is due: its retry schedule,
// postponed while renewals are heard (quietEnd).
func (m *Machine) pollAt() time.Duration {
	return max(m.nextOp, m.quietEnd())
}

// staleByHints reports whether a renewal was heard at a revision newer than
// the one the follower waits out: taking the lease over from that revision
// would be a swap bound to fail, so the follower reads first (once per
// wait, see advance).
func (m *Machine) staleByHints() bool {
	return m.quietRev > m.rev && m.quietEnd() != 0
}

// answered settles the watch hint with the answer to the request that just
// returned. The answer confirms the hint if it shows the record the hint
// claimed (same revision and record), or a newer revision that someone else
// wrote: the node's own successful write confirms nothing, or a forged event
// claiming the next revision would be confirmed by the renewal it caused.
// The hint is settled if the answer confirms it or if the request was sent
// after the hint arrived; in that second case an answer that does not
// confirm it proves it stale or forged, and hints are ignored for a
// RetryInterval, so a flood of forged events costs at most one request per
// RetryInterval.
func (m *Machine) answered(ev Event) {
	m.lastAnswer = m.now
	if m.quietRev != 0 && (ev.Revision >= m.quietRev || m.pendingSeq > m.quietSeq) {
		// The answer shows the renewal heard, or was sent after it: what
		// it shows is what counts.
		m.quietRev = 0
	}
	if !m.hint {
		return
	}
	confirmed := ev.Kind != SwapDone && !m.hintAbsent && !ev.Absent &&
		(ev.Revision > m.hintRev || ev.Revision == m.hintRev && ev.Corrupt == m.hintCorrupt && ev.Lease == m.hintLease)
	after := m.pendingSeq > m.hintSeq
	if !confirmed && !after {
		return // sent before the hint: a request follows
	}
	m.hint = false
	if !confirmed && (!m.hintAbsent || !ev.Absent && (ev.Kind == SwapDone || ev.Revision <= m.maxRev)) {
		m.muteUntil = sat(m.now, m.cfg.RetryInterval)
	}
}

// failed handles a request that failed: a hint it was meant to settle is
// dropped (polling goes on), so a failing store cannot make hints loop.
func (m *Machine) failed() {
	if m.hint && m.pendingSeq > m.hintSeq {
		m.hint = false
	}
}

// ours reports whether l is this node's current term.
func (m *Machine) ours(l Lease) bool {
	return l.Holder == m.id && l.Token == m.token
}

func (m *Machine) swapResult(ev Event) {
	kind := m.pendingSwap
	switch ev.Kind {
	case SwapDone:
		v := m.observe(ev)
		switch kind {
		case Acquire, Renew:
			if v == fresh {
				m.confirm(ev.Lease)
			} else {
				m.unconfirmed()
			}
		case Release:
			if m.state == Expiring {
				m.setState(Follower)
			}
		}
	case SwapConflict:
		v := m.observe(ev)
		switch {
		case m.state == Leader && v != refused && !ev.Absent && m.ours(ev.Lease):
			// Our own renewal whose reply was lost: the record is still
			// ours. Renew again from its revision; the deadline stays.
			m.again = true
		case m.state == Leader:
			m.stepDown(ReasonLost, Follower)
		case m.state == Candidate, m.state == Expiring:
			m.setState(Follower)
		}
	case SwapFailed:
		m.failed()
		if m.state == Candidate {
			// The swap may or may not have been applied: forget what we
			// saw and read again after the usual pause.
			if kind == Acquire && !(m.lossy && m.pendingExp == 0) {
				// If it landed, a later read shows our token and we
				// confirm it. A create in a lossy store is only a claim
				// (see confirm), waited out like anyone's record.
				m.unknownToken = m.pendingNext.Token
			}
			m.seen = false
			m.setState(Follower)
		}
	}
}

// unconfirmed handles a swap the store called a success whose reply the
// machine cannot lead on (refused, not newer than what it had, or a
// rollback): the store breaks its contract.
func (m *Machine) unconfirmed() {
	switch m.state {
	case Leader:
		m.stepDown(ReasonLost, Follower)
	case Candidate:
		m.setState(Follower)
	case Expiring:
		m.again = true
	}
}

// confirm handles a successful acquire or renew swap that stored l.
func (m *Machine) confirm(l Lease) {
	want := m.pendingNext
	if l.Holder != m.id || m.pendingSwap == Acquire && l.Token < want.Token || m.pendingSwap == Renew && l.Token != want.Token {
		// A store that reports success but stores another holder, or a
		// token other than ours (a store may raise a new term's token,
		// never lower it), breaks its contract; never lead on it.
		if m.state == Leader {
			m.stepDown(ReasonLost, Follower)
		} else if m.state == Candidate {
			m.setState(Follower)
		}
		return
	}
	until := sat(m.pendingSent, m.pendingRD)
	switch m.state {
	case Candidate:
		m.unknownToken = 0
		if m.lossy && m.pendingSwap == Acquire && m.pendingExp == 0 && !m.stop {
			// A record created in a store that loses records is only a
			// claim: a leader whose record vanished may believe it leads
			// for up to its RenewDeadline after the loss, and absence
			// cannot be ordered against that loss. Follow our own claim
			// like anyone's record: take it (with a new token) once it has
			// stood for LeaseDuration since this reply, which came after
			// the loss.
			m.setState(Follower)
			return
		}
		if m.stop || m.now >= until {
			// Too late to lead (or no longer wanted): give it back.
			m.token = l.Token
			m.setState(Expiring)
			m.again = true
			return
		}
		m.token, m.since = l.Token, m.pendingSent
		m.confirmed, m.leaderUntil = m.pendingSent, until
		m.setState(Leader)
		m.emit(Action{Kind: StartedLeading, Token: m.token, Since: m.since})
	case Leader:
		if until > m.leaderUntil {
			m.confirmed, m.leaderUntil = m.pendingSent, until
		}
	case Expiring:
		// A renewal that was in flight when the term ended; the term stays
		// ended. Release from the new revision.
		m.again = true
	}
}

// stepDown ends the current term and moves to the given state.
func (m *Machine) stepDown(r Reason, to State) {
	m.emit(Action{Kind: StoppedLeading, Token: m.token, Reason: r})
	m.setState(to)
	m.again = to == Expiring
}

func (m *Machine) setState(s State) { m.state = s }

func (m *Machine) emit(a Action) { m.out = append(m.out, a) }

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
// never before a rollback has been waited out.
func (m *Machine) acquireAt() time.Duration {
	if !m.seen || m.corrupt {
		return Never
	}
	if m.absent || m.obs.Holder == "" {
		return m.holdUntil
	}
	return max(m.patienceEnds(), m.holdUntil)
}

// confirmable reports whether a read shows the acquire whose outcome was
// unknown as landed, so that a renewing swap may confirm it.
func (m *Machine) confirmable() bool {
	return m.seen && !m.absent && !m.corrupt && m.unknownToken != 0 &&
		m.obs.Holder == m.id && m.obs.Token == m.unknownToken && m.obs.Token == m.maxToken &&
		m.reached(m.holdUntil)
}

// allowed reports whether a request may be sent now, and counts it. The
// scheduled request is due at nextOp (every request moves nextOp a retry
// pause on); before it, at most maxQuick requests may follow an answer (an
// acquire after a read showed the lease free, one retry after a conflict, a
// release after a term ended). So no store behaviour makes the machine
// loop: without watch hints it sends at most 1+maxQuick requests per
// RetryInterval.
func (m *Machine) allowed() bool {
	if m.reached(m.nextOp) {
		m.quick = 0
		return true
	}
	if m.quick < maxQuick {
		m.quick++
		return true
	}
	return false
}

// advance performs every transition that the current time and observations
// allow, then issues the next store operation if one is due.
func (m *Machine) advance() {
	switch m.state {
	case Follower:
		if m.stop {
			if !m.pending || m.pendingKind == Read {
				m.finish()
			}
			return
		}
		if m.pending {
			return
		}
		if m.lossWait && m.stealable() && m.reached(m.patienceEnds()) {
			// An absence has been waited out in full, with the longest
			// lease seen: every holder of a record that vanished before it
			// has stopped believing it leads. Forget older promises
			// (docs/design.md, "maxLease decays").
			m.maxLease = max(m.cfg.LeaseDuration, m.obs.LeaseDuration)
			m.lossWait = false
		}
		switch {
		case m.confirmable():
			// Our acquire went through after all: confirm it with a
			// renewal before leading on it. The renewal promises our own
			// LeaseDuration, whatever the store shows: followers wait
			// what the record promises.
			if m.allowed() {
				next := m.obs
				next.LeaseDuration = m.cfg.LeaseDuration
				m.setState(Candidate)
				m.swap(Renew, next)
				return
			}
		case m.reached(m.acquireAt()):
			if m.staleByHints() && m.lastAnswer < m.acquireAt() {
				// Renewals were heard since the revision waited out was
				// read: read before taking over (a forged renewal costs
				// this one read, since the answer comes after the wait).
				// If the last request was sent after the wait ended (a
				// read that failed), the next one waits for the retry
				// schedule: failing reads never loop.
				if m.pendingSent < m.acquireAt() || m.reached(m.nextOp) {
					m.read(false)
					return
				}
			} else if m.TokensExhausted() {
				// Nothing above lease.MaxToken may be issued, and no token
				// twice: no new term, ever, until an operator intervenes.
				// Reported once per answer.
				if m.exhausted != m.sent {
					m.exhausted = m.sent
					m.emit(Action{Kind: Report, Problem: ProblemTokensExhausted, Token: m.maxToken})
				}
			} else if m.allowed() {
				m.acquire()
				return
			}
		}
		switch {
		case m.hint:
			m.read(true)
		case m.reached(m.pollAt()):
			m.read(false)
		}
	case Candidate:
		// Waiting for the swap's result.
	case Leader:
		if m.now >= m.leaderUntil {
			m.stepDown(ReasonDeadline, Expiring)
			m.advance()
			return
		}
		if m.pending {
			return
		}
		hinted := m.hint
		if (m.reached(m.nextOp) || m.again) && m.allowed() || hinted {
			// A leader answers a watch hint with a renewal rather than a
			// read: its answer tells as much, and a read in flight could
			// delay a renewal falling due meanwhile (by up to
			// BackendTimeout), while a renewal moves the deadline on.
			if hinted {
				m.quick = 0
			}
			next := m.obs
			next.LeaseDuration = m.cfg.LeaseDuration
			m.swap(Renew, next)
		}
	case Expiring:
		if m.pending {
			return
		}
		held := m.seen && !m.absent && m.obs.Holder == m.id && m.obs.Token == m.token
		switch {
		case !held, m.reached(sat(m.lastWriteSent, m.lastWriteDur)):
			// Nothing to release, or it has surely expired.
			m.setState(Follower)
			m.advance()
		case m.stop && m.keep:
			m.finish()
		case (m.reached(m.nextOp) || m.again) && m.allowed():
			next := m.obs
			next.Holder = ""
			m.swap(Release, next)
		case m.hint:
			m.read(true)
		}
	}
}

// acquire starts a new term with a token above every token seen. The caller
// has checked that one is left (TokensExhausted).
func (m *Machine) acquire() {
	next := Lease{
		Holder:        m.id,
		Token:         m.maxToken + 1,
		Transitions:   m.maxTrans,
		LeaseDuration: m.cfg.LeaseDuration,
	}
	if m.absent && m.maxToken > 0 || !m.absent && m.obs.Holder != m.id {
		// The lease changes hands (or its record was lost after someone
		// held it). Transitions is informational: it stops at the bound
		// of a stored record rather than make the write invalid.
		next.Transitions = min(next.Transitions+1, lease.MaxToken)
	}
	// A new attempt: whatever an earlier acquire with an unknown outcome
	// did, only this one's outcome may be confirmed.
	m.unknownToken = 0
	m.setState(Candidate)
	m.swap(Acquire, next)
}

func (m *Machine) swap(kind SwapKind, next Lease) {
	m.sent++
	m.pending, m.pendingKind, m.pendingSwap, m.pendingSeq = true, Swap, kind, m.sent
	m.pendingSent, m.pendingNext, m.pendingRD = m.now, next, m.cfg.RenewDeadline
	m.pendingExp = m.rev
	if kind != Release {
		m.lastWriteSent, m.lastWriteDur = m.now, next.LeaseDuration
	}
	m.again = false
	m.nextOp = sat(m.now, m.retryPause())
	m.emit(Action{Kind: Swap, Swap: kind, Expected: m.rev, Next: next})
}

// read asks for the record: on schedule (every retry pause), or at once for
// a watch hint, which leaves the schedule alone (a leader's renewals keep
// their pace) and opens a fresh allowance of quick requests, so that a
// watched release is taken one round trip later.
func (m *Machine) read(hinted bool) {
	m.sent++
	m.pending, m.pendingKind, m.pendingSent, m.pendingSeq = true, Read, m.now, m.sent
	m.quick = 0
	if !hinted {
		m.nextOp = sat(m.now, m.retryPause())
	}
	m.emit(Action{Kind: Read})
}

func (m *Machine) finish() {
	m.done = true
	m.pending = false
	m.emit(Action{Kind: Done})
}

// retryPause draws the pause before the next attempt from
// [RetryInterval, RetryInterval*(1+RetryJitter)).
func (m *Machine) retryPause() time.Duration {
	p := m.cfg.RetryInterval
	if m.rand != nil && m.cfg.RetryJitter > 0 {
		f := m.rand.Float64()
		if !(f >= 0 && f < 1) { // false for NaN too
			f = 0 // a source out of its range gets no say
		}
		p += time.Duration(float64(p) * m.cfg.RetryJitter * f)
	}
	return p
}

// reached reports whether the time t has come. A time that saturated at
// Never is never reached: a wait or a schedule that does not fit in a
// time.Duration does not end (a leader's belief is the exception: it ends
// at its deadline, whatever it is, see Step).
func (m *Machine) reached(t time.Duration) bool { return t != Never && m.now >= t }

// sat returns t+d, saturated at the bounds of time.Duration instead of
// wrapping around.
func sat(t, d time.Duration) time.Duration {
	s := t + d
	switch {
	case d > 0 && s < t:
		return math.MaxInt64
	case d < 0 && s > t:
		return math.MinInt64
	}
	return s
}
