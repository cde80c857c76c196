package store

import (
	"context"
	"fmt"

	"github.com/tenure-go/tenure/internal/nilarg"
	"github.com/tenure-go/tenure/lease"
)

// Swap is one compare-and-swap of a batch (see Batcher): what
// CompareAndSwap's arguments say for one name.
type Swap[M any] struct {
	Name     string
	Expected lease.Revision
	Next     lease.Record[M]
}

// SwapResult is the outcome of one Swap of a batch: what CompareAndSwap
// would have returned for it (the record and revision stored or found,
// and an error wrapping the same sentinels).
type SwapResult[M any] struct {
	Record   lease.Record[M]
	Revision lease.Revision
	Err      error
}

// Batcher is implemented by stores that can send many compare-and-swaps
// in one round trip: one script call over many keys (redisstore), one
// pipeline of statements (pgstore), one transaction of one nested
// transaction per name (etcdstore). A lead.Group sends the renewals its
// leaders owe at the same instant through it, so that 10,000 elections
// cost a round trip per grain of its wake grid, not one per renewal.
//
// Each swap of a batch stays what CompareAndSwap is, alone: it compares
// and writes its own name atomically, and nothing about another swap of
// the batch (a conflict, an invalid name, a corrupt record, a token
// exhausted) changes whether it is applied or what it reports. A batch
// whose round trip fails (the network, ctx) reports that error for each
// swap whose outcome it cannot tell, as a single swap would. A name that
// appears twice is swapped twice, in the order given, as two calls of
// CompareAndSwap one after the other would be.
//
// It is for speed only: a store that does not implement it, says false,
// or is hidden by a wrapper has its swaps sent one at a time, which is
// always right. A wrapper forwards both methods (store.BatcherOf answers
// for any store); one that changes CompareAndSwap must not let its
// store's CompareAndSwapBatch be promoted past it.
type Batcher[M any] interface {
	// BatchesSwaps reports whether CompareAndSwapBatch sends a batch in
	// fewer round trips than its swaps: a wrapper answers for the store
	// it wraps.
	BatchesSwaps() bool
	// CompareAndSwapBatch runs each swap of swaps as CompareAndSwap would
	// and returns one result per swap, in the order of swaps. It must not
	// change swaps, nor keep it once it returns.
	CompareAndSwapBatch(ctx context.Context, swaps []Swap[M]) []SwapResult[M]
}

// BatcherOf returns st's Batcher when st implements it and says that it
// batches swaps, and nil (swap one name at a time) when it does not or
// st is nil.
func BatcherOf[M any](st Store[M]) Batcher[M] {
	if b, ok := st.(Batcher[M]); ok && !nilarg.IsNil(b) && b.BatchesSwaps() {
		return b
	}
	return nil
}

// CompareAndSwapBatch runs swaps on st and returns one result per swap, in
// their order: with st's CompareAndSwapBatch when BatcherOf finds one, and
// otherwise with st's CompareAndSwap, one swap after the other. A wrapper
// forwards CompareAndSwapBatch with it (and BatchesSwaps with BatcherOf).
// A nil ctx or st makes every result's error wrap ErrNilArgument; a
// Batcher that returns another number of results than swaps makes every
// result without one an error.
func CompareAndSwapBatch[M any](ctx context.Context, st Store[M], swaps []Swap[M]) []SwapResult[M] {
	out := make([]SwapResult[M], len(swaps))
	var bad string
	switch {
	case ctx == nil:
		bad = "ctx is nil"
	case nilarg.IsNil(st):
		bad = "st is nil"
	}
	if bad != "" {
		for i, sw := range swaps {
			out[i].Err = fmt.Errorf("store: CompareAndSwapBatch %q: %w: %s", sw.Name, ErrNilArgument, bad)
		}
		return out
	}
	if len(swaps) == 0 {
		return out
	}
	b := BatcherOf(st)
	if b == nil {
		return SwapEach(ctx, swaps, st.CompareAndSwap)
	}
	got := b.CompareAndSwapBatch(ctx, swaps)
	n := copy(out, got)
	for i := n; i < len(out); i++ {
		out[i].Err = fmt.Errorf("store: CompareAndSwapBatch %q: %T returned %d results for %d swaps: the outcome is unknown", swaps[i].Name, b, len(got), len(swaps))
	}
	return out
}

// SwapEach runs swaps one after the other with swap (a store's own
// CompareAndSwap) and returns their results: what a store that cannot
// batch some swaps (a name of its own slot, say) does for them.
func SwapEach[M any](ctx context.Context, swaps []Swap[M], swap func(ctx context.Context, name string, expected lease.Revision, next lease.Record[M]) (lease.Record[M], lease.Revision, error)) []SwapResult[M] {
	out := make([]SwapResult[M], len(swaps))
	for i, sw := range swaps {
		out[i].Record, out[i].Revision, out[i].Err = swap(ctx, sw.Name, sw.Expected, sw.Next)
	}
	return out
}
