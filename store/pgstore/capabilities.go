package pgstore

import (
	"fmt"

	"github.com/tenure-go/tenure/store"
)

var (
	_ store.MetadataChecker[struct{}] = (*Store[struct{}])(nil)
	_ store.ReleaseGuard[struct{}]    = (*Store[struct{}])(nil)
)

// CheckMetadata returns the error CompareAndSwap would return for m: one
// wrapping [store.ErrEncode] when the Store's codec cannot encode m or
// decode what it encoded, or [store.ErrMetadataTooLarge] when the encoding
// exceeds [store.MaxMetadataBytes]. It sends nothing to the server. It
// implements [store.MetadataChecker].
func (s *Store[M]) CheckMetadata(m M) error {
	if err := s.Validate(); err != nil {
		return fmt.Errorf("pgstore: CheckMetadata: %w", err)
	}
	if err := store.CheckCodec(s.codec, m); err != nil {
		return fmt.Errorf("pgstore: CheckMetadata: %w", err)
	}
	return nil
}

var _ store.Lossy = (*Store[struct{}])(nil)

// MayLoseRecords reports false: PostgreSQL keeps a committed row across
// restarts and crashes. It implements [store.Lossy]. A failover to an
// asynchronous replica can lose the latest commits; if a record's creation
// can be lost that way in your setup, wrap the Store with a MayLoseRecords
// that reports true.
func (s *Store[M]) MayLoseRecords() bool { return false }

var _ store.Validator = (*Store[struct{}])(nil)

// Validate returns an error wrapping [store.ErrNilArgument] when s is nil
// or was not made by New, and nil otherwise. It implements
// [store.Validator]. The other methods of such a Store return that error.
// It sends nothing to the server: Migrate and the first operation check
// the table, and fail with an error wrapping ErrSchema when it cannot hold
// the records.
func (s *Store[M]) Validate() error {
	switch {
	case s == nil:
		return fmt.Errorf("pgstore: %w: the *Store is nil (make one with New)", store.ErrNilArgument)
	case s.pool == nil:
		return fmt.Errorf("pgstore: %w: the Store was not made by New", store.ErrNilArgument)
	}
	return nil
}

// WatchCapabilities reports the zero value: anyone who can connect to the
// database can NOTIFY on the channel a Store listens to, so an event is a
// hint, read before it is acted on. It is part of
// [store.Watcher].
func (s *Store[M]) WatchCapabilities() store.WatchCapabilities { return store.WatchCapabilities{} }
