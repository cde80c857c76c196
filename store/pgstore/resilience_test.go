package pgstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store/pgstore"
	"github.com/tenure-go/tenure/store/storetest"
)

// terminate ends, from a connection of its own, every other session of the
// database whose query matches like (all of them when like is "%"), and
// returns how many it ended.
func terminate(t *testing.T, like string) int {
	t.Helper()
	pg := testcluster.PackagePostgres(t)
	ctx := testCtx(t)
	conn, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	err = conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE pid <> pg_backend_pid() AND datname = current_database()
		AND backend_type = 'client backend' AND query LIKE $1`, like).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// listening is the LIKE pattern of st's listening session, whose last query
// is its LISTEN: terminate(t, listening(st)) ends that session alone, and
// not the session of an earlier test's Store that is still closing.
func listening(st *pgstore.Store[storetest.Meta]) string {
	q := "LISTEN " + pgx.Identifier{st.Channel()}.Sanitize()
	return strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`).Replace(q)
}

// renew rewrites the record of name at rev with a new RenewedAt; it must
// succeed at the first call.
func renew(t *testing.T, st *pgstore.Store[storetest.Meta], name string, r lease.Record[storetest.Meta], rev lease.Revision) (lease.Record[storetest.Meta], lease.Revision) {
	t.Helper()
	r.RenewedAt = r.RenewedAt.Add(1)
	return mustSwap(t, st, name, rev, r)
}

// outage runs break (a restart, a crash, terminated sessions) on a store in
// use, with a watcher and a pool full of connections, and checks that the
// next operations succeed at their first call and the watcher goes on.
// It runs once with Watch, once with WatchFunc.
func outage(t *testing.T, breakIt func(t *testing.T)) {
	t.Run("Watch", func(t *testing.T) { outageVia(t, breakIt, false) })
	t.Run("WatchFunc", func(t *testing.T) { outageVia(t, breakIt, true) })
}

func outageVia(t *testing.T, breakIt func(t *testing.T), viaFunc bool) {
	pool := newPool(t, func(c *pgxpool.Config) { c.MaxConns = 4; c.MinConns = 4 })
	st := newStore(t, pool)
	ctx := testCtx(t)
	r, rev := mustSwap(t, st, "job", 0, rec("a", 1))
	w, err := testcluster.WatchChan(t, ctx, st, "job", viaFunc)
	if err != nil {
		t.Fatal(err)
	}
	eventAt(t, w, rev)
	// Fill the pool with connections that the outage will break.
	for range 8 {
		r, rev = renew(t, st, "job", r, rev)
	}
	eventAt(t, w, rev)

	breakIt(t)

	if _, got, err := st.Get(ctx, "job"); err != nil || got != rev {
		t.Fatalf("first Get after the outage: revision %d, %v; want %d", got, err, rev)
	}
	r, rev = renew(t, st, "job", r, rev)
	eventAt(t, w, rev)
	r, rev = renew(t, st, "job", r, rev)
	eventAt(t, w, rev)
	// A new watcher works too.
	w2, err := testcluster.WatchChan(t, ctx, st, "job", viaFunc)
	if err != nil {
		t.Fatal(err)
	}
	eventAt(t, w2, rev)
	_, rev = renew(t, st, "job", r, rev)
	eventAt(t, w, rev)
	eventAt(t, w2, rev)
}

