package batch

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Answer is what a batch gives one question.
type Answer[A any] struct {
	V   A
	Err error
}

// Runner runs questions in batches, with at most a fixed number of batches
// in flight. The zero Runner is not usable: make one with New.
type Runner[Q, A any] struct {
	run    func(ctx context.Context, qs []Q) []Answer[A]
	limit  int
	size   int              // the most questions in one batch; 0: no bound
	inline bool             // a call that finds the Runner idle runs alone, on its own goroutine and context
	settle func()           // called before a batch takes the calls waiting; nil: none
	now    func() time.Time // with settle: a batch takes the calls made before settle returned

	mu      sync.Mutex
	waiting []*pending[Q, A]
	running int // batches in flight, each served by a goroutine
}

// pending is one call waiting for its answer.
type pending[Q, A any] struct {
	ctx  context.Context
	q    Q
	done chan Answer[A] // buffered: the batch never waits for the caller
	at   time.Time      // when it was made, with Settle

	// mu guards gone (the caller returned without its answer) and fl
	// (the batch that carries the call, once sent): whichever of the two
	// is set second tells fl the caller is gone.
	mu   sync.Mutex
	gone bool
	fl   *flight
}

// flight is one batch in flight: it is cancelled once every caller it
// carries has returned without waiting for its answer (nobody waits for
// it then: a batch whose reply never comes must not hold its slot, and its
// connection, for good). The callers tell it themselves, as they return:
// a hook on each caller's context (context.AfterFunc) would cost a
// goroutine per call on a context the context package does not know.
type flight struct {
	left   atomic.Int64 // callers that may still wait
	cancel context.CancelFunc
}

// leave counts one caller gone, and cancels the batch after the last.
func (f *flight) leave() {
	if f.left.Add(-1) == 0 {
		f.cancel()
	}
}

// join puts p in f, or counts it gone if its caller has returned.
func (p *pending[Q, A]) join(f *flight) {
	p.mu.Lock()
	gone := p.gone
	p.fl = f
	p.mu.Unlock()
	if gone {
		f.leave()
	}
}

// leave marks p's caller gone, and tells its batch if it has one.
func (p *pending[Q, A]) leave() {
	p.mu.Lock()
	p.gone = true
	f := p.fl
	p.mu.Unlock()
	if f != nil {
		f.leave()
	}
}

// New returns a Runner that sends questions with run, at most limit
// batches at a time (at least one). run gets the questions of a batch in
// the order asked and must return one answer for each, in that order; its
// context carries the values of the batch's first call and the latest
// deadline of its calls (none if one has none), and is never cancelled
// otherwise.
func New[Q, A any](limit int, run func(ctx context.Context, qs []Q) []Answer[A]) *Runner[Q, A] {
	return &Runner[Q, A]{run: run, limit: max(limit, 1)}
}

// NewInline is New for a client that honours a context's cancellation: a
// call that finds no call waiting and fewer than limit batches in flight
// runs alone, on the caller's goroutine and under the caller's own context
// (so that its end cancels that call as the client does, and nothing
// else), instead of on a batch's goroutine.
func NewInline[Q, A any](limit int, run func(ctx context.Context, qs []Q) []Answer[A]) *Runner[Q, A] {
	r := New(limit, run)
	r.inline = true
	return r
}

// Cap bounds the questions of one batch to n (no bound when n < 1, the
// default) and returns r: the calls waiting beyond n go in the next batch,
// in the order asked. Set it before the first call.
func (r *Runner[Q, A]) Cap(n int) *Runner[Q, A] {
	r.size = max(n, 0)
	return r
}

// Settle makes r call wait before each batch takes the calls waiting, and
// then take only those made before the instant now gives when wait
// returns; it returns r. The simulator passes its clock and a wait for its
// simulated time to move on: a batch then takes every call made at the
// instants before, and none made at the instant it wakes, whatever the
// order in which goroutines ran at each instant, so that the schedule of a
// seed stays the same from run to run. Set it before the first call.
func (r *Runner[Q, A]) Settle(now func() time.Time, wait func()) *Runner[Q, A] {
	r.now, r.settle = now, wait
	return r
}

