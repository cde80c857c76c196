package store

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tenure-go/tenure/internal/nilarg"
)

// Codec turns metadata into bytes and back, for stores that serialize.
type Codec[M any] interface {
	Encode(m M) ([]byte, error)
	Decode(data []byte) (M, error)
}

// JSONCodec encodes metadata with encoding/json. It is the default codec.
type JSONCodec[M any] struct{}

// Encode returns the JSON encoding of m.
func (JSONCodec[M]) Encode(m M) ([]byte, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEncode, err)
	}
	return b, nil
}

// Decode parses JSON into a new M.
func (JSONCodec[M]) Decode(data []byte) (M, error) {
	var m M
	if err := json.Unmarshal(data, &m); err != nil {
		return m, fmt.Errorf("%w: metadata: %w", ErrCorruptRecord, err)
	}
	return m, nil
}

// EncodeMetadata encodes m with c and enforces MaxMetadataBytes. A nil c is
// an error wrapping ErrNilArgument.
func EncodeMetadata[M any](c Codec[M], m M) ([]byte, error) {
	if nilarg.IsNil(c) {
		return nil, fmt.Errorf("store: EncodeMetadata: %w: c is nil", ErrNilArgument)
	}
	b, err := c.Encode(m)
	if err != nil {
		if !errors.Is(err, ErrEncode) {
			err = fmt.Errorf("%w: %w", ErrEncode, err)
		}
		return nil, err
	}
	if len(b) > MaxMetadataBytes {
		return nil, fmt.Errorf("%w: %d bytes encoded, the limit is %d", ErrMetadataTooLarge, len(b), MaxMetadataBytes)
	}
	return b, nil
}
