package memstore

import "github.com/tenure-go/tenure/store"

var _ store.Lossy = (*Store[struct{}])(nil)

// MayLoseRecords reports false: a Store keeps its records for as long as
// the process runs, and electors in one process share it. It implements
// [store.Lossy]. Delete simulates a loss for tests; electors that must stay
// safe across such a loss need a store that reports true (a wrapper that
// says so, say).
func (s *Store[M]) MayLoseRecords() bool { return false }
