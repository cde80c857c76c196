package exhaust

import (
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"sync"
	"unsafe"

	"github.com/tenure-go/tenure/fsm"
)

// A codec encodes every field of a struct type, found by reflection once:
// a plan of leaves (booleans, integers, floats, strings) at their offsets,
// nested structs flattened. A field of a kind it cannot encode (a pointer,
// a slice, a map, an interface) makes building the plan panic, unless it is
// one of the fields named to skip: so a field added to the type later is
// encoded, or noticed.
type codec struct {
	typ    reflect.Type
	leaves []leaf
}

type leaf struct {
	off  uintptr
	kind reflect.Kind
	path string
}

// newCodec builds the plan for t, skipping the top-level fields named in
// skip (each must exist).
func newCodec(t reflect.Type, skip ...string) *codec {
	c := &codec{typ: t}
	for _, s := range skip {
		if _, ok := t.FieldByName(s); !ok {
			panic(fmt.Sprintf("exhaust: %v has no field %s to skip", t, s))
		}
	}
	c.walk(t, 0, "", skip)
	return c
}

func (c *codec) walk(t reflect.Type, base uintptr, prefix string, skip []string) {
	for i := range t.NumField() {
		f := t.Field(i)
		if prefix == "" && contains(skip, f.Name) {
			continue
		}
		path := prefix + f.Name
		switch k := f.Type.Kind(); k {
		case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float64, reflect.String:
			c.leaves = append(c.leaves, leaf{off: base + f.Offset, kind: k, path: path})
		case reflect.Struct:
			c.walk(f.Type, base+f.Offset, path+".", nil)
		default:
			panic(fmt.Sprintf("exhaust: field %s.%s is a %v: teach the state encoding how to encode it, or why to skip it", c.typ, path, k))
		}
	}
}

func contains(s []string, x string) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

// appendKey appends the encoding of the struct at p (of the codec's type).
func (c *codec) appendKey(b []byte, p unsafe.Pointer) []byte {
	for _, l := range c.leaves {
		q := unsafe.Add(p, l.off)
		switch l.kind {
		case reflect.Bool:
			if *(*bool)(q) {
				b = append(b, 1)
			} else {
				b = append(b, 0)
			}
		case reflect.Int:
			b = binary.AppendVarint(b, int64(*(*int)(q)))
		case reflect.Int8:
			b = binary.AppendVarint(b, int64(*(*int8)(q)))
		case reflect.Int16:
			b = binary.AppendVarint(b, int64(*(*int16)(q)))
		case reflect.Int32:
			b = binary.AppendVarint(b, int64(*(*int32)(q)))
		case reflect.Int64:
			b = binary.AppendVarint(b, *(*int64)(q))
		case reflect.Uint:
			b = binary.AppendUvarint(b, uint64(*(*uint)(q)))
		case reflect.Uint8:
			b = append(b, *(*uint8)(q))
		case reflect.Uint16:
			b = binary.AppendUvarint(b, uint64(*(*uint16)(q)))
		case reflect.Uint32:
			b = binary.AppendUvarint(b, uint64(*(*uint32)(q)))
		case reflect.Uint64:
			b = binary.AppendUvarint(b, *(*uint64)(q))
		case reflect.Float64:
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(*(*float64)(q)))
		case reflect.String:
			s := *(*string)(q)
			b = binary.AppendUvarint(b, uint64(len(s)))
			b = append(b, s...)
		}
	}
	return b
}

// machineCodec encodes every field of fsm.Machine but two:
//   - out, the buffer of the actions Step returns: Step empties it before
//     it emits anything, and the driver copies the actions out at once, so
//     what it holds between steps never matters;
//   - rand, the source of the retry jitter: every bound runs with
//     RetryJitter 0, so the machine never draws from it, and the source
//     the checker gives (zeroRand) has no state.
var machineCodec = sync.OnceValue(func() *codec {
	return newCodec(reflect.TypeFor[fsm.Machine](), "out", "rand")
})

// appendMachine appends the canonical encoding of m.
func appendMachine(b []byte, m *fsm.Machine) []byte {
	return machineCodec().appendKey(b, unsafe.Pointer(m))
}

// appendValue appends the encoding of v, a struct of encodable fields (an
// oracle's Snapshot), by reflection, but for the fields named in skip.
func appendValue(b []byte, v any, skip ...string) []byte {
	if v == nil {
		return append(b, 0)
	}
	rv := reflect.ValueOf(v)
	c := valueCodec(rv.Type(), skip)
	p := reflect.New(rv.Type())
	p.Elem().Set(rv)
	return c.appendKey(append(b, 1), p.UnsafePointer())
}

var valueCodecs sync.Map // reflect.Type -> *codec (one skip list per type)

func valueCodec(t reflect.Type, skip []string) *codec {
	if c, ok := valueCodecs.Load(t); ok {
		return c.(*codec)
	}
	c := newCodec(t, skip...)
	valueCodecs.Store(t, c)
	return c
}

// zeroRand is the checker's fsm.Rand: always 0, no state.
type zeroRand struct{}

func (zeroRand) Float64() float64 { return 0 }
