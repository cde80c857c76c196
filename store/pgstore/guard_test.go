package pgstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/storetest"
)

// A guarded swap told of a release before it committed (a notification
// forged by someone who guessed the revision) runs while the release's
// transaction is open: its UPDATE's snapshot shows the row before the
// release, and its FOR SHARE read waits and returns the released row at
// the expected revision. That is a lost race, answered with a conflict
// showing the row, not a corrupt record.
func TestGuardedSwapRacingTheReleaseCommit(t *testing.T) {
	pool := newPool(t)
	st := newStore(t, pool)
	ctx := testCtx(t)
	held, rev := mustSwap(t, st, "race", 0, rec("a", 1))
	released := rev + 100

	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }() // after the commit below: a no-op
	if _, err := tx.Exec(ctx, "UPDATE "+st.Table()+" SET holder = '', revision = $2 WHERE name = $1", "race", int64(released)); err != nil {
		t.Fatal(err)
	}

	type result struct {
		rec lease.Record[storetest.Meta]
		rev lease.Revision
		err error
	}
	done := make(chan result, 1)
	was := store.Released{Token: held.Token, Transitions: held.Transitions, LeaseDuration: held.LeaseDuration}
	go func() {
		r, v, err := st.CompareReleasedAndSwap(ctx, "race", released, was, rec("b", held.Token+1))
		done <- result{r, v, err}
	}()
	// Wait until the swap waits for the release's row lock.
	for {
		var waiting int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM pg_locks WHERE NOT granted").Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		select {
		case r := <-done:
			t.Fatalf("the swap returned before the release committed: %+v", r)
		case <-time.After(time.Millisecond):
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if !errors.Is(r.err, store.ErrConflict) || r.rev != released || r.rec.Holder != "" || r.rec.Token != held.Token {
		t.Fatalf("CompareReleasedAndSwap racing the release: %+v at %d, %v; want a conflict showing the released row at %d", r.rec, r.rev, r.err, released)
	}
	if got, gotRev, err := st.Get(ctx, "race"); err != nil || gotRev != released || got.Holder != "" {
		t.Fatalf("Get = %+v at %d, %v; want the released row at %d, unchanged", got, gotRev, err, released)
	}
}
