package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

// ignore is a WatchFunc callback that does nothing.
func ignore(store.Event[int], bool) {}

// chanWatcher watches by handing out ch (or err), and has no WatchFunc.
type chanWatcher struct {
	bare
	ch    chan store.Event[int]
	err   error
	names []string
}

func (w *chanWatcher) Watch(_ context.Context, name string) (<-chan store.Event[int], error) {
	w.names = append(w.names, name)
	if w.err != nil {
		return nil, w.err
	}
	if w.ch == nil {
		return nil, nil // a broken Watcher: no channel and no error
	}
	return w.ch, nil
}

func (*chanWatcher) WatchCapabilities() store.WatchCapabilities { return store.WatchCapabilities{} }

// funcWatcher has a WatchFunc of its own, and a Watch that must not be
// used by store.WatchFunc.
type funcWatcher struct {
	chanWatcher
	fn  func(store.Event[int], bool)
	err error
}

func (w *funcWatcher) WatchFunc(_ context.Context, name string, fn func(store.Event[int], bool)) error {
	w.names = append(w.names, name)
	if w.err != nil {
		return w.err
	}
	w.fn = fn
	return nil
}

// calls records the calls of a WatchFunc callback; done is closed at the
// call with false.
type calls struct {
	mu     sync.Mutex
	events []store.Event[int]
	ends   int
	late   int // calls after the one with false
	done   chan struct{}
}

func newCalls() *calls { return &calls{done: make(chan struct{})} }

func (c *calls) fn(ev store.Event[int], ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.ends > 0:
		c.late++
	case !ok:
		c.ends++
		close(c.done)
	default:
		c.events = append(c.events, ev)
	}
}

func (c *calls) count() (events, ends, late int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.events), c.ends, c.late
}

// Without a WatchFunc of the store's, WatchFunc forwards the events of
// Watch in order, then calls fn with false once when the channel closes.
func TestWatchFuncFallback(t *testing.T) {
	w := &chanWatcher{ch: make(chan store.Event[int])}
	c := newCalls()
	if err := store.WatchFunc[int](context.Background(), w, "job", c.fn); err != nil {
		t.Fatal(err)
	}
	if len(w.names) != 1 || w.names[0] != "job" {
		t.Fatalf("Watch called for %q, want once for job", w.names)
	}
	sent := []store.Event[int]{
		{Absent: true},
		{Record: lease.Record[int]{Holder: "a", Token: 1, Metadata: 7}, Revision: 3},
		{Revision: 4, Err: store.ErrCorruptRecord},
		{Record: lease.Record[int]{Holder: "b", Token: 2}, Revision: 5},
	}
	for _, ev := range sent {
		w.ch <- ev // unbuffered: each is taken by the forwarding goroutine
	}
	close(w.ch)
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.events) != len(sent) {
		t.Fatalf("fn got %d events, want %d: %+v", len(c.events), len(sent), c.events)
	}
	for i, ev := range c.events {
		if ev.Absent != sent[i].Absent || ev.Revision != sent[i].Revision || ev.Record != sent[i].Record || !errors.Is(ev.Err, sent[i].Err) {
			t.Errorf("event %d = %+v, want %+v", i, ev, sent[i])
		}
	}
	if c.ends != 1 || c.late != 0 {
		t.Errorf("fn called with false %d times and %d times after it, want once and never", c.ends, c.late)
	}
}

// A channel that closes at once gives a watch that only ends.
func TestWatchFuncFallbackClosedAtOnce(t *testing.T) {
	w := &chanWatcher{ch: make(chan store.Event[int])}
	close(w.ch)
	c := newCalls()
	if err := store.WatchFuncVia[int](context.Background(), w, "job", c.fn); err != nil {
		t.Fatal(err)
	}
	<-c.done
	if events, ends, late := c.count(); events != 0 || ends != 1 || late != 0 {
		t.Fatalf("fn got %d events, %d falses, %d calls after; want only one false", events, ends, late)
	}
}

