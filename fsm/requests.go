package fsm

import (
	"math"
	"time"

	"github.com/tenure-go/tenure/lease"
)

// The store operations the machine asks for, and their budget: one
// request is scheduled per retry pause, and at most maxQuick more may
// follow an answer before it (allowed).

// request is the one store operation in flight, if any: what was asked,
// when, and what the hint tracker held when it was asked (answered
// settles hints with it). Sending one starts it (start); its answer or
// failure ends it (Step), as does finish. A read leaves the swap's fields
// as the last swap set them: only a swap's answer reads them.
type request struct {
	pending  bool
	kind     ActionKind
	seq      uint64         // its number (see Machine.sent)
	sentAt   time.Duration  // when it was sent
	heardMax lease.Revision // hintTracker.heardMax when it was sent
	heardTop lease.Revision // hintTracker.heardTop when it was sent
	guarded  bool           // a guarded swap (takeHeardRelease): it expects was, released, at expected

	swap          SwapKind
	next          Lease
	expected      lease.Revision // the revision the swap expects
	was           Lease
	renewDeadline time.Duration // RenewDeadline in force when it was sent
}

// start records a request of kind, numbered seq, sent at now while the
// hint tracker held h.
func (r *request) start(kind ActionKind, seq uint64, now time.Duration, h *hintTracker) {
	r.pending, r.kind, r.seq, r.sentAt = true, kind, seq, now
	r.heardMax, r.heardTop = h.heardMax, h.heardTop
	r.guarded = false
}

// maxQuick is how many requests a machine sends before the next scheduled
// one (see Machine.allowed): enough for an acquire after a read and one
// retry after a conflict, never a loop.
const maxQuick = 2

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

// acquire starts a new term with a token above every token seen. The caller
// has checked that one is left (TokensExhausted).
func (m *Machine) acquire() {
	next := Lease{
		Holder:        m.id,
		Token:         m.view.maxToken + 1,
		Transitions:   m.view.maxTrans,
		LeaseDuration: m.cfg.LeaseDuration,
	}
	if m.view.absent && m.view.maxToken > 0 || !m.view.absent && m.view.obs.Holder != m.id {
		// The lease changes hands (or its record was lost after someone
		// held it). Transitions is informational: it stops at the bound
		// of a stored record rather than make the write invalid.
		next.Transitions = min(next.Transitions+1, lease.MaxToken)
	}
	// A new attempt: whatever an earlier acquire with an unknown outcome
	// did, only this one's outcome may be confirmed.
	m.unknownToken = 0
	m.becomeCandidate(Acquire, next)
}

// swap asks for a compare-and-swap of kind from the revision accepted last
// to next.
func (m *Machine) swap(kind SwapKind, next Lease) {
	m.sendSwap(Action{Kind: Swap, Swap: kind, Expected: m.view.rev, Next: next})
}

// sendSwap asks for the swap a describes.
func (m *Machine) sendSwap(a Action) {
	m.sent++
	m.req.start(Swap, m.sent, m.now, &m.hints)
	m.req.swap, m.req.next, m.req.renewDeadline = a.Swap, a.Next, m.cfg.RenewDeadline
	m.req.expected, m.req.guarded, m.req.was = a.Expected, a.Guarded, a.Was
	if a.Swap != Release {
		m.term.writeSent, m.term.writeDur = m.now, a.Next.LeaseDuration
	}
	m.again = false
	m.nextOp = sat(m.now, m.retryPause())
	a.Claim = m.claims()
	m.emit(a)
}

// read asks for the record: on schedule (every retry pause), or at once for
// a watch hint, which leaves the schedule alone (a leader's renewals keep
// their pace) and opens a fresh allowance of quick requests, so that a
// watched release is taken one round trip later.
func (m *Machine) read(hinted bool) {
	m.sent++
	m.req.start(Read, m.sent, m.now, &m.hints)
	m.quick = 0
	if !hinted {
		m.nextOp = sat(m.now, m.retryPause())
	}
	m.emit(Action{Kind: Read})
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
// at its deadline, whatever it is, see checkDeadline).
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

func (m *Machine) emit(a Action) { m.out = append(m.out, a) }
