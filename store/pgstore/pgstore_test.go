package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/pgstore"
	"github.com/tenure-go/tenure/store/storetest"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func rec(holder string, token uint64) lease.Record[storetest.Meta] {
	now := time.Now()
	return lease.Record[storetest.Meta]{
		Holder: holder, Token: token, AcquiredAt: now, RenewedAt: now,
		LeaseDuration: 15 * time.Second, Transitions: token,
		Metadata: storetest.Meta{Name: holder},
	}
}

func mustSwap(t *testing.T, st store.Store[storetest.Meta], name string, exp lease.Revision, r lease.Record[storetest.Meta]) (lease.Record[storetest.Meta], lease.Revision) {
	t.Helper()
	got, rev, err := st.CompareAndSwap(testCtx(t), name, exp, r)
	if err != nil {
		t.Fatalf("CompareAndSwap(%q, %d): %v", name, exp, err)
	}
	return got, rev
}

// nextEvent waits for an event on ch.
func nextEvent(t *testing.T, ch <-chan store.Event[storetest.Meta]) store.Event[storetest.Meta] {
	t.Helper()
	return testcluster.NextEvent(t, ch, storetest.WatchTimeout)
}

// eventAt waits for an event of revision rev (skipping older ones, which
// must strictly increase).
func eventAt(t *testing.T, ch <-chan store.Event[storetest.Meta], rev lease.Revision) store.Event[storetest.Meta] {
	t.Helper()
	var last lease.Revision
	for {
		ev := nextEvent(t, ch)
		if ev.Err != nil {
			t.Fatalf("event with error: %v", ev.Err)
		}
		if !ev.Absent && ev.Revision <= last {
			t.Fatalf("revision %d after %d", ev.Revision, last)
		}
		last = ev.Revision
		switch {
		case ev.Revision == rev:
			return ev
		case ev.Revision > rev:
			t.Fatalf("event of revision %d, past the awaited %d", ev.Revision, rev)
		}
	}
}

