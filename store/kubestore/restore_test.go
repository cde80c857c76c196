package kubestore_test

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenure-go/tenure/fence"
)

// A restore of the API server's etcd from an older copy brings back the
// Lease as it was, its token annotation included. The next term, taken by
// another process over the restored Lease, still gets a token above the
// term the restore lost (new terms' tokens are floored at the wall clock),
// so a fence that accepted the new term's write refuses the lost term's
// late one.
func TestRestoreNeverReusesAToken(t *testing.T) {
	e := newEnv(t, "restore")
	c := ctx(t)
	st := newStore[meta](t, e.client, e.ns)
	a, revA, err := st.CompareAndSwap(c, "job", 0, record("a", 1))
	if err != nil {
		t.Fatal(err)
	}
	leases := e.client.CoordinationV1().Leases(e.ns)
	backup, err := leases.Get(c, "job", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// b's term, which the restore loses.
	b, _, err := st.CompareAndSwap(c, "job", revA, record("b", a.Token+1))
	if err != nil {
		t.Fatal(err)
	}
	now, err := leases.Get(c, "job", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	restore := backup.DeepCopy()
	restore.ResourceVersion = now.ResourceVersion
	if _, err := leases.Update(c, restore, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	other := newStore[meta](t, e.client, e.ns)
	restored, rev, err := other.Get(c, "job")
	if err != nil || restored.Holder != "a" || restored.Token != a.Token {
		t.Fatalf("after the restore: %+v, %v; want a's record", restored, err)
	}
	cTerm, _, err := other.CompareAndSwap(c, "job", rev, record("c", restored.Token+1))
	if err != nil {
		t.Fatal(err)
	}
	if cTerm.Token <= b.Token {
		t.Fatalf("the term after the restore got token %d, not above the lost term's %d", cTerm.Token, b.Token)
	}
	var reg fence.Register
	if err := reg.Check(fence.Token(cTerm.Token)); err != nil {
		t.Fatalf("the new term's write: %v", err)
	}
	if err := reg.Check(fence.Token(b.Token)); !errors.Is(err, fence.ErrStaleToken) {
		t.Fatalf("the lost term's late write: %v, want an error wrapping fence.ErrStaleToken", err)
	}
}
