package rt

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tenure-go/tenure/internal/batch"
	"github.com/tenure-go/tenure/internal/oracle"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/sim"
	"github.com/tenure-go/tenure/store"
)

// errPartitioned is what a watch gets while its elector is cut off.
var errPartitioned = errors.New("sim: partitioned from the store")

// faultStore is the store as one elector incarnation sees it: every call
// crosses a simulated network (latency, lost requests, lost replies,
// partitions, a slow store) before and after it reaches the shared store.
// A lost request is never applied; a lost reply is applied but never
// answered. Either way the caller waits until its context ends, as a real
// client would, and learns nothing (an unknown outcome). A request whose
// caller gave up still lands, after its latency.
//
// It implements store.Store only: the variants below add store.Watcher,
// store.Lossy and store.ReleaseGuard exactly when the shared store has
// them (or, for Lossy, when the run injects data loss; ReleaseGuard only
// with a watch, which alone makes it of use), so that the elector sees
// the capabilities the user's store really has.
type faultStore[M any] struct {
	h   *harness[M]
	inc *incarnation[M]
	mu  sync.Mutex
	rng *rand.Rand // the fates of this incarnation's calls
	// pipe, when set, sends Get and CompareAndSwap as the stores for Redis
	// and PostgreSQL do (internal/batch): a call made while the round trip
	// is busy waits for the next, which carries every call waiting; the
	// whole batch crosses the network as one message each way.
	pipe *batch.Runner[pipeQ[M], pipeA[M]]
	// lying makes the store say that its operations never wait
	// (store.Immediate), which they do: they cross the network.
	lying bool
}

// AnswersImmediately reports whether the store says its operations never
// wait: false, unless the incarnation is one that is lied to.
func (w *faultStore[M]) AnswersImmediately() bool { return w.lying }

// pipeQ is one call in a batch: a Get when get is set, else a swap.
type pipeQ[M any] struct {
	get      bool
	name     string
	expected lease.Revision
	next     lease.Record[M]
	sn       oracle.Snapshot // a swap's, as sent
}

// pipeA is the answer of one call in a batch.
type pipeA[M any] struct {
	rec lease.Record[M]
	rev lease.Revision
	err error
	pos int // the call's place in the batch, as applied
}

// piped waits for a's turn: the replies of a batch come one after the
// other, a nanosecond apart in the order applied, so that their callers
// wake in an order that does not depend on the scheduler. It reports
// whether ctx is still live.
func (w *faultStore[M]) piped(ctx context.Context, pos int) error {
	if pos > 0 && !w.h.tb.sleep(ctx, time.Duration(pos)) {
		return fmt.Errorf("sim: batched call of %s: %w", w.inc.id, ctx.Err())
	}
	return nil
}

// runPipe carries one batch across the simulated network: one request and
// one reply, whose fates are the whole batch's; at the store the calls run
// in the order asked.
func (w *faultStore[M]) runPipe(ctx context.Context, qs []pipeQ[M]) []batch.Answer[pipeA[M]] {
	res := make([]pipeA[M], len(qs)) // written by the store's side only until the reply arrives
	// The calls of a batch come from goroutines that ran in any order at
	// the same instant: applied in the order of their names (one call per
	// name: a Group's electors have names of their own), a seed's schedule
	// does not depend on it.
	order := make([]int, len(qs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(qs[a].name, qs[b].name) })
	err := w.call(ctx, fmt.Sprintf("batch of %d", len(qs)), func(ctx context.Context) {
		for pos, i := range order {
			q := qs[i]
			a := &res[i]
			a.pos = pos
			if q.get {
				a.rec, a.rev, a.err = w.h.inner.Get(ctx, q.name)
				w.h.sawRead(w.inc, q.name, a.rec, a.rev, a.err)
				continue
			}
			a.rec, a.rev, a.err = w.h.swapShared(ctx, w.inc, q.sn, q.name, q.expected, q.next)
		}
	})
	out := make([]batch.Answer[pipeA[M]], len(qs))
	for i := range out {
		if err != nil {
			out[i].Err = err // res may still be written: a reply that never came
			continue
		}
		out[i].V = res[i]
	}
	return out
}

// message is the random part of one message's fate, drawn when the call
// starts so that the draws of one elector come in the order of its calls,
// whatever the order in which goroutines run.
type message struct {
	lat          time.Duration
	slowU, lossU float64
}

func drawMessage(r *rand.Rand, l sim.Latency) message {
	return message{lat: latency(r, l), slowU: r.Float64(), lossU: r.Float64()}
}

