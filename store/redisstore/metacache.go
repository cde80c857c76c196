package redisstore

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"sync/atomic"

	"github.com/tenure-go/tenure/store"
)

// metaCache is the metadata a watch decoded last, kept to hand out again
// when a heard record carries the same encoding: a follower hears every
// renewal, whose metadata rarely changes. It is used only where handing
// out a copy of the same value is decoding again (see reusesMeta).
type metaCache[M any] struct {
	enc string // the encoding decoded, a copy of its own
	m   M
	ok  bool
}

// reusesMeta reports whether a value of M decoded by codec may be handed
// out again for the same encoding: the codec is the default JSON codec,
// which decodes the same bytes to the same value unless M decodes itself,
// and M holds no reference (no pointer, map, slice, channel, function or
// interface), so that a copy shares nothing a receiver could change.
func reusesMeta[M any](codec store.Codec[M]) bool {
	if _, ok := codec.(store.JSONCodec[M]); !ok {
		return false
	}
	return plainJSON(reflect.TypeFor[M]())
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// plainJSON reports whether t holds no reference and neither it nor a part
// of it decodes itself from JSON.
func plainJSON(t reflect.Type) bool {
	if p := reflect.PointerTo(t); p.Implements(jsonUnmarshaler) || p.Implements(textUnmarshaler) {
		return false
	}
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.String:
		return true
	case reflect.Array:
		return plainJSON(t.Elem())
	case reflect.Struct:
		for f := range t.Fields() {
			if !plainJSON(f.Type) {
				return false
			}
		}
		return true
	}
	return false
}

// decodeMeta decodes enc, or hands out again what c holds for it.
func (s *Store[M]) decodeMeta(enc string, c *metaCache[M]) (M, error) {
	if c != nil && c.ok && c.enc == enc {
		return c.m, nil
	}
	m, err := s.codec.Decode([]byte(enc))
	if err == nil && c != nil {
		c.enc, c.m, c.ok = strings.Clone(enc), m, true
	}
	return m, err
}

// lastDecoded is the codec a Store that reuses metadata swaps with: it
// encodes with the Store's codec and hands out again the value it decoded
// last for the same encoding. store.EncodeRecord decodes every encoding a
// swap is about to write, and a renewal's metadata is, most of the time,
// the one the swap before it wrote.
type lastDecoded[M any] struct {
	codec store.Codec[M]
	last  atomic.Pointer[metaCache[M]]
}

// Encode encodes m with the Store's codec.
func (c *lastDecoded[M]) Encode(m M) ([]byte, error) { return c.codec.Encode(m) }

// Decode decodes data with the Store's codec, or hands out again what it
// decoded last for the same bytes.
func (c *lastDecoded[M]) Decode(data []byte) (M, error) {
	if l := c.last.Load(); l != nil && l.enc == string(data) {
		return l.m, nil
	}
	m, err := c.codec.Decode(data)
	if err == nil {
		c.last.Store(&metaCache[M]{enc: string(data), m: m, ok: true})
	}
	return m, err
}

// swapCodec returns the codec a Store made with codec swaps with: codec
// itself, or one that hands out again what it decoded last where handing
// out a copy of the same value is decoding again (reusesMeta).
func swapCodec[M any](codec store.Codec[M], reuse bool) store.Codec[M] {
	if !reuse {
		return codec
	}
	return &lastDecoded[M]{codec: codec}
}
