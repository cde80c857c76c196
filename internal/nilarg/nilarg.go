// Package nilarg tells whether an argument is nil in a way that would make
// its methods fail: the library's constructors and helpers use it to refuse
// a typed nil (a nil *memstore.Store in a store.Store[M], say) with an
// error instead of crashing later.
package nilarg

import "reflect"

// IsNil reports whether v is nil, or holds a nil pointer, map, slice,
// channel, function or interface.
func IsNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Chan, reflect.Func, reflect.Interface, reflect.UnsafePointer:
		return rv.IsNil()
	}
	return false
}
