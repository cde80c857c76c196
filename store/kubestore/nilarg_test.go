package kubestore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/kubestore"
)

// A nil client, a nil or zero Store and a nil ctx are errors wrapping
// store.ErrNilArgument that name them; nothing panics. No server is needed.
func TestNilArguments(t *testing.T) {
	var nilCtx context.Context
	var nilClient *coordinationclient.CoordinationV1Client
	var nilS *kubestore.Store[int]
	zero := &kubestore.Store[int]{}
	cs, err := coordinationclient.NewForConfig(&rest.Config{Host: "http://127.0.0.1:1"}) // never reached
	if err != nil {
		t.Fatal(err)
	}
	ok, err := kubestore.New[int](cs, "default")
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
		{"New: nil client", func() error { _, err := kubestore.New[int](nil, "default"); return err }, "client is nil"},
		{"New: typed nil client", func() error { _, err := kubestore.New[int](nilClient, "default"); return err }, "client is nil"},
		{"Get: nil ctx", func() error { _, _, err := ok.Get(nilCtx, "job"); return err }, "ctx is nil"},
		{"List: nil ctx", func() error { _, err := ok.List(nilCtx, ""); return err }, "ctx is nil"},
		{"CompareAndSwap: nil ctx", func() error { _, _, err := ok.CompareAndSwap(nilCtx, "job", 0, lease.Record[int]{}); return err }, "ctx is nil"},
		{"Watch: nil ctx", func() error { _, err := ok.Watch(nilCtx, "job"); return err }, "ctx is nil"},
		{"WatchFunc: nil ctx", func() error { return ok.WatchFunc(nilCtx, "job", func(store.Event[int], bool) {}) }, "ctx is nil"},
		{"WatchFunc: nil fn", func() error { return ok.WatchFunc(context.Background(), "job", nil) }, "fn is nil"},
	}
	for _, s := range []struct {
		label   string
		st      *kubestore.Store[int]
		mention string
	}{{"nil Store", nilS, "*Store is nil"}, {"zero Store", zero, "not made by New"}} {
		tests = append(tests,
			call{s.label + ": Get", func() error { _, _, err := s.st.Get(ctx, "job"); return err }, s.mention},
			call{s.label + ": List", func() error { _, err := s.st.List(ctx, ""); return err }, s.mention},
			call{s.label + ": CompareAndSwap", func() error { _, _, err := s.st.CompareAndSwap(ctx, "job", 0, lease.Record[int]{}); return err }, s.mention},
			call{s.label + ": Watch", func() error { _, err := s.st.Watch(ctx, "job"); return err }, s.mention},
			call{s.label + ": WatchFunc", func() error { return s.st.WatchFunc(ctx, "job", func(store.Event[int], bool) {}) }, s.mention},
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
	if nilS.Namespace() != "" {
		t.Error("a nil Store has a namespace")
	}
}

// A namespace that is empty or not a DNS-1123 label is refused with
// ErrInvalidNamespace, naming it.
func TestInvalidNamespace(t *testing.T) {
	cs, err := coordinationclient.NewForConfig(&rest.Config{Host: "http://127.0.0.1:1"}) // never reached
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"", "Bad_Namespace", "-x", strings.Repeat("a", 64)} {
		_, err := kubestore.New[int](cs, ns)
		if !errors.Is(err, kubestore.ErrInvalidNamespace) {
			t.Errorf("New(%q) = %v, want an error wrapping ErrInvalidNamespace", ns, err)
		}
	}
	if _, err := kubestore.New[int](cs, "tenure-system"); err != nil {
		t.Errorf("New(\"tenure-system\") = %v", err)
	}
}
