package pgstore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

type joinMarker struct{}

// blockingTracer holds a query made with joinMarker in its context until
// release is closed, after telling entered.
type blockingTracer struct {
	entered chan struct{}
	release chan struct{}
}

func (b *blockingTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	if ctx.Value(joinMarker{}) != nil {
		select {
		case b.entered <- struct{}{}:
		default:
		}
		<-b.release
	}
	return ctx
}

func (b *blockingTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// A watch that joins while the listener reads the row for another watcher
// (a claim, or metadata above 2 KiB, is announced without its record) can
// be handed that listener read after its own, newer, first read. It is
// old news and must not be delivered: the watch must never deliver an
// older revision after a newer one in normal operation.
func TestWatchJoiningDuringAListenerReadNeverGoesBack(t *testing.T) {
	tr := &blockingTracer{entered: make(chan struct{}, 1), release: make(chan struct{})}
	st := internalStore(t, func(c *pgxpool.Config) { c.ConnConfig.Tracer = tr })
	ctx := t.Context()
	name := "joining"
	held, rev0, err := st.CompareAndSwap(ctx, name, 0, lease.Record[string]{Holder: "a", LeaseDuration: time.Second, Metadata: "m"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := testcluster.WatchChan(t, ctx, st, name, true)
	if err != nil {
		t.Fatal(err)
	}
	if ev := testcluster.NextEvent(t, b, 10*time.Second); ev.Revision != rev0 {
		t.Fatalf("b's first event %+v", ev)
	}
	// a joins; its first read waits in the tracer.
	type res struct {
		w   <-chan store.Event[string]
		err error
	}
	joined := make(chan res, 1)
	go func() {
		w, err := testcluster.WatchChan(t, context.WithValue(ctx, joinMarker{}, true), st, name, true)
		joined <- res{w, err}
	}()
	select {
	case <-tr.entered:
	case r := <-joined:
		t.Fatalf("a's watch returned before its read: %v", r.err)
	}
	// A renewal with metadata above 2 KiB: the listener reads the row
	// (rev1) and hands the read to b and to a, which holds it.
	held.Metadata = strings.Repeat("x", 3000)
	held, rev1, err := st.CompareAndSwap(ctx, name, rev0, held)
	if err != nil {
		t.Fatal(err)
	}
	if ev := testcluster.NextEvent(t, b, 10*time.Second); ev.Revision != rev1 {
		t.Fatalf("b after the big renewal: %+v, want %d", ev, rev1)
	}
	// A small renewal (rev2): once b hears it, the listener has handed
	// the read of rev1 to a.
	held.Metadata = "m"
	_, rev2, err := st.CompareAndSwap(ctx, name, rev1, held)
	if err != nil {
		t.Fatal(err)
	}
	if ev := testcluster.NextEvent(t, b, 10*time.Second); ev.Revision != rev2 {
		t.Fatalf("b after the small renewal: %+v, want %d", ev, rev2)
	}
	close(tr.release) // a's first read shows rev2
	r := <-joined
	if r.err != nil {
		t.Fatal(r.err)
	}
	if ev := testcluster.NextEvent(t, r.w, 10*time.Second); ev.Revision != rev2 {
		t.Fatalf("a's first event %+v, want %d", ev, rev2)
	}
	// Whatever comes next must not go back; a renewal at rev3 must come.
	_, rev3, err := st.CompareAndSwap(ctx, name, rev2, held)
	if err != nil {
		t.Fatal(err)
	}
	if ev := testcluster.NextEvent(t, r.w, 10*time.Second); ev.Revision != rev3 {
		t.Fatalf("a's event after its first at %d: revision %d (err %v); want the renewal at %d (rev1 was %d)", rev2, ev.Revision, ev.Err, rev3, rev1)
	}
}
