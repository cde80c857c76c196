package kubestore

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

// A watch resumed from a resourceVersion the API server no longer has
// ("too old resource version", 410) reads the Lease again and goes on from
// there. A restarted API server's watch cache starts at the etcd revision
// of its start: a watch from before it is answered 410.
func TestWatchTooOldReadsAgain(t *testing.T) {
	k := testcluster.NewKube(t, testcluster.KubeOptions{})
	ns := k.Namespace(t, "expired")
	st, err := New[string](k.Leases(t), ns)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rec := lease.Record[string]{Holder: "a", Token: 1, LeaseDuration: 2 * time.Second, Metadata: "m"}
	_, rev, err := st.CompareAndSwap(ctx, "job", 0, rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := k.Start(); err != nil {
		t.Fatal(err)
	}
	var expired atomic.Int32
	// As if an earlier watch had delivered revision 1 and broken: revision
	// 1 is older than anything the server keeps.
	w := &watcher[string]{s: st, name: "job", resume: "1", last: 1, expired: func() { expired.Add(1) }}
	kw, err := w.watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan store.Event[string])
	go w.serve(ctx, kw, out)
	select {
	case ev := <-out:
		if ev.Revision != rev || ev.Record.Holder != "a" || ev.Record.Metadata != "m" {
			t.Fatalf("event %+v, want the Lease at revision %d", ev, rev)
		}
	case <-ctx.Done():
		t.Fatal("no event after resuming from a compacted revision")
	}
	if expired.Load() == 0 {
		t.Fatal("the API server did not answer 410 to a watch from revision 1")
	}
	// The watch goes on from the revision read.
	rec.Token = 2
	wrote, rev2, err := st.CompareAndSwap(ctx, "job", rev, rec)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-out:
		if ev.Revision != rev2 || ev.Record.Token != wrote.Token {
			t.Fatalf("event %+v, want revision %d", ev, rev2)
		}
	case <-ctx.Done():
		t.Fatal("no event after the swap")
	}
	cancel()
	for range out {
	}
}
