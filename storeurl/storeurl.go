package storeurl

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/memstore"
)

// Errors returned by this package. Their messages never hold a credential
// from the URL.
var (
	// ErrBadURL: the URL cannot be parsed or lacks a part its scheme needs.
	ErrBadURL = errors.New("storeurl: bad store URL")
	// ErrUnknownScheme: no backend serves the URL's scheme.
	ErrUnknownScheme = errors.New("storeurl: unknown scheme")
	// ErrConnect: the store's server cannot be reached or refused the
	// connection.
	ErrConnect = errors.New("storeurl: cannot connect to the store")
	// ErrInvalidScheme: Register was given a scheme that breaks the rules
	// of schemes, or one storeurl serves itself.
	ErrInvalidScheme = errors.New("storeurl: invalid scheme")
	// ErrDuplicateScheme: Register was given a scheme already registered
	// for the same metadata type.
	ErrDuplicateScheme = errors.New("storeurl: scheme already registered")
)

// Opener opens stores from URLs. Memory stores opened through the same
// Opener with the same name are one store. The zero Opener is ready to use,
// and so is a nil *Opener, as a zero Opener of its own for each call: every
// scheme opens through it as through &Opener{}, and so a memory store
// opened through nil is shared with no other Open.
type Opener struct {
	mu  sync.Mutex
	mem map[string]any // name -> *memstore.Store[M]
}

// Store is a store opened from a URL. Its dynamic value is the backend's
// own store (a *redisstore.Store, *pgstore.Store, *kubestore.Store,
// *etcdstore.Store or *memstore.Store) embedded with the means to close its
// connections, or for a scheme added with Register what its opener
// returned, so it
// keeps every method the backend has: pass it to lead.New as it is, and the
// elector watches it, learns whether it may lose records, and finds any
// other optional interface (see package store) the backend implements.
type Store[M any] interface {
	store.Store[M]
	store.Watcher[M]
	store.Lossy
	// Close releases the store's connections.
	Close() error
}

// Open opens the store that rawURL names, for metadata of type M. Errors
// wrap ErrBadURL, ErrUnknownScheme, ErrConnect or the backend's own, and
// show the URL with its credentials replaced by xxxxx. A nil o is a zero
// Opener of this call's own (see Opener).
func Open[M any](ctx context.Context, o *Opener, rawURL string) (Store[M], error) {
	if o == nil {
		o = new(Opener)
	}
	st, err := open[M](ctx, o, rawURL)
	if err != nil {
		// A last guard: no library's message may carry a credential out.
		return nil, redactErr(err, rawURL)
	}
	return st, nil
}

func open[M any](ctx context.Context, o *Opener, rawURL string) (Store[M], error) {
	if looksKeywordValue(rawURL) {
		return nil, fmt.Errorf("%w: %s is a keyword/value string, not a URL: write postgres://USER@HOST/DB (or redis://, kubernetes://, memory://)", ErrBadURL, display(rawURL))
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		// url.Parse errors quote the URL, password included: never show them.
		return nil, fmt.Errorf("%w: %s cannot be parsed as a URL", ErrBadURL, display(rawURL))
	}
	switch u.Scheme {
	case "memory", "mem":
		return openMemory[M](o, u)
	case "":
		return nil, fmt.Errorf("%w: %s has no scheme (want memory://, redis://, rediss://, unix://, postgres://, kubernetes:// or etcd://)", ErrBadURL, display(rawURL))
	}
	open, ok := backend[M](u.Scheme)
	custom, others := registered[M](u.Scheme)
	switch {
	case !ok && custom == nil && others != nil:
		return nil, fmt.Errorf("%w: %q in %s is registered for metadata of type %s, not %v (see Register)", ErrUnknownScheme, u.Scheme, display(rawURL), strings.Join(others, ", "), metaType[M]())
	case !ok && custom == nil:
		// "localhost:6379" parses too, with the scheme "localhost".
		want := "memory, redis, rediss, unix, postgres, postgresql, kubernetes, etcd or etcds"
		if reg := registeredSchemes(); len(reg) > 0 {
			want += "; registered: " + strings.Join(reg, ", ")
		}
		return nil, fmt.Errorf("%w: %q in %s (want %s)", ErrUnknownScheme, u.Scheme, display(rawURL), want)
	}
	if !strings.HasPrefix(rawURL[len(u.Scheme):], "://") {
		return nil, fmt.Errorf("%w: %s: want %s:// followed by the address", ErrBadURL, display(rawURL), u.Scheme)
	}
	if !ok {
		return openRegistered(ctx, u, rawURL, custom)
	}
	return open(ctx, u, rawURL)
}

func openMemory[M any](o *Opener, u *url.URL) (Store[M], error) {
	name := u.Host + u.Path
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.mem == nil {
		o.mem = map[string]any{}
	}
	if s, ok := o.mem[name]; ok {
		ms, ok := s.(*memstore.Store[M])
		if !ok {
			return nil, fmt.Errorf("%w: memory://%s is already open with another metadata type", ErrBadURL, name)
		}
		return memoryStore[M]{ms}, nil
	}
	ms := memstore.New[M]()
	o.mem[name] = ms
	return memoryStore[M]{ms}, nil
}

// memoryStore is a memory:// store: memstore's methods, and Close.
type memoryStore[M any] struct{ *memstore.Store[M] }

// Close does nothing: the store lives as long as its Opener.
func (memoryStore[M]) Close() error { return nil }

// MayLoseRecords is false: a memory store keeps its records for as long as
// it lives.
func (s memoryStore[M]) MayLoseRecords() bool { return mayLose(s.Store, false) }

// mayLose is st's own answer when it has one, and otherwise what the
// backend is known to do.
func mayLose(st any, known bool) bool {
	if l, ok := st.(store.Lossy); ok {
		return l.MayLoseRecords()
	}
	return known
}
