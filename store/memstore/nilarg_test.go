package memstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/memstore"
)

// Every method of a nil *Store, of a zero Store, and every method given a
// nil ctx returns an error wrapping store.ErrNilArgument that names what is
// nil, and panics nowhere.
func TestNilArguments(t *testing.T) {
	var nilS *memstore.Store[int]
	zero := &memstore.Store[int]{}
	ok := memstore.New[int]()
	var nilCtx context.Context
	ctx := context.Background()
	type call struct {
		name    string
		f       func() error
		mention string
	}
	var tests []call
	for _, s := range []struct {
		label   string
		st      *memstore.Store[int]
		mention string
	}{{"nil Store", nilS, "*Store is nil"}, {"zero Store", zero, "not made by New"}} {
		tests = append(tests,
			call{s.label + ": Get", func() error { _, _, err := s.st.Get(ctx, "job"); return err }, s.mention},
			call{s.label + ": CompareAndSwap", func() error {
				_, _, err := s.st.CompareAndSwap(ctx, "job", 0, lease.Record[int]{Token: 1})
				return err
			}, s.mention},
			call{s.label + ": CompareReleasedAndSwap", func() error {
				_, _, err := s.st.CompareReleasedAndSwap(ctx, "job", 1, store.Released{}, lease.Record[int]{Token: 1})
				return err
			}, s.mention},
			call{s.label + ": GuardsReleases", func() error { s.st.GuardsReleases(); return fmt.Errorf("%w: answered", store.ErrNilArgument) }, "answered"},
			call{s.label + ": Watch", func() error { _, err := s.st.Watch(ctx, "job"); return err }, s.mention},
			call{s.label + ": WatchFunc", func() error { return s.st.WatchFunc(ctx, "job", func(store.Event[int], bool) {}) }, s.mention},
			call{s.label + ": PutRaw", func() error { _, err := s.st.PutRaw("job", lease.Record[[]byte]{}); return err }, s.mention},
			call{s.label + ": CheckMetadata", func() error { return s.st.CheckMetadata(1) }, s.mention},
			call{s.label + ": Validate", func() error { return s.st.Validate() }, s.mention},
			call{s.label + ": Delete", func() error { s.st.Delete("job"); return fmt.Errorf("%w: did nothing", store.ErrNilArgument) }, "nothing"},
			call{s.label + ": MayLoseRecords", func() error { s.st.MayLoseRecords(); return fmt.Errorf("%w: answered", store.ErrNilArgument) }, "answered"},
		)
	}
	tests = append(tests,
		call{"Get: nil ctx", func() error { _, _, err := ok.Get(nilCtx, "job"); return err }, "ctx is nil"},
		call{"CompareAndSwap: nil ctx", func() error {
			_, _, err := ok.CompareAndSwap(nilCtx, "job", 0, lease.Record[int]{Token: 1})
			return err
		}, "ctx is nil"},
		call{"CompareReleasedAndSwap: nil ctx", func() error {
			_, _, err := ok.CompareReleasedAndSwap(nilCtx, "job", 1, store.Released{}, lease.Record[int]{Token: 1})
			return err
		}, "ctx is nil"},
		call{"Watch: nil ctx", func() error { _, err := ok.Watch(nilCtx, "job"); return err }, "ctx is nil"},
		call{"WatchFunc: nil ctx", func() error { return ok.WatchFunc(nilCtx, "job", func(store.Event[int], bool) {}) }, "ctx is nil"},
		call{"WatchFunc: nil fn", func() error { return ok.WatchFunc(ctx, "job", nil) }, "fn is nil"},
		call{"store.Validate: zero Store", func() error { return store.Validate[int](zero) }, "not made by New"},
		call{"store.Validate: typed nil", func() error { return store.Validate[int](nilS) }, "nil *memstore.Store"},
	)
	for _, tt := range tests {
		err := func() (err error) {
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("panic: %v", p)
				}
			}()
			return tt.f()
		}()
		if !errors.Is(err, store.ErrNilArgument) || !strings.Contains(err.Error(), tt.mention) {
			t.Errorf("%s = %v; want store.ErrNilArgument naming %q", tt.name, err, tt.mention)
		}
	}
	if err := ok.Validate(); err != nil {
		t.Errorf("Validate of a Store from New = %v", err)
	}
	// NewWithCodec takes a nil codec as "the default".
	if st := memstore.NewWithCodec[int](nil); st.Validate() != nil {
		t.Errorf("NewWithCodec(nil) is not usable: %v", st.Validate())
	}
}
