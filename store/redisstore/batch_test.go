package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/store"
)

// scriptUsec returns the time the server spent in script calls (EVAL and
// EVALSHA), in microseconds.
func scriptUsec(t testing.TB, c *redis.Client) int64 {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, m := range regexp.MustCompile(`cmdstat_eval(?:sha)?:calls=\d+,usec=(\d+)`).FindAllStringSubmatch(info, -1) {
		k, _ := strconv.ParseInt(m[1], 10, 64)
		n += k
	}
	return n
}

// scriptCalls returns how many script calls (EVAL and EVALSHA) the server
// has run.
func scriptCalls(t *testing.T, c *redis.Client) int {
	t.Helper()
	info, err := c.Info(t.Context(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range regexp.MustCompile(`cmdstat_eval(?:sha)?:calls=(\d+)`).FindAllStringSubmatch(info, -1) {
		k, _ := strconv.Atoi(m[1])
		n += k
	}
	return n
}

// A batch of renewals is one script call on the server; a name whose key
// holds something other than a record is refused as corrupt alone, and
// the renewals beside it are written.
func TestBatchIsOneScriptCallAndEachSwapStandsAlone(t *testing.T) {
	srv := testcluster.PackageRedis(t)
	st, c := newStore(t, srv)
	admin := srv.Client(t)
	ctx := t.Context()
	var swaps []store.Swap[meta]
	for i := range 10 {
		name := fmt.Sprint("job-", i)
		got, rev := mustSwap(t, st, name, 0, rec("a", 1))
		swaps = append(swaps, store.Swap[meta]{Name: name, Expected: rev, Next: got})
	}
	key, err := st.Key("job-4")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, key, "not a hash", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// The first call loads the script (NOSCRIPT, then EVAL).
	warm := mustSwapBatch(t, st, swaps[9:])
	swaps[9].Expected, swaps[9].Next = warm.Revision, warm.Record
	before := scriptCalls(t, admin)
	res := st.CompareAndSwapBatch(ctx, swaps)
	if calls := scriptCalls(t, admin) - before; calls != 1 {
		t.Errorf("a batch of 10 swaps ran %d scripts, want 1", calls)
	}
	for i, r := range res {
		if i == 4 {
			if !errors.Is(r.Err, store.ErrCorruptRecord) {
				t.Errorf("swap over a string: %v, want ErrCorruptRecord", r.Err)
			}
			continue
		}
		if r.Err != nil || r.Revision <= swaps[i].Expected {
			t.Errorf("swap %d: revision %d, %v; want written", i, r.Revision, r.Err)
			continue
		}
		got, rev, err := st.Get(ctx, swaps[i].Name)
		if err != nil || rev != r.Revision || got.Token != r.Record.Token {
			t.Errorf("swap %d: stored %+v at %d (%v), the batch said %+v at %d", i, got, rev, err, r.Record, r.Revision)
		}
	}
}

// mustSwapBatch runs a batch of one swap, which must succeed.
func mustSwapBatch(t *testing.T, st interface {
	CompareAndSwapBatch(ctx context.Context, swaps []store.Swap[meta]) []store.SwapResult[meta]
}, swaps []store.Swap[meta]) store.SwapResult[meta] {
	t.Helper()
	r := st.CompareAndSwapBatch(t.Context(), swaps)
	if len(r) != 1 || r[0].Err != nil {
		t.Fatalf("CompareAndSwapBatch: %+v", r)
	}
	return r[0]
}

// BenchmarkRenewals renews 64 names per op, in one batch or one swap each
// (sent together, as a Group's pool sends them): ns/op is per 64 renewals;
// client-cpu-µs/renewal is the client process's CPU per renewal (where
// the system reports it: cpuTime).
func BenchmarkRenewals(b *testing.B) {
	for _, batched := range []bool{true, false} {
		b.Run(fmt.Sprintf("batched=%v", batched), func(b *testing.B) {
			st, _ := newStore(b, testcluster.PackageRedis(b))
			ctx := context.Background()
			swaps := make([]store.Swap[meta], 64)
			for i := range swaps {
				name := fmt.Sprint("job-", i)
				got, rev, err := st.CompareAndSwap(ctx, name, 0, rec("a", 1))
				if err != nil {
					b.Fatal(err)
				}
				swaps[i] = store.Swap[meta]{Name: name, Expected: rev, Next: got}
			}
			admin := testcluster.PackageRedis(b).Client(b)
			usec0 := scriptUsec(b, admin)
			cpu0, cpuOK := cpuTime()
			for b.Loop() {
				var res []store.SwapResult[meta]
				if batched {
					res = st.CompareAndSwapBatch(ctx, swaps)
				} else {
					res = make([]store.SwapResult[meta], len(swaps))
					var wg sync.WaitGroup
					for i, sw := range swaps {
						wg.Go(func() {
							res[i].Record, res[i].Revision, res[i].Err = st.CompareAndSwap(ctx, sw.Name, sw.Expected, sw.Next)
						})
					}
					wg.Wait()
				}
				for i, r := range res {
					if r.Err != nil {
						b.Fatal(r.Err)
					}
					swaps[i].Expected, swaps[i].Next = r.Revision, r.Record
				}
			}
			if cpu1, ok := cpuTime(); ok && cpuOK {
				b.ReportMetric(float64((cpu1-cpu0).Microseconds())/float64(b.N*len(swaps)), "client-cpu-µs/renewal")
			}
			b.ReportMetric(float64(scriptUsec(b, admin)-usec0)/float64(b.N*len(swaps)), "server-µs/renewal")
		})
	}
}
