package lead

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/tenure-go/tenure/fsm"
	"github.com/tenure-go/tenure/store"
)

// maxBatch is the most renewals one batch of a Group carries: a Redis
// script over that many keys holds the server for about a millisecond,
// and PostgreSQL's pipelines carry fewer (pgstore splits them).
const maxBatch = 64

// maxRoom is the most renewals a round makes room for at once: a round
// after thousands of leaders renewed together (a Group starting) does not
// hold room for all of them again.
const maxRoom = 16 * maxBatch

// BatchInstruments is implemented by Instruments that also count a
// Group's round trips: besides StoreOp for each operation, StoreBatch
// reports each batch of operations sent in one round trip
// (store.Batcher), to the Instruments of the batch's first elector: op is the kind of its operations (OpRenew), n how many
// it carried (at least one), took how long it took. An operation sent
// alone is not reported to it. Round trips per renewal are then (renewals
// reported by StoreOp - renewals in batches + batches) / renewals.
type BatchInstruments interface {
	Instruments
	StoreBatch(op string, n int, took time.Duration)
}

// pendingRenewals are renewals of a Group's leaders waiting to go out in
// batches: for each, its runner, its swap and its operation's timeout.
// The swaps are kept together, so that a batch hands its part of them to
// the store as it is.
type pendingRenewals[M any] struct {
	rs       []*runner[M]
	swaps    []store.Swap[M]
	timeouts []time.Duration
}

// slice returns renewals i to j.
func (p pendingRenewals[M]) slice(i, j int) pendingRenewals[M] {
	return pendingRenewals[M]{rs: p.rs[i:j:j], swaps: p.swaps[i:j:j], timeouts: p.timeouts[i:j:j]}
}

// renewals gathers the renewals a Group's loop asks for while it hands
// out one round of messages (a wake of the grid wakes every leader due
// at that instant in one round), and sends them after the round, in
// batches of at most maxBatch, each as one store operation of the pool.
// Each renewal keeps what a single swap has: its runner's count of
// operations in flight, its answer posted to the loop as the answer to
// its own swap (the machine steps exactly as for one), and its
// measurement.
type renewals[M any] struct {
	b     store.Batcher[M] // nil: the store cannot batch; each renewal is a swap of its own
	batch func(ctx context.Context, swaps []store.Swap[M]) []store.SwapResult[M]

	mu      sync.Mutex
	pending pendingRenewals[M]
	// last is how many renewals the last round gathered: the next round's
	// are gathered in room for as many (at most maxRoom), made at once.
	last int
}

// batchRenew takes r's renewal sw into the Group's next batch, and
// reports whether it did: only when the Group's store batches swaps.
func (m *member[M]) batchRenew(r *runner[M], sw store.Swap[M]) bool {
	rs := &m.g.renewals
	if rs.b == nil {
		return false
	}
	r.ops.Add(1)
	rs.mu.Lock()
	p := &rs.pending
	if p.rs == nil {
		n := min(max(rs.last, 1), maxRoom)
		p.rs, p.swaps, p.timeouts = make([]*runner[M], 0, n), make([]store.Swap[M], 0, n), make([]time.Duration, 0, n)
	}
	p.rs, p.swaps, p.timeouts = append(p.rs, r), append(p.swaps, sw), append(p.timeouts, r.cfg.BackendTimeout)
	rs.mu.Unlock()
	return true
}

// flushRenewals sends the renewals gathered since the last call, in
// batches, as urgent operations of the pool (on the loop, for a store
// that answers immediately). parent is the Group's operations' context.
func (g *Group[M]) flushRenewals(parent *opsContext) {
	rs := &g.renewals
	if rs.b == nil {
		return
	}
	rs.mu.Lock()
	pending := rs.pending
	rs.pending = pendingRenewals[M]{}
	if len(pending.rs) > 0 {
		rs.last = len(pending.rs)
	}
	rs.mu.Unlock()
	for i := 0; i < len(pending.rs); i += maxBatch {
		chunk := pending.slice(i, min(i+maxBatch, len(pending.rs)))
		run := func() { rs.send(parent, chunk) }
		if chunk.rs[0].e.immediate {
			run()
			continue
		}
		g.ops.spawn(run, true)
	}
}

// send sends one batch of renewals and posts each its answer, within the
// shortest of their timeouts.
func (rs *renewals[M]) send(parent *opsContext, chunk pendingRenewals[M]) {
	timeout := slices.Min(chunk.timeouts)
	ctx := newOpContext(parent, timeout)
	e0 := chunk.rs[0].e
	began := e0.clock.Now()
	res := rs.batch(ctx, chunk.swaps)
	ctx.end(context.Canceled)
	took := e0.clock.Now().Sub(began)
	for i, r := range chunk.rs {
		sw := chunk.swaps[i]
		rr := store.SwapResult[M]{Err: errNoResult}
		if i < len(res) {
			rr = res[i]
		}
		if in := r.e.instruments; in != nil {
			in.StoreOp(r.e.name, OpRenew, took, rr.Err)
		}
		if tr := r.e.tracer; tr != nil {
			tr.LeaseOp(Operation{Name: r.e.name, Op: OpRenew, Token: sw.Next.Token, LeaseDuration: sw.Next.LeaseDuration,
				Start: began, End: began.Add(took), Outcome: OutcomeOf(rr.Err), Err: rr.Err})
		}
		r.loop.postResult(r, result[M]{swap: fsm.Renew, rec: rr.Record, rev: rr.Revision, err: rr.Err})
		r.ops.Done()
	}
	if in, ok := e0.instruments.(BatchInstruments); ok {
		in.StoreBatch(OpRenew, len(chunk.rs), took)
	}
}

// errNoResult is the answer to a renewal a batch returned no result for:
// its outcome is unknown.
var errNoResult = errors.New("lead: the store's batch returned no result for the renewal: its outcome is unknown")
