package watchutil_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/watchutil"
)

// A watcher that does not receive never blocks Publish; when it receives
// again it gets the newest state, never an older one.
func TestHubSlowWatcherGetsNewest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := watchutil.NewHub(func(_ string, v int) int { return v })
		ctx, cancel := context.WithCancel(context.Background())
		ch, err := h.Watch(ctx, "job", 0)
		if err != nil {
			t.Fatal(err)
		}
		other, err := h.Watch(ctx, "other", -1)
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
		h := watchutil.NewHub(func(name string, v string) event { return event{map[string]string{name: v}} })
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		a, _ := h.Watch(ctx, "job", "x")
		b, _ := h.Watch(ctx, "job", "x")
		ea, eb := <-a, <-b
		ea.m["job"] = "changed"
		if eb.m["job"] != "x" {
			t.Fatal("two watchers share one event's map")
		}
	})
}

func TestNilArguments(t *testing.T) {
	var nilHub *watchutil.Hub[int, int]
	if _, err := nilHub.Watch(context.Background(), "job", 0); !errors.Is(err, store.ErrNilArgument) {
		t.Fatalf("nil Hub: %v", err)
	}
	if _, err := (&watchutil.Hub[int, int]{}).Watch(context.Background(), "job", 0); !errors.Is(err, store.ErrNilArgument) {
		t.Fatalf("zero Hub: %v", err)
	}
	h := watchutil.NewHub(func(_ string, v int) int { return v })
	//lint:ignore SA1012 the nil context is the point
	if _, err := h.Watch(nil, "job", 0); !errors.Is(err, store.ErrNilArgument) {
		t.Fatalf("nil ctx: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := h.Watch(ctx, "job", 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("ended ctx: %v", err)
	}
	nilHub.Publish("job", 1)
	_ = nilHub.Watchers("job")
	var nilBox *watchutil.Box[int]
	nilBox.Offer(1)
	(&watchutil.Box[int]{}).Offer(1)
	watchutil.Serve(context.Background(), nilBox, make(chan int), func(v int) int { return v })
	watchutil.Serve[int, int](context.Background(), watchutil.NewBox[int](), nil, func(v int) int { return v })
}
