package etcdstore_test

import (
	"fmt"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store/etcdstore"
)

// A record someone wrote by hand with a token above the token key, seen
// by a watch, is renewed with the token key raised to its token, as it is
// when the Store reads it: after the record is deleted, the next term's
// token is still above it. (A watch event shows the record, not the token
// key, and must not make the Store believe the token key holds the
// record's token.)
func TestRenewalAfterAWatchedHandWrittenTokenRaisesTheTokenKey(t *testing.T) {
	ctx := t.Context()
	st, c := newStore(t, testcluster.PackageEtcd(t))
	_, rev, err := st.CompareAndSwap(ctx, "job", 0, rec("a", 0))
	if err != nil {
		t.Fatal(err)
	}
	w, err := st.Watch(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	if ev := testcluster.NextEvent(t, w, eventTimeout); ev.Revision != rev {
		t.Fatalf("first event %+v, want revision %d", ev, rev)
	}
	// a's record, rewritten by hand with a token far above the clock.
	const token = lease.MaxToken - 1000
	value := fmt.Sprintf(`{"holder":"a","token":%d,"acquiredAt":"","renewedAt":"","leaseDurationNs":1000000000,"transitions":0,"metadata":"e30="}`, token)
	put, err := c.Put(ctx, keyOf(t, st, "job"), value)
	if err != nil {
		t.Fatal(err)
	}
	hand := lease.Revision(put.Header.Revision)
	if ev := testcluster.NextEvent(t, w, eventTimeout); ev.Revision != hand || ev.Record.Token != token {
		t.Fatalf("after the write by hand: %+v, want token %d at revision %d", ev, uint64(token), hand)
	}
	// a renews its term, whose token is now the one written by hand.
	renewed, _, err := st.CompareAndSwap(ctx, "job", hand, rec("a", token))
	if err != nil {
		t.Fatal(err)
	}
	if renewed.Token != token {
		t.Fatalf("renewal: token %d, want %d", renewed.Token, uint64(token))
	}
	if _, err := c.Delete(ctx, keyOf(t, st, "job")); err != nil {
		t.Fatal(err)
	}
	other, err := newStoreWithPrefix(c, prefixOf(t, st))
	if err != nil {
		t.Fatal(err)
	}
	next, _, err := other.CompareAndSwap(ctx, "job", 0, rec("b", 1))
	if err != nil {
		t.Fatal(err)
	}
	if next.Token <= token {
		t.Fatalf("the term after the deletion got token %d, not above the renewed term's %d", next.Token, uint64(token))
	}
}

func newStoreWithPrefix(c *clientv3.Client, prefix string) (*etcdstore.Store[meta], error) {
	return etcdstore.New[meta](c, etcdstore.WithPrefix(prefix))
}
