package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/pgstore"
)

// A nil pool, a nil or zero Store and a nil ctx are errors that name them
// (wrapping store.ErrNilArgument); nothing panics. No server
// is needed.
func TestNilArguments(t *testing.T) {
	var nilCtx context.Context
	var nilS *pgstore.Store[int]
	zero := &pgstore.Store[int]{}
	ok, err := pgstore.New[int](new(pgxpool.Pool)) // never used
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	type call struct {
		name    string
		f       func() error
		want    error
		mention string
	}
	tests := []call{
		{"New: nil pool", func() error { _, err := pgstore.New[int](nil); return err }, store.ErrNilArgument, "pool is nil"},
		{"NewWithCodec: nil pool", func() error { _, err := pgstore.NewWithCodec[int](nil, nil); return err }, store.ErrNilArgument, "pool is nil"},
		{"Get: nil ctx", func() error { _, _, err := ok.Get(nilCtx, "job"); return err }, store.ErrNilArgument, "ctx is nil"},
		{"List: nil ctx", func() error { _, err := ok.List(nilCtx, ""); return err }, store.ErrNilArgument, "ctx is nil"},
		{"CompareAndSwap: nil ctx", func() error { _, _, err := ok.CompareAndSwap(nilCtx, "job", 0, lease.Record[int]{}); return err }, store.ErrNilArgument, "ctx is nil"},
		{"CompareReleasedAndSwap: nil ctx", func() error {
			_, _, err := ok.CompareReleasedAndSwap(nilCtx, "job", 1, store.Released{}, lease.Record[int]{})
			return err
		}, store.ErrNilArgument, "ctx is nil"},
		{"CompareReleasedAndSwap from 0: nil ctx", func() error {
			_, _, err := ok.CompareReleasedAndSwap(nilCtx, "job", 0, store.Released{}, lease.Record[int]{})
			return err
		}, store.ErrNilArgument, "ctx is nil"},
		{"Watch: nil ctx", func() error { _, err := ok.Watch(nilCtx, "job"); return err }, store.ErrNilArgument, "ctx is nil"},
		{"WatchFunc: nil ctx", func() error { return ok.WatchFunc(nilCtx, "job", func(store.Event[int], bool) {}) }, store.ErrNilArgument, "ctx is nil"},
		{"WatchFunc: nil fn", func() error { return ok.WatchFunc(context.Background(), "job", nil) }, store.ErrNilArgument, "fn is nil"},
		{"Migrate: nil ctx", func() error { return ok.Migrate(nilCtx) }, store.ErrNilArgument, "ctx is nil"},
	}
	for _, s := range []struct {
		label   string
		st      *pgstore.Store[int]
		mention string
	}{{"nil Store", nilS, "*Store is nil"}, {"zero Store", zero, "not made by New"}} {
		tests = append(tests,
			call{s.label + ": Get", func() error { _, _, err := s.st.Get(ctx, "job"); return err }, store.ErrNilArgument, s.mention},
			call{s.label + ": List", func() error { _, err := s.st.List(ctx, ""); return err }, store.ErrNilArgument, s.mention},
			call{s.label + ": CompareAndSwap", func() error { _, _, err := s.st.CompareAndSwap(ctx, "job", 0, lease.Record[int]{}); return err }, store.ErrNilArgument, s.mention},
			call{s.label + ": CompareReleasedAndSwap", func() error {
				_, _, err := s.st.CompareReleasedAndSwap(ctx, "job", 1, store.Released{}, lease.Record[int]{})
				return err
			}, store.ErrNilArgument, s.mention},
			call{s.label + ": CompareReleasedAndSwap from 0", func() error {
				_, _, err := s.st.CompareReleasedAndSwap(ctx, "job", 0, store.Released{}, lease.Record[int]{})
				return err
			}, store.ErrNilArgument, s.mention},
			call{s.label + ": Watch", func() error { _, err := s.st.Watch(ctx, "job"); return err }, store.ErrNilArgument, s.mention},
			call{s.label + ": WatchFunc", func() error { return s.st.WatchFunc(ctx, "job", func(store.Event[int], bool) {}) }, store.ErrNilArgument, s.mention},
			call{s.label + ": Migrate", func() error { return s.st.Migrate(ctx) }, store.ErrNilArgument, s.mention},
			call{s.label + ": CheckMetadata", func() error { return s.st.CheckMetadata(1) }, store.ErrNilArgument, s.mention},
			call{s.label + ": Validate", func() error { return s.st.Validate() }, store.ErrNilArgument, s.mention},
		)
	}
	for _, tt := range tests {
		err := func() (err error) {
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("panic: %v", p)
				}
			}()
			return tt.f()
		}()
		if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.mention) {
			t.Errorf("%s = %v; want %v naming %q", tt.name, err, tt.want, tt.mention)
		}
	}
	if nilS.Table() != "" || nilS.Sequence() != "" || nilS.Channel() != "" || nilS.SchemaSQL() != "" || zero.SchemaSQL() != "" {
		t.Error("a nil or zero Store names a table, sequence or channel")
	}
}
