package kubestore

import (
	"fmt"

	"github.com/tenure-go/tenure/store"
)

var _ store.MetadataChecker[struct{}] = (*Store[struct{}])(nil)

// CheckMetadata returns the error CompareAndSwap would return for m: one
// wrapping [store.ErrEncode] when the Store's codec cannot encode m or
// decode what it encoded, or [store.ErrMetadataTooLarge] when the encoding
// exceeds [store.MaxMetadataBytes]. It sends nothing to the server. It
// implements [store.MetadataChecker].
func (s *Store[M]) CheckMetadata(m M) error {
	if err := s.Validate(); err != nil {
		return fmt.Errorf("kubestore: CheckMetadata: %w", err)
	}
	if err := store.CheckCodec(s.codec, m); err != nil {
		return fmt.Errorf("kubestore: CheckMetadata: %w", err)
	}
	return nil
}

var _ store.Lossy = (*Store[struct{}])(nil)

// MayLoseRecords reports false: the API server keeps Leases in etcd, which
// loses no committed write. It implements [store.Lossy].
func (s *Store[M]) MayLoseRecords() bool { return false }

var _ store.Validator = (*Store[struct{}])(nil)

// Validate returns an error wrapping [store.ErrNilArgument] when s is nil
// or was not made by New, and nil otherwise. It implements
// [store.Validator]. The other methods of such a Store return that error.
func (s *Store[M]) Validate() error {
	switch {
	case s == nil:
		return fmt.Errorf("kubestore: %w: the *Store is nil (make one with New)", store.ErrNilArgument)
	case s.leases == nil:
		return fmt.Errorf("kubestore: %w: the Store was not made by New", store.ErrNilArgument)
	}
	return nil
}

// WatchCapabilities reports Authentic: every event Watch delivers comes from
// the API server over the client's own connection, which authenticates the
// server (and RBAC decides who may write the Lease): nobody who cannot write
// the Lease can make one up. The server sends an event only after the
// write is committed in etcd, its resourceVersion is the etcd revision of
// that write, and Watch delivers strictly increasing resourceVersions; a
// GET (a quorum read, resourceVersion "") or a PUT sent after an event
// arrived is served at that revision or later. Events may come late (a
// watch from resourceVersion "0" may start with a Lease the server's cache
// still held) or be lost (a 410 after a compaction, which Watch answers with
// a GET), never forged. It is part of [store.Watcher].
func (s *Store[M]) WatchCapabilities() store.WatchCapabilities {
	return store.WatchCapabilities{Authentic: true}
}
