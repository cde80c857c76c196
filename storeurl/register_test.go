package storeurl_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/memstore"
	"github.com/tenure-go/tenure/storeurl"
)

// scheme returns a scheme no other test, nor an earlier run of the same
// test (go test -count), registered: the registry lives as long as the
// process.
func scheme(base string) string { return fmt.Sprintf("%s-%d", base, schemeSeq.Add(1)) }

var schemeSeq atomic.Uint64

// closing is a custom store: a memstore with Close.
type closing[M any] struct{ *memstore.Store[M] }

func (closing[M]) Close() error { return nil }

func TestRegisterOpensCustomScheme(t *testing.T) {
	var got *url.URL
	shared := memstore.New[meta]()
	a := scheme("custom-a")
	if err := storeurl.Register(a, func(_ context.Context, u *url.URL) (storeurl.Store[meta], error) {
		got = u
		return closing[meta]{shared}, nil
	}); err != nil {
		t.Fatal(err)
	}
	st, err := storeurl.Open[meta](context.Background(), &storeurl.Opener{}, a+"://host:1/db?x=1")
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := st.(closing[meta]); !ok || c.Store != shared {
		t.Fatalf("Open returned %T, not the opener's store", st)
	}
	if got.Host != "host:1" || got.Path != "/db" || got.Query().Get("x") != "1" {
		t.Fatalf("the opener got %v", got)
	}
	// Another metadata type needs its own registration.
	_, err = storeurl.Open[string](context.Background(), &storeurl.Opener{}, a+"://host")
	if !errors.Is(err, storeurl.ErrUnknownScheme) || !strings.Contains(err.Error(), "registered for metadata of type storeurl_test.meta, not string") {
		t.Fatalf("Open[string] = %v", err)
	}
	if err := storeurl.Register(a, func(context.Context, *url.URL) (storeurl.Store[string], error) {
		return closing[string]{memstore.New[string]()}, nil
	}); err != nil {
		t.Fatalf("the same scheme for another type: %v", err)
	}
	if _, err := storeurl.Open[string](context.Background(), &storeurl.Opener{}, a+"://host"); err != nil {
		t.Fatal(err)
	}
	// An unknown scheme lists the registered ones.
	_, err = storeurl.Open[meta](context.Background(), &storeurl.Opener{}, "nosuch://host")
	if !errors.Is(err, storeurl.ErrUnknownScheme) || !strings.Contains(err.Error(), "registered: ") || !strings.Contains(err.Error(), a) {
		t.Fatalf("unknown scheme: %v", err)
	}
	if _, err := storeurl.Open[meta](context.Background(), &storeurl.Opener{}, a+":host"); !errors.Is(err, storeurl.ErrBadURL) {
		t.Fatalf("custom-a:host = %v", err)
	}
}

func TestRegisterRefuses(t *testing.T) {
	ok := func(context.Context, *url.URL) (storeurl.Store[meta], error) {
		return closing[meta]{memstore.New[meta]()}, nil
	}
	dup := scheme("custom-dup")
	if err := storeurl.Register(dup, ok); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		scheme string
		open   storeurl.OpenFunc[meta]
		want   error
		msg    string
	}{
		{dup, ok, storeurl.ErrDuplicateScheme, fmt.Sprintf("%q for metadata of type storeurl_test.meta", dup)},
		{"", ok, storeurl.ErrInvalidScheme, "1 to 32 bytes"},
		{strings.Repeat("a", 33), ok, storeurl.ErrInvalidScheme, "1 to 32 bytes"},
		{"1abc", ok, storeurl.ErrInvalidScheme, "a letter followed by"},
		{"a_b", ok, storeurl.ErrInvalidScheme, "a letter followed by"},
		{"a b", ok, storeurl.ErrInvalidScheme, "a letter followed by"},
		{"a:b", ok, storeurl.ErrInvalidScheme, "a letter followed by"},
		{"Custom", ok, storeurl.ErrInvalidScheme, "lower case"},
		{"redis", ok, storeurl.ErrInvalidScheme, "served by storeurl itself"},
		{"postgresql", ok, storeurl.ErrInvalidScheme, "served by storeurl itself"},
		{"memory", ok, storeurl.ErrInvalidScheme, "served by storeurl itself"},
		{"k8s", ok, storeurl.ErrInvalidScheme, "served by storeurl itself"},
		{"custom-nil", nil, store.ErrNilArgument, "open is nil"},
	}
	for _, tt := range tests {
		err := storeurl.Register(tt.scheme, tt.open)
		if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("Register(%q) = %v, want %v mentioning %q", tt.scheme, err, tt.want, tt.msg)
		}
	}
	if s := scheme("a+b.c"); storeurl.Register(s, ok) != nil {
		t.Errorf("Register(%q) = %v", s, storeurl.Register(s, ok))
	}
}

// What a registered opener returns is checked, and its errors pass through
// Open's redaction.
func TestRegisteredOpenerResults(t *testing.T) {
	nilStore := scheme("custom-nil-store")
	if err := storeurl.Register(nilStore, func(context.Context, *url.URL) (storeurl.Store[meta], error) {
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := storeurl.Open[meta](context.Background(), &storeurl.Opener{}, nilStore+"://x"); !errors.Is(err, store.ErrNilArgument) {
		t.Fatalf("nil store: %v", err)
	}
	typedNil := scheme("custom-typed-nil")
	if err := storeurl.Register(typedNil, func(context.Context, *url.URL) (storeurl.Store[meta], error) {
		return (*closingPtr)(nil), nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := storeurl.Open[meta](context.Background(), &storeurl.Opener{}, typedNil+"://x"); !errors.Is(err, store.ErrNilArgument) {
		t.Fatalf("typed nil store: %v", err)
	}
	failed := errors.New("refused")
	fails := scheme("custom-fails")
	if err := storeurl.Register(fails, func(_ context.Context, u *url.URL) (storeurl.Store[meta], error) {
		return nil, fmt.Errorf("cannot reach %s: %w", u, failed)
	}); err != nil {
		t.Fatal(err)
	}
	_, err := storeurl.Open[meta](context.Background(), &storeurl.Opener{}, fails+"://user:s3cret@host/db")
	if !errors.Is(err, failed) || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("failing opener: %v", err)
	}
}

type closingPtr struct{ closing[meta] }

// Register and Open may run at once (go test -race checks it).
func TestRegisterConcurrently(t *testing.T) {
	var wg sync.WaitGroup
	for i := range 8 {
		s := scheme(fmt.Sprintf("custom-conc-%d", i))
		wg.Go(func() {
			if err := storeurl.Register(s, func(context.Context, *url.URL) (storeurl.Store[meta], error) {
				return closing[meta]{memstore.New[meta]()}, nil
			}); err != nil {
				t.Error(err)
				return
			}
			if _, err := storeurl.Open[meta](context.Background(), &storeurl.Opener{}, s+"://x"); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}