func exec(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	if _, err := pool.Exec(testCtx(t), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func TestNewRefusesBadInput(t *testing.T) {
	if _, err := pgstore.New[storetest.Meta](nil); !errors.Is(err, store.ErrNilArgument) {
		t.Errorf("New(nil) error = %v, want store.ErrNilArgument", err)
	}
	// A pool that is never connected: New must not touch the database.
	pool, err := pgxpool.New(context.Background(), "postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	for _, c := range []struct {
		label string
		opt   pgstore.Option
	}{
		{"no parts", pgstore.WithTable()},
		{"three parts", pgstore.WithTable("a", "b", "c")},
		{"empty", pgstore.WithTable("")},
		{"empty schema", pgstore.WithTable("", "t")},
		{"NUL", pgstore.WithTable("a\x00b")},
		{"not UTF-8", pgstore.WithTable("\xff")},
		{"too long for the sequence", pgstore.WithTable(strings.Repeat("t", 55))},
		{"schema too long", pgstore.WithTable(strings.Repeat("s", 64), "t")},
	} {
		if _, err := pgstore.New[storetest.Meta](pool, c.opt); !errors.Is(err, pgstore.ErrInvalidOption) {
			t.Errorf("New with %s: error = %v, want ErrInvalidOption", c.label, err)
		}
	}
	for _, ok := range []pgstore.Option{
		nil,
		pgstore.WithTable(strings.Repeat("t", 54)),
		pgstore.WithTable(strings.Repeat("s", 63), "t"),
		pgstore.WithAutoMigrate(false),
	} {
		if _, err := pgstore.New[storetest.Meta](pool, ok); err != nil {
			t.Errorf("New: %v", err)
		}
	}
	for _, c := range []store.Codec[storetest.Meta]{nil, store.JSONCodec[storetest.Meta]{}} {
		if _, err := pgstore.NewWithCodec(pool, c); err != nil {
			t.Errorf("NewWithCodec(%T): %v", c, err)
		}
	}
	st, _ := pgstore.New[storetest.Meta](pool)
	// The channel of a table found through the search_path is known once
	// the Store has used it; that of a schema-qualified one at once.
	if st.Table() != `"tenure_leases"` || st.Channel() != "" {
		t.Errorf("default table %s, channel %q before use", st.Table(), st.Channel())
	}
	if q, _ := pgstore.New[storetest.Meta](pool, pgstore.WithTable("ops", "leases")); q.Channel() != "tenure:ops.leases" {
		t.Errorf("channel of ops.leases %q, want tenure:ops.leases", q.Channel())
	}
	long, _ := pgstore.New[storetest.Meta](pool, pgstore.WithTable(strings.Repeat("s", 63), "t"))
	if n := len(long.Channel()); n > 63 || n == 0 {
		t.Errorf("channel %q is %d bytes, PostgreSQL allows 1 to 63", long.Channel(), n)
	}
}

// hostileNames are election names that would break SQL pasted as text.
var hostileNames = []string{
	`it's`,
	`"quoted"`,
	`a; DROP TABLE tenure_leases; --`,
	`'); DELETE FROM tenure_leases; --`,
	`back\slash`,
	`$1`,
	`日本語の名前 ✓ 🎉`,
	`with:colon:and spaces`,
	strings.Repeat("é", store.MaxNameBytes/2),
}

func TestHostileNames(t *testing.T) {
	pool := newPool(t)
	st := newStore(t, pool)
	ctx := testCtx(t)
	for _, name := range hostileNames {
		w, err := st.Watch(ctx, name)
		if err != nil {
			t.Fatalf("Watch(%q): %v", name, err)
		}
		if ev := nextEvent(t, w); !ev.Absent {
			t.Fatalf("Watch(%q): first event %+v, want Absent", name, ev)
		}
		r := rec("holder "+name, 1)
		r.Holder = strings.ToValidUTF8(r.Holder[:min(len(r.Holder), store.MaxHolderBytes)], "")
		r.Metadata.Name = name
		got, rev := mustSwap(t, st, name, 0, r)
		read, readRev, err := st.Get(ctx, name)
		if err != nil || readRev != rev || read.Metadata.Name != name || read.Holder != got.Holder {
			t.Fatalf("Get(%q) = %+v, %d, %v; want holder %q at revision %d", name, read, readRev, err, got.Holder, rev)
		}
		if ev := eventAt(t, w, rev); ev.Record.Metadata.Name != name {
			t.Fatalf("Watch(%q) delivered metadata name %q", name, ev.Record.Metadata.Name)
		}
	}
	// Each name is a row of its own, and nothing else was touched.
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+st.Table()).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != len(hostileNames) {
		t.Fatalf("%d rows, want %d", n, len(hostileNames))
	}
}

// TestHostileTable uses table and schema names that would inject SQL if
// they were pasted as text, next to a canary table they name.
func TestHostileTable(t *testing.T) {
	pool := newPool(t)
	ctx := testCtx(t)
	exec(t, pool, `CREATE TABLE IF NOT EXISTS y (n int)`)
	exec(t, pool, `CREATE SCHEMA IF NOT EXISTS "s""; DROP TABLE y; --"`)
	for _, table := range [][]string{
		{`x"; DROP TABLE y; --`},
		{`x'); DROP TABLE y; --`},
		{`Mixed Case.with dot`},
		// Names of the CTEs in the statements, or close to them.
		{"u"}, {"c"}, {"n"}, {"w"}, {"r"}, {"t"},
		{"tenure_upd"}, {"tenure_cur"}, {"tenure_notify"}, {"tenure_rev"}, {"tenure_ins"}, {"tenure__cur"},
		{`s"; DROP TABLE y; --`, `t"; DROP TABLE y; --`},
	} {
		st, err := pgstore.New[storetest.Meta](pool, pgstore.WithTable(table...))
		if err != nil {
			t.Fatalf("New(%q): %v", table, err)
		}
		if err := st.Migrate(ctx); err != nil {
			t.Fatalf("Migrate(%q): %v", table, err)
		}
		name := freshTable() // the tables outlive a run of the test
		w, err := st.Watch(ctx, name)
		if err != nil {
			t.Fatalf("table %q: Watch: %v", table, err)
		}
		nextEvent(t, w)
		got, rev := mustSwap(t, st, name, 0, rec("a", 1))
		if _, _, err := st.CompareAndSwap(ctx, name, 0, rec("b", 1)); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("table %q: second create: %v, want ErrConflict", table, err)
		}
		got.RenewedAt = time.Now()
		_, rev = mustSwap(t, st, name, rev, got)
		if _, r, err := st.Get(ctx, name); err != nil || r != rev {
			t.Fatalf("table %q: Get = %d, %v; want revision %d", table, r, err, rev)
		}
		eventAt(t, w, rev)
		var exists bool
		if err := pool.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", st.Table()).Scan(&exists); err != nil || !exists {
			t.Fatalf("table %s: exists %v, %v", st.Table(), exists, err)
		}
	}
	var canary bool
	if err := pool.QueryRow(ctx, "SELECT to_regclass('public.y') IS NOT NULL").Scan(&canary); err != nil || !canary {
		t.Fatalf("the canary table y is gone (%v)", err)
	}
}