// Do asks q in the next batch and returns its answer, or ctx's error as
// soon as ctx ends: the question may still be sent, and its outcome is
// then unknown to the caller.
func (r *Runner[Q, A]) Do(ctx context.Context, q Q) (A, error) {
	r.mu.Lock()
	if r.inline && len(r.waiting) == 0 && r.running < r.limit {
		r.running++
		r.mu.Unlock()
		a := r.run(ctx, []Q{q})
		r.release()
		if len(a) != 1 {
			var zero A
			return zero, fmt.Errorf("batch: %d answers to 1 question", len(a))
		}
		return a[0].V, a[0].Err
	}
	p := &pending[Q, A]{ctx: ctx, q: q, done: make(chan Answer[A], 1)}
	if r.now != nil {
		p.at = r.now()
	}
	r.waiting = append(r.waiting, p)
	start := r.running < r.limit
	if start {
		r.running++
	}
	r.mu.Unlock()
	if start {
		go r.serve()
	}
	select {
	case a := <-p.done:
		if a.Err != nil && ctx.Err() != nil {
			// A batch that failed as the call's context ended (its
			// deadline was the batch's): the context's error, as if that
			// had come first.
			a.Err = ctx.Err()
		}
		return a.V, a.Err
	case <-ctx.Done():
		p.leave()
		var zero A
		return zero, ctx.Err()
	}
}

// serve sends the calls waiting, batch after batch, until none waits.
func (r *Runner[Q, A]) serve() {
	for {
		var cut time.Time
		if r.settle != nil {
			r.settle()
			cut = r.now()
		}
		r.mu.Lock()
		if len(r.waiting) == 0 {
			r.running--
			r.mu.Unlock()
			return
		}
		calls := r.waiting
		r.waiting = nil
		if r.settle != nil {
			calls, r.waiting = splitBefore(calls, cut)
		}
		if r.size > 0 && len(calls) > r.size {
			rest := append([]*pending[Q, A](nil), calls[r.size:]...)
			r.waiting = append(rest, r.waiting...)
			calls = calls[:r.size:r.size]
		}
		r.mu.Unlock()
		if len(calls) > 0 {
			r.send(calls)
		}
	}
}

// splitBefore splits calls (in the order made) into those made before cut
// and the others.
func splitBefore[Q, A any](calls []*pending[Q, A], cut time.Time) (before, after []*pending[Q, A]) {
	for i, p := range calls {
		if !p.at.Before(cut) {
			return calls[:i:i], append([]*pending[Q, A](nil), calls[i:]...)
		}
	}
	return calls, nil
}

// release gives back the slot of a call that ran alone: to the calls that
// came meanwhile, if any.
func (r *Runner[Q, A]) release() {
	r.mu.Lock()
	if len(r.waiting) == 0 {
		r.running--
		r.mu.Unlock()
		return
	}
	r.mu.Unlock()
	go r.serve()
}

// send runs one batch of calls and hands each its answer.
func (r *Runner[Q, A]) send(calls []*pending[Q, A]) {
	live := calls[:0]
	for _, p := range calls {
		if err := p.ctx.Err(); err != nil {
			p.done <- Answer[A]{Err: err} // gone already: not sent
			continue
		}
		live = append(live, p)
	}
	if len(live) == 0 {
		return
	}
	qs := make([]Q, len(live))
	for i, p := range live {
		qs[i] = p.q
	}
	ctx, cancel := batchContext(live)
	f := &flight{cancel: cancel}
	f.left.Store(int64(len(live)))
	for _, p := range live {
		p.join(f)
	}
	answers := r.run(ctx, qs)
	cancel()
	for i, p := range live {
		if i >= len(answers) {
			p.done <- Answer[A]{Err: fmt.Errorf("batch: %d answers to %d questions", len(answers), len(live))}
			continue
		}
		p.done <- answers[i]
	}
}

// batchContext returns the context a batch runs under: the values of its
// first call and the latest deadline of its calls when every call has one.
// Its cancel function is the flight's (see flight): nobody else cancels it.
func batchContext[Q, A any](calls []*pending[Q, A]) (context.Context, context.CancelFunc) {
	base := context.WithoutCancel(calls[0].ctx)
	latest := time.Time{}
	for _, p := range calls {
		d, ok := p.ctx.Deadline()
		if !ok {
			return context.WithCancel(base)
		}
		if d.After(latest) {
			latest = d
		}
	}
	return context.WithDeadline(base, latest)
}
