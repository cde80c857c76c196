package testcluster

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tenure-go/tenure/store"
)

// WatchChan watches name on st as a channel: with st's Watch, or (viaFunc)
// with its WatchFunc, whose calls are then queued on the channel returned
// and the call with false closes it, so that one test checks both. The
// callback never waits: it queues up to 1024 events, and t fails, when the
// test ends, if more were due or if calls overlapped or came after the
// call with false. st must implement store.FuncWatcher when viaFunc is set.
func WatchChan[M any](t testing.TB, ctx context.Context, st store.Watcher[M], name string, viaFunc bool) (<-chan store.Event[M], error) {
	t.Helper()
	if !viaFunc {
		return st.Watch(ctx, name)
	}
	fw, ok := st.(store.FuncWatcher[M])
	if !ok {
		t.Fatalf("%T does not implement store.FuncWatcher", st)
	}
	q := &funcQueue[M]{out: make(chan store.Event[M], 1024)}
	if err := fw.WatchFunc(ctx, name, q.call); err != nil {
		return nil, err
	}
	t.Cleanup(func() {
		q.mu.Lock()
		defer q.mu.Unlock()
		if q.problem != "" {
			t.Errorf("WatchFunc(%q): %s", name, q.problem)
		}
	})
	return q.out, nil
}

// funcQueue is the callback of WatchChan.
type funcQueue[M any] struct {
	out     chan store.Event[M]
	running atomic.Int32 // calls running

	mu      sync.Mutex
	ended   bool
	problem string // the first breach of the callback's contract
}

func (q *funcQueue[M]) call(ev store.Event[M], ok bool) {
	overlap := q.running.Add(1) != 1
	defer q.running.Add(-1)
	q.mu.Lock()
	defer q.mu.Unlock()
	if overlap {
		q.note("calls overlap")
	}
	switch {
	case q.ended:
		q.note("called after the call with false")
	case !ok:
		q.ended = true
		close(q.out)
	default:
		select {
		case q.out <- ev:
		default:
			q.note("more than 1024 events not yet read by the test")
		}
	}
}

// note records p unless a problem was noted before. q.mu is held.
func (q *funcQueue[M]) note(p string) {
	if q.problem == "" {
		q.problem = p
	}
}