func TestSchemaQualifiedTable(t *testing.T) {
	pool := newPool(t)
	ctx := testCtx(t)
	exec(t, pool, `CREATE SCHEMA IF NOT EXISTS leases`)
	st, err := pgstore.New[storetest.Meta](pool, pgstore.WithTable("leases", freshTable()))
	if err != nil {
		t.Fatal(err)
	}
	mustSwap(t, st, "job", 0, rec("a", 1))
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+st.Table()).Scan(&n); err != nil || n != 1 {
		t.Fatalf("count = %d, %v", n, err)
	}
	if !strings.HasPrefix(st.Table(), `"leases".`) {
		t.Fatalf("Table() = %s", st.Table())
	}
}

func TestAutoMigrateOff(t *testing.T) {
	pool := newPool(t)
	ctx := testCtx(t)
	st := newStore(t, pool, pgstore.WithAutoMigrate(false))
	if _, _, err := st.Get(ctx, "job"); err == nil || errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get without a table: %v, want an error about the missing table", err)
	}
	// The DDL a team would run by hand.
	if _, err := pool.Exec(ctx, st.SchemaSQL()); err != nil {
		t.Fatalf("SchemaSQL: %v", err)
	}
	if _, _, err := st.Get(ctx, "job"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get after SchemaSQL: %v, want ErrNotFound", err)
	}
	mustSwap(t, st, "job", 0, rec("a", 1))
	if err := st.Migrate(ctx); err != nil {
		t.Fatalf("Migrate over an existing table: %v", err)
	}
	if _, _, err := st.Get(ctx, "job"); err != nil {
		t.Fatalf("Get after Migrate: %v", err)
	}
}

