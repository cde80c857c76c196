package rt

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

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
// It implements store.Store only: the variants below add store.Watcher
// and store.Lossy exactly when the shared store has them (or, for Lossy,
// when the run injects data loss), so that the elector sees the
// capabilities the user's store really has.
type faultStore[M any] struct {
	h   *harness[M]
	inc *incarnation[M]
	mu  sync.Mutex
	rng *rand.Rand // the fates of this incarnation's calls
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

// Get reads through the simulated network.
func (w *faultStore[M]) Get(ctx context.Context, name string) (lease.Record[M], lease.Revision, error) {
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
	return rec, rev, err
}

// CompareAndSwap writes through the simulated network.
func (w *faultStore[M]) CompareAndSwap(ctx context.Context, name string, expected lease.Revision, next lease.Record[M]) (lease.Record[M], lease.Revision, error) {
	var (
		rec lease.Record[M]
		rev lease.Revision
		err error
	)
	if cerr := w.call(ctx, "swap", func(ctx context.Context) {
		rec, rev, err = w.h.swapShared(ctx, w.inc, name, expected, next)
	}); cerr != nil {
		return lease.Record[M]{}, 0, cerr
	}
	return rec, rev, err
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
	count := w.inc.watchCount // under h.mu: a crowded Group's decoys watch too
	w.inc.watchCount++
	h.mu.Unlock()
	out := make(chan store.Event[M])
	rng := rand.New(rand.NewPCG(w.inc.seed^uint64(count), 0x632be59bd9b4e019))
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
// the shared store.
func (h *harness[M]) wrap(inc *incarnation[M]) store.Store[M] {
	fs := &faultStore[M]{h: h, inc: inc, rng: rand.New(rand.NewPCG(inc.seed, inc.seed^0x5851f42d4c957f2d))}
	watcher, canWatch := h.inner.(store.Watcher[M])
	lossy, hasLossy := h.inner.(store.Lossy)
	may := hasLossy && lossy.MayLoseRecords() || h.lossInjected
	hasLossy = hasLossy || h.lossInjected
	switch {
	case canWatch && hasLossy:
		return watchLossyStore[M]{watchStore: watchStore[M]{fs, watcher}, may: may}
	case canWatch:
		return watchStore[M]{fs, watcher}
	case hasLossy:
		return lossyStore[M]{fs, may}
	}
	return fs
}
