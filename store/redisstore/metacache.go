package redisstore

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"

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
