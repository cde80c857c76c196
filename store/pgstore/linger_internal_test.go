package pgstore

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenure-go/tenure/lease"
)

// listeners returns the server's sessions that LISTEN on st's channel, by
// process id.
func listeners(ctx context.Context, t *testing.T, st *Store[string]) []int32 {
	t.Helper()
	rows, err := st.pool.Query(ctx, `SELECT pid FROM pg_stat_activity
		WHERE query LIKE 'LISTEN %' AND pid <> pg_backend_pid() AND query LIKE '%' || $1 || '%' ORDER BY pid`, st.Channel())
	if err != nil {
		t.Fatal(err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		t.Fatal(err)
	}
	return pids
}

// TestListenerOutlivesItsLastWatcher checks that the listening session
// stays after the last watcher of its Store left (so that it does not end
// while a successor takes over: see defaultListenLinger), that a watcher
// that comes meanwhile gets its notifications over that same session, and
// that the session ends once the linger runs out with nobody watching.
func TestListenerOutlivesItsLastWatcher(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	st := internalStore(t, func(*pgxpool.Config) {})
	// Long enough for the second watcher to come within it on a busy
	// machine.
	st.setLinger(3 * time.Second)

	first, stop := context.WithCancel(ctx)
	w, err := st.Watch(first, "job")
	if err != nil {
		t.Fatal(err)
	}
	<-w // the current state
	before := listeners(ctx, t, st)
	if len(before) != 1 {
		t.Fatalf("listening sessions while watched: %v, want one", before)
	}
	stop()
	for range w {
	}

	second, stop := context.WithCancel(ctx)
	w, err = st.Watch(second, "job")
	if err != nil {
		t.Fatal(err)
	}
	<-w
	if after := listeners(ctx, t, st); !slices.Equal(after, before) {
		t.Fatalf("listening sessions after a watcher came within the linger: %v, want the same as before, %v", after, before)
	}
	_, rev, err := st.CompareAndSwap(ctx, "job", 0, lease.Record[string]{Holder: "a", Token: 1, LeaseDuration: time.Second, Metadata: "m"})
	if err != nil {
		t.Fatal(err)
	}
	seen := false
	for ev := range w {
		if ev.Revision == rev {
			seen = true
			break
		}
	}
	if !seen {
		t.Fatalf("no event of revision %d over the session kept", rev)
	}

	// Nobody watches, and the linger runs out: the session ends, on the
	// server's word.
	stop()
	for range w {
	}
	for {
		var n int
		if err := st.pool.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", before[0]).Scan(&n); err != nil {
			t.Fatalf("the listening session did not end once the linger ran out: %v", err)
		}
		if n == 0 {
			return
		}
		// pg_stat_activity is refreshed per transaction: poll it.
		if _, err := st.pool.Exec(ctx, "SELECT pg_sleep(0.02)"); err != nil {
			t.Fatalf("the listening session did not end once the linger ran out: %v", err)
		}
	}
}
