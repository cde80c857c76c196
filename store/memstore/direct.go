package memstore

import (
	"context"

	"github.com/tenure-go/tenure/store"
)

// funcWatch is a watch that needs no goroutine: Offer, called under
// Store.mu by the writer (and by subscribe for the current state), turns
// the new state into an event and calls fn with it, so calls never
// overlap. When the watch's context ends, it is forgotten and fn called
// with false, under Store.mu too: after that call, nothing offers to it.
type funcWatch[M any] struct {
	s    *Store[M]
	name string
	fn   func(ev store.Event[M], ok bool)
}

// watchFunc starts a watch that calls fn, the current state first, before
// it returns. ctx and name have been checked.
func (s *Store[M]) watchFunc(ctx context.Context, name string, fn func(ev store.Event[M], ok bool)) {
	w := &funcWatch[M]{s: s, name: name, fn: fn}
	s.subscribe(name, w)
	context.AfterFunc(ctx, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.unwatchLocked(name, w)
		fn(store.Event[M]{}, false)
	})
}

// Offer calls fn with the event of e. Store.mu is held.
func (w *funcWatch[M]) Offer(e *entry) { w.fn(w.s.event(w.name, e), true) }

// watchDirect starts a watch whose channel is fed without a goroutine:
// used when M is copied by value, so that turning a state into an event is
// a copy (no decoding) and may be done by the writer, under Store.mu. Its
// channel has room for one event: each event replaces the one still
// waiting there, if any, so that a receiver that falls behind gets the
// newest state and never an older one after a newer one. Only the writer
// (under Store.mu) sends and only the receiver receives besides, so the
// send after emptying the channel never blocks. The channel is closed
// under Store.mu when the watch's context ends, after the watch was
// forgotten, as with the watchers served by a goroutine.
func (s *Store[M]) watchDirect(ctx context.Context, name string) <-chan store.Event[M] {
	ch := make(chan store.Event[M], 1)
	s.watchFunc(ctx, name, func(ev store.Event[M], ok bool) {
		if !ok {
			close(ch)
			return
		}
		select {
		case <-ch: // stale: the receiver has not taken it yet
		default:
		}
		ch <- ev
	})
	return ch
}
