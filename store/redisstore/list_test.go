package redisstore_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/redisstore"
)

// List finds every record through SCAN pages and pipelines smaller than the
// listing, names with escaped characters included, and leaves out the keys
// that are not records: the create gate's marker, and keys of others that
// share the prefix.
func TestListPagesAndSkipsKeysThatAreNoRecords(t *testing.T) {
	defer redisstore.SetListBatch(2)()
	srv := testcluster.PackageRedis(t)
	st, c := newStore(t, srv)
	ctx := t.Context()
	names := []string{"e", "a{b}", "c%7Bd", "b%", "d", "f*", "g?"}
	for _, n := range names {
		mustSwap(t, st, n, 0, rec("h-"+n, 1))
	}
	key, err := st.Key("a")
	if err != nil {
		t.Fatal(err)
	}
	prefix := key[:len(key)-len("tenure:{a}")]
	if n, err := c.Exists(ctx, prefix+"tenure:marker").Result(); err != nil || n != 1 {
		t.Fatalf("EXISTS of the create gate's marker = %d, %v; want it written by the creates", n, err)
	}
	for _, k := range []string{prefix + "tenure:{x}:other", prefix + "tenure:{bad%ZZ}", prefix + "tenure:{x", prefix + "other"} {
		if err := c.Set(ctx, k, "not a record", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(names)
	testcluster.CheckList(t, ctx, st, "", names)

	// A record's key holding a string reads, as Get reads it, as corrupt:
	// it is listed with its Err.
	if err := c.Set(ctx, prefix+"tenure:{wrongtype}", "not a hash", 0).Err(); err != nil {
		t.Fatal(err)
	}
	got, err := st.List(ctx, "wrong")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Name != "wrongtype" || !errors.Is(got[0].Err, store.ErrCorruptRecord) {
		t.Errorf("List of a key of another type = %+v; want wrongtype with Err wrapping store.ErrCorruptRecord", got)
	}
}
