package store

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tenure-go/tenure/internal/nilarg"
	"github.com/tenure-go/tenure/lease"
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

// EncodeRecord is the prologue of a CompareAndSwap that stores metadata
// encoded with c: it checks next with ValidateRecord, encodes its metadata
// with EncodeMetadata, and decodes that encoding again, so that metadata
// the codec cannot read back is refused now rather than stored as a record
// nobody can read. It returns next with its metadata encoded (never nil)
// and its times stripped of their monotonic clock readings, as a store
// keeps them, and the decoded metadata, which shares nothing with
// next.Metadata: what CompareAndSwap returns to its caller.
//
// The error wraps ErrInvalidRecord or ErrTokenExhausted (from
// ValidateRecord), ErrEncode (also when the codec cannot decode its own
// encoding), ErrMetadataTooLarge, or ErrNilArgument for a nil c. The caller
// then writes nothing.
func EncodeRecord[M any](c Codec[M], next lease.Record[M]) (lease.Record[[]byte], M, error) {
	var zero M
	if err := ValidateRecord(next); err != nil {
		return lease.Record[[]byte]{}, zero, err
	}
	b, m, err := encodeChecked(c, next.Metadata)
	if err != nil {
		return lease.Record[[]byte]{}, zero, err
	}
	return lease.Record[[]byte]{
		Holder:        next.Holder,
		Token:         next.Token,
		AcquiredAt:    next.AcquiredAt.Round(0),
		RenewedAt:     next.RenewedAt.Round(0),
		LeaseDuration: next.LeaseDuration,
		Transitions:   next.Transitions,
		Claim:         next.Claim,
		Successor:     next.Successor,
		Stamp:         next.Stamp,
		Metadata:      b,
	}, m, nil
}

// encodeChecked encodes m with c (EncodeMetadata) and decodes the encoding
// again. It returns the encoding, never nil, and the decoded value.
func encodeChecked[M any](c Codec[M], m M) ([]byte, M, error) {
	var zero M
	b, err := EncodeMetadata(c, m)
	if err != nil {
		return nil, zero, err
	}
	if b == nil {
		b = []byte{}
	}
	d, err := c.Decode(b)
	if err != nil {
		return nil, zero, fmt.Errorf("%w: the codec cannot decode its own encoding: %v", ErrEncode, err)
	}
	return b, d, nil
}
