package watchutil

import (
	"context"
	"sync"
)

// Box holds the newest value offered and not yet sent. A value offered
// while another waits replaces it. It is safe for concurrent use. Make it
// with NewBox.
type Box[T any] struct {
	ready chan struct{} // capacity 1: a value was offered

	mu   sync.Mutex
	v    T
	full bool
}

// NewBox returns an empty Box.
func NewBox[T any]() *Box[T] { return &Box[T]{ready: make(chan struct{}, 1)} }

// Offer makes v the value sent next, replacing one not yet sent. It never
// blocks. Offer on a nil Box, or one not made by NewBox, does nothing.
func (b *Box[T]) Offer(v T) {
	if b == nil || b.ready == nil {
		return
	}
	b.mu.Lock()
	b.v, b.full = v, true
	b.mu.Unlock()
	select {
	case b.ready <- struct{}{}:
	default: // a wake-up is already waiting; it will find v
	}
}

// take returns the value offered since the last take, if any.
func (b *Box[T]) take() (T, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	v, ok := b.v, b.full
	var zero T
	b.v, b.full = zero, false
	return v, ok
}

// Serve sends every value taken from b, turned into an E by conv at the
// moment it is taken, on out until ctx ends. While the receiver is not
// ready, a newer value replaces the one waiting to be sent. Closing out is
// the caller's, after whatever cleanup must come first. With a nil
// argument (or a Box not made by NewBox) Serve returns at once.
func Serve[T, E any](ctx context.Context, b *Box[T], out chan<- E, conv func(T) E) {
	if ctx == nil || b == nil || b.ready == nil || out == nil || conv == nil {
		return
	}
	var (
		ev   E
		send chan<- E // nil while there is nothing to send
	)
	for {
		select {
		case <-ctx.Done():
			return
		case <-b.ready:
			if v, ok := b.take(); ok {
				ev, send = conv(v), out
			}
		case send <- ev:
			send = nil
		}
	}
}
