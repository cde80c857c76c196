package watchutil

import (
	"context"
	"fmt"
	"sync"

	"github.com/tenure-go/tenure/store"
)

// Hub fans the states of named records out to watchers. T is the state a
// store keeps (its stored record, encoded, say, or nil for none); E is what
// a watcher receives (a store.Event). Its methods are safe for concurrent
// use. Make it with NewHub.
//
// For a watcher to miss no change, the store calls Watch (or WatchFunc)
// with the current state, and Publish with each new one, under the lock
// that orders its writes: the Hub's own lock is taken inside it, never the
// other way round.
type Hub[T, E any] struct {
	conv func(name string, v T) E

	mu   sync.Mutex
	subs map[string]map[offerer[T]]struct{}
}

// offerer is one watcher of a Hub: a Box served by a goroutine (Watch), or
// a funcSub (WatchFunc). Offer is called under Hub.mu and never blocks.
type offerer[T any] interface{ Offer(v T) }

// funcSub is a watcher of WatchFunc: it calls fn itself, under Hub.mu.
type funcSub[T, E any] struct {
	h    *Hub[T, E]
	name string
	fn   func(ev E, ok bool)
}

// Offer calls fn with the event of v. Hub.mu is held.
func (f *funcSub[T, E]) Offer(v T) { f.fn(f.h.conv(f.name, v), true) }

// NewHub returns a Hub that turns a state of name into what a watcher
// receives with conv. conv is called once for each value a watcher
// receives, so each receiver gets its own E (decode there, and receivers
// share no maps or slices): on the watcher's goroutine for Watch, and in
// Publish (under the Hub's lock) for WatchFunc. It must not block.
func NewHub[T, E any](conv func(name string, v T) E) *Hub[T, E] {
	return &Hub[T, E]{conv: conv, subs: map[string]map[offerer[T]]struct{}{}}
}

// Watch returns a channel that delivers current first, then each state
// that Publish offers for name, skipping to the newest when the receiver
// falls behind. The channel is closed when ctx ends, and the watcher
// forgotten; until then a goroutine serves it. Watch returns an error
// wrapping store.ErrNilArgument for a nil ctx, a nil Hub or one not made
// by NewHub, and ctx's error when it has ended.
func (h *Hub[T, E]) Watch(ctx context.Context, name string, current T) (<-chan E, error) {
	switch {
	case ctx == nil:
		return nil, fmt.Errorf("%w: watchutil: Watch: ctx is nil", store.ErrNilArgument)
	case h == nil || h.subs == nil || h.conv == nil:
		return nil, fmt.Errorf("%w: watchutil: Watch: the Hub is nil or not made by NewHub", store.ErrNilArgument)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b := NewBox[T]()
	b.Offer(current)
	h.mu.Lock()
	h.addLocked(name, b)
	h.mu.Unlock()
	out := make(chan E)
	go func() {
		defer close(out) // after the watcher is forgotten
		defer h.forget(name, b)
		Serve(ctx, b, out, func(v T) E { return h.conv(name, v) })
	}()
	return out, nil
}

// WatchFunc delivers what Watch would send, by calling fn instead of
// sending on a channel, with no goroutine: fn(conv(name, current), true)
// before WatchFunc returns, then fn(conv(name, v), true) for each state v
// that Publish offers for name, called by Publish itself. When ctx ends,
// the watcher is forgotten and fn(zero, false) called once, after any call
// with true and before none. All calls are made under the Hub's lock, so
// they never overlap; fn must return quickly, and must not call the Hub
// (nor the store, whose lock Publish is called under). The store calls
// WatchFunc, as Watch, under the lock that orders its writes. WatchFunc
// returns an error wrapping store.ErrNilArgument for a nil ctx or fn, a nil
// Hub or one not made by NewHub, and ctx's error when it has ended; fn is
// then never called.
func (h *Hub[T, E]) WatchFunc(ctx context.Context, name string, current T, fn func(ev E, ok bool)) error {
	switch {
	case ctx == nil:
		return fmt.Errorf("%w: watchutil: WatchFunc: ctx is nil", store.ErrNilArgument)
	case h == nil || h.subs == nil || h.conv == nil:
		return fmt.Errorf("%w: watchutil: WatchFunc: the Hub is nil or not made by NewHub", store.ErrNilArgument)
	case fn == nil:
		return fmt.Errorf("%w: watchutil: WatchFunc: fn is nil", store.ErrNilArgument)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	f := &funcSub[T, E]{h: h, name: name, fn: fn}
	h.mu.Lock()
	h.addLocked(name, f)
	f.Offer(current)
	h.mu.Unlock()
	context.AfterFunc(ctx, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.forgetLocked(name, f)
		var zero E
		fn(zero, false)
	})
	return nil
}

// addLocked adds o to the watchers of name. h.mu is held.
func (h *Hub[T, E]) addLocked(name string, o offerer[T]) {
	subs := h.subs[name]
	if subs == nil {
		subs = map[offerer[T]]struct{}{}
		h.subs[name] = subs
	}
	subs[o] = struct{}{}
}

// Publish offers v, the new state of name, to every watcher of name. It
// never blocks (unless a WatchFunc callback does). Publish on a nil Hub does nothing.
func (h *Hub[T, E]) Publish(name string, v T) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for b := range h.subs[name] {
		b.Offer(v)
	}
}

// Watchers returns how many watchers name has now.
func (h *Hub[T, E]) Watchers(name string) int {
	if h == nil {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs[name])
}

func (h *Hub[T, E]) forget(name string, o offerer[T]) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.forgetLocked(name, o)
}

// forgetLocked forgets the watcher o of name. h.mu is held.
func (h *Hub[T, E]) forgetLocked(name string, o offerer[T]) {
	delete(h.subs[name], o)
	if len(h.subs[name]) == 0 {
		delete(h.subs, name)
	}
}
