package storeurl

import (
	"context"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"sync"

	"github.com/tenure-go/tenure/internal/nilarg"
	"github.com/tenure-go/tenure/store"
)

// OpenFunc opens a store of a registered scheme, for metadata of type M,
// from the parsed URL. Its errors may quote u: Open replaces any credential
// in them with xxxxx.
type OpenFunc[M any] func(ctx context.Context, u *url.URL) (Store[M], error)

// registry holds the schemes that Register added. It is the one piece of
// package state of storeurl, for the reason database/sql keeps its drivers
// in one: a program that imports a custom store's package must be able to
// make its scheme known to code it does not control, such as a build of
// the tenure command (whose main makes its own Opener) or a library that
// takes a store URL. Entries are only ever added; it is safe for concurrent
// use.
var registry struct {
	mu      sync.RWMutex
	openers map[registryKey]any // OpenFunc[M] for the key's M
}

type registryKey struct {
	scheme string
	meta   reflect.Type
}

// Register makes Open (through every Opener) open URLs of scheme with open,
// for metadata of type M. A program registers once, from an init function
// or at the start of main, each metadata type it opens the scheme with: a
// build of the tenure command needs the opener for json.RawMessage, which
// is what the command reads records as.
//
// scheme is what precedes "://" in the URL, in lower case (Go's URL parser
// lowers it): a letter, then letters, digits, '+', '-' or '.', at most 32
// bytes. Register returns an error wrapping ErrInvalidScheme for a scheme
// outside these rules or one that storeurl serves itself (memory, redis,
// postgres, kubernetes and the others of the package documentation), an
// error wrapping ErrDuplicateScheme when scheme is registered already for
// M, and one wrapping ErrNilArgument for a nil open.
func Register[M any](scheme string, open OpenFunc[M]) error {
	if open == nil {
		return fmt.Errorf("%w: Register(%q): open is nil", store.ErrNilArgument, scheme)
	}
	if err := checkScheme(scheme); err != nil {
		return err
	}
	if _, builtin := backend[M](scheme); builtin || scheme == "memory" || scheme == "mem" {
		return fmt.Errorf("%w: %q is served by storeurl itself", ErrInvalidScheme, scheme)
	}
	key := registryKey{scheme, metaType[M]()}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if _, dup := registry.openers[key]; dup {
		return fmt.Errorf("%w: %q for metadata of type %v", ErrDuplicateScheme, scheme, key.meta)
	}
	if registry.openers == nil {
		registry.openers = map[registryKey]any{}
	}
	registry.openers[key] = open
	return nil
}

// maxSchemeBytes bounds a registered scheme.
const maxSchemeBytes = 32

// checkScheme applies the rules of RFC 3986 to a scheme, in lower case.
func checkScheme(scheme string) error {
	if scheme == "" || len(scheme) > maxSchemeBytes {
		return fmt.Errorf("%w: %q: a scheme has 1 to %d bytes", ErrInvalidScheme, scheme, maxSchemeBytes)
	}
	for i, c := range []byte(scheme) {
		switch {
		case c >= 'a' && c <= 'z':
		case i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		case c >= 'A' && c <= 'Z':
			return fmt.Errorf("%w: %q: write the scheme in lower case (URLs are matched in lower case)", ErrInvalidScheme, scheme)
		default:
			return fmt.Errorf("%w: %q: a scheme is a letter followed by letters, digits, '+', '-' or '.'", ErrInvalidScheme, scheme)
		}
	}
	return nil
}

func metaType[M any]() reflect.Type { return reflect.TypeFor[M]() }

// registered returns the opener registered for scheme and M. When there is
// none for M but there are for other types, others lists them.
func registered[M any](scheme string) (open OpenFunc[M], others []string) {
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	if f, ok := registry.openers[registryKey{scheme, metaType[M]()}]; ok {
		return f.(OpenFunc[M]), nil
	}
	for k := range registry.openers {
		if k.scheme == scheme {
			others = append(others, k.meta.String())
		}
	}
	slices.Sort(others)
	return nil, others
}

// registeredSchemes lists the registered schemes, for messages.
func registeredSchemes() []string {
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	var out []string
	for k := range registry.openers {
		if !slices.Contains(out, k.scheme) {
			out = append(out, k.scheme)
		}
	}
	slices.Sort(out)
	return out
}

// openRegistered opens a URL of a registered scheme, and checks what the
// opener returned.
func openRegistered[M any](ctx context.Context, u *url.URL, raw string, open OpenFunc[M]) (Store[M], error) {
	st, err := open(ctx, u)
	if err != nil {
		return nil, fmt.Errorf("storeurl: %s: %w", display(raw), err)
	}
	if st == nil || nilarg.IsNil(st) {
		return nil, fmt.Errorf("%w: the opener registered for %q returned a nil store for %s", store.ErrNilArgument, u.Scheme, display(raw))
	}
	if err := store.Validate(st); err != nil {
		return nil, fmt.Errorf("storeurl: the opener registered for %q: %w", u.Scheme, err)
	}
	return st, nil
}
