package pgstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/pgstore"
	"github.com/tenure-go/tenure/store/storetest"
)

// TestWatchRecordFromNotification: a write announces its whole record, so
// a watcher delivers it without reading the row (a leader's own renewal
// coming back on its watch costs no read), a named release included. A
// record whose metadata is too large for a notification is read.
func TestWatchRecordFromNotification(t *testing.T) {
	t.Run("Watch", func(t *testing.T) { testWatchRecordFromNotification(t, false) })
	t.Run("WatchFunc", func(t *testing.T) { testWatchRecordFromNotification(t, true) })
}

func testWatchRecordFromNotification(t *testing.T, viaFunc bool) {
	tracer := &queryCounter{}
	watcherPool := newPool(t, func(c *pgxpool.Config) { c.ConnConfig.Tracer = tracer })
	table := freshTable()
	watcher, err := pgstore.New[storetest.Meta](watcherPool, pgstore.WithTable(table))
	if err != nil {
		t.Fatal(err)
	}
	writer, err := pgstore.New[storetest.Meta](newPool(t), pgstore.WithTable(table))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	_, rev := mustSwap(t, writer, "job", 0, rec("a", 1))
	ch, err := testcluster.WatchChan(t, ctx, watcher, "job", viaFunc)
	if err != nil {
		t.Fatal(err)
	}
	if ev := testcluster.NextEvent(t, ch, 10*time.Second); ev.Revision != rev {
		t.Fatalf("first event at revision %d, want %d", ev.Revision, rev)
	}
	for _, c := range []struct {
		what      string
		meta      string
		successor string // a release naming it, when set
		reads     int64
	}{
		{"small metadata: the record comes with the notification", "node a", "", 0},
		{"metadata over 2 KiB: the watcher reads", strings.Repeat("m", 3000), "", 1},
		{"a named release: the record comes with the notification", "node a", "b", 0},
	} {
		r := rec("a", 1)
		r.Metadata.Name = c.meta
		if c.successor != "" {
			r.Holder, r.Successor = "", c.successor
		}
		tracer.n.Store(0)
		got, next := mustSwap(t, writer, "job", rev, r)
		ev := testcluster.NextEvent(t, ch, 10*time.Second)
		if ev.Err != nil || ev.Revision != next || ev.Record.Holder != r.Holder || ev.Record.Successor != c.successor || ev.Record.Metadata.Name != c.meta ||
			!ev.Record.RenewedAt.Equal(got.RenewedAt) || ev.Record.LeaseDuration != got.LeaseDuration {
			t.Fatalf("%s: event %+v at %d (err %v), want the record written at %d", c.what, ev.Record, ev.Revision, ev.Err, next)
		}
		if n := tracer.n.Load(); n != c.reads {
			t.Errorf("%s: the watcher sent %d queries, want %d", c.what, n, c.reads)
		}
		rev = next
	}
}

// TestOneNotificationPerWrite: a write sends one notification, with the
// record or, when its metadata is too large, with "REVISION:NAME"; every
// listener of the channel receives and parses each, so a second one per
// write would double what listening costs.
func TestOneNotificationPerWrite(t *testing.T) {
	pool := newPool(t)
	st, err := pgstore.New[storetest.Meta](pool, pgstore.WithTable(freshTable()))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	r, rev := mustSwap(t, st, "job", 0, rec("a", 1)) // creates the table
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{st.Channel()}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	big := rec("a", 1)
	big.Metadata.Name = strings.Repeat("m", 3000)
	var revs []lease.Revision
	for _, next := range []lease.Record[storetest.Meta]{r, big, r} {
		_, rev = mustSwap(t, st, "job", rev, next)
		revs = append(revs, rev)
	}
	var got []string
	for len(got) < 3 {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			t.Fatalf("after %d notifications %q: %v", len(got), got, err)
		}
		got = append(got, n.Payload)
	}
	want := []string{fmt.Sprintf("r1:%d:", revs[0]), fmt.Sprintf("%d:job", revs[1]), fmt.Sprintf("r1:%d:", revs[2])}
	for i, p := range got {
		if !strings.HasPrefix(p, want[i]) {
			t.Fatalf("notifications %q: want one per write, starting %q", got, want)
		}
	}
}

