package etcdstore_test

import (
	"errors"
	"testing"

	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/fence/etcdfence"
	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/store/etcdstore"
)

// A restore of etcd from an older copy brings back the record and the
// token key as they were. The next term, acquired by another process over
// the restored record, still gets a token above the term the restore
// lost (new terms' tokens are floored at the wall clock), so a fence that
// accepted the new term's write refuses the lost term's late one.
func TestRestoreNeverReusesAToken(t *testing.T) {
	ctx := t.Context()
	st, c := newStore(t, testcluster.PackageEtcd(t))
	key, tokenKey := keyOf(t, st, "job"), tokenKeyOf(t, st, "job")
	a, revA, err := st.CompareAndSwap(ctx, "job", 0, rec("a", 0))
	if err != nil {
		t.Fatal(err)
	}
	// The backup: both keys as they stand during a's term.
	backup := map[string]string{}
	for _, k := range []string{key, tokenKey} {
		resp, err := c.Get(ctx, k)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("backup of %s: %v, %d keys", k, err, len(resp.Kvs))
		}
		backup[k] = string(resp.Kvs[0].Value)
	}
	// b's term, which the restore loses.
	b, _, err := st.CompareAndSwap(ctx, "job", revA, rec("b", a.Token+1))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range backup {
		if _, err := c.Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	// Another process sees a's record again and takes it over.
	other, err := etcdstore.New[meta](c, etcdstore.WithPrefix(prefixOf(t, st)))
	if err != nil {
		t.Fatal(err)
	}
	restored, rev, err := other.Get(ctx, "job")
	if err != nil || restored.Holder != "a" || restored.Token != a.Token {
		t.Fatalf("after the restore: %+v, %v; want a's record", restored, err)
	}
	cTerm, _, err := other.CompareAndSwap(ctx, "job", rev, rec("c", restored.Token+1))
	if err != nil {
		t.Fatal(err)
	}
	if cTerm.Token <= b.Token {
		t.Fatalf("the term after the restore got token %d, not above the lost term's %d", cTerm.Token, b.Token)
	}
	const resource = "restore-test/resource"
	if err := etcdfence.Put(ctx, c, fence.Token(cTerm.Token), prefixOf(t, st)+resource, "c"); err != nil {
		t.Fatalf("the new term's write: %v", err)
	}
	if err := etcdfence.Put(ctx, c, fence.Token(b.Token), prefixOf(t, st)+resource, "b"); !errors.Is(err, fence.ErrStaleToken) {
		t.Fatalf("the lost term's late write: %v, want an error wrapping fence.ErrStaleToken", err)
	}
}
