package lead_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/memstore"
)

// vouchingStore is a store that says it may lose records and vouches for
// every create it makes (as redisstore does once its marker has stood a
// lease), through store.CreateVoucher. A create it vouches for is no
// claim, so it stores it with Claim false.
type vouchingStore struct{ store.Store[meta] }

func (vouchingStore) MayLoseRecords() bool { return true }

func (vouchingStore) VouchesCreates() bool { return true }

func (s vouchingStore) CreateVouched(ctx context.Context, name string, next lease.Record[meta]) (lease.Record[meta], lease.Revision, bool, error) {
	next.Claim = false
	rec, rev, err := s.Store.CompareAndSwap(ctx, name, 0, next)
	return rec, rev, err == nil, err
}

// On a store that may lose records, a create the store vouches for is led
// on at once: the first leader of a new name comes within a read and a
// create, not a LeaseDuration later.
func TestVouchedCreateLeadsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := vouchingStore{memstore.New[meta]()}
		began := time.Now()
		a := start(t, st, "a")
		firstLeader(t, a)
		if took := time.Since(began); took >= fastConfig().LeaseDuration {
			t.Fatalf("the first leader came %v after the start, after the claim wait", took)
		}
	})
}

// vouchHiding wraps a vouching store, forwarding MayLoseRecords but not
// CreateVoucher, as a wrapper that embeds store.Store does.
type vouchHiding struct{ store.Store[meta] }

func (vouchHiding) MayLoseRecords() bool { return true }

// A wrapper that hides the store's CreateVoucher makes every create a
// claim again: the first leader waits a LeaseDuration.
func TestWrapperHidingTheVouchMakesEveryCreateAClaim(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := vouchHiding{vouchingStore{memstore.New[meta]()}}
		a := start(t, st, "a")
		time.Sleep(fastConfig().LeaseDuration - time.Millisecond)
		synctest.Wait()
		if a.e.IsLeader() {
			t.Fatal("the first leader came before a LeaseDuration passed: its create was not taken for a claim")
		}
		time.Sleep(fastConfig().LeaseDuration)
		firstLeader(t, a)
	})
}
