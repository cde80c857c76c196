package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/redisstore"
)

// A nil client, a nil or zero Store and a nil ctx are errors wrapping
// store.ErrNilArgument that name them; nothing panics. No server is needed.
func TestNilArguments(t *testing.T) {
	var nilCtx context.Context
	var nilClient *redis.Client
	var nilS *redisstore.Store[int]
	zero := &redisstore.Store[int]{}
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never reached
	defer c.Close()
	ok, err := redisstore.New[int](c)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	type call struct {
		name    string
		f       func() error
		mention string
	}
	tests := []call{
		{"New: nil client", func() error { _, err := redisstore.New[int](nil); return err }, "client is nil"},
		{"New: typed nil client", func() error { _, err := redisstore.New[int](nilClient); return err }, "client is nil"},
		{"NewHub: nil client", func() error { _, err := redisstore.NewHub(nil); return err }, "client is nil"},
		{"NewHub: typed nil client", func() error { _, err := redisstore.NewHub(nilClient); return err }, "client is nil"},
		{"Get: nil ctx", func() error { _, _, err := ok.Get(nilCtx, "job"); return err }, "ctx is nil"},
		{"List: nil ctx", func() error { _, err := ok.List(nilCtx, ""); return err }, "ctx is nil"},
		{"CompareAndSwap: nil ctx", func() error { _, _, err := ok.CompareAndSwap(nilCtx, "job", 0, lease.Record[int]{}); return err }, "ctx is nil"},
		{"CompareReleasedAndSwap: nil ctx", func() error {
			_, _, err := ok.CompareReleasedAndSwap(nilCtx, "job", 1, store.Released{}, lease.Record[int]{})
			return err
		}, "ctx is nil"},
		{"CompareReleasedAndSwap from 0: nil ctx", func() error {
			_, _, err := ok.CompareReleasedAndSwap(nilCtx, "job", 0, store.Released{}, lease.Record[int]{})
			return err
		}, "ctx is nil"},
		{"Watch: nil ctx", func() error { _, err := ok.Watch(nilCtx, "job"); return err }, "ctx is nil"},
		{"WatchFunc: nil ctx", func() error { return ok.WatchFunc(nilCtx, "job", func(store.Event[int], bool) {}) }, "ctx is nil"},
		{"WatchFunc: nil fn", func() error { return ok.WatchFunc(context.Background(), "job", nil) }, "fn is nil"},
	}
	for _, s := range []struct {
		label   string
		st      *redisstore.Store[int]
		mention string
	}{{"nil Store", nilS, "*Store is nil"}, {"zero Store", zero, "not made by New"}} {
		tests = append(tests,
			call{s.label + ": Get", func() error { _, _, err := s.st.Get(ctx, "job"); return err }, s.mention},
			call{s.label + ": List", func() error { _, err := s.st.List(ctx, ""); return err }, s.mention},
			call{s.label + ": CompareAndSwap", func() error { _, _, err := s.st.CompareAndSwap(ctx, "job", 0, lease.Record[int]{}); return err }, s.mention},
			call{s.label + ": CompareReleasedAndSwap", func() error {
				_, _, err := s.st.CompareReleasedAndSwap(ctx, "job", 1, store.Released{}, lease.Record[int]{})
				return err
			}, s.mention},
			call{s.label + ": CompareReleasedAndSwap from 0", func() error {
				_, _, err := s.st.CompareReleasedAndSwap(ctx, "job", 0, store.Released{}, lease.Record[int]{})
				return err
			}, s.mention},
			call{s.label + ": Watch", func() error { _, err := s.st.Watch(ctx, "job"); return err }, s.mention},
			call{s.label + ": WatchFunc", func() error { return s.st.WatchFunc(ctx, "job", func(store.Event[int], bool) {}) }, s.mention},
			call{s.label + ": Key", func() error { _, err := s.st.Key("job"); return err }, s.mention},
			call{s.label + ": Channel", func() error { _, err := s.st.Channel("job"); return err }, s.mention},
			call{s.label + ": CheckMetadata", func() error { return s.st.CheckMetadata(1) }, s.mention},
			call{s.label + ": Validate", func() error { return s.st.Validate() }, s.mention},
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
		if !errors.Is(err, store.ErrNilArgument) || !strings.Contains(err.Error(), tt.mention) {
			t.Errorf("%s = %v; want store.ErrNilArgument naming %q", tt.name, err, tt.mention)
		}
	}
	if !nilS.MayLoseRecords() {
		t.Error("MayLoseRecords of a nil Store is false, want the conservative true")
	}
}
