package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/store"
)

// pipeSizes is a go-redis hook that records the size of every pipeline.
type pipeSizes struct {
	mu    sync.Mutex
	sizes []int
}

func (h *pipeSizes) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *pipeSizes) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *pipeSizes) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.mu.Lock()
		h.sizes = append(h.sizes, len(cmds))
		h.mu.Unlock()
		return next(ctx, cmds)
	}
}

// Calls made at once go out in shared pipelines, and each stands alone:
// creates of distinct names all succeed, of 40 racers on one name exactly
// one wins and the others get ErrConflict with the winner's record, a
// read of a key that holds no hash fails alone, and reads see what the
// calls before them wrote.
func TestPipelinedCallsStandAlone(t *testing.T) {
	srv := testcluster.PackageRedis(t)
	st, c := newStore(t, srv)
	hook := &pipeSizes{}
	c.AddHook(hook)
	ctx := t.Context()
	spoilt := mustKey(t, st, "spoilt")
	if err := c.Set(ctx, spoilt, "a string", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for round := range 5 {
		race := fmt.Sprintf("race-%d", round)
		var wg sync.WaitGroup
		var wins atomic.Int32
		var winner sync.Map
		start := make(chan struct{})
		for i := range 40 {
			wg.Go(func() {
				<-start
				r := rec(fmt.Sprintf("racer-%d", i), 1)
				got, rev, err := st.CompareAndSwap(ctx, race, 0, r)
				switch {
				case err == nil:
					wins.Add(1)
					winner.Store(rev, got.Holder)
				case errors.Is(err, store.ErrConflict):
					if rev == 0 || got.Holder == "" {
						t.Errorf("racer %d: conflict without the winner's record (%q at %d)", i, got.Holder, rev)
					}
				default:
					t.Errorf("racer %d: %v", i, err)
				}
			})
			wg.Go(func() {
				<-start
				name := fmt.Sprintf("own-%d-%d", round, i)
				_, rev, err := st.CompareAndSwap(ctx, name, 0, rec("solo", 1))
				if err != nil {
					t.Errorf("create of %s: %v", name, err)
					return
				}
				got, grev, err := st.Get(ctx, name)
				if err != nil || grev != rev || got.Holder != "solo" {
					t.Errorf("Get(%s) after its create: %q at %d, %v; want solo at %d", name, got.Holder, grev, err, rev)
				}
			})
			if i%10 == 0 {
				wg.Go(func() {
					<-start
					if _, _, err := st.Get(ctx, "spoilt"); !errors.Is(err, store.ErrCorruptRecord) {
						t.Errorf("Get of a key that holds a string: %v, want ErrCorruptRecord", err)
					}
				})
			}
		}
		close(start)
		wg.Wait()
		if n := wins.Load(); n != 1 {
			t.Fatalf("round %d: %d racers won, want 1", round, n)
		}
	}
	hook.mu.Lock()
	defer hook.mu.Unlock()
	most := 0
	for _, n := range hook.sizes {
		most = max(most, n)
	}
	if most < 2 {
		t.Fatalf("pipelines of at most %d commands in %d pipelines: the calls were not batched", most, len(hook.sizes))
	}
	t.Logf("%d pipelines, the largest of %d commands", len(hook.sizes), most)
}
