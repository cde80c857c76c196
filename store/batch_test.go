package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

// batcher is a store that batches swaps when yes; it counts its batches
// and answers each swap as bare does, save a name "conflict".
type batcher struct {
	bare
	yes     bool
	batches int
	short   bool // answers one result too few
}

func (b *batcher) BatchesSwaps() bool { return b.yes }

func (b *batcher) CompareAndSwapBatch(ctx context.Context, swaps []store.Swap[int]) []store.SwapResult[int] {
	b.batches++
	out := store.SwapEach(ctx, swaps, b.CompareAndSwap)
	if b.short {
		out = out[:len(out)-1]
	}
	return out
}

func (b *batcher) CompareAndSwap(ctx context.Context, name string, expected lease.Revision, next lease.Record[int]) (lease.Record[int], lease.Revision, error) {
	if name == "conflict" {
		return lease.Record[int]{Holder: "other"}, 7, store.ErrConflict
	}
	return b.bare.CompareAndSwap(ctx, name, expected, next)
}

// batcherWrapper forwards the batch with the package's helpers.
type batcherWrapper struct{ store.Store[int] }

func (w batcherWrapper) BatchesSwaps() bool { return store.BatcherOf(w.Store) != nil }

func (w batcherWrapper) CompareAndSwapBatch(ctx context.Context, swaps []store.Swap[int]) []store.SwapResult[int] {
	return store.CompareAndSwapBatch(ctx, w.Store, swaps)
}

// Only a store that says so batches: not one without the method, one that
// says false, one hidden by an embedding wrapper, a nil store or a typed
// nil. A wrapper that forwards with the helpers answers for its store.
func TestBatcherOfFindsOnlyAStoreThatSaysSo(t *testing.T) {
	var nilBatcher *batcher
	yes := &batcher{yes: true}
	tests := []struct {
		name string
		st   store.Store[int]
		want bool
	}{
		{"nil store", nil, false},
		{"store without Batcher", bare{}, false},
		{"store that says yes", yes, true},
		{"store that says no", &batcher{}, false},
		{"embedding wrapper hides it", struct{ store.Store[int] }{yes}, false},
		{"forwarding wrapper of a batcher", batcherWrapper{yes}, true},
		{"forwarding wrapper of a store without one", batcherWrapper{bare{}}, false},
		{"typed nil", nilBatcher, false},
	}
	for _, tt := range tests {
		if got := store.BatcherOf(tt.st) != nil; got != tt.want {
			t.Errorf("%s: BatcherOf found one: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// CompareAndSwapBatch uses the store's batch when it has one, and single
// swaps otherwise, with the same result per swap either way; a short
// answer is an error for the swaps left without a result, never a
// success.
func TestCompareAndSwapBatchGivesOneResultPerSwap(t *testing.T) {
	ctx := context.Background()
	swaps := []store.Swap[int]{
		{Name: "a", Next: lease.Record[int]{Holder: "me", Metadata: 1}},
		{Name: "conflict", Expected: 3},
		{Name: "b", Expected: 2, Next: lease.Record[int]{Holder: "me", Metadata: 2}},
	}
	check := func(label string, got []store.SwapResult[int]) {
		t.Helper()
		if len(got) != 3 {
			t.Fatalf("%s: %d results for 3 swaps", label, len(got))
		}
		if got[0].Err != nil || got[0].Record.Metadata != 1 || got[2].Err != nil || got[2].Record.Metadata != 2 {
			t.Errorf("%s: results %+v, want a and b written, each with its own record", label, got)
		}
		if !errors.Is(got[1].Err, store.ErrConflict) || got[1].Revision != 7 || got[1].Record.Holder != "other" {
			t.Errorf("%s: the conflicting swap gave %+v, want ErrConflict with the record found", label, got[1])
		}
	}
	yes := &batcher{yes: true}
	check("batcher", store.CompareAndSwapBatch(ctx, yes, swaps))
	if yes.batches != 1 {
		t.Errorf("a Batcher got %d batches, want 1", yes.batches)
	}
	no := &batcher{}
	check("batcher that says no", store.CompareAndSwapBatch(ctx, no, swaps))
	if no.batches != 0 {
		t.Errorf("a store that says no got %d batches, want single swaps", no.batches)
	}
	check("wrapper", store.CompareAndSwapBatch(ctx, batcherWrapper{yes}, swaps))

	short := store.CompareAndSwapBatch(ctx, &batcher{yes: true, short: true}, swaps)
	if short[2].Err == nil {
		t.Errorf("a swap the store gave no result for reported success: %+v", short[2])
	}
	if got := store.CompareAndSwapBatch(ctx, yes, nil); len(got) != 0 {
		t.Errorf("an empty batch gave %d results", len(got))
	}
	//lint:ignore SA1012 a nil ctx is what is tested
	for _, r := range store.CompareAndSwapBatch(nil, yes, swaps) { //nolint:staticcheck
		if !errors.Is(r.Err, store.ErrNilArgument) {
			t.Errorf("nil ctx: %v, want ErrNilArgument", r.Err)
		}
	}
	for _, r := range store.CompareAndSwapBatch(ctx, nil, swaps) {
		if !errors.Is(r.Err, store.ErrNilArgument) {
			t.Errorf("nil store: %v, want ErrNilArgument", r.Err)
		}
	}
}
