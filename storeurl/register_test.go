package storeurl_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/memstore"
	"github.com/tenure-go/tenure/storeurl"
)

// closing is a custom store: a memstore with Close.
type closing[M any] struct{ *memstore.Store[M] }

func (closing[M]) Close() error { return nil }

func TestRegisterOpensCustomScheme(t *testing.T) {
	var got *url.URL
	shared := memstore.New[meta]()
	if err := storeurl.Register("custom-a", func(_ context.Context, u *url.URL) (storeurl.Store[meta], error) {
		got = u
		return closing[meta]{shared}, nil
	}); err != nil {
		t.Fatal(err)
	}
	st, err := storeurl.Open[meta](context.Background(), &storeurl.Opener{}, "custom-a://host:1/db?x=1")
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
	_, err = storeurl.Open[string](context.Background(), &storeurl.Opener{}, "custom-a://host")
	if !errors.Is(err, storeurl.ErrUnknownScheme) || !strings.Contains(err.Error(), "registered for metadata of type storeurl_test.meta, not string") {
		t.Fatalf("Open[string] = %v", err)
	}
	if err := storeurl.Register("custom-a", func(context.Context, *url.URL) (storeurl.Store[string], error) {
		return closing[string]{memstore.New[string]()}, nil
	}); err != nil {
		t.Fatalf("the same scheme for another type: %v", err)
	}
	if _, err := storeurl.Open[string](context.Background(), &storeurl.Opener{}, "custom-a://host"); err != nil {
		t.Fatal(err)
	}
	// An unknown scheme lists the registered ones.
	_, err = storeurl.Open[meta](context.Background(), &storeurl.Opener{}, "nosuch://host")
	if !errors.Is(err, storeurl.ErrUnknownScheme) || !strings.Contains(err.Error(), "registered: ") || !strings.Contains(err.Error(), "custom-a") {
		t.Fatalf("unknown scheme: %v", err)
	}
	if _, err := storeurl.Open[meta](context.Background(), &storeurl.Opener{}, "custom-a:host"); !errors.Is(err, storeurl.ErrBadURL) {
		t.Fatalf("custom-a:host = %v", err)
	}
}

func TestRegisterRefuses(t *testing.T) {
	ok := func(context.Context, *url.URL) (storeurl.Store[meta], error) { return closing[meta]{memstore.New[meta]()}, nil }
	if err := storeurl.Register("custom-dup", ok); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		scheme string
		open   storeurl.OpenFunc[meta]
		want   error
		msg    string
	}{
		{"custom-dup", ok, storeurl.ErrDuplicateScheme, `"custom-dup" for metadata of type storeurl_test.meta`},
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
	if err := storeurl.Register("a+b.c-1", ok); err != nil {
		t.Errorf("Register(a+b.c-1) = %v", err)
	}
}

// What a registered opener returns is checked, and its errors pass through
// Open's redaction.
func TestRegisteredOpenerResults(t *testing.T) {
	if err := storeurl.Register("custom-nil-store", func(context.Context, *url.URL) (storeurl.Store[meta], error) {
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := storeurl.Open[meta](context.Background(), &storeurl.Opener{}, "custom-nil-store://x"); !errors.Is(err, store.ErrNilArgument) {
		t.Fatalf("nil store: %v", err)
	}
	if err := storeurl.Register("custom-typed-nil", func(context.Context, *url.URL) (storeurl.Store[meta], error) {
		return (*closingPtr)(nil), nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := storeurl.Open[meta](context.Background(), &storeurl.Opener{}, "custom-typed-nil://x"); !errors.Is(err, store.ErrNilArgument) {
		t.Fatalf("typed nil store: %v", err)
	}
	failed := errors.New("refused")
	if err := storeurl.Register("custom-fails", func(_ context.Context, u *url.URL) (storeurl.Store[meta], error) {
		return nil, fmt.Errorf("cannot reach %s: %w", u, failed)
	}); err != nil {
		t.Fatal(err)
	}
	_, err := storeurl.Open[meta](context.Background(), &storeurl.Opener{}, "custom-fails://user:s3cret@host/db")
	if !errors.Is(err, failed) || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("failing opener: %v", err)
	}
}

type closingPtr struct{ closing[meta] }

// Register and Open may run at once (go test -race checks it).
func TestRegisterConcurrently(t *testing.T) {
	var wg sync.WaitGroup
	for i := range 8 {
		scheme := fmt.Sprintf("custom-conc-%d", i)
		wg.Go(func() {
			if err := storeurl.Register(scheme, func(context.Context, *url.URL) (storeurl.Store[meta], error) {
				return closing[meta]{memstore.New[meta]()}, nil
			}); err != nil {
				t.Error(err)
				return
			}
			if _, err := storeurl.Open[meta](context.Background(), &storeurl.Opener{}, scheme+"://x"); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}
