package memstore

import (
	"fmt"

	"github.com/tenure-go/tenure/store"
)

var (
	_ store.Lossy                  = (*Store[struct{}])(nil)
	_ store.Immediate              = (*Store[struct{}])(nil)
	_ store.ReleaseGuard[struct{}] = (*Store[struct{}])(nil)
)

// AnswersImmediately reports true: Get and CompareAndSwap work in memory
// under the Store's lock, which nothing holds while it waits, and return.
// It implements [store.Immediate].
func (s *Store[M]) AnswersImmediately() bool { return true }

// MayLoseRecords reports false: a Store keeps its records for as long as
// the process runs, and electors in one process share it. It implements
// [store.Lossy]. Delete simulates a loss for tests; electors that must stay
// safe across such a loss need a store that reports true (a wrapper that
// says so, say).
func (s *Store[M]) MayLoseRecords() bool { return false }

var _ store.MetadataChecker[struct{}] = (*Store[struct{}])(nil)

// CheckMetadata returns the error CompareAndSwap would return for m: one
// wrapping [store.ErrEncode] when the codec cannot encode m or decode what
// it encoded, or [store.ErrMetadataTooLarge] when the encoding exceeds
// [store.MaxMetadataBytes]. It implements [store.MetadataChecker].
func (s *Store[M]) CheckMetadata(m M) error {
	if err := s.Validate(); err != nil {
		return fmt.Errorf("memstore: CheckMetadata: %w", err)
	}
	if err := store.CheckCodec(s.codec, m); err != nil {
		return fmt.Errorf("memstore: CheckMetadata: %w", err)
	}
	return nil
}

var _ store.Validator = (*Store[struct{}])(nil)

// Validate returns an error wrapping [store.ErrNilArgument] when s is nil
// or was not made by New, and nil otherwise. It implements
// [store.Validator].
func (s *Store[M]) Validate() error {
	switch {
	case s == nil:
		return fmt.Errorf("memstore: %w: the *Store is nil (make one with New)", store.ErrNilArgument)
	case s.codec == nil || s.names == nil:
		return fmt.Errorf("memstore: %w: the Store was not made by New", store.ErrNilArgument)
	}
	return nil
}

// WatchCapabilities reports Authentic: only the Store produces the events
// of Watch, in its own process, publishing each write under its lock after
// it was made, in revision order. It is part of [store.Watcher].
func (s *Store[M]) WatchCapabilities() store.WatchCapabilities {
	return store.WatchCapabilities{Authentic: true}
}
