package endpointstore

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"sync"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/watchutil"
	"github.com/tenure-go/tenure/storeurl"
)

// Endpoint is the one metadata type this store keeps: where the leader
// serves.
type Endpoint struct {
	Addr  string   `json:"addr"`
	Zones []string `json:"zones,omitempty"`
}

// Store keeps lease records in memory, their metadata encoded so that
// callers share nothing with it. It implements store.Store[Endpoint],
// store.Watcher[Endpoint], store.FuncWatcher[Endpoint] and store.Lossy, and
// is safe for concurrent use.
// Make it with New.
type Store struct {
	codec store.JSONCodec[Endpoint]
	hub   *watchutil.Hub[string, *entry]

	mu     sync.Mutex
	rev    lease.Revision
	recs   map[string]*entry
	floors map[string]uint64 // the highest token each name has had
}

// entry is one stored version of a record; nil means no record. It is
// never modified once stored.
type entry struct {
	rec lease.Record[[]byte]
	rev lease.Revision
}

var (
	_ store.Store[Endpoint]       = (*Store)(nil)
	_ store.Watcher[Endpoint]     = (*Store)(nil)
	_ store.FuncWatcher[Endpoint] = (*Store)(nil)
	_ store.Lossy                 = (*Store)(nil)
)

// New returns an empty Store.
func New() *Store {
	s := &Store{recs: map[string]*entry{}, floors: map[string]uint64{}}
	s.hub = watchutil.NewHub[string, *entry](nil, watchutil.HubOptions{})
	return s
}

// MayLoseRecords is false: the store keeps its records as long as it lives.
func (s *Store) MayLoseRecords() bool { return false }

// Get returns the record of name and its revision, or an error wrapping
// store.ErrNotFound.
func (s *Store) Get(ctx context.Context, name string) (lease.Record[Endpoint], lease.Revision, error) {
	if err := s.check(ctx, name); err != nil {
		return lease.Record[Endpoint]{}, 0, err
	}
	s.mu.Lock()
	cur := s.recs[name]
	s.mu.Unlock()
	if cur == nil {
		return lease.Record[Endpoint]{}, 0, fmt.Errorf("endpointstore: %q: %w", name, store.ErrNotFound)
	}
	rec, err := s.decode(cur.rec)
	return rec, cur.rev, err
}

// CompareAndSwap stores next under name if the current revision is
// expected (zero: if there is no record), as the store.Store contract
// says: the current record comes back with a conflict, and a new term gets
// a token above every token the name has had.
func (s *Store) CompareAndSwap(ctx context.Context, name string, expected lease.Revision, next lease.Record[Endpoint]) (lease.Record[Endpoint], lease.Revision, error) {
	if err := s.check(ctx, name); err != nil {
		return lease.Record[Endpoint]{}, 0, err
	}
	// EncodeRecord checks next, encodes its metadata within the size limit
	// and makes sure the codec reads it back.
	enc, _, err := store.EncodeRecord(s.codec, next)
	if err != nil {
		return lease.Record[Endpoint]{}, 0, fmt.Errorf("endpointstore: %q: %w", name, err)
	}
	s.mu.Lock()
	cur := s.recs[name]
	switch {
	case cur == nil && expected != 0:
		s.mu.Unlock()
		return lease.Record[Endpoint]{}, 0, fmt.Errorf("endpointstore: %q: no record, expected revision %d: %w", name, expected, store.ErrConflict)
	case cur != nil && cur.rev != expected:
		s.mu.Unlock()
		rec, derr := s.decode(cur.rec)
		if derr != nil {
			return lease.Record[Endpoint]{}, 0, derr
		}
		return rec, cur.rev, fmt.Errorf("endpointstore: %q: revision %d, expected %d: %w", name, cur.rev, expected, store.ErrConflict)
	}
	if cur == nil || !store.Renews(cur.rec, enc) {
		tok, err := store.NewToken(enc.Token, s.floors[name])
		if err != nil {
			s.mu.Unlock()
			return lease.Record[Endpoint]{}, 0, fmt.Errorf("endpointstore: %q: %w", name, err)
		}
		enc.Token = tok
	}
	s.floors[name] = max(s.floors[name], enc.Token)
	s.rev++
	e := &entry{rec: enc, rev: s.rev}
	s.recs[name] = e
	s.hub.Publish(name, e) // under s.mu: watchers see writes in order
	s.mu.Unlock()
	rec, err := s.decode(enc)
	return rec, e.rev, err
}

