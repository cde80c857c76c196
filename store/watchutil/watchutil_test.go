package watchutil_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/watchutil"
)

// A watcher that does not receive never blocks Publish; when it receives
// again it gets the newest state, never an older one.
func TestHubSlowWatcherGetsNewest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := watchutil.NewHub[string, int](nil, watchutil.HubOptions{})
		ctx, cancel := context.WithCancel(context.Background())
		ch, err := watchutil.Watch(ctx, h, "job", watchutil.Every(0, same))
		if err != nil {
			t.Fatal(err)
		}
		other, err := watchutil.Watch(ctx, h, "other", watchutil.Every(-1, same))
		if err != nil {
			t.Fatal(err)
		}
		if got := <-ch; got != 0 {
			t.Fatalf("first value %d, want the current state 0", got)
		}
		for i := 1; i <= 1000; i++ {
			h.Publish("job", i) // nobody receives meanwhile
		}
		synctest.Wait()
		if got := <-ch; got != 1000 {
			t.Fatalf("after falling behind got %d, want 1000", got)
		}
		if got := <-other; got != -1 {
			t.Fatalf("the other name got %d", got)
		}
		select {
		case v := <-other:
			t.Fatalf("the other name got %d, published for job", v)
		default:
		}
		if n := h.Watchers("job"); n != 1 {
			t.Fatalf("Watchers = %d", n)
		}
		cancel()
		if _, ok := <-ch; ok {
			t.Fatal("channel not closed after ctx ended")
		}
		<-other
		synctest.Wait()
		if n := h.Watchers("job") + h.Watchers("other"); n != 0 {
			t.Fatalf("%d watchers left after their ctx ended", n)
		}
	})
}

// Each value sent is converted on its own: conv runs once per send.
func TestHubConvertsPerWatcher(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		type event struct{ m map[string]string }
		h := watchutil.NewHub[string, string](nil, watchutil.HubOptions{})
		conv := func(v string) event { return event{map[string]string{"job": v}} }
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		a, _ := watchutil.Watch(ctx, h, "job", watchutil.Every("x", conv))
		b, _ := watchutil.Watch(ctx, h, "job", watchutil.Every("x", conv))
		ea, eb := <-a, <-b
		ea.m["job"] = "changed"
		if eb.m["job"] != "x" {
			t.Fatal("two watchers share one event's map")
		}
	})
}