// The errors of the fallback: fn is never called.
func TestWatchFuncFallbackErrors(t *testing.T) {
	ctx := context.Background()
	never := func(store.Event[int], bool) { t.Error("fn called after WatchFunc returned an error") }
	err := store.WatchFunc[int](ctx, bare{}, "job", never)
	if !errors.Is(err, store.ErrWatchUnsupported) || !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("WatchFunc on a store that cannot watch = %v, want ErrWatchUnsupported", err)
	}
	if err := store.WatchFunc[int](ctx, wrapper{bare{}}, "job", never); !errors.Is(err, store.ErrWatchUnsupported) {
		t.Errorf("WatchFunc through a wrapper over a store that cannot watch = %v, want ErrWatchUnsupported", err)
	}
	if err := store.WatchFunc[int](ctx, &chanWatcher{}, "job", never); err == nil {
		t.Error("WatchFunc on a Watch that returns a nil channel and no error = nil, want an error")
	}
	refused := errors.New("refused")
	if err := store.WatchFunc[int](ctx, &chanWatcher{err: refused}, "job", never); !errors.Is(err, refused) {
		t.Errorf("WatchFunc when Watch fails = %v, want Watch's error", err)
	}
}

// A store's own WatchFunc is used, not its Watch, and its error returned.
func TestWatchFuncUsesFuncWatcher(t *testing.T) {
	ctx := context.Background()
	w := &funcWatcher{}
	c := newCalls()
	if err := store.WatchFunc[int](ctx, w, "job", c.fn); err != nil {
		t.Fatal(err)
	}
	if len(w.names) != 1 || w.fn == nil {
		t.Fatalf("WatchFunc of the store called for %q, fn %v", w.names, w.fn != nil)
	}
	w.fn(store.Event[int]{Absent: true}, true)
	w.fn(store.Event[int]{}, false)
	if events, ends, _ := c.count(); events != 1 || ends != 1 {
		t.Fatalf("fn got %d events and %d falses through the store's WatchFunc, want 1 and 1", events, ends)
	}
	refused := errors.New("refused")
	if err := store.WatchFunc[int](ctx, &funcWatcher{err: refused}, "job", ignore); !errors.Is(err, refused) {
		t.Errorf("WatchFunc = %v, want the store's error", err)
	}
	// WatchFuncVia uses Watch even when the store has a WatchFunc: what a
	// wrapper that changes Watch needs.
	v := &funcWatcher{chanWatcher: chanWatcher{ch: make(chan store.Event[int])}}
	close(v.ch)
	c = newCalls()
	if err := store.WatchFuncVia[int](ctx, v, "job", c.fn); err != nil {
		t.Fatal(err)
	}
	<-c.done
	if v.fn != nil {
		t.Error("WatchFuncVia called the store's WatchFunc")
	}
}

// filtering changes Watch (it drops Absent events) and so implements
// WatchFunc with WatchFuncVia on its own Watch, as store.FuncWatcher asks
// of such a wrapper.
type filtering struct{ *funcWatcher }

func (f filtering) Watch(ctx context.Context, name string) (<-chan store.Event[int], error) {
	in, err := f.funcWatcher.Watch(ctx, name)
	if err != nil {
		return nil, err
	}
	out := make(chan store.Event[int])
	go func() {
		defer close(out)
		for ev := range in {
			if !ev.Absent {
				out <- ev
			}
		}
	}()
	return out, nil
}

func (f filtering) WatchFunc(ctx context.Context, name string, fn func(store.Event[int], bool)) error {
	return store.WatchFuncVia[int](ctx, f, name, fn)
}

func TestWatchFuncWrapperThatChangesWatch(t *testing.T) {
	inner := &funcWatcher{chanWatcher: chanWatcher{ch: make(chan store.Event[int], 2)}}
	inner.ch <- store.Event[int]{Absent: true}
	inner.ch <- store.Event[int]{Revision: 2}
	close(inner.ch)
	c := newCalls()
	if err := store.WatchFunc[int](context.Background(), filtering{inner}, "job", c.fn); err != nil {
		t.Fatal(err)
	}
	<-c.done
	if inner.fn != nil {
		t.Fatal("the inner store's WatchFunc was used past the wrapper")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.events) != 1 || c.events[0].Revision != 2 {
		t.Fatalf("fn got %+v, want the wrapper's events (revision 2 only)", c.events)
	}
}
