package memstore

import "reflect"

// copiedByValue reports whether a value of type t shares nothing when it
// is copied: no pointer, map, slice, interface, channel or function
// anywhere inside it (strings are immutable, so sharing their bytes is
// harmless). A decoded value of such a type can be handed to any number of
// receivers, each getting a copy of its own, instead of being decoded again
// for each. A nil t (an interface type parameter) is not.
func copiedByValue(t reflect.Type) bool {
	if t == nil {
		return false
	}
	switch t.Kind() {
	case reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128,
		reflect.String:
		return true
	case reflect.Array:
		return copiedByValue(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if !copiedByValue(t.Field(i).Type) {
				return false
			}
		}
		return true
	default:
		return false
	}
}

// encodedByValue reports whether equal values of type t (compared with ==)
// always have the same encoding: t is copied by value (so comparable) and
// holds no floating-point number (0 and -0 are equal and encode apart;
// NaN is equal to nothing) and no blank field (== skips it, a codec might
// not).
func encodedByValue(t reflect.Type) bool {
	if !copiedByValue(t) {
		return false
	}
	switch t.Kind() {
	case reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return false
	case reflect.Array:
		return encodedByValue(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); f.Name == "_" || !encodedByValue(f.Type) {
				return false
			}
		}
	}
	return true
}
