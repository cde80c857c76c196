package fsm

import (
	"errors"
	"time"

	"github.com/tenure-go/tenure/lease"
)

// ErrInvalidOptions is wrapped by the errors New returns.
var ErrInvalidOptions = errors.New("fsm: invalid options")

// Machine is one node's state machine for one election. It is not safe for
// concurrent use: one driver owns it.
type Machine struct {
	id     string
	cfg    lease.Config
	rand   Rand
	lossy  bool
	state  State
	out    []Action
	now    time.Duration
	done   bool
	stop   bool // stopping: finish up, then Done
	keep   bool // on stop, release a held lease
	nextOp time.Duration

	// What the node last observed of the record.
	seen      bool           // anything observed yet
	absent    bool           // the last observation found no record
	obs       Lease          // the last observed record (if !absent)
	rev       lease.Revision // its revision (0 if absent)
	firstSeen time.Duration  // when the node first received rev (or absence)
	seenAt    time.Duration  // when the node last accepted an observation
	maxRev    lease.Revision // newest revision ever accepted
	maxToken  uint64         // largest token ever observed
	maxTrans  uint64         // largest Transitions ever observed
	maxLease  time.Duration  // largest LeaseDuration ever observed

	// The one store operation in flight, if any.
	pending     bool
	pendingKind ActionKind
	pendingSwap SwapKind
	pendingSent time.Duration
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
		out:   make([]Action, 0, 8),
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

// NextWake returns when the machine next wants a Tick (Never if it waits only
// for a store result or a watch event).
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
			at(m.nextOp)
			if m.stealable() {
				at(m.patienceEnds())
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
			at(m.lastWriteSent + m.lastWriteDur)
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
			m.observe(ev, m.pendingSent)
		}
	case ReadFailed:
		if m.pending && m.pendingKind == Read {
			m.pending = false
		}
	case Watched:
		m.observe(ev, m.now)
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
				if until := m.confirmed + m.cfg.RenewDeadline; until < m.leaderUntil {
					m.leaderUntil = until
				}
			}
		}
	}
	m.advance()
	return m.out
}

// observe records an observation. sent is when the request that produced it
// was sent (for reads) or now (for watch events, which arrive in order).
func (m *Machine) observe(ev Event, sent time.Duration) {
	if ev.Absent {
		// Absence carries no revision, so it cannot be ordered against
		// what we saw: a watch may deliver its opening snapshot after a
		// swap's reply, and a read sent before an observation we hold may
		// predate it. Only a read sent after our newest observation, or a
		// swap's reply, tells that a record we saw is gone.
		if m.seen && !m.absent && (ev.Kind == Watched || sent <= m.seenAt) {
			return
		}
		if !m.seen || !m.absent {
			m.firstSeen = m.now
		}
		m.seen, m.absent, m.seenAt = true, true, m.now
		m.obs, m.rev = Lease{}, 0
		if m.state == Leader {
			m.stepDown(ReasonLost, Follower)
		}
		return
	}
	// A swap's reply, or a read sent after our newest observation, shows
	// the store as it is now: it may bring back a revision we last saw
	// vanish (a read that looked absent was older than it seemed).
	fresh := ev.Kind == SwapDone || ev.Kind == SwapConflict || ev.Kind == ReadDone && sent > m.seenAt
	if ev.Revision < m.maxRev || ev.Revision == m.maxRev && m.seen && !(m.absent && fresh) {
		// Old news: revisions only grow, even across data loss, so a
		// revision below the newest we accepted is stale, and the newest
		// itself is news only after we forgot it (a swap with an unknown
		// outcome), not once it was seen to vanish.
		return
	}
	m.maxRev = ev.Revision
	m.seen, m.absent, m.seenAt = true, false, m.now
	m.obs, m.rev, m.firstSeen = ev.Lease, ev.Revision, m.now
	m.maxToken = max(m.maxToken, ev.Lease.Token)
	m.maxTrans = max(m.maxTrans, ev.Lease.Transitions)
	m.maxLease = max(m.maxLease, ev.Lease.LeaseDuration)
	if m.state == Leader && !m.ours(ev.Lease) {
		m.stepDown(ReasonLost, Follower)
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
		m.observe(ev, m.pendingSent)
		switch kind {
		case Acquire, Renew:
			m.confirm(ev.Lease)
		case Release:
			if m.state == Expiring {
				m.setState(Follower)
			}
		}
	case SwapConflict:
		m.observe(ev, m.pendingSent)
		switch {
		case m.state == Leader && !ev.Absent && m.ours(ev.Lease):
			// Our own renewal whose reply was lost: the record is still
			// ours. Renew again from its revision; the deadline stays.
			m.nextOp = m.now
		case m.state == Leader:
			m.stepDown(ReasonLost, Follower)
		case m.state == Candidate, m.state == Expiring:
			m.setState(Follower)
		}
	case SwapFailed:
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

// confirm handles a successful acquire or renew swap that stored l.
func (m *Machine) confirm(l Lease) {
	if l.Holder != m.id {
		// A store that reports success but stores another holder breaks
		// its contract; never lead on it.
		if m.state == Leader {
			m.stepDown(ReasonLost, Follower)
		} else if m.state == Candidate {
			m.setState(Follower)
		}
		return
	}
	until := m.pendingSent + m.pendingRD
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
			m.nextOp = m.now
			return
		}
		m.token, m.since = l.Token, m.pendingSent
		m.confirmed, m.leaderUntil = m.pendingSent, until
		m.setState(Leader)
		m.emit(Action{Kind: StartedLeading, Token: m.token, Since: m.since})
	case Leader:
		if l.Token != m.token {
			m.stepDown(ReasonLost, Follower)
			return
		}
		if until > m.leaderUntil {
			m.confirmed, m.leaderUntil = m.pendingSent, until
		}
	case Expiring:
		// A renewal that was in flight when the term ended; the term stays
		// ended. Release from the new revision.
		m.nextOp = m.now
	}
}

