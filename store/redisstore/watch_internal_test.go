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

// A name's channel is in the batch channel of its own prefix only, and
// batch messages parse to their entries, in order, up to the first that
// is malformed.
func TestBatchChannelsAndEntries(t *testing.T) {
	for _, c := range []struct{ ch, batch string }{
		{"tenure:{a}:changes", "tenure:changes"},
		{"p:tenure:{a}:changes", "p:tenure:changes"},
		{"p:tenure:{tenure:x}:changes", "p:tenure:changes"},
		{"tenure:{x}:tenure:{a}:changes", "tenure:{x}:tenure:changes"},
	} {
		if got := batchOf(c.ch); got != c.batch {
			t.Errorf("batchOf(%q) = %q, want %q", c.ch, got, c.batch)
		}
		for _, b := range []string{c.batch, "q" + c.batch, "tenure:changes:", "x"} {
			if got, want := inBatch(c.ch, b), b == c.batch; got != want {
				t.Errorf("inBatch(%q, %q) = %v, want %v", c.ch, b, got, want)
			}
		}
	}
	type entry struct{ ch, m string }
	for _, c := range []struct {
		payload string
		want    []entry
		ok      bool
	}{
		{batchHeader + "1:a2:xy1:b0:", []entry{{"a", "xy"}, {"b", ""}}, true},
		{batchHeader, nil, true},
		{"1:a2:xy", nil, false},
		{batchHeader + "1:a2:xy1:b9:", []entry{{"a", "xy"}}, false},
		{batchHeader + "1:a", nil, false},
	} {
		var got []entry
		ok := batchEntries(c.payload, func(ch, m string) { got = append(got, entry{ch, m}) })
		if ok != c.ok || len(got) != len(c.want) {
			t.Errorf("batchEntries(%q) = %v, %v, want %v, %v", c.payload, got, ok, c.want, c.ok)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("batchEntries(%q) entry %d = %v, want %v", c.payload, i, got[i], c.want[i])
			}
		}
	}
}
