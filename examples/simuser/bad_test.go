package simuser

import (
	"context"
	"errors"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

// badMapStore is MapStore with a bug: CompareAndSwap writes over whatever
// revision is stored ("last write wins").
type badMapStore[M any] struct{ *MapStore[M] }

func (s badMapStore[M]) CompareAndSwap(ctx context.Context, name string, _ lease.Revision, next lease.Record[M]) (lease.Record[M], lease.Revision, error) {
	_, rev, err := s.MapStore.Get(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		rev = 0
	}
	return s.MapStore.CompareAndSwap(ctx, name, rev, next)
}