// fate returns when a message sent now by inc's node arrives and whether it
// is lost, by the faults in force now.
func (h *harness[M]) fate(inc *incarnation[M], m message, reply bool) (time.Duration, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := inc.n
	lat := m.lat
	if h.net.slowActive > 0 {
		lat += h.net.slowLat/2 + time.Duration(m.slowU*float64(h.net.slowLat/2))
	}
	cut := n.reqCut && !reply || n.respCut && reply
	lost := h.net.lossActive > 0 && m.lossU < h.net.lossP
	return lat, cut || lost
}

// call carries op across the simulated network. It returns an error
// wrapping ctx's when ctx ended before a reply came.
func (w *faultStore[M]) call(ctx context.Context, kind string, op func(context.Context)) error {
	h := w.h
	h.countOp()
	if w.lying {
		// The elector's loop waits here for the whole call, as it does in
		// a slow logger during a pause: its observers may learn of a
		// change late, which the observer checks allow for this
		// incarnation until they agree again after its last such call
		// (the term's end is the watchdog's, and the other checks hold as
		// ever).
		h.mu.Lock()
		w.inc.inlineCalls++
		w.inc.inlineTouched = true
		h.mu.Unlock()
		defer func() {
			h.mu.Lock()
			w.inc.inlineCalls--
			h.mu.Unlock()
		}()
	}
	w.mu.Lock()
	req, rep := drawMessage(w.rng, h.o.Latency), drawMessage(w.rng, h.o.Latency)
	w.mu.Unlock()
	done := make(chan struct{}, 1)
	reqLat, reqLost := h.fate(w.inc, req, false)
	h.goRun(func() {
		if reqLost {
			h.tracef(w.inc, "%s request lost", kind)
			return
		}
		if !h.tb.sleep(h.ctx, reqLat) {
			return
		}
		op(context.WithoutCancel(ctx))
		repLat, repLost := h.fate(w.inc, rep, true)
		if repLost {
			h.tracef(w.inc, "%s reply lost", kind)
			return
		}
		if h.tb.sleep(h.ctx, repLat) {
			done <- struct{}{}
		}
	})
	var timeout <-chan time.Time
	if h.realTime() {
		// lead bounds a store call with context.WithTimeout, in real time,
		// not on its clock: scaled by the run's speed, that would let a
		// call hang Speed times longer than BackendTimeout of the
		// electors' time. The wrapper ends the call at BackendTimeout of
		// the run's time instead, as lead's timeout does in a bubble.
		h.mu.Lock()
		bt := w.inc.n.cfg.BackendTimeout
		h.mu.Unlock()
		t := h.tb.newTimer(bt)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("sim: %s of %s: %w", kind, w.inc.id, ctx.Err())
	case <-timeout:
		return fmt.Errorf("sim: %s of %s: %w", kind, w.inc.id, context.DeadlineExceeded)
	}
}

// sent tells the oracle that the incarnation sends a write of the
// election's record (not a decoy's).
func (w *faultStore[M]) sent(name string, expected lease.Revision, next lease.Record[M]) oracle.Snapshot {
	if name != w.h.o.Name {
		return oracle.Snapshot{}
	}
	return w.h.judgeSend(w.inc, expected, next)
}

// answered tells the oracle what the answer delivered to the incarnation
// showed of the election's record, and returns the answer.
func (w *faultStore[M]) answered(name string, rec lease.Record[M], rev lease.Revision, err error) (lease.Record[M], lease.Revision, error) {
	if name == w.h.o.Name {
		w.h.judgeAnswer(w.inc, rec, rev, err)
	}
	return rec, rev, err
}

// Get reads through the simulated network.
func (w *faultStore[M]) Get(ctx context.Context, name string) (lease.Record[M], lease.Revision, error) {
	if w.pipe != nil {
		a, err := w.pipe.Do(ctx, pipeQ[M]{get: true, name: name})
		if err == nil {
			err = w.piped(ctx, a.pos)
		}
		if err != nil {
			return lease.Record[M]{}, 0, err
		}
		return w.answered(name, a.rec, a.rev, a.err)
	}
	var (
		rec lease.Record[M]
		rev lease.Revision
		err error
	)
	if cerr := w.call(ctx, "get", func(ctx context.Context) {
		rec, rev, err = w.h.inner.Get(ctx, name)
		w.h.sawRead(w.inc, name, rec, rev, err)
	}); cerr != nil {
		return lease.Record[M]{}, 0, cerr
	}
	return w.answered(name, rec, rev, err)
}

