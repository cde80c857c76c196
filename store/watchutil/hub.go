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
// For a watcher to miss no change, the store calls Watch with the current
// state, and Publish with each new one, under the lock that orders its
// writes: the Hub's own lock is taken inside it, never the other way round.
type Hub[T, E any] struct {
	conv func(name string, v T) E

	mu   sync.Mutex
	subs map[string]map[*Box[T]]struct{}
}

// NewHub returns a Hub that turns a state of name into what a watcher
// receives with conv. conv is called on the watcher's goroutine, once for
// each value it sends, so each receiver gets its own E (decode there, and
// receivers share no maps or slices). It must not block.
func NewHub[T, E any](conv func(name string, v T) E) *Hub[T, E] {
	return &Hub[T, E]{conv: conv, subs: map[string]map[*Box[T]]struct{}{}}
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
	subs := h.subs[name]
	if subs == nil {
		subs = map[*Box[T]]struct{}{}
		h.subs[name] = subs
	}
	subs[b] = struct{}{}
	h.mu.Unlock()
	out := make(chan E)
	go func() {
		defer close(out) // after the watcher is forgotten
		defer h.forget(name, b)
		Serve(ctx, b, out, func(v T) E { return h.conv(name, v) })
	}()
	return out, nil
}

// Publish offers v, the new state of name, to every watcher of name. It
// never blocks. Publish on a nil Hub does nothing.
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

func (h *Hub[T, E]) forget(name string, b *Box[T]) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs[name], b)
	if len(h.subs[name]) == 0 {
		delete(h.subs, name)
	}
}
