package rt

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/internal/oracle"
	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/sim"
	"github.com/tenure-go/tenure/store"
)

// judge records the run's history for the independent oracle
// (internal/oracle), which alone decides the one-leader and token-order
// checks: every write to the shared store with its send and apply
// instants, every answer and watch event delivered to an incarnation, the
// data losses, and each incarnation's belief sampled through Term. Each
// incarnation is a node of its own, so that a stopped process still
// winding down is judged alongside its successor.
//
// Its lock is taken last: under it only the oracle and the electors' Term
// run, never a lock of the harness.
type judge struct {
	mu       sync.Mutex
	o        *oracle.Oracle
	last     oracle.Time // the latest instant recorded
	names    []string    // by node ID: the incarnation's identity
	reported int         // violations already passed to the checks
	resample oracle.Time // the last instant Pending asked for that is scheduled
}

// newJudge returns the judge of a run whose clocks drift by at most rho,
// whose electors use the timings of cfgs, and whose store may lose records
// (lossy) when it says so or the run injects data loss.
func newJudge(cfgs []lease.Config, rho float64, lossy bool, slack time.Duration) *judge {
	var rd time.Duration
	for _, c := range cfgs {
		rd = max(rd, c.RenewDeadline)
	}
	return &judge{o: oracle.New(oracle.Params{
		Drift: rho, MaxRenewDeadline: rd, Complete: true, LossyStore: lossy, Slack: slack,
	})}
}

// stamp is the instant of the event being recorded: the run's time, never
// earlier than the last one recorded. In real time it also grows strictly,
// so that a belief read after another is stamped after it. j.mu is held.
func (h *harness[M]) stamp() oracle.Time {
	j := h.j
	t := oracle.Time(h.now())
	if h.realTime() {
		t = max(t, j.last+1)
	} else {
		t = max(t, j.last)
	}
	j.last = t
	return t
}

// rec is what the oracle keeps of a record.
func rec[M any](r lease.Record[M]) oracle.Rec {
	return oracle.Rec{Holder: r.Holder, Token: r.Token, Transitions: r.Transitions, LeaseDuration: r.LeaseDuration}
}

// judgeBoot starts inc's node in the oracle, before its elector runs.
func (h *harness[M]) judgeBoot(inc *incarnation[M]) {
	j := h.j
	j.mu.Lock()
	inc.node = oracle.Node{ID: len(j.names)}
	j.names = append(j.names, fmt.Sprintf("%s (process %d of n%d)", inc.id, inc.n.boots, inc.n.idx))
	j.o.Boot(inc.node, h.stamp())
	j.mu.Unlock()
}

// judgeDown ends inc's node: its Run, Lead and Every returned.
func (h *harness[M]) judgeDown(inc *incarnation[M]) {
	j := h.j
	j.mu.Lock()
	j.o.Down(inc.node, h.stamp())
	j.mu.Unlock()
}

// judgeErased reports whether the store forgot the history of inc's term
// with token tok.
func (h *harness[M]) judgeErased(inc *incarnation[M], tok fence.Token) bool {
	j := h.j
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.o.Erased(inc.node, uint64(tok))
}

// judgeSend records that inc sends a write of next over expected.
func (h *harness[M]) judgeSend(inc *incarnation[M], expected lease.Revision, next lease.Record[M]) oracle.Snapshot {
	j := h.j
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.o.Send(inc.node, h.stamp(), expected, rec(next))
}

// judgeApplied records that the store applied the write of sn, storing
// stored at rev. Writes are recorded in the order the store applied them
// (storeMu, in real time).
func (h *harness[M]) judgeApplied(sn oracle.Snapshot, rev lease.Revision, stored lease.Record[M]) {
	j := h.j
	j.mu.Lock()
	j.o.Applied(h.stamp(), sn, rev, rec(stored), 0)
	v := h.verdictsLocked()
	j.mu.Unlock()
	h.report(v)
}

