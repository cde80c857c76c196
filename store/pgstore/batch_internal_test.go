package pgstore

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tenure-go/tenure/internal/batch"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

// countedStore returns a Store whose statements are counted by name;
// a batch statement fails with deadlock when failBatch is set.
func countedStore(t *testing.T, failBatch bool) (*Store[string], func() map[string]int) {
	t.Helper()
	st := pipeStore(t, pgx.QueryExecModeCacheStatement)
	var mu sync.Mutex
	counts := map[string]int{}
	st.pipe = newPipe(func(ctx context.Context, calls []pgCall) []batch.Answer[pgAnswer] {
		mu.Lock()
		for _, c := range calls {
			counts[c.name]++
		}
		mu.Unlock()
		if failBatch && len(calls) == 1 && calls[0].name == st.nameBatch {
			return []batch.Answer[pgAnswer]{{Err: &pgconn.PgError{Code: "40P01", Message: "deadlock detected"}}}
		}
		return st.runPipe(ctx, calls)
	})
	return st, func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		c := counts
		counts = map[string]int{}
		return c
	}
}

// renewals creates n names and returns a renewal of each.
func renewals(t *testing.T, st *Store[string], n int) []store.Swap[string] {
	t.Helper()
	var swaps []store.Swap[string]
	for i := range n {
		name := fmt.Sprint("job-", i)
		now := time.Now()
		got, rev, err := st.CompareAndSwap(t.Context(), name, 0, lease.Record[string]{Holder: "a", AcquiredAt: now, RenewedAt: now, LeaseDuration: time.Second, Metadata: name})
		if err != nil {
			t.Fatal(err)
		}
		got.RenewedAt = time.Now()
		swaps = append(swaps, store.Swap[string]{Name: name, Expected: rev, Next: got})
	}
	return swaps
}

// checkRenewed checks that each swap of swaps was written as res says.
func checkRenewed(t *testing.T, st *Store[string], swaps []store.Swap[string], res []store.SwapResult[string]) {
	t.Helper()
	for i, r := range res {
		if r.Err != nil || r.Revision <= swaps[i].Expected || r.Record.Metadata != swaps[i].Name {
			t.Fatalf("swap %d: %+v at %d, %v: want its renewal written", i, r.Record, r.Revision, r.Err)
		}
		got, rev, err := st.Get(t.Context(), swaps[i].Name)
		if err != nil || rev != r.Revision || got.Metadata != swaps[i].Name {
			t.Fatalf("swap %d: stored %+v at %d (%v), the batch said revision %d", i, got, rev, err, r.Revision)
		}
	}
}

// A batch of renewals is one statement.
func TestBatchIsOneStatement(t *testing.T) {
	st, counts := countedStore(t, false)
	swaps := renewals(t, st, 10)
	counts()
	res := st.CompareAndSwapBatch(t.Context(), swaps)
	if c := counts(); len(c) != 1 || c[st.nameBatch] != 1 {
		t.Errorf("statements sent for a batch of 10 renewals: %v, want the batch statement once", c)
	}
	checkRenewed(t, st, swaps, res)
}

// A batch statement the server refuses as a whole (a deadlock with
// another process's batch) was rolled back: each swap is then sent alone,
// and none fails for the others' sake.
func TestBatchRefusedAsAWholeGoesOutOneSwapEach(t *testing.T) {
	st, counts := countedStore(t, true)
	swaps := renewals(t, st, 5)
	counts()
	res := st.CompareAndSwapBatch(t.Context(), swaps)
	if c := counts(); c[st.nameBatch] != 1 || c[st.nameUpdate] != 5 {
		t.Errorf("statements sent: %v, want the batch once, then 5 swaps alone", c)
	}
	checkRenewed(t, st, swaps, res)
}