// stepDown ends the current term and moves to the given state.
func (m *Machine) stepDown(r Reason, to State) {
	m.emit(Action{Kind: StoppedLeading, Token: m.token, Reason: r})
	m.setState(to)
	if to == Expiring {
		m.nextOp = m.now
	}
}

func (m *Machine) setState(s State) { m.state = s }

func (m *Machine) emit(a Action) { m.out = append(m.out, a) }

// stealable reports whether the observed record is one the node waits out
// before taking it over.
func (m *Machine) stealable() bool {
	return m.seen && !m.absent && m.obs.Holder != ""
}

// free reports whether the observed record may be taken at once.
func (m *Machine) free() bool {
	return m.seen && (m.absent || m.obs.Holder == "")
}

// patienceEnds is when a follower may take over the observed record.
func (m *Machine) patienceEnds() time.Duration {
	d := m.obs.LeaseDuration
	if d <= 0 {
		d = m.cfg.LeaseDuration
	}
	if m.lossy {
		// The record may stand in for one that vanished, whose holder
		// promised more: wait the longest promise this node has seen.
		d = max(d, m.maxLease, m.cfg.LeaseDuration)
	}
	return m.firstSeen + d
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
		switch {
		case m.seen && !m.absent && m.unknownToken != 0 && m.obs.Holder == m.id && m.obs.Token == m.unknownToken:
			// Our acquire went through after all: confirm it with a
			// renewal before leading on it.
			m.setState(Candidate)
			m.swap(Renew, m.obs)
		case m.free(), m.stealable() && m.now >= m.patienceEnds():
			m.acquire()
		case m.now >= m.nextOp:
			m.read()
		}
	case Candidate:
		// Waiting for the swap's result.
	case Leader:
		if m.now >= m.leaderUntil {
			m.stepDown(ReasonDeadline, Expiring)
			m.advance()
			return
		}
		if !m.pending && m.now >= m.nextOp {
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
		case !held, m.now >= m.lastWriteSent+m.lastWriteDur:
			// Nothing to release, or it has surely expired.
			m.setState(Follower)
			m.advance()
		case m.stop && m.keep:
			m.finish()
		case m.now >= m.nextOp:
			next := m.obs
			next.Holder = ""
			m.swap(Release, next)
		}
	}
}

// acquire starts a new term with a token above every token seen.
func (m *Machine) acquire() {
	next := Lease{
		Holder:        m.id,
		Token:         m.maxToken + 1,
		Transitions:   m.maxTrans,
		LeaseDuration: m.cfg.LeaseDuration,
	}
	if m.absent && m.maxToken > 0 || !m.absent && m.obs.Holder != m.id {
		// The lease changes hands (or its record was lost after someone
		// held it).
		next.Transitions++
	}
	// A new attempt: whatever an earlier acquire with an unknown outcome
	// did, only this one's outcome may be confirmed.
	m.unknownToken = 0
	m.setState(Candidate)
	m.swap(Acquire, next)
}

func (m *Machine) swap(kind SwapKind, next Lease) {
	m.pending, m.pendingKind, m.pendingSwap = true, Swap, kind
	m.pendingSent, m.pendingNext, m.pendingRD = m.now, next, m.cfg.RenewDeadline
	m.pendingExp = m.rev
	if kind != Release {
		m.lastWriteSent, m.lastWriteDur = m.now, next.LeaseDuration
	}
	m.nextOp = m.now + m.retryPause()
	m.emit(Action{Kind: Swap, Swap: kind, Expected: m.rev, Next: next})
}

func (m *Machine) read() {
	m.pending, m.pendingKind, m.pendingSent = true, Read, m.now
	m.nextOp = m.now + m.retryPause()
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
		p += time.Duration(float64(p) * m.cfg.RetryJitter * m.rand.Float64())
	}
	return p
}
