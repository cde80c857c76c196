package memstore

import (
	"context"
	"reflect"
	"testing"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

// slots returns how many names s keeps state for.
func (s *Store[M]) slots() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.names)
}

// A name that was only watched is forgotten when its last watch ends; a
// name that was written is kept, with its token floor, even after Delete.
func TestWatchForgetsUnwrittenNames(t *testing.T) {
	st := New[int]()
	ctx, cancel := context.WithCancel(t.Context())
	var chans []<-chan struct{}
	for _, name := range []string{"watched", "watched", "written"} {
		ch, err := st.Watch(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			for range ch {
			}
		}()
		chans = append(chans, done)
	}
	ended := make(chan struct{})
	if err := st.WatchFunc(ctx, "watched-by-func", func(_ store.Event[int], ok bool) {
		if !ok {
			close(ended)
		}
	}); err != nil {
		t.Fatal(err)
	}
	chans = append(chans, ended)
	if _, _, err := st.CompareAndSwap(t.Context(), "written", 0, lease.Record[int]{Token: 3}); err != nil {
		t.Fatal(err)
	}
	st.Delete("written")
	cancel()
	for _, done := range chans {
		<-done // the channel is closed after the watch is forgotten
	}
	if n := st.slots(); n != 1 {
		t.Errorf("the store keeps %d names, want 1 (the written one)", n)
	}
}

func TestCopiedByValue(t *testing.T) {
	type inner struct {
		A [3]int
		S string
	}
	type withPtr struct {
		A int
		P *int
	}
	type withSlice struct{ S []string }
	type withAny struct{ V any }
	for _, c := range []struct {
		name string
		t    reflect.Type
		want bool
	}{
		{"empty struct", reflect.TypeFor[struct{}](), true},
		{"int", reflect.TypeFor[int](), true},
		{"string", reflect.TypeFor[string](), true},
		{"nested struct and array", reflect.TypeFor[struct{ I inner }](), true},
		{"pointer field", reflect.TypeFor[withPtr](), false},
		{"slice field", reflect.TypeFor[withSlice](), false},
		{"interface field", reflect.TypeFor[withAny](), false},
		{"map", reflect.TypeFor[map[string]int](), false},
		{"array of slices", reflect.TypeFor[[2][]int](), false},
		{"interface type", reflect.TypeFor[any](), false},
		{"nil", nil, false},
	} {
		if got := copiedByValue(c.t); got != c.want {
			t.Errorf("%s: copiedByValue = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestEncodedByValue(t *testing.T) {
	type withFloat struct {
		N int
		F float64
	}
	type withBlank struct {
		N int
		_ int
	}
	for _, c := range []struct {
		name string
		t    reflect.Type
		want bool
	}{
		{"empty struct", reflect.TypeFor[struct{}](), true},
		{"strings and ints", reflect.TypeFor[struct {
			S string
			N [2]int64
		}](), true},
		{"float field", reflect.TypeFor[withFloat](), false},
		{"array of complex", reflect.TypeFor[[1]complex64](), false},
		{"blank field", reflect.TypeFor[withBlank](), false},
		{"map", reflect.TypeFor[map[string]int](), false},
	} {
		if got := encodedByValue(c.t); got != c.want {
			t.Errorf("%s: encodedByValue = %v, want %v", c.name, got, c.want)
		}
	}
}
