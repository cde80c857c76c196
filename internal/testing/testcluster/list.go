package testcluster

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/tenure-go/tenure/store"
)

// CheckList checks that st's List of prefix lists exactly the names want,
// in that order, each readable and as Get returns it (the same record and
// revision). st must implement store.Lister.
func CheckList[M any](tb testing.TB, ctx context.Context, st store.Store[M], prefix string, want []string) {
	tb.Helper()
	got, err := store.List(ctx, st, prefix)
	if err != nil {
		tb.Fatalf("List(%q): %v", prefix, err)
	}
	var names []string
	for _, x := range got {
		names = append(names, x.Name)
		rec, rev, err := st.Get(ctx, x.Name)
		if err != nil || x.Err != nil {
			tb.Fatalf("%q: Get error %v, listed with Err %v", x.Name, err, x.Err)
		}
		if rev != x.Revision {
			tb.Errorf("%q listed at revision %d, Get returns %d", x.Name, x.Revision, rev)
		}
		if d := cmp.Diff(rec, x.Record, cmpopts.EquateEmpty()); d != "" {
			tb.Errorf("%q listed unlike Get returns it (-get +list):\n%s", x.Name, d)
		}
	}
	if !slices.Equal(names, want) {
		tb.Errorf("List(%q) listed %q, want %q", prefix, names, want)
	}
}