func TestServerRestart(t *testing.T) {
	outage(t, func(t *testing.T) {
		if err := testcluster.PackagePostgres(t).Restart(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestServerCrash(t *testing.T) {
	outage(t, func(t *testing.T) {
		pg := testcluster.PackagePostgres(t)
		if err := pg.Crash(); err != nil {
			t.Fatal(err)
		}
		if err := pg.Start(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestTerminateBackends(t *testing.T) {
	outage(t, func(t *testing.T) {
		if n := terminate(t, "%"); n < 2 {
			t.Fatalf("terminated %d sessions, want the pool's and the listener's", n)
		}
	})
}

// TestWatchRereadsAfterReconnect changes a record without a notification
// (as a hand edit does), then ends the listening session: the watcher must
// read the record again once it has reconnected, and deliver the change.
func TestWatchRereadsAfterReconnect(t *testing.T) {
	t.Run("Watch", func(t *testing.T) { testWatchRereadsAfterReconnect(t, false) })
	t.Run("WatchFunc", func(t *testing.T) { testWatchRereadsAfterReconnect(t, true) })
}

func testWatchRereadsAfterReconnect(t *testing.T, viaFunc bool) {
	pool, st, w, _ := watched(t, viaFunc)
	silent := handEdit(t, pool, st, "job", "holder = 'edited'")
	if n := terminate(t, listening(st)); n != 1 {
		t.Fatalf("terminated %d listening sessions, want 1", n)
	}
	if ev := eventAt(t, w, silent); ev.Record.Holder != "edited" {
		t.Fatalf("after the reconnection: holder %q, want the edit", ev.Record.Holder)
	}
}

// TestWatchSurvivesSlowReceiver checks that a receiver that does not read
// while many writes happen gets the latest revision, never an older one
// after a newer.
func TestWatchSurvivesSlowReceiver(t *testing.T) {
	pool := newPool(t)
	st := newStore(t, pool)
	ctx := testCtx(t)
	w, err := st.Watch(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	r, rev := mustSwap(t, st, "job", 0, rec("a", 1))
	for range 50 {
		r, rev = renew(t, st, "job", r, rev)
	}
	// The receiver was too slow for every state: it may get the latest
	// first, or start from the absence it saw at first.
	eventAt(t, w, rev) // checks that revisions increase on the way
}

// TestWatchStopsListening checks that the listening session ends after the
// last watcher (once defaultListenLinger has passed), so a Store without
// watchers holds no connection.
func TestWatchStopsListening(t *testing.T) {
	t.Run("Watch", func(t *testing.T) { testWatchStopsListening(t, false) })
	t.Run("WatchFunc", func(t *testing.T) { testWatchStopsListening(t, true) })
}

func testWatchStopsListening(t *testing.T, viaFunc bool) {
	pool := newPool(t)
	st := newStore(t, pool)
	ctx, cancel := context.WithCancel(testCtx(t))
	w, err := testcluster.WatchChan(t, ctx, st, "job", viaFunc)
	if err != nil {
		t.Fatal(err)
	}
	nextEvent(t, w)
	cancel()
	for range w {
	}
	// The channel closes before the listener finishes closing its
	// connection; wait for the session to go, on the server's word.
	pg := testcluster.PackagePostgres(t)
	conn, err := pgx.Connect(testCtx(t), pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for {
		var n int
		err := conn.QueryRow(testCtx(t), `SELECT count(*) FROM pg_stat_activity
			WHERE query LIKE 'LISTEN %' AND state <> 'active' AND pid <> pg_backend_pid()
			AND query LIKE '%' || $1 || '%'`, st.Channel()).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		// pg_stat_activity is refreshed per transaction: poll it.
		if _, err := conn.Exec(testCtx(t), "SELECT pg_sleep(0.02)"); err != nil {
			t.Fatal(err)
		}
	}
}

// failedQueries is a pgx tracer that signals each query that fails, in a
// batch too (the first read on a connection runs the swap statement there
// in a batch: see warmSwap).
type failedQueries struct{ failed chan struct{} }

var _ pgx.BatchTracer = (*failedQueries)(nil)

func (f *failedQueries) fail() {
	select {
	case f.failed <- struct{}{}:
	default:
	}
}

func (f *failedQueries) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (f *failedQueries) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	if d.Err != nil {
		f.fail()
	}
}

func (f *failedQueries) TraceBatchEnd(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchEndData) {
	if d.Err != nil {
		f.fail()
	}
}

func (f *failedQueries) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}

func (f *failedQueries) TraceQueryEnd(_ context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	if d.Err != nil {
		f.fail()
	}
}

// TestWatchRetriesFailedRead: when the read a watcher must make fails (its
// table is away), it reads again after a pause, and delivers the change
// once the read succeeds.
func TestWatchRetriesFailedRead(t *testing.T) {
	t.Run("Watch", func(t *testing.T) { testWatchRetriesFailedRead(t, false) })
	t.Run("WatchFunc", func(t *testing.T) { testWatchRetriesFailedRead(t, true) })
}

func testWatchRetriesFailedRead(t *testing.T, viaFunc bool) {
	tracer := &failedQueries{failed: make(chan struct{}, 1)}
	table := freshTable()
	// Without automatic migration: a Store that finds its table gone
	// makes it again, which would race the rename that brings it back.
	st, err := pgstore.New[storetest.Meta](newPool(t, func(c *pgxpool.Config) { c.ConnConfig.Tracer = tracer }), pgstore.WithTable(table),
		pgstore.WithAutoMigrate(false))
	if err != nil {
		t.Fatal(err)
	}
	admin := newPool(t)
	ctx := testCtx(t)
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	_, rev := mustSwap(t, st, "job", 0, rec("a", 1))
	w, err := testcluster.WatchChan(t, ctx, st, "job", viaFunc)
	if err != nil {
		t.Fatal(err)
	}
	eventAt(t, w, rev)
	silent := handEdit(t, admin, st, "job", "holder = 'edited'")
	if _, err := admin.Exec(ctx, "ALTER TABLE "+table+" RENAME TO "+table+"_away"); err != nil {
		t.Fatal(err)
	}
	// The listener reconnects and the watcher reads, which fails.
	if n := terminate(t, listening(st)); n != 1 {
		t.Fatalf("terminated %d listening sessions, want 1", n)
	}
	select {
	case <-tracer.failed:
	case <-time.After(storetest.WatchTimeout):
		t.Fatal("no read failed while the table was away")
	}
	if _, err := admin.Exec(ctx, "ALTER TABLE "+table+"_away RENAME TO "+table); err != nil {
		t.Fatal(err)
	}
	if ev := eventAt(t, w, silent); ev.Record.Holder != "edited" {
		t.Fatalf("after the table came back: holder %q, want the edit", ev.Record.Holder)
	}
}
