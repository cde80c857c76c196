package pgstore

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
	if err := store.CheckCodec(s.codec, m); err != nil {
		return fmt.Errorf("pgstore: CheckMetadata: %w", err)
	}
	return nil
}
