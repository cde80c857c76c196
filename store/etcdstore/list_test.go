package etcdstore_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/store/etcdstore"
)

// List finds every record through range requests smaller than the listing,
// and leaves out the token keys and the keys of others under the prefix.
func TestListPagesAndSkipsKeysThatAreNoRecords(t *testing.T) {
	defer etcdstore.SetListPage(2)()
	cli := newClient(t, testcluster.PackageEtcd(t))
	prefix := fmt.Sprintf("list-%d/", time.Now().UnixNano())
	st, err := etcdstore.New[meta](cli, etcdstore.WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	names := []string{"e", "a/b", "c", "b", "d"}
	for _, n := range names {
		if _, _, err := st.CompareAndSwap(ctx, n, 0, rec("h-"+n, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cli.Put(ctx, prefix+"other/x", "not a record"); err != nil {
		t.Fatal(err)
	}
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
	}
	if !slices.Equal(listed, names) {
		t.Errorf("List listed %q, want %q", listed, names)
	}
}