// judgeAnswer records the answer to a read or a write delivered to inc.
func (h *harness[M]) judgeAnswer(inc *incarnation[M], r lease.Record[M], rev lease.Revision, err error) {
	if err != nil && !errors.Is(err, store.ErrConflict) {
		return // no record: absent, or no answer
	}
	j := h.j
	j.mu.Lock()
	j.o.Deliver(inc.node, h.stamp(), rev, rec(r), rev != 0)
	j.mu.Unlock()
}

// judgeEvent records a watch event delivered to inc.
func (h *harness[M]) judgeEvent(inc *incarnation[M], ev store.Event[M]) {
	if ev.Err != nil || ev.Absent {
		return
	}
	j := h.j
	j.mu.Lock()
	j.o.Deliver(inc.node, h.stamp(), ev.Revision, rec(ev.Record), true)
	j.mu.Unlock()
}

// judgeLose records that the store lost its record.
func (h *harness[M]) judgeLose() {
	j := h.j
	j.mu.Lock()
	j.o.Lose(h.stamp())
	j.mu.Unlock()
}

// belief is one incarnation's Term, as sampled.
type belief struct {
	t  lead.Term
	ok bool
}

// sample reads the Term of each of incs, recording each as a belief at the
// instant it was read, and reports what the oracle finds.
func (h *harness[M]) sample(incs []*incarnation[M]) []belief {
	out := make([]belief, len(incs))
	j := h.j
	j.mu.Lock()
	for i, inc := range incs {
		t, ok := inc.e.Term()
		out[i] = belief{t, ok}
		j.o.Belief(inc.node, h.stamp(), ok, uint64(t.Token))
	}
	v := h.verdictsLocked()
	j.mu.Unlock()
	h.report(v)
	return out
}

// sampleLive samples every incarnation whose Run has not returned.
func (h *harness[M]) sampleLive() {
	h.mu.Lock()
	var live []*incarnation[M]
	for _, n := range h.nodes {
		live = append(live, n.live...)
	}
	h.mu.Unlock()
	h.sample(live)
}

// resampleAt returns the instant at which the oracle wants the beliefs
// sampled again (an excused overlap's bound), if it is not scheduled yet.
// Main goroutine only.
func (h *harness[M]) resampleAt() (time.Duration, bool) {
	j := h.j
	j.mu.Lock()
	defer j.mu.Unlock()
	at, ok := j.o.Pending()
	if !ok || at <= j.resample {
		return 0, false
	}
	j.resample = at
	return time.Duration(at), true
}

// verdictsLocked returns the oracle's violations not yet reported. j.mu is
// held.
func (h *harness[M]) verdictsLocked() []oracle.Violation {
	j := h.j
	if !j.o.Failed() {
		return nil
	}
	v := j.o.Violations()
	if len(v) <= j.reported {
		return nil
	}
	old := j.reported
	j.reported = len(v)
	return v[old:]
}

// nodeRef matches the oracle's names of nodes in its messages: "node 3"
// becomes "n1 (process 2 of n1)".
var nodeRef = regexp.MustCompile(`\bnode (\d+)\b`)

// report fails the run with the first of v, under the check of the same
// name, naming the processes the oracle's message numbers.
func (h *harness[M]) report(v []oracle.Violation) {
	if len(v) == 0 {
		return
	}
	first := v[0]
	check := sim.CheckOneLeader
	if first.Check == oracle.CheckTokens {
		check = sim.CheckTokens
	}
	h.j.mu.Lock()
	msg := nodeRef.ReplaceAllStringFunc(first.Msg, func(m string) string {
		id, err := strconv.Atoi(nodeRef.FindStringSubmatch(m)[1])
		if err != nil || id >= len(h.j.names) {
			return m
		}
		return h.j.names[id]
	})
	h.j.mu.Unlock()
	h.fail(check, "%s", msg)
}
