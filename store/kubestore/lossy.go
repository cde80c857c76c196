package kubestore

import "github.com/tenure-go/tenure/store"

var _ store.Lossy = (*Store[struct{}])(nil)

// MayLoseRecords reports false: the API server keeps Leases in etcd, which
// loses no committed write. It implements [store.Lossy].
func (s *Store[M]) MayLoseRecords() bool { return false }