// CompareAndSwap writes through the simulated network.
func (w *faultStore[M]) CompareAndSwap(ctx context.Context, name string, expected lease.Revision, next lease.Record[M]) (lease.Record[M], lease.Revision, error) {
	sn := w.sent(name, expected, next)
	if w.pipe != nil {
		a, err := w.pipe.Do(ctx, pipeQ[M]{name: name, expected: expected, next: next, sn: sn})
		if err == nil {
			err = w.piped(ctx, a.pos)
		}
		if err != nil {
			return lease.Record[M]{}, 0, err
		}
		return w.answered(name, a.rec, a.rev, a.err)
	}
	var (
		rec lease.Record[M]
		rev lease.Revision
		err error
	)
	if cerr := w.call(ctx, "swap", func(ctx context.Context) {
		rec, rev, err = w.h.swapShared(ctx, w.inc, sn, name, expected, next)
	}); cerr != nil {
		return lease.Record[M]{}, 0, cerr
	}
	return w.answered(name, rec, rev, err)
}

// watchStore adds store.Watcher: the shared store's events cross the
// network too (latency; dropped, and the watch broken, while the
// elector's responses are cut; delayed, duplicated and reordered under
// Faults.WatchChaos).
type watchStore[M any] struct {
	*faultStore[M]
	inner store.Watcher[M]
}

// Watch watches the shared store through the simulated network.
func (w watchStore[M]) Watch(ctx context.Context, name string) (<-chan store.Event[M], error) {
	h := w.h
	h.mu.Lock()
	cut := w.inc.n.reqCut || w.inc.n.respCut
	h.mu.Unlock()
	if cut {
		return nil, errPartitioned
	}
	wctx, cancel := context.WithCancel(ctx)
	in, err := w.inner.Watch(wctx, name)
	if err != nil {
		cancel()
		return nil, err
	}
	h.mu.Lock()
	h.watchSeq++
	id := h.watchSeq
	w.inc.watches[id] = cancel
	// The fates of a watch's events come from the incarnation's seed, the
	// name and how many watches of the name it opened before: a Group's
	// decoys open theirs at the same time as the checked elector, in an
	// order that depends on the scheduler, so a count of all its watches
	// would give a seed's checked watch other fates from run to run.
	count := uint64(w.inc.watchCount[name]) // under h.mu
	w.inc.watchCount[name]++
	if name != h.o.Name {
		f := fnv.New64a()
		f.Write([]byte(name))
		count ^= f.Sum64()
	}
	h.mu.Unlock()
	out := make(chan store.Event[M])
	rng := rand.New(rand.NewPCG(w.inc.seed^count, 0x632be59bd9b4e019))
	delivered := func(ev store.Event[M]) {
		if name == h.o.Name {
			h.judgeEvent(w.inc, ev)
		}
	}
	h.goRun(func() {
		var chaos sync.WaitGroup
		defer func() {
			cancel()
			chaos.Wait()
			close(out)
			h.mu.Lock()
			delete(w.inc.watches, id)
			h.mu.Unlock()
		}()
		for ev := range in {
			h.mu.Lock()
			muted := w.inc.n.mutedUntil > h.now()
			h.mu.Unlock()
			if muted {
				continue // silently
			}
			lat, lost := h.fate(w.inc, drawMessage(rng, h.o.Latency), true)
			if lost {
				h.mu.Lock()
				broken := w.inc.n.respCut
				h.mu.Unlock()
				if broken {
					return // a partition breaks the stream
				}
				continue
			}
			if h.o.Faults.WatchChaos {
				late, dup := rng.Float64() < 0.2, rng.Float64() < 0.1
				extra := uniform(rng, 0, 3*h.o.Config.RetryInterval)
				if late || dup {
					chaos.Go(func() {
						if h.tb.sleep(wctx, lat+extra) {
							select {
							case out <- ev:
								delivered(ev)
							case <-wctx.Done():
							}
						}
					})
					if late {
						continue
					}
				}
			}
			if !h.tb.sleep(wctx, lat) {
				return
			}
			select {
			case out <- ev:
				delivered(ev)
			case <-wctx.Done():
				return
			}
		}
	})
	return out, nil
}

// WatchCapabilities are the shared store's: the simulated network delays,
// drops, duplicates and reorders events, but never alters or makes one up.
func (w watchStore[M]) WatchCapabilities() store.WatchCapabilities {
	return w.inner.WatchCapabilities()
}

var (
	_ store.ReleaseGuard[struct{}] = watchGuardStore[struct{}]{}
	_ store.ReleaseGuard[struct{}] = watchLossyGuardStore[struct{}]{}
)

