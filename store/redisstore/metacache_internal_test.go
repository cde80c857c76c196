package redisstore

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/tenure-go/tenure/store"
)

type selfDecoding struct{ A int }

func (s *selfDecoding) UnmarshalJSON(b []byte) error { return json.Unmarshal(b, &s.A) }

// Only metadata that holds no reference and does not decode itself is
// handed out again for the same encoding.
func TestPlainJSONRefusesReferencesAndSelfDecoders(t *testing.T) {
	for _, c := range []struct {
		t    reflect.Type
		want bool
	}{
		{reflect.TypeFor[struct{}](), true},
		{reflect.TypeFor[struct {
			A string
			B [2]int64
			C struct{ D bool }
		}](), true},
		{reflect.TypeFor[string](), true},
		{reflect.TypeFor[[]byte](), false},
		{reflect.TypeFor[map[string]string](), false},
		{reflect.TypeFor[*int](), false},
		{reflect.TypeFor[any](), false},
		{reflect.TypeFor[struct{ A []int }](), false},
		{reflect.TypeFor[[1]*int](), false},
		{reflect.TypeFor[selfDecoding](), false},
		{reflect.TypeFor[struct{ T time.Time }](), false},
	} {
		if got := plainJSON(c.t); got != c.want {
			t.Errorf("plainJSON(%v) = %v, want %v", c.t, got, c.want)
		}
	}
	if reusesMeta[struct{}](jsonAlike[struct{}]{}) {
		t.Error("a codec other than the default JSON codec reuses metadata")
	}
	if !reusesMeta[struct{ A string }](store.JSONCodec[struct{ A string }]{}) {
		t.Error("the JSON codec of a plain type does not reuse metadata")
	}
}

// jsonAlike is a codec of its own that encodes as JSON does.
type jsonAlike[M any] struct{ store.JSONCodec[M] }