// TestConcurrentFirstUse starts many stores on one new table at once: the
// advisory lock keeps their CREATE statements from racing.
func TestConcurrentFirstUse(t *testing.T) {
	pool := newPool(t, func(c *pgxpool.Config) { c.MaxConns = 16 })
	ctx := testCtx(t)
	for round := range 3 {
		table := freshTable()
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for i := range 16 {
			wg.Go(func() {
				st, err := pgstore.New[storetest.Meta](pool, pgstore.WithTable(table))
				if err != nil {
					errs <- err
					return
				}
				_, _, err = st.CompareAndSwap(ctx, "job", 0, rec(fmt.Sprint("racer-", i), 1))
				if err != nil && !errors.Is(err, store.ErrConflict) {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("round %d: %v", round, err)
		}
	}
}

// TestRacingSwapsHaveOneWinner races 16 goroutines, each on a connection of its own, many
// times: creates of an absent name and swaps from one revision.
func TestRacingSwapsHaveOneWinner(t *testing.T) {
	pool := newPool(t, func(c *pgxpool.Config) { c.MaxConns = 17; c.MinConns = 17 })
	st := newStore(t, pool)
	ctx := testCtx(t)
	rounds := 30
	if testing.Short() {
		rounds = 5
	}
	race := func(name string, exp lease.Revision, token uint64) (lease.Record[storetest.Meta], lease.Revision) {
		t.Helper()
		return storetest.Race(t, ctx, st, name, exp, token)
	}
	for round := range rounds {
		name := fmt.Sprint("race-", round)
		r, rev := race(name, 0, 1)
		for range 3 {
			r, rev = race(name, rev, r.Token+1)
		}
	}
}

// handEdit changes the row of name as the docs tell people to: set (SQL,
// such as "holder = ”") with a new revision from the store's sequence. It
// sends no notification, and returns the new revision.
func handEdit(t *testing.T, pool *pgxpool.Pool, st *pgstore.Store[storetest.Meta], name, set string) lease.Revision {
	t.Helper()
	var rev int64
	err := pool.QueryRow(testCtx(t), "UPDATE "+st.Table()+" SET "+set+", revision = nextval($2::text::regclass) WHERE name = $1 RETURNING revision",
		name, st.Sequence()).Scan(&rev)
	if err != nil {
		t.Fatalf("hand edit of %q: %v", name, err)
	}
	return lease.Revision(rev)
}

// corrupt writes metadata that JSON cannot decode into the row of name,
// as a careless hand edit would.
func corrupt(t *testing.T, pool *pgxpool.Pool, st *pgstore.Store[storetest.Meta], name string) {
	t.Helper()
	handEdit(t, pool, st, name, `metadata = '\x7b6e6f74206a736f6e'`)
}

// watched returns a store on a table of its own whose name "job" holds a
// record at rev, and a watch of "job" that has delivered it.
// (viaFunc: with WatchFunc, its calls queued on the channel; see
// testcluster.WatchChan.)
func watched(t *testing.T, viaFunc bool) (*pgxpool.Pool, *pgstore.Store[storetest.Meta], <-chan store.Event[storetest.Meta], lease.Revision) {
	t.Helper()
	pool := newPool(t)
	st := newStore(t, pool)
	_, rev := mustSwap(t, st, "job", 0, rec("a", 1))
	w, err := testcluster.WatchChan(t, testCtx(t), st, "job", viaFunc)
	if err != nil {
		t.Fatal(err)
	}
	eventAt(t, w, rev)
	return pool, st, w, rev
}

func TestCorruptRecord(t *testing.T) {
	t.Run("Watch", func(t *testing.T) { testCorruptRecord(t, false) })
	t.Run("WatchFunc", func(t *testing.T) { testCorruptRecord(t, true) })
}

func testCorruptRecord(t *testing.T, viaFunc bool) {
	pool, st, w, rev := watched(t, viaFunc)
	ctx := testCtx(t)
	corrupt(t, pool, st, "job")
	var raw []byte
	if err := pool.QueryRow(ctx, "SELECT metadata FROM "+st.Table()+" WHERE name = 'job'").Scan(&raw); err != nil {
		t.Fatal(err)
	}

	got, gotRev, err := st.Get(ctx, "job")
	if !errors.Is(err, store.ErrCorruptRecord) || gotRev != 0 || got.Holder != "" {
		t.Fatalf("Get of a corrupt record = %+v, %d, %v; want ErrCorruptRecord and no revision", got, gotRev, err)
	}
	for _, exp := range []lease.Revision{0, rev, rev + 1000} {
		_, gotRev, err := st.CompareAndSwap(ctx, "job", exp, rec("b", 2))
		if !errors.Is(err, store.ErrCorruptRecord) || errors.Is(err, store.ErrConflict) || gotRev != 0 {
			t.Fatalf("CompareAndSwap(%d) over a corrupt record: revision %d, %v; want ErrCorruptRecord", exp, gotRev, err)
		}
	}
	var after []byte
	if err := pool.QueryRow(ctx, "SELECT metadata FROM "+st.Table()+" WHERE name = 'job'").Scan(&after); err != nil {
		t.Fatal(err)
	}
	if string(after) != string(raw) {
		t.Fatalf("the corrupt record was overwritten: %q -> %q", raw, after)
	}
	// A new watcher sees the corruption; so does one that was watching,
	// once something makes it read (the hand edit sent no notification:
	// here, a reconnection of the listener).
	w2, err := testcluster.WatchChan(t, ctx, st, "job", viaFunc)
	if err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, w2); !errors.Is(ev.Err, store.ErrCorruptRecord) || ev.Revision != 0 {
		t.Fatalf("first event of a corrupt record: %+v", ev)
	}
	if n := terminate(t, listening(st)); n != 1 {
		t.Fatalf("terminated %d listening sessions, want 1", n)
	}
	if ev := nextEvent(t, w); !errors.Is(ev.Err, store.ErrCorruptRecord) || ev.Revision != 0 {
		t.Fatalf("event after the reconnection: %+v, want one with ErrCorruptRecord", ev)
	}
}

// TestContextEndsWhileWaiting ends the context of a swap that waits for a
// row lock. The call returns at once with the context's error. Whether the
// statement still runs on the server afterwards depends on the pool: with
// the CancelRequest handler that the docs recommend, the server cancels it,
// so nothing is written.
func TestContextEndsWhileWaiting(t *testing.T) {
	pool := newPool(t, func(c *pgxpool.Config) {
		c.ConnConfig.BuildContextWatcherHandler = func(pc *pgconn.PgConn) ctxwatch.Handler {
			return &pgconn.CancelRequestContextWatcherHandler{Conn: pc, DeadlineDelay: time.Second}
		}
	})
	st := newStore(t, pool)
	ctx := testCtx(t)
	_, rev := mustSwap(t, st, "job", 0, rec("a", 1))
	// Hold the row's lock in a transaction so that the swap waits.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SELECT 1 FROM "+st.Table()+" WHERE name = 'job' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_, _, err = st.CompareAndSwap(cctx, "job", rev, rec("b", 2))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("CompareAndSwap blocked, then its context ended: %v, want context.DeadlineExceeded", err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if _, r, err := st.Get(ctx, "job"); err != nil || r != rev {
		t.Fatalf("after the cancelled swap: revision %d, %v; want %d unchanged", r, err, rev)
	}
}

func TestLargestValues(t *testing.T) {
	pool := newPool(t)
	st := newStore(t, pool)
	r := rec("a", lease.MaxToken)
	r.Transitions = lease.MaxToken
	r.LeaseDuration = lease.MaxDuration
	got, rev := mustSwap(t, st, "job", 0, r)
	if got.Token != lease.MaxToken || got.Transitions != lease.MaxToken || got.LeaseDuration != lease.MaxDuration {
		t.Fatalf("stored token %d transitions %d duration %v", got.Token, got.Transitions, got.LeaseDuration)
	}
	// An expected revision above MaxInt64 matches nothing.
	if _, gotRev, err := st.CompareAndSwap(testCtx(t), "job", 1<<63+1, r); !errors.Is(err, store.ErrConflict) || gotRev != rev {
		t.Fatalf("swap from revision 2^63+1: %d, %v", gotRev, err)
	}
}

// TestStoreAfterDrop drops the table, the sequence or both after the
// Store created them: its next operations create them again, and report
// the records lost with them as absent.
func TestStoreAfterDrop(t *testing.T) {
	for _, c := range []struct {
		label    string
		drop     func(st *pgstore.Store[storetest.Meta]) string
		rowsGone bool
	}{
		{"table", func(st *pgstore.Store[storetest.Meta]) string { return "DROP TABLE " + st.Table() }, true},
		{"sequence", func(st *pgstore.Store[storetest.Meta]) string { return "DROP SEQUENCE " + st.Sequence() }, false},
		{"both", func(st *pgstore.Store[storetest.Meta]) string {
			return "DROP TABLE " + st.Table() + "; DROP SEQUENCE " + st.Sequence()
		}, true},
	} {
		for _, op := range []string{"Get", "CompareAndSwap"} {
			t.Run(c.label+"/"+op, func(t *testing.T) {
				pool := newPool(t)
				ctx := testCtx(t)
				st := newStore(t, pool)
				_, rev := mustSwap(t, st, "job", 0, rec("a", 1))
				exec(t, pool, c.drop(st))

				switch op {
				case "Get":
					_, got, err := st.Get(ctx, "job")
					switch {
					case c.rowsGone && !errors.Is(err, store.ErrNotFound):
						t.Fatalf("Get after the drop: revision %d, %v; want ErrNotFound", got, err)
					case !c.rowsGone && (err != nil || got != rev):
						t.Fatalf("Get after the drop: revision %d, %v; want %d", got, err, rev)
					}
				case "CompareAndSwap":
					_, got, err := st.CompareAndSwap(ctx, "job", rev, rec("a", 1))
					switch {
					case c.rowsGone && (!errors.Is(err, store.ErrConflict) || got != 0):
						t.Fatalf("swap from %d after the drop: revision %d, %v; want ErrConflict with no record", rev, got, err)
					case !c.rowsGone && (err != nil || got <= rev):
						t.Fatalf("swap from %d after the drop: revision %d, %v; want one above", rev, got, err)
					}
				}
				if c.rowsGone {
					// The new revisions continue above the lost ones.
					if _, got := mustSwap(t, st, "job", 0, rec("b", 2)); got <= rev {
						t.Fatalf("create after the drop at revision %d, not above the lost %d", got, rev)
					}
				}
			})
		}
	}
}