// Watch delivers the current state of name (an Absent event when there is
// no record), then its changes, skipping to the newest when the receiver
// falls behind (see watchutil.Hub). The channel is closed when ctx ends.
func (s *Store) Watch(ctx context.Context, name string) (<-chan store.Event[Endpoint], error) {
	if err := s.check(ctx, name); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return watchutil.Watch(ctx, s.hub, name, watchutil.Every(s.recs[name], s.event))
}

// WatchFunc delivers what Watch would send by calling fn, from CompareAndSwap
// itself (watchutil.WatchFunc): no goroutine per watch, for a process
// that watches many names. fn is called under the store's lock, so it must
// return at once and must not call the store. It implements
// store.FuncWatcher.
func (s *Store) WatchFunc(ctx context.Context, name string, fn func(ev store.Event[Endpoint], ok bool)) error {
	if err := s.check(ctx, name); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return watchutil.WatchFunc(ctx, s.hub, name, watchutil.Every(s.recs[name], s.event), fn)
}

// WatchCapabilities claims nothing (events are hints, read before they are
// acted on). A store whose events only the store itself can produce, in
// revision order and after the write, may say Authentic: electors then take
// a release over without reading it first.
func (s *Store) WatchCapabilities() store.WatchCapabilities { return store.WatchCapabilities{} }

// event turns a stored state into an event, decoded afresh for each
// receiver.
func (s *Store) event(e *entry) store.Event[Endpoint] {
	if e == nil {
		return store.Event[Endpoint]{Absent: true}
	}
	rec, err := s.decode(e.rec)
	if err != nil {
		return store.Event[Endpoint]{Revision: e.rev, Err: err}
	}
	return store.Event[Endpoint]{Record: rec, Revision: e.rev}
}

func (s *Store) decode(r lease.Record[[]byte]) (lease.Record[Endpoint], error) {
	m, err := s.codec.Decode(r.Metadata)
	if err != nil {
		return lease.Record[Endpoint]{}, err
	}
	return lease.Record[Endpoint]{
		Holder: r.Holder, Token: r.Token, Transitions: r.Transitions,
		AcquiredAt: r.AcquiredAt, RenewedAt: r.RenewedAt,
		LeaseDuration: r.LeaseDuration, Claim: r.Claim, Successor: r.Successor, Metadata: m,
	}, nil
}

// check refuses a nil Store, a nil or ended context, then a bad name.
func (s *Store) check(ctx context.Context, name string) error {
	switch {
	case s == nil || s.recs == nil:
		return fmt.Errorf("endpointstore: %w: the *Store is nil or not made by New", store.ErrNilArgument)
	case ctx == nil:
		return fmt.Errorf("endpointstore: %w: ctx is nil", store.ErrNilArgument)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("endpointstore: %q: %w", name, err)
	}
	if err := store.ValidateName(name); err != nil {
		return fmt.Errorf("endpointstore: %w", err)
	}
	return nil
}

// Scheme is the URL scheme Register serves: endpoints://NAME opens the
// store NAME, one per name in the process.
const Scheme = "endpoints"

// Register makes storeurl.Open open endpoints://NAME URLs, for Endpoint
// metadata and for json.RawMessage (what the tenure command reads records
// as), both on the same stores. Call it once, from main or an init
// function.
func Register() error {
	var (
		mu     sync.Mutex
		stores = map[string]*Store{}
	)
	named := func(u *url.URL) (*Store, error) {
		if u.Host == "" {
			return nil, fmt.Errorf("endpointstore: the store name is empty: want %s://NAME", Scheme)
		}
		mu.Lock()
		defer mu.Unlock()
		if stores[u.Host] == nil {
			stores[u.Host] = New()
		}
		return stores[u.Host], nil
	}
	if err := storeurl.Register(Scheme, func(_ context.Context, u *url.URL) (storeurl.Store[Endpoint], error) {
		st, err := named(u)
		if err != nil {
			return nil, err
		}
		return closer{st}, nil
	}); err != nil {
		return err
	}
	return storeurl.Register(Scheme, func(_ context.Context, u *url.URL) (storeurl.Store[json.RawMessage], error) {
		st, err := named(u)
		if err != nil {
			return nil, err
		}
		return Raw(st), nil
	})
}

// closer adds Close to a Store, as storeurl.Store wants.
type closer struct{ *Store }

// Close does nothing: the store lives as long as the process.
func (closer) Close() error { return nil }