// watchGuardStore adds store.ReleaseGuard to a watchStore, when the shared
// store has it: a guarded swap crosses the network as CompareAndSwap does
// (never in a batch).
type watchGuardStore[M any] struct {
	watchStore[M]
}

// GuardsReleases reports true: the shared store guards its swaps.
func (w watchGuardStore[M]) GuardsReleases() bool { return true }

// CompareReleasedAndSwap writes through the simulated network with the
// shared store's guard.
func (w watchGuardStore[M]) CompareReleasedAndSwap(ctx context.Context, name string, expected lease.Revision, was store.Released, next lease.Record[M]) (lease.Record[M], lease.Revision, error) {
	return w.guarded(ctx, name, expected, was, next)
}

// guarded is CompareReleasedAndSwap through the simulated network.
func (w *faultStore[M]) guarded(ctx context.Context, name string, expected lease.Revision, was store.Released, next lease.Record[M]) (lease.Record[M], lease.Revision, error) {
	sn := w.sent(name, expected, next)
	var (
		rec lease.Record[M]
		rev lease.Revision
		err error
	)
	if cerr := w.call(ctx, "guarded swap", func(ctx context.Context) {
		rec, rev, err = w.h.swapSharedAs(ctx, w.inc, sn, name, expected, &was, next)
	}); cerr != nil {
		return lease.Record[M]{}, 0, cerr
	}
	return w.answered(name, rec, rev, err)
}

// watchLossyGuardStore is a watchLossyStore with store.ReleaseGuard.
type watchLossyGuardStore[M any] struct {
	watchLossyStore[M]
}

// GuardsReleases reports true: the shared store guards its swaps.
func (w watchLossyGuardStore[M]) GuardsReleases() bool { return true }

// CompareReleasedAndSwap writes through the simulated network with the
// shared store's guard.
func (w watchLossyGuardStore[M]) CompareReleasedAndSwap(ctx context.Context, name string, expected lease.Revision, was store.Released, next lease.Record[M]) (lease.Record[M], lease.Revision, error) {
	return w.guarded(ctx, name, expected, was, next)
}

// lossyStore adds store.Lossy.
type lossyStore[M any] struct {
	*faultStore[M]
	may bool
}

// MayLoseRecords reports what the shared store reports, or true when the
// run injects data loss.
func (w lossyStore[M]) MayLoseRecords() bool { return w.may }

// watchLossyStore has both.
type watchLossyStore[M any] struct {
	watchStore[M]
	may bool
}

// MayLoseRecords reports what the shared store reports, or true when the
// run injects data loss.
func (w watchLossyStore[M]) MayLoseRecords() bool { return w.may }

// wrap returns the store an incarnation sees, with the capabilities of
// the shared store; with pipelined, its calls go out in batches; with
// lying, it says (store.Immediate) that they never wait.
func (h *harness[M]) wrap(inc *incarnation[M], pipelined, lying bool) store.Store[M] {
	fs := &faultStore[M]{h: h, inc: inc, lying: lying, rng: rand.New(rand.NewPCG(inc.seed, inc.seed^0x5851f42d4c957f2d))}
	if pipelined {
		// Each batch waits a nanosecond of the run's time first (in a
		// bubble: until every goroutine is blocked), then takes the calls
		// made before it woke, whatever the order they ran in. Once the
		// run has ended the wait returns at once, without time moving, so
		// a batch then takes every call waiting (a release held until a
		// body returned, say), or it would take none and spin.
		settled := func() time.Time {
			if h.ctx.Err() != nil {
				return time.Unix(1<<62, 0)
			}
			return time.Now()
		}
		fs.pipe = batch.New(1, fs.runPipe).Settle(settled, func() { h.tb.sleep(h.ctx, 1) })
	}
	watcher, canWatch := h.inner.(store.Watcher[M])
	lossy, hasLossy := h.inner.(store.Lossy)
	may := hasLossy && lossy.MayLoseRecords() || h.lossInjected
	hasLossy = hasLossy || h.lossInjected
	// The guard only serves a watch: without one, no release is heard.
	guards := store.ReleaseGuardOf(h.inner) != nil
	switch {
	case canWatch && hasLossy && guards:
		return watchLossyGuardStore[M]{watchLossyStore[M]{watchStore: watchStore[M]{fs, watcher}, may: may}}
	case canWatch && hasLossy:
		return watchLossyStore[M]{watchStore: watchStore[M]{fs, watcher}, may: may}
	case canWatch && guards:
		return watchGuardStore[M]{watchStore[M]{fs, watcher}}
	case canWatch:
		return watchStore[M]{fs, watcher}
	case hasLossy:
		return lossyStore[M]{fs, may}
	}
	return fs
}
