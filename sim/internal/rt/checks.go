package rt

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/internal/oracle"
	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/sim"
	"github.com/tenure-go/tenure/sim/internal/timeline"
	"github.com/tenure-go/tenure/store"
)

// checker is what the checks remember across events. It is guarded by
// harness.mu.
type checker[M any] struct {
	terms map[fence.Token]*incarnation[M] // token → the incarnation whose term it is
	// Fencing.
	lastAccepted fence.Token
	// Liveness.
	active     int           // faults in force
	calmFrom   time.Duration // no disturbance since
	lastLeader time.Duration // the last poll at which an elector led
	bound      time.Duration
	// The shared store, as its successful writes show it.
	lastRev         lease.Revision
	lastToken       uint64
	lastHolder      string
	lastTransitions uint64
	lost            bool // a data loss since the last write
}

// disturbed notes a fault event at t: liveness counts from the last one.
func (c *checker[M]) disturbed(t time.Duration) { c.calmFrom = max(c.calmFrom, t) }

// termSeen notes that inc has (or had) a term with token tok: a token
// belongs to one term only. (That terms' tokens grow is the oracle's to
// judge, from the store's writes.) h.mu is held.
func (h *harness[M]) termSeen(inc *incarnation[M], tok fence.Token) {
	c := &h.chk
	if o, ok := c.terms[tok]; ok {
		if o != inc {
			h.failLocked(sim.CheckTokens, "token %d is the token of a term of %s and of a term of %s", tok, o.id, inc.id)
		}
		return
	}
	c.terms[tok] = inc
}

