package memstore

import (
	"context"

	"github.com/tenure-go/tenure/store"
)

var _ store.Batcher[struct{}] = (*Store[struct{}])(nil)

// BatchesSwaps reports true. It is part of [store.Batcher].
func (s *Store[M]) BatchesSwaps() bool { return true }

// CompareAndSwapBatch runs each swap as CompareAndSwap does, in the order
// given, and returns their results. A memstore has no round trip to save:
// it implements [store.Batcher] so that a lead.Group's batched renewals
// run on it as on a networked store.
func (s *Store[M]) CompareAndSwapBatch(ctx context.Context, swaps []store.Swap[M]) []store.SwapResult[M] {
	return store.SwapEach(ctx, swaps, s.CompareAndSwap)
}
