package kubestore_test

import (
	"slices"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/store/kubestore"
)

// List finds every Lease of the namespace through pages smaller than the
// listing, and lists a Lease that client-go wrote as Get reads it (Token
// 0, no metadata).
func TestListPagesAndReadsLeasesAsGetDoes(t *testing.T) {
	defer kubestore.SetListPage(2)()
	e := newEnv(t, "list")
	st := newStore[meta](t, e.client, e.ns)
	ctx := ctx(t)
	names := []string{"e", "a.b", "c", "b", "d"}
	for _, n := range names {
		if _, _, err := st.CompareAndSwap(ctx, n, 0, record("h-"+n, 1)); err != nil {
			t.Fatal(err)
		}
	}
	holder, secs := "client-go-pod", int32(15)
	foreign := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "client-go"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, RenewTime: &metav1.MicroTime{Time: metav1.Now().Time}}}
	if _, err := e.client.CoordinationV1().Leases(e.ns).Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	names = append(names, "client-go")
	slices.Sort(names)
	testcluster.CheckList(t, ctx, st, "", names)
	rec, _, err := st.Get(ctx, "client-go")
	if err != nil || rec.Holder != holder || rec.Token != 0 {
		t.Errorf("the Lease client-go wrote reads as holder %q, Token %d, error %v; want %q, 0", rec.Holder, rec.Token, err, holder)
	}
}
