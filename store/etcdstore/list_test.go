package etcdstore_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

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
	slices.Sort(names)
	testcluster.CheckList(t, ctx, st, "", names)
}