func TestNilArguments(t *testing.T) {
	var nilHub *watchutil.Hub[string, int]
	w := watchutil.Every(0, same)
	if _, err := watchutil.Watch(context.Background(), nilHub, "job", w); !errors.Is(err, store.ErrNilArgument) {
		t.Fatalf("nil Hub: %v", err)
	}
	if _, err := watchutil.Watch(context.Background(), &watchutil.Hub[string, int]{}, "job", w); !errors.Is(err, store.ErrNilArgument) {
		t.Fatalf("zero Hub: %v", err)
	}
	h := watchutil.NewHub[string, int](nil, watchutil.HubOptions{})
	//lint:ignore SA1012 the nil context is the point
	if _, err := watchutil.Watch(nil, h, "job", w); !errors.Is(err, store.ErrNilArgument) {
		t.Fatalf("nil ctx: %v", err)
	}
	if _, err := watchutil.Watch(context.Background(), h, "job", watchutil.Watcher[int, int, int]{}); !errors.Is(err, store.ErrNilArgument) {
		t.Fatalf("zero Watcher: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := watchutil.Watch(ctx, h, "job", w); !errors.Is(err, context.Canceled) {
		t.Fatalf("ended ctx: %v", err)
	}
	fn := func(int, bool) { t.Error("fn called after WatchFunc returned an error") }
	if err := watchutil.WatchFunc(context.Background(), nilHub, "job", w, fn); !errors.Is(err, store.ErrNilArgument) {
		t.Fatalf("WatchFunc: nil Hub: %v", err)
	}
	//lint:ignore SA1012 the nil context is the point
	if err := watchutil.WatchFunc(nil, h, "job", w, fn); !errors.Is(err, store.ErrNilArgument) {
		t.Fatalf("WatchFunc: nil ctx: %v", err)
	}
	if err := watchutil.WatchFunc(context.Background(), h, "job", w, nil); !errors.Is(err, store.ErrNilArgument) {
		t.Fatalf("WatchFunc: nil fn: %v", err)
	}
	if err := watchutil.WatchFunc(ctx, h, "job", w, fn); !errors.Is(err, context.Canceled) {
		t.Fatalf("WatchFunc: ended ctx: %v", err)
	}
	nilHub.Publish("job", 1)
	_ = nilHub.Watchers("job")
	var nilBox *watchutil.Box[int]
	nilBox.Offer(1)
	(&watchutil.Box[int]{}).Offer(1)
	watchutil.Serve(context.Background(), nilBox, make(chan int), same)
	watchutil.Serve[int, int](context.Background(), watchutil.NewBox[int](), nil, same)
}

// WatchFunc calls fn from WatchFunc (the current state) and from Publish,
// with each state of its name only, then once with false when ctx ends,
// after which it is forgotten and never called again.
func TestHubWatchFunc(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := watchutil.NewHub[string, int](nil, watchutil.HubOptions{})
		named := func(name string, v int) watchutil.Watcher[int, int, string] {
			return watchutil.Every(v, func(v int) string { return fmt.Sprintf("%s=%d", name, v) })
		}
		ctx, cancel := context.WithCancel(context.Background())
		var (
			got   []string
			ends  int
			other []string
		)
		if err := watchutil.WatchFunc(ctx, h, "job", named("job", 0), func(ev string, ok bool) {
			if !ok {
				if ev != "" {
					t.Errorf("the call with false carries %q", ev)
				}
				ends++
				return
			}
			if ends > 0 {
				t.Errorf("called with %q after the call with false", ev)
			}
			got = append(got, ev)
		}); err != nil {
			t.Fatal(err)
		}
		otherCtx, cancelOther := context.WithCancel(context.Background())
		defer cancelOther()
		if err := watchutil.WatchFunc(otherCtx, h, "other", named("other", -1), func(ev string, ok bool) {
			if ok {
				other = append(other, ev)
			}
		}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, []string{"job=0"}) {
			t.Fatalf("before any Publish: %q, want the current state, delivered by WatchFunc", got)
		}
		for i := 1; i <= 3; i++ {
			h.Publish("job", i)
		}
		if !slices.Equal(got, []string{"job=0", "job=1", "job=2", "job=3"}) {
			t.Fatalf("after Publish: %q, want every state, delivered by Publish", got)
		}
		if !slices.Equal(other, []string{"other=-1"}) {
			t.Fatalf("the other name got %q", other)
		}
		if n := h.Watchers("job"); n != 1 {
			t.Fatalf("Watchers = %d", n)
		}
		cancel()
		synctest.Wait()
		if ends != 1 {
			t.Fatalf("called with false %d times after ctx ended, want once", ends)
		}
		if n := h.Watchers("job"); n != 0 {
			t.Fatalf("%d watchers of job left after their ctx ended", n)
		}
		h.Publish("job", 4)
		if len(got) != 4 || ends != 1 {
			t.Fatalf("called after the watch ended: %q, %d falses", got, ends)
		}
	})
}

// A watcher of WatchFunc and one of Watch share a name: each gets every
// state its way.
func TestHubWatchFuncBesideWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := watchutil.NewHub[string, int](nil, watchutil.HubOptions{})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ch, err := watchutil.Watch(ctx, h, "job", watchutil.Every(0, same))
		if err != nil {
			t.Fatal(err)
		}
		var last int
		if err := watchutil.WatchFunc(ctx, h, "job", watchutil.Every(0, same), func(v int, ok bool) {
			if ok {
				last = v
			}
		}); err != nil {
			t.Fatal(err)
		}
		<-ch
		h.Publish("job", 7)
		if got := <-ch; got != 7 || last != 7 {
			t.Fatalf("Watch got %d, WatchFunc %d; want 7 and 7", got, last)
		}
	})
}

// When ctx ends while Publish runs, the call with false comes after
// Publish's call, never amid it nor before it.
func TestHubWatchFuncEndsAfterDelivery(t *testing.T) {
	h := watchutil.NewHub[string, int](nil, watchutil.HubOptions{})
	for range 100 {
		ctx, cancel := context.WithCancel(context.Background())
		var (
			inside atomic.Int32
			ended  atomic.Bool
			done   = make(chan struct{})
			bad    atomic.Value
		)
		if err := watchutil.WatchFunc(ctx, h, "job", watchutil.Every(0, same), func(v int, ok bool) {
			if inside.Add(1) != 1 {
				bad.Store("calls overlap")
			}
			defer inside.Add(-1)
			if ended.Load() {
				bad.Store("a call after the call with false")
			}
			if !ok {
				ended.Store(true)
				close(done)
			}
		}); err != nil {
			t.Fatal(err)
		}
		go cancel()
		for i := range 50 {
			h.Publish("job", i)
		}
		<-done
		h.Publish("job", -1)
		if b := bad.Load(); b != nil {
			t.Fatal(b)
		}
	}
}

func same(v int) int { return v }
