package etcdstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/etcdstore"
)

// A nil client, a nil or zero Store and a nil ctx are errors wrapping
// store.ErrNilArgument that name them; nothing panics. No server is needed.
func TestNilArguments(t *testing.T) {
	var nilCtx context.Context
	var nilClient *clientv3.Client
	var nilS *etcdstore.Store[int]
	zero := &etcdstore.Store[int]{}
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:1"}}) // never reached
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ok, err := etcdstore.New[int](c, nil)
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
		{"New: nil client", func() error { _, err := etcdstore.New[int](nilClient); return err }, "client is nil"},
		{"Get: nil ctx", func() error { _, _, err := ok.Get(nilCtx, "job"); return err }, "ctx is nil"},
		{"List: nil ctx", func() error { _, err := ok.List(nilCtx, ""); return err }, "ctx is nil"},
		{"CompareAndSwap: nil ctx", func() error { _, _, err := ok.CompareAndSwap(nilCtx, "job", 0, lease.Record[int]{}); return err }, "ctx is nil"},
		{"Watch: nil ctx", func() error { _, err := ok.Watch(nilCtx, "job"); return err }, "ctx is nil"},
	}
	for _, s := range []struct {
		label   string
		st      *etcdstore.Store[int]
		mention string
	}{{"nil Store", nilS, "*Store is nil"}, {"zero Store", zero, "not made by New"}} {
		tests = append(tests,
			call{s.label + ": Get", func() error { _, _, err := s.st.Get(ctx, "job"); return err }, s.mention},
			call{s.label + ": List", func() error { _, err := s.st.List(ctx, ""); return err }, s.mention},
			call{s.label + ": CompareAndSwap", func() error { _, _, err := s.st.CompareAndSwap(ctx, "job", 0, lease.Record[int]{}); return err }, s.mention},
			call{s.label + ": Watch", func() error { _, err := s.st.Watch(ctx, "job"); return err }, s.mention},
			call{s.label + ": Key", func() error { _, err := s.st.Key("job"); return err }, s.mention},
			call{s.label + ": TokenKey", func() error { _, err := s.st.TokenKey("job"); return err }, s.mention},
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
	if ok.MayLoseRecords() {
		t.Error("MayLoseRecords of a default Store is true, want false")
	}
	if lossy, _ := etcdstore.New[int](c, etcdstore.WithMayLoseRecords(true)); !lossy.MayLoseRecords() {
		t.Error("WithMayLoseRecords(true) is not reported")
	}
	// A codec of another metadata type does not compile; a nil one means
	// JSON.
	if st, err := etcdstore.NewWithCodec[int](c, nil, nil); err != nil || st.Validate() != nil {
		t.Errorf("NewWithCodec with a nil codec and a nil option: %v, %v", err, st.Validate())
	}
}
