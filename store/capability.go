package store

import (
	"context"
	"fmt"

	"github.com/tenure-go/tenure/internal/nilarg"
)

// This file holds the helpers for the optional interfaces a Store may
// implement (Lossy, Watcher). Each answers for any Store:
// the store's own answer when it implements the interface, and a
// conservative one when it does not. Wrappers forward the interfaces with
// them (see "Wrapping a store" in docs/guide.md):
//
//	type Timed[M any] struct{ store.Store[M] }
//
//	func (t Timed[M]) MayLoseRecords() bool { return store.MayLoseRecords(t.Store) }
//	func (t Timed[M]) Watch(ctx context.Context, name string) (<-chan store.Event[M], error) {
//		return store.Watch(ctx, t.Store, name)
//	}

// MayLoseRecords reports whether st may lose records: what st's
// MayLoseRecords method says when st implements Lossy, and true (the
// conservative answer) when it does not or st is nil.
func MayLoseRecords[M any](st Store[M]) bool {
	if l, ok := st.(Lossy); ok && !nilarg.IsNil(l) {
		return l.MayLoseRecords()
	}
	return true
}

// Watch calls st's Watch method when st implements Watcher. Otherwise it
// returns an error wrapping ErrWatchUnsupported (and errors.ErrUnsupported),
// which electors take for "poll instead": they do not watch that store
// again. So a wrapper may forward Watch whether or not its store can watch.
// Watch returns an error wrapping ErrNilArgument for a nil ctx or st.
func Watch[M any](ctx context.Context, st Store[M], name string) (<-chan Event[M], error) {
	switch {
	case ctx == nil:
		return nil, fmt.Errorf("store: Watch %q: %w: ctx is nil", name, ErrNilArgument)
	case nilarg.IsNil(st):
		return nil, fmt.Errorf("store: Watch %q: %w: st is nil", name, ErrNilArgument)
	}
	w, ok := st.(Watcher[M])
	if !ok {
		return nil, fmt.Errorf("store: Watch %q: %w: %T does not implement store.Watcher", name, ErrWatchUnsupported, st)
	}
	return w.Watch(ctx, name)
}
