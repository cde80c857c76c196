package pgstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/lease"
)

// TestWatchAcrossIdlePings lets the listening connection sit idle through
// several keep-alive pings, then checks that notifications still arrive.
func TestWatchAcrossIdlePings(t *testing.T) {
	pg := testcluster.PackagePostgres(t)

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	pool, err := pgxpool.New(ctx, pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	st, err := New[string](pool, WithTable("idle_pings"))
	if err != nil {
		t.Fatal(err)
	}
	st.listenIdle = 50 * time.Millisecond
	name := fmt.Sprint("job-", time.Now().UnixNano())
	w, err := st.Watch(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	<-w // the current state
	// Wait, on the server's word, until the listener has pinged a few
	// times: each ping is a query on its session.
	var pings int
	for pings < 3 {
		var n int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE query = '-- ping' AND pid <> pg_backend_pid()`).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			pings++
		}
		if _, err := pool.Exec(ctx, "SELECT pg_sleep(0.06)"); err != nil {
			t.Fatal(err)
		}
	}
	r := lease.Record[string]{LeaseDuration: time.Second, Holder: "a", Token: 1, Metadata: "m"}
	_, rev, err := st.CompareAndSwap(ctx, name, 0, r)
	if err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case ev := <-w:
			if ev.Revision == rev {
				return
			}
		case <-ctx.Done():
			t.Fatal("no event after the idle pings")
		}
	}
}
