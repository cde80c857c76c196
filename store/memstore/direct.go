package memstore

import (
	"context"

	"github.com/tenure-go/tenure/store"
)

// direct is a watcher that needs no goroutine: used when M is copied by
// value, so that turning a state into an event is a copy (no decoding) and
// may be done by the writer, under Store.mu. Its channel has room for one
// event: Offer puts the new state's event there, first taking out the
// event still waiting, if any, so that a receiver that falls behind gets
// the newest state and never an older one after a newer one. Only Offer
// (under Store.mu) sends and only the receiver receives besides, so the
// send after emptying the channel never blocks. The channel is closed
// under Store.mu when the watch's context ends, after which nothing is
// offered to it.
type direct[M any] struct {
	s    *Store[M]
	name string
	ch   chan store.Event[M]
}

// watchDirect starts a watch served without a goroutine.
func (s *Store[M]) watchDirect(ctx context.Context, name string) <-chan store.Event[M] {
	w := &direct[M]{s: s, name: name, ch: make(chan store.Event[M], 1)}
	s.subscribe(name, w)
	context.AfterFunc(ctx, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		// Forgotten first, closed second: a closed channel means a
		// forgotten watch, as with the watchers served by a goroutine.
		s.unwatchLocked(name, w)
		close(w.ch)
	})
	return w.ch
}

// Offer replaces the event waiting in the channel, if any, with the event
// of e. Store.mu is held.
func (w *direct[M]) Offer(e *entry) {
	ev := w.s.event(w.name, e)
	select {
	case <-w.ch: // stale: the receiver has not taken it yet
	default:
	}
	w.ch <- ev
}
