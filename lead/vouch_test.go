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
// lease), through the context of the swap. A create it vouches for is no
// claim, so it stores it with Claim false.
type vouchingStore struct{ store.Store[meta] }

func (vouchingStore) MayLoseRecords() bool { return true }

func (s vouchingStore) CompareAndSwap(ctx context.Context, name string, expected lease.Revision, next lease.Record[meta]) (lease.Record[meta], lease.Revision, error) {
	if expected == 0 {
		next.Claim = false
	}
	rec, rev, err := s.Store.CompareAndSwap(ctx, name, expected, next)
	if err == nil && expected == 0 {
		store.VouchCreate(ctx)
	}
	return rec, rev, err
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

// A wrapper that drops the vouch (it swaps through another context) makes
// every create a claim again: the first leader waits a LeaseDuration.
type vouchDropping struct{ vouchingStore }

func (s vouchDropping) CompareAndSwap(_ context.Context, name string, expected lease.Revision, next lease.Record[meta]) (lease.Record[meta], lease.Revision, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(context.Background()), time.Second)
	defer cancel()
	return s.vouchingStore.CompareAndSwap(ctx, name, expected, next)
}

func TestDroppedVouchIsAClaim(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := vouchDropping{vouchingStore{memstore.New[meta]()}}
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
