package memstore

import (
	"context"

	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/watchutil"
)

// watchFunc starts a watch that calls fn, the current state first, before
// it returns: the writer calls fn as it publishes, under Store.mu, and
// calls never overlap. ctx and name have been checked.
func (s *Store[M]) watchFunc(ctx context.Context, name string, fn func(ev store.Event[M], ok bool)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return watchutil.WatchFunc(ctx, s.hub, name, s.watcher(name), fn)
}

// watchDirect starts a watch whose channel is fed without a goroutine:
// used when M is copied by value, so that turning a state into an event is
// a copy (no decoding) and may be done by the writer, under Store.mu. Its
// channel has room for one event: each event replaces the one still
// waiting there, if any, so that a receiver that falls behind gets the
// newest state and never an older one after a newer one. Only the writer
// (in calls that never overlap) sends and only the receiver receives
// besides, so the send after emptying the channel never blocks. The
// channel is closed by the call with false when the watch's context ends,
// after the watch was forgotten, as with the watchers served by a
// goroutine.
func (s *Store[M]) watchDirect(ctx context.Context, name string) (<-chan store.Event[M], error) {
	ch := make(chan store.Event[M], 1)
	err := s.watchFunc(ctx, name, func(ev store.Event[M], ok bool) {
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
	if err != nil {
		return nil, err
	}
	return ch, nil
}
