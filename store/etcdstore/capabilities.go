package etcdstore

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
		return fmt.Errorf("etcdstore: CheckMetadata: %w", err)
	}
	if err := store.CheckCodec(s.codec, m); err != nil {
		return fmt.Errorf("etcdstore: CheckMetadata: %w", err)
	}
	return nil
}

var _ store.Validator = (*Store[struct{}])(nil)

// Validate returns an error wrapping [store.ErrNilArgument] when s is nil
// or was not made by New, and nil otherwise. It implements
// [store.Validator]. The other methods of such a Store return that error.
func (s *Store[M]) Validate() error {
	switch {
	case s == nil:
		return fmt.Errorf("etcdstore: %w: the *Store is nil (make one with New)", store.ErrNilArgument)
	case s.client == nil || s.codec == nil:
		return fmt.Errorf("etcdstore: %w: the Store was not made by New", store.ErrNilArgument)
	}
	return nil
}

// WatchCapabilities reports Authentic: every event Watch delivers comes from
// an etcd member over the client's own gRPC stream, as the key's value at
// the event's mod revision, and etcd sends a watch event only for a
// committed revision, in revision order (etcd's API guarantees: ordered,
// reliable, atomic watch events). Nobody who cannot write the key can make
// one up. Reads and transactions are linearizable (the Store asks for no
// serializable read), so a request sent after an event arrived is served at
// that revision or later. Events may come late, or not at all when the
// watch breaks (a compaction past the revision to resume from closes it),
// never forged. It is part of [store.Watcher].
func (s *Store[M]) WatchCapabilities() store.WatchCapabilities {
	return store.WatchCapabilities{Authentic: true}
}