// TestChannelOfTheQualifiedTable: tables of one name in two schemas, each
// found through the search_path, have channels of their own, so a write to
// one wakes no watcher of the other; and a Store that names its table
// through the search_path and one that names it with its schema have the
// same channel, so each hears the other's writes.
func TestChannelOfTheQualifiedTable(t *testing.T) {
	pool := newPool(t)
	ctx := testCtx(t)
	table := freshTable()
	schemas := []string{"chan_a_" + table, "chan_b_" + table}
	var inPath []*pgstore.Store[storetest.Meta]
	for _, schema := range schemas {
		exec(t, pool, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize())
		p := newPool(t, func(c *pgxpool.Config) { c.ConnConfig.RuntimeParams["search_path"] = schema })
		st, err := pgstore.New[storetest.Meta](p, pgstore.WithTable(table))
		if err != nil {
			t.Fatal(err)
		}
		inPath = append(inPath, st)
	}
	a, b := inPath[0], inPath[1]
	qualified, err := pgstore.New[storetest.Meta](pool, pgstore.WithTable(schemas[0], table))
	if err != nil {
		t.Fatal(err)
	}
	_, revA := mustSwap(t, a, "job", 0, rec("a", 1))
	_, revB := mustSwap(t, b, "job", 0, rec("b", 1))
	if a.Channel() == b.Channel() || a.Channel() != qualified.Channel() {
		t.Errorf("channels %q (%s in the search_path), %q (%s in the search_path), %q (%s.%s): want the first and last alike, the second not",
			a.Channel(), schemas[0], b.Channel(), schemas[1], qualified.Channel(), schemas[0], table)
	}

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := a.Watch(wctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	eventAt(t, w, revA)
	mustSwap(t, b, "job", revB, rec("b", 1))
	_, revA = mustSwap(t, qualified, "job", revA, rec("c", 2))
	if ev := nextEvent(t, w); ev.Err != nil || ev.Revision != revA || ev.Record.Holder != "c" {
		t.Fatalf("after a write to %s.%s, then one to %s.%s at revision %d: event %+v, want the latter",
			schemas[1], table, schemas[0], table, revA, ev)
	}
}

// A claim's notification carries no record (the "r1:" payload has no room
// for Claim): a watcher reads the row and delivers the claim with Claim;
// the write that takes it over is delivered without.
func TestWatchDeliversClaim(t *testing.T) {
	pool := newPool(t)
	st := newStore(t, pool)
	ctx := testCtx(t)
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	events, err := st.Watch(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	if ev := <-events; !ev.Absent {
		t.Fatalf("first event = %+v; want Absent", ev)
	}
	until := func(rev lease.Revision) lease.Record[storetest.Meta] {
		t.Helper()
		for ev := range events {
			if ev.Err != nil || ev.Absent {
				t.Fatalf("event %+v", ev)
			}
			if ev.Revision == rev {
				return ev.Record
			}
		}
		t.Fatal("the watch ended")
		return lease.Record[storetest.Meta]{}
	}
	claim := rec("a", 1)
	claim.Claim = true
	got, rev := mustSwap(t, st, "job", 0, claim)
	if r := until(rev); !r.Claim {
		t.Fatalf("the claim's event = %+v; want Claim", r)
	}
	next := got
	next.Token++
	next.Claim = false
	_, rev = mustSwap(t, st, "job", rev, next)
	if r := until(rev); r.Claim {
		t.Fatalf("the takeover's event = %+v; want no Claim", r)
	}
}

// In a database whose encoding is not UTF-8, read over a connection in
// UTF-8 or in the database's encoding, a holder of characters whose
// lengths differ in the two still splits the notification where it ends: the record of "job" held by "éa" goes
// to the watchers of "job", not to those of "ajob" as one held by "é".
func TestNotificationOfALatin1DatabaseNamesItsElection(t *testing.T) {
	for _, enc := range []string{"UTF8", "LATIN1"} {
		t.Run(enc, func(t *testing.T) { testNotificationOfALatin1Database(t, enc) })
	}
}

func testNotificationOfALatin1Database(t *testing.T, clientEncoding string) {
	admin := newPool(t)
	db := fmt.Sprintf("tenure_latin1_%d", time.Now().UnixNano())
	if _, err := admin.Exec(t.Context(), "CREATE DATABASE "+db+" ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)") })
	pool := newPool(t, func(c *pgxpool.Config) {
		c.ConnConfig.Database = db
		c.ConnConfig.RuntimeParams["client_encoding"] = clientEncoding
	})
	st := newStore(t, pool)
	ctx := t.Context()
	watch := func(name string) <-chan store.Event[storetest.Meta] {
		ch, err := st.Watch(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if ev := testcluster.NextEvent(t, ch, 10*time.Second); !ev.Absent {
			t.Fatalf("%s: first event %+v, want Absent", name, ev)
		}
		return ch
	}
	job, ajob := watch("job"), watch("ajob")
	now := time.Now()
	for _, w := range []struct{ name, holder string }{{"job", "éa"}, {"ajob", "x"}} {
		rec := lease.Record[storetest.Meta]{Holder: w.holder, Token: 1, AcquiredAt: now, RenewedAt: now, LeaseDuration: time.Second}
		if _, _, err := st.CompareAndSwap(ctx, w.name, 0, rec); err != nil {
			t.Fatalf("%s: %v", w.name, err)
		}
	}
	if ev := testcluster.NextEvent(t, ajob, 10*time.Second); ev.Err != nil || ev.Record.Holder != "x" {
		t.Fatalf("ajob's watcher got %+v (holder %q), want ajob's own record, held by x", ev, ev.Record.Holder)
	}
	if ev := testcluster.NextEvent(t, job, 10*time.Second); ev.Err != nil || ev.Record.Holder != "éa" {
		t.Fatalf("job's watcher got %+v (holder %q), want job's record, held by éa", ev, ev.Record.Holder)
	}
}
