package redisstore

import (
	"fmt"

	"github.com/tenure-go/tenure/store"
)

var (
	_ store.MetadataChecker[struct{}] = (*Store[struct{}])(nil)
	_ store.ReleaseGuard[struct{}]    = (*Store[struct{}])(nil)
	_ store.CreateVoucher[struct{}]   = (*Store[struct{}])(nil)
)

// CheckMetadata returns the error CompareAndSwap would return for m: one
// wrapping [store.ErrEncode] when the Store's codec cannot encode m or
// decode what it encoded, or [store.ErrMetadataTooLarge] when the encoding
// exceeds [store.MaxMetadataBytes]. It sends nothing to the server. It
// implements [store.MetadataChecker].
func (s *Store[M]) CheckMetadata(m M) error {
	if err := s.Validate(); err != nil {
		return fmt.Errorf("redisstore: CheckMetadata: %w", err)
	}
	if err := store.CheckCodec(s.codec, m); err != nil {
		return fmt.Errorf("redisstore: CheckMetadata: %w", err)
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
		return fmt.Errorf("redisstore: %w: the *Store is nil (make one with New)", store.ErrNilArgument)
	case s.client == nil:
		return fmt.Errorf("redisstore: %w: the Store was not made by New", store.ErrNilArgument)
	}
	return nil
}

// WatchCapabilities reports the zero value: anyone who can connect to the
// server can PUBLISH on the channel a Store watches, so an event is a hint,
// read before it is acted on. It is part of
// [store.Watcher].
func (s *Store[M]) WatchCapabilities() store.WatchCapabilities { return store.WatchCapabilities{} }
