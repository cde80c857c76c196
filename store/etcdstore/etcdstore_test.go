package etcdstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/etcdstore"
)

type meta struct {
	Addr string `json:"addr"`
}

// uniquePrefix returns a key prefix of the test's own, so that tests on the
// shared server do not see each other's keys.
func uniquePrefix(t testing.TB) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "test-" + hex.EncodeToString(b) + "/"
}

func newStore(t testing.TB, e *testcluster.Etcd, opts ...etcdstore.Option) (*etcdstore.Store[meta], *clientv3.Client) {
	t.Helper()
	c := newClient(t, e)
	st, err := etcdstore.New[meta](c, append([]etcdstore.Option{etcdstore.WithPrefix(uniquePrefix(t))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return st, c
}

func rec(holder string, token uint64) lease.Record[meta] {
	now := time.Now()
	return lease.Record[meta]{
		Holder: holder, Token: token, AcquiredAt: now, RenewedAt: now,
		LeaseDuration: time.Second, Metadata: meta{Addr: holder + ":80"},
	}
}

func keyOf(t testing.TB, st *etcdstore.Store[meta], name string) string {
	t.Helper()
	k, err := st.Key(name)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func tokenKeyOf(t testing.TB, st *etcdstore.Store[meta], name string) string {
	t.Helper()
	k, err := st.TokenKey(name)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// Deleting the record key by hand does not reset tokens: the token key
// outlives it, and the next term's token is above every one before.
func TestTokenSurvivesDeletion(t *testing.T) {
	ctx := t.Context()
	st, c := newStore(t, testcluster.PackageEtcd(t))
	_, _, err := st.CompareAndSwap(ctx, "job", 0, rec("a", 0))
	if err != nil {
		t.Fatal(err)
	}
	r, rev, err := st.Get(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	// A new term with a huge proposed token raises the token key.
	r2, _, err := st.CompareAndSwap(ctx, "job", rev, rec("b", 1<<52))
	if err != nil {
		t.Fatal(err)
	}
	if r2.Token != 1<<52 || r2.Token <= r.Token {
		t.Fatalf("token %d after %d", r2.Token, r.Token)
	}
	if _, err := c.Delete(ctx, keyOf(t, st, "job")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Get(ctx, "job"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get after the delete: %v", err)
	}
	// Another Store (no memory of the name) and this one both start above.
	other, err := etcdstore.New[meta](c, etcdstore.WithPrefix(prefixOf(t, st)))
	if err != nil {
		t.Fatal(err)
	}
	r3, _, err := other.CompareAndSwap(ctx, "job", 0, rec("c", 1))
	if err != nil {
		t.Fatal(err)
	}
	if r3.Token <= r2.Token {
		t.Fatalf("token %d after the record was deleted, not above %d", r3.Token, r2.Token)
	}
}

// prefixOf recovers a Store's prefix from its Key.
func prefixOf(t testing.TB, st *etcdstore.Store[meta]) string {
	k := keyOf(t, st, "x")
	return k[:len(k)-len("leases/x")]
}

// Values someone else wrote that are not records, or break the bounds, are
// ErrCorruptRecord from Get, CompareAndSwap and Watch, and are never
// overwritten.
func TestCorruptRecords(t *testing.T) {
	ctx := t.Context()
	st, c := newStore(t, testcluster.PackageEtcd(t))
	for i, value := range []string{
		"",
		"not json",
		`{"holder":"a"}`,
		`{"holder":"a","token":1,"acquiredAt":"","renewedAt":"","leaseDurationNs":0,"transitions":0,"metadata":""}`, // holder with zero duration
		`{"holder":"a","token":18446744073709551615,"acquiredAt":"","renewedAt":"","leaseDurationNs":1000,"transitions":0,"metadata":""}`,
		`{"holder":"a","token":1,"acquiredAt":"yesterday","renewedAt":"","leaseDurationNs":1000,"transitions":0,"metadata":""}`,
		`{"holder":"a","token":1,"acquiredAt":"","renewedAt":"","leaseDurationNs":1000,"transitions":0,"metadata":"bm90IGpzb24="}`, // metadata "not json"
		`{"holder":"a","token":1,"acquiredAt":"","renewedAt":"","leaseDurationNs":1000,"transitions":0,"metadata":"e30=","extra":1}`,
		`{"holder":"a","token":1,"acquiredAt":"","renewedAt":"","leaseDurationNs":1000,"transitions":0,"metadata":"e30="} {}`,
	} {
		name := "bad" + string(rune('a'+i))
		put, err := c.Put(ctx, keyOf(t, st, name), value)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.Get(ctx, name); !errors.Is(err, store.ErrCorruptRecord) {
			t.Errorf("%q: Get: %v, want ErrCorruptRecord", value, err)
		}
		for _, expected := range []lease.Revision{0, lease.Revision(put.Header.Revision), lease.Revision(put.Header.Revision) + 1} {
			if _, _, err := st.CompareAndSwap(ctx, name, expected, rec("b", 0)); !errors.Is(err, store.ErrCorruptRecord) {
				t.Errorf("%q: CompareAndSwap at %d: %v, want ErrCorruptRecord", value, expected, err)
			}
		}
		w, err := st.Watch(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if ev := testcluster.NextEvent(t, w, eventTimeout); !errors.Is(ev.Err, store.ErrCorruptRecord) || ev.Revision != lease.Revision(put.Header.Revision) {
			t.Errorf("%q: first watch event %+v, want ErrCorruptRecord at %d", value, ev, put.Header.Revision)
		}
		got, err := c.Get(ctx, keyOf(t, st, name))
		if err != nil || len(got.Kvs) != 1 || string(got.Kvs[0].Value) != value {
			t.Errorf("%q: overwritten: %v %v", value, got, err)
		}
	}
}

// A token key someone else wrote stops new terms (the floor is unknown)
// but not the renewals of the current one.
func TestCorruptTokenKey(t *testing.T) {
	ctx := t.Context()
	st, c := newStore(t, testcluster.PackageEtcd(t))
	r, rev, err := st.CompareAndSwap(ctx, "job", 0, rec("a", 0))
	if err != nil {
		t.Fatal(err)
	}
	for _, value := range []string{"x", "-1", "007", "18446744073709551616", "18446744073709551615"} {
		if _, err := c.Put(ctx, tokenKeyOf(t, st, "job"), value); err != nil {
			t.Fatal(err)
		}
		renewal := rec("a", r.Token)
		if r, rev, err = st.CompareAndSwap(ctx, "job", rev, renewal); err != nil {
			t.Fatalf("token key %q: renewal: %v", value, err)
		}
		if _, _, err := st.CompareAndSwap(ctx, "job", rev, rec("b", 0)); !errors.Is(err, store.ErrCorruptRecord) {
			t.Fatalf("token key %q: new term: %v, want ErrCorruptRecord", value, err)
		}
	}
}

// Two Stores on one etcd: what one remembers goes stale when the other
// writes, and the transaction's comparison catches it.
func TestStaleMemory(t *testing.T) {
	ctx := t.Context()
	e := testcluster.PackageEtcd(t)
	a, c := newStore(t, e)
	b, err := etcdstore.New[meta](c, etcdstore.WithPrefix(prefixOf(t, a)))
	if err != nil {
		t.Fatal(err)
	}
	ra, reva, err := a.CompareAndSwap(ctx, "job", 0, rec("a", 0))
	if err != nil {
		t.Fatal(err)
	}
	// b takes over (a new term) without a having seen it.
	_, revb0, _ := b.Get(ctx, "job")
	rb, revb, err := b.CompareAndSwap(ctx, "job", revb0, rec("b", 0))
	if err != nil {
		t.Fatal(err)
	}
	// a renews from what it remembers: a conflict carrying b's record.
	cur, rev, err := a.CompareAndSwap(ctx, "job", reva, rec("a", ra.Token))
	if !errors.Is(err, store.ErrConflict) || rev != revb || cur.Holder != "b" || cur.Token != rb.Token {
		t.Fatalf("stale renewal: %+v %d %v; want a conflict with b's record at %d", cur, rev, err, revb)
	}
	// The token key moved under b's memory: a raised it meanwhile through
	// a new term of its own; b's next new term still starts above it.
	_, reva2, err := a.CompareAndSwap(ctx, "job", revb, rec("a", 1<<30))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Delete(ctx, keyOf(t, a, "job")); err != nil {
		t.Fatal(err)
	}
	_ = reva2
	got, _, err := b.CompareAndSwap(ctx, "job", 0, rec("b", 0))
	if err != nil {
		t.Fatal(err)
	}
	if got.Token <= 1<<30 {
		t.Fatalf("token %d, not above 2^30", got.Token)
	}
}

// A takeover (a new term, which raises the token key) from a revision that
// a renewal has replaced since conflicts, although the renewal left the
// token key as it was: the record's own revision is compared too.
func TestTakeoverFromARevisionRenewedSinceConflicts(t *testing.T) {
	ctx := t.Context()
	e := testcluster.PackageEtcd(t)
	a, c := newStore(t, e)
	b, err := etcdstore.New[meta](c, etcdstore.WithPrefix(prefixOf(t, a)))
	if err != nil {
		t.Fatal(err)
	}
	ra, reva, err := a.CompareAndSwap(ctx, "job", 0, rec("a", 0))
	if err != nil {
		t.Fatal(err)
	}
	if _, rev, err := b.Get(ctx, "job"); err != nil || rev != reva {
		t.Fatalf("b.Get: revision %d, %v; want %d", rev, err, reva)
	}
	// a renews: the same term, the token key stays.
	_, reva2, err := a.CompareAndSwap(ctx, "job", reva, rec("a", ra.Token))
	if err != nil {
		t.Fatal(err)
	}
	cur, rev, err := b.CompareAndSwap(ctx, "job", reva, rec("b", 0))
	if !errors.Is(err, store.ErrConflict) || rev != reva2 || cur.Holder != "a" {
		t.Fatalf("takeover from %d after a renewal at %d: %+v %d %v; want a conflict with a's renewal", reva, reva2, cur, rev, err)
	}
}

// A deleted record arrives as Absent; a compaction does not break a live
// watch; an ended ctx closes the channel even with the server gone.
func TestWatchDeleteAndCompaction(t *testing.T) {
	ctx := t.Context()
	e := testcluster.NewEtcd(t)
	st, c := newStore(t, e)
	_, rev, err := st.CompareAndSwap(ctx, "job", 0, rec("a", 0))
	if err != nil {
		t.Fatal(err)
	}
	w, err := st.Watch(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	if ev := testcluster.NextEvent(t, w, eventTimeout); ev.Revision != rev || ev.Record.Holder != "a" {
		t.Fatalf("first event %+v", ev)
	}
	if _, err := c.Delete(ctx, keyOf(t, st, "job")); err != nil {
		t.Fatal(err)
	}
	if ev := testcluster.NextEvent(t, w, eventTimeout); !ev.Absent {
		t.Fatalf("after the delete: %+v, want Absent", ev)
	}

	// A compaction below a live watch does not disturb it. (A watch
	// that falls behind one is closed, which a single member cannot be
	// made to do on demand: the client keeps up with it.)
	w2ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w2, err := st.Watch(w2ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	if ev := testcluster.NextEvent(t, w2, eventTimeout); !ev.Absent {
		t.Fatalf("first event %+v, want Absent", ev)
	}
	_, rev2, err := st.CompareAndSwap(ctx, "job", 0, rec("b", 0))
	if err != nil {
		t.Fatal(err)
	}
	if ev := testcluster.NextEvent(t, w2, eventTimeout); ev.Revision != rev2 {
		t.Fatalf("after the create: %+v, want revision %d", ev, rev2)
	}
	if _, err := c.Compact(ctx, int64(rev2)); err != nil {
		t.Fatal(err)
	}
	_, rev3, err := st.CompareAndSwap(ctx, "job", rev2, rec("b", 0))
	if err == nil {
		if ev := testcluster.NextEvent(t, w2, eventTimeout); ev.Revision != rev3 {
			t.Fatalf("after the compaction: %+v, want revision %d", ev, rev3)
		}
	} else {
		t.Fatal(err)
	}
	// Killing the server: the client keeps retrying; cancelling ctx closes
	// the channel.
	if err := e.Kill(); err != nil {
		t.Fatal(err)
	}
	cancel()
	deadline := time.After(eventTimeout)
	for {
		select {
		case _, ok := <-w2:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("the channel stayed open after ctx ended")
		}
	}
}

// etcd is killed and started again with its data: records, revisions and
// tokens are as before, and the Store works again without being made anew.
func TestKillRestart(t *testing.T) {
	ctx := t.Context()
	e := testcluster.NewEtcd(t)
	st, _ := newStore(t, e)
	r, rev, err := st.CompareAndSwap(ctx, "job", 0, rec("a", 0))
	if err != nil {
		t.Fatal(err)
	}
	w, err := st.Watch(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	testcluster.NextEvent(t, w, eventTimeout)
	if err := e.Kill(); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	if _, _, err := st.Get(short, "job"); err == nil {
		t.Fatal("Get succeeded with etcd killed")
	}
	cancel()
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	got, grev, err := st.Get(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	if grev != rev || got.Holder != "a" || got.Token != r.Token {
		t.Fatalf("after the restart: %+v at %d; want a's record at %d", got, grev, rev)
	}
	// The renewal from memory works, and the watch (resumed by the
	// client, or closed for the caller to watch again) sees it.
	_, rev2, err := st.CompareAndSwap(ctx, "job", rev, rec("a", r.Token))
	if err != nil {
		t.Fatal(err)
	}
	if rev2 <= rev {
		t.Fatalf("revision %d after %d", rev2, rev)
	}
	select {
	case ev, ok := <-w:
		if ok && ev.Revision != rev2 {
			t.Fatalf("watch after the restart: %+v, want revision %d", ev, rev2)
		}
	case <-time.After(eventTimeout):
		t.Fatal("the watch neither resumed nor closed after the restart")
	}
}
