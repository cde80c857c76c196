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

// Errors returned by this package.
var (
	// ErrBadURL: the URL cannot be parsed or lacks a part its scheme needs.
	ErrBadURL = errors.New("storeurl: bad store URL")
	// ErrUnknownScheme: no backend serves the URL's scheme.
	ErrUnknownScheme = errors.New("storeurl: unknown scheme")
)

// Opener opens stores from URLs. Memory stores opened through the same
// Opener with the same name are one store. The zero Opener is ready to use.
type Opener struct {
	mu  sync.Mutex
	mem map[string]any // name -> *memstore.Store[M]
}

// Store is an opened store with the means to close its connections.
type Store[M any] struct {
	store.Store[M]
	// Close releases the store's connections.
	Close func() error
}

// Open opens the store that rawURL names, for metadata of type M.
func Open[M any](ctx context.Context, o *Opener, rawURL string) (Store[M], error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		// url.Parse errors quote the URL, password included: drop them.
		return Store[M]{}, fmt.Errorf("%w: %s cannot be parsed", ErrBadURL, scrub(rawURL))
	}
	switch u.Scheme {
	case "memory", "mem":
		return openMemory[M](o, u)
	case "":
		return Store[M]{}, fmt.Errorf("%w: %s has no scheme (want memory://, redis://, postgres:// or kubernetes://)", ErrBadURL, redacted(u))
	}
	if open, ok := backend[M](u.Scheme); ok {
		st, err := open(ctx, u)
		if err != nil {
			return Store[M]{}, redactErr(err, u)
		}
		return st, nil
	}
	return Store[M]{}, fmt.Errorf("%w: %q in %s (want memory, redis, rediss, unix, postgres, postgresql or kubernetes)", ErrUnknownScheme, u.Scheme, redacted(u))
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
			return Store[M]{}, fmt.Errorf("%w: memory://%s is already open with another metadata type", ErrBadURL, name)
		}
		return Store[M]{Store: ms, Close: func() error { return nil }}, nil
	}
	ms := memstore.New[M]()
	o.mem[name] = ms
	return Store[M]{Store: ms, Close: func() error { return nil }}, nil
}

// secretParams are query parameters that carry credentials (libpq and pgx
// accept them).
var secretParams = []string{"password", "sslpassword"}

// redacted returns u as text with every credential replaced by "xxxxx": the
// userinfo password and the secret query parameters.
func redacted(u *url.URL) string {
	c := *u
	if q := c.Query(); len(q) > 0 {
		for _, k := range secretParams {
			if q.Has(k) {
				q.Set(k, "xxxxx")
			}
		}
		c.RawQuery = q.Encode()
	}
	return c.Redacted()
}

// secrets returns the credentials in u, longest first.
func secrets(u *url.URL) []string {
	var out []string
	if pw, ok := u.User.Password(); ok && pw != "" {
		out = append(out, pw)
	}
	q := u.Query()
	for _, k := range secretParams {
		if v := q.Get(k); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// redactErr removes the URL's credentials from err's text, whatever
// library produced it.
func redactErr(err error, u *url.URL) error {
	msg := err.Error()
	changed := false
	for _, s := range secrets(u) {
		if strings.Contains(msg, s) {
			msg, changed = strings.ReplaceAll(msg, s, "xxxxx"), true
		}
	}
	if !changed {
		return err
	}
	return &redactedErr{err: err, msg: msg}
}

type redactedErr struct {
	err error
	msg string
}

func (r *redactedErr) Error() string { return r.msg }
func (r *redactedErr) Unwrap() error { return r.err }

// scrub hides what may be credentials in a URL that did not parse: the
// userinfo and the whole query.
func scrub(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return "the URL"
	}
	if q := strings.IndexByte(rest, '?'); q >= 0 {
		rest = rest[:q] + "?…"
	}
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		rest = "xxxxx@" + rest[at+1:]
	}
	return fmt.Sprintf("%q", scheme+"://"+rest)
}
