package etcdstore_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/etcdstore"
)

// The renewals of a batch go in one transaction (every one written gets
// its revision), one nested transaction per name: a name another process
// renewed since conflicts alone, reporting that process's record, and the
// names beside it are written.
func TestBatchRenewsInOneTransactionEachNameAlone(t *testing.T) {
	e := testcluster.PackageEtcd(t)
	prefix := uniquePrefix(t)
	a, err := etcdstore.New[meta](newClient(t, e), etcdstore.WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	b, err := etcdstore.New[meta](newClient(t, e), etcdstore.WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	var swaps []store.Swap[meta]
	for i := range 6 {
		name := fmt.Sprint("job-", i)
		got, rev, err := a.CompareAndSwap(ctx, name, 0, rec("a", 1))
		if err != nil {
			t.Fatal(err)
		}
		got.RenewedAt = time.Now()
		swaps = append(swaps, store.Swap[meta]{Name: name, Expected: rev, Next: got})
	}
	// Another process renews job-2 behind a's back.
	other, otherRev, err := b.CompareAndSwap(ctx, "job-2", swaps[2].Expected, swaps[2].Next)
	if err != nil {
		t.Fatal(err)
	}
	res := a.CompareAndSwapBatch(ctx, swaps)
	var written lease.Revision
	for i, r := range res {
		if i == 2 {
			if !errors.Is(r.Err, store.ErrConflict) || r.Revision != otherRev || r.Record.Token != other.Token {
				t.Errorf("job-2: %+v at %d, %v; want a conflict with the other process's renewal at %d", r.Record, r.Revision, r.Err, otherRev)
			}
			continue
		}
		if r.Err != nil || r.Revision <= swaps[i].Expected {
			t.Fatalf("job-%d: revision %d, %v: want written", i, r.Revision, r.Err)
		}
		if written == 0 {
			written = r.Revision
		} else if r.Revision != written {
			t.Errorf("job-%d written at revision %d, another name of the batch at %d: want one transaction", i, r.Revision, written)
		}
		got, rev, err := a.Get(ctx, swaps[i].Name)
		if err != nil || rev != r.Revision || !got.RenewedAt.Equal(r.Record.RenewedAt) {
			t.Errorf("job-%d: stored %+v at %d (%v), the batch said %+v at %d", i, got, rev, err, r.Record, r.Revision)
		}
	}
}
