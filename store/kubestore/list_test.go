package kubestore_test

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	got, err := st.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	var listed []string
	for _, x := range got {
		listed = append(listed, x.Name)
		r, rev, err := st.Get(ctx, x.Name)
		if err != nil || x.Err != nil {
			t.Fatalf("%q: Get error %v, listed with Err %v", x.Name, err, x.Err)
		}
		if rev != x.Revision {
			t.Errorf("%q listed at revision %d, Get returns %d", x.Name, x.Revision, rev)
		}
		if d := cmp.Diff(r, x.Record, cmpopts.EquateEmpty()); d != "" {
			t.Errorf("%q listed unlike Get returns it (-get +list):\n%s", x.Name, d)
		}
		if x.Name == "client-go" && (x.Record.Holder != holder || x.Record.Token != 0) {
			t.Errorf("the Lease client-go wrote listed with holder %q, Token %d; want %q, 0", x.Record.Holder, x.Record.Token, holder)
		}
	}
	if !slices.Equal(listed, names) {
		t.Errorf("List listed %q, want %q", listed, names)
	}
}