// poll runs the checks at an instant when every goroutine is idle: it
// samples every elector's belief (Term) for the oracle, which judges one
// leader and token order; every live body context belongs to the current
// term of its elector; what the observers were told matches Term (unless
// a pause delayed them); and, in calm times, someone leads within the
// liveness bound.
func (h *harness[M]) poll() {
	now := h.now()
	h.mu.Lock()
	var live []*incarnation[M]
	for _, n := range h.nodes {
		live = append(live, n.live...)
	}
	h.mu.Unlock()
	type view struct {
		t       lead.Term
		ok      bool
		st      lead.Status
		rec     lease.Record[M]
		haveRec bool
	}
	views := make([]view, len(live))
	leading := false
	for i, b := range h.sample(live) {
		inc := live[i]
		views[i].t, views[i].ok = b.t, b.ok
		views[i].st = inc.e.Status()
		views[i].rec, views[i].haveRec = inc.e.Record()
		leading = leading || b.ok
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	seen := map[string]bool{}
	for i, inc := range live {
		v := views[i]
		h.leadersAgree(seen, now, inc, v.rec, v.haveRec)
		if v.ok {
			h.termSeen(inc, v.t.Token)
			if inc.ended != 0 && v.t.Token <= inc.ended {
				h.failLocked(sim.CheckTermEnds, "%s leads with token %d again, after its term with token %d ended", inc.id, v.t.Token, inc.ended)
			}
		}
		if v.st.Leading != v.ok || v.ok && v.st.Term.Token != v.t.Token {
			h.suspectLocked(seen, inc.id+" status", now, sim.CheckObserver, "%s: Status says leading %v (token %d), Term says %v (token %d)", inc.id, v.st.Leading, v.st.Term.Token, v.ok, v.t.Token)
		}
		for b := range inc.bodies {
			if b.ctx.Err() == nil && (!v.ok || v.t.Token != b.token) {
				h.suspectLocked(seen, fmt.Sprintf("%s body %p", inc.id, b), now, sim.CheckBody, "%s: a %s body of the term with token %d has a live context, but %s leads: %v (token %d)", inc.id, b.kind, b.token, inc.id, v.ok, v.t.Token)
			}
		}
		n := inc.n
		agree := inc.obsOpen == v.ok && (!v.ok || inc.obsToken == v.t.Token)
		if inc.inlineTouched {
			if agree && inc.inlineCalls == 0 {
				inc.inlineTouched = false
			}
			continue
		}
		if n.stallTouched {
			if agree && n.stallUntil <= now {
				n.stallTouched = false
			}
			continue
		}
		if !agree {
			h.suspectLocked(seen, inc.id+" observers", now, sim.CheckObserver, "%s: its observers were told %s, but Term says leading %v (token %d)", inc.id, obsText(inc), v.ok, v.t.Token)
		}
	}
	for i, inc := range live {
		if v := views[i]; !v.ok && inc.lastLed != 0 {
			inc.ended = max(inc.ended, inc.lastLed)
		} else if v.ok {
			inc.lastLed = v.t.Token
		}
	}
	h.forget(seen)
	h.liveness(now, leading)
}

// forget drops the disagreements that the last poll did not see. h.mu is
// held.
func (h *harness[M]) forget(seen map[string]bool) {
	for k := range h.suspects {
		if !seen[k] {
			delete(h.suspects, k)
		}
	}
}

// suspectLocked reports a disagreement between what Term says and what
// the observers, a body's context or Status say. In a bubble every
// goroutine is idle when poll looks, so it is a violation at once. In real
// time the elector's goroutines may not have run yet: it is a violation
// once it has lasted longer than the tolerance (it still holds at a later
// poll), and the message says for how long. Keys seen by this poll are put
// in seen; the others are forgotten. h.mu is held.
func (h *harness[M]) suspectLocked(seen map[string]bool, key string, now time.Duration, check, format string, args ...any) {
	if !h.realTime() {
		h.failLocked(check, format, args...)
		return
	}
	seen[key] = true
	since, ok := h.suspects[key]
	if !ok {
		h.suspects[key] = now
		return
	}
	if tol := h.tolerance(); now-since > tol {
		h.failLocked(check, format+" (for %v, beyond the real-time tolerance %v)", append(args, now-since, tol)...)
	}
}

// obsText describes what inc's observers were told last. h.mu is held.
func obsText[M any](inc *incarnation[M]) string {
	if inc.obsOpen {
		return fmt.Sprintf("Started (token %d)", inc.obsToken)
	}
	return "nothing open"
}

// liveness checks that, in calm times with some elector up and connected,
// the cluster has not gone without a leader for longer than the bound.
// h.mu is held.
func (h *harness[M]) liveness(now time.Duration, leading bool) {
	c := &h.chk
	if leading {
		c.lastLeader = now
		return
	}
	if c.active > 0 {
		return
	}
	eligible := false
	for _, n := range h.nodes {
		if n.cur != nil && !n.reqCut && !n.respCut && n.stallUntil <= now {
			eligible = true
		}
	}
	if !eligible {
		return
	}
	from := max(c.calmFrom, c.lastLeader)
	if gap := now - from; gap > c.bound+h.tolerance() {
		h.failLocked(sim.CheckLiveness, "no elector leads, %v after the faults healed (at %v) and the last leader (at %v); bound %v",
			gap, c.calmFrom, c.lastLeader, c.bound+h.tolerance())
	}
}

// sawRead traces a read as the shared store answered it.
func (h *harness[M]) sawRead(inc *incarnation[M], name string, rec lease.Record[M], rev lease.Revision, err error) {
	switch {
	case name != h.o.Name:
		// A decoy's (crowded Groups): not checked, not traced.
	case errors.Is(err, store.ErrNotFound):
		h.tracef(inc, "get: absent")
	case err != nil:
		h.tracef(inc, "get: %v", err)
	default:
		h.tracef(inc, "get: rev %d holder=%q token=%d", rev, rec.Holder, rec.Token)
	}
}

// swapShared performs a compare-and-swap on the shared store and checks
// what the store answers against the contract: a successful write gets a
// revision above every earlier one, tokens never go down, a token names one
// holder, and Transitions never goes down (except across a data loss).
// sn is what the oracle was told when the write was sent.
func (h *harness[M]) swapShared(ctx context.Context, inc *incarnation[M], sn oracle.Snapshot, name string, expected lease.Revision, next lease.Record[M]) (lease.Record[M], lease.Revision, error) {
	return h.swapSharedAs(ctx, inc, sn, name, expected, nil, next)
}

// swapSharedAs is swapShared, guarded by was when it is not nil (the
// shared store's store.ReleaseGuard).
func (h *harness[M]) swapSharedAs(ctx context.Context, inc *incarnation[M], sn oracle.Snapshot, name string, expected lease.Revision, was *store.Released, next lease.Record[M]) (lease.Record[M], lease.Revision, error) {
	swap := h.inner.CompareAndSwap
	if was != nil {
		swap = func(ctx context.Context, name string, expected lease.Revision, next lease.Record[M]) (lease.Record[M], lease.Revision, error) {
			return store.CompareReleasedAndSwap(ctx, h.inner, name, expected, *was, next)
		}
	}
	if name != h.o.Name {
		// A decoy's (crowded Groups): its own election, not checked.
		return swap(ctx, name, expected, next)
	}
	if h.realTime() {
		// Writes that finish together must be checked in the order the
		// store applied them.
		h.storeMu.Lock()
		defer h.storeMu.Unlock()
	}
	rec, rev, err := swap(ctx, name, expected, next)
	h.mu.Lock()
	c := &h.chk
	if err == nil {
		switch {
		case rev <= c.lastRev:
			h.failLocked(sim.CheckMonotonic, "the store gave %s's write revision %d after revision %d", inc.id, rev, c.lastRev)
		case rec.Token < c.lastToken:
			h.failLocked(sim.CheckTokens, "the store stored token %d (written by %s) after token %d", rec.Token, inc.id, c.lastToken)
		case rec.Token == c.lastToken && rec.Holder != "" && c.lastHolder != "" && rec.Holder != c.lastHolder:
			h.failLocked(sim.CheckTokens, "token %d was stored for %s and then for %s", rec.Token, c.lastHolder, rec.Holder)
		case rec.Transitions < c.lastTransitions && !c.lost:
			h.failLocked(sim.CheckMonotonic, "the store's Transitions went from %d to %d (written by %s)", c.lastTransitions, rec.Transitions, inc.id)
		}
		if rec.Holder != "" || rec.Token != c.lastToken {
			c.lastHolder = rec.Holder
		}
		c.lastRev, c.lastToken, c.lastTransitions, c.lost = max(c.lastRev, rev), max(c.lastToken, rec.Token), rec.Transitions, false
		h.tl.AddStore(int64(h.now()), storeText(rev, rec.Holder, rec.Token, rec.Transitions, inc.id))
		h.tl.AddWrite(timeline.Write{At: int64(h.now()), Node: inc.n.idx, Rev: uint64(rev), Holder: rec.Holder, Token: rec.Token})
	} else if errors.Is(err, store.ErrConflict) {
		h.tl.AddWrite(timeline.Write{At: int64(h.now()), Node: inc.n.idx, Rev: uint64(expected), Holder: next.Holder, Token: next.Token, Conflict: true})
	}
	h.mu.Unlock()
	if err == nil {
		h.judgeApplied(sn, rev, rec)
	}
	switch {
	case err == nil:
		h.tracef(inc, "swap exp=%d: stored rev %d holder=%q token=%d transitions=%d", expected, rev, rec.Holder, rec.Token, rec.Transitions)
	case errors.Is(err, store.ErrConflict):
		h.tracef(inc, "swap exp=%d: conflict, rev %d holder=%q token=%d", expected, rev, rec.Holder, rec.Token)
	default:
		h.tracef(inc, "swap exp=%d: %v", expected, err)
	}
	return rec, rev, err
}
