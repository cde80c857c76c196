package pgstore

import "github.com/tenure-go/tenure/store"

var _ store.Lossy = (*Store[struct{}])(nil)

// MayLoseRecords reports false: PostgreSQL keeps a committed row across
// restarts and crashes. It implements [store.Lossy]. A failover to an
// asynchronous replica can lose the latest commits; if a record's creation
// can be lost that way in your setup, wrap the Store with a MayLoseRecords
// that reports true.
func (s *Store[M]) MayLoseRecords() bool { return false }
