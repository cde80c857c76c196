package pgstore_test

import (
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenure-go/tenure/internal/testcluster"
	"github.com/tenure-go/tenure/store/pgstore"
	"github.com/tenure-go/tenure/store/storetest"
)

// TestWatchRecordFromNotification: a write announces its whole record, so
// a watcher delivers it without reading the row (issue 13: a leader's own
// renewal coming back on its watch cost a read). A record whose metadata is
// too large for a notification is read, as before.
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
		what  string
		meta  string
		reads int64
	}{
		{"small metadata: the record comes with the notification", "node a", 0},
		{"metadata over 2 KiB: the watcher reads", strings.Repeat("m", 3000), 1},
	} {
		r := rec("a", 1)
		r.Metadata.Name = c.meta
		tracer.n.Store(0)
		got, next := mustSwap(t, writer, "job", rev, r)
		ev := testcluster.NextEvent(t, ch, 10*time.Second)
		if ev.Err != nil || ev.Revision != next || ev.Record.Holder != "a" || ev.Record.Metadata.Name != c.meta ||
			!ev.Record.RenewedAt.Equal(got.RenewedAt) || ev.Record.LeaseDuration != got.LeaseDuration {
			t.Fatalf("%s: event %+v at %d (err %v), want the record written at %d", c.what, ev.Record, ev.Revision, ev.Err, next)
		}
		if n := tracer.n.Load(); n != c.reads {
			t.Errorf("%s: the watcher sent %d queries, want %d", c.what, n, c.reads)
		}
		rev = next
	}
}
