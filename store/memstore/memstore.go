package memstore

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"sync"

	"github.com/tenure-go/tenure/internal/nilarg"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/internal/edge"
	"github.com/tenure-go/tenure/store/watchutil"
)

// Store is an in-process store of lease records with metadata of type M. It
// implements [store.Store], [store.Watcher] and [store.FuncWatcher] and is safe for concurrent
// use. The zero Store, like a nil *Store, is not usable: call New. Its
// methods then return an error wrapping [store.ErrNilArgument] (Delete does
// nothing), and [Store.Validate] says so, so that lead.New refuses it.
type Store[M any] struct {
	codec store.Codec[M]
	// byValue: M shares nothing when copied (see copiedByValue), so each
	// stored version is decoded once and copies of that value are handed
	// out.
	byValue bool
	// sameBytes: equal values of M (==) encode alike (see
	// encodedByValue), so metadata equal to the stored value is not
	// encoded again.
	sameBytes bool

	// hub fans each name's states (nil: absent) out to its watchers;
	// Publish and Watch are called under mu.
	hub *watchutil.Hub[string, *entry]

	mu    sync.Mutex
	rev   lease.Revision   // the last revision handed out
	names map[string]*slot // by name; a slot outlives its record
}

var (
	_ store.Store[struct{}]   = (*Store[struct{}])(nil)
	_ store.Watcher[struct{}] = (*Store[struct{}])(nil)
)

// entry is one stored version of a record, with its metadata encoded. It is
// never modified once stored, so it may be read without the lock.
type entry struct {
	rec lease.Record[[]byte]
	rev lease.Revision
	err error // why the metadata cannot be decoded (only from PutRaw), or nil
	// meta is the metadata decoded, an M, when the Store's M is copied by
	// value (Store.byValue); nil otherwise. Every reader gets a copy.
	meta any
}

// slot is what a Store keeps for one name.
type slot struct {
	cur     *entry // the current record; nil when absent
	written bool   // a record was stored once, and may have been lost since
	floor   uint64 // the highest Token ever stored under the name
}

// New returns an empty Store that encodes metadata with [store.JSONCodec].
func New[M any]() *Store[M] {
	return NewWithCodec[M](nil)
}

// NewWithCodec returns an empty Store that encodes and decodes metadata
// with codec, whose type fixes the Store's metadata type. A nil codec means
// [store.JSONCodec].
func NewWithCodec[M any](codec store.Codec[M]) *Store[M] {
	if nilarg.IsNil(codec) {
		codec = store.JSONCodec[M]{}
	}
	t := reflect.TypeFor[M]()
	return &Store[M]{
		codec: codec, byValue: copiedByValue(t), sameBytes: encodedByValue(t),
		hub: watchutil.NewHub[string, *entry](nil, watchutil.HubOptions{}), names: make(map[string]*slot),
	}
}

// Get returns the record stored under name and its revision. It returns an
// error wrapping [store.ErrNotFound] when there is none,
// [store.ErrCorruptRecord] when its metadata cannot be decoded,
// [store.ErrInvalidName] for a bad name, ctx.Err() when ctx has ended, and
// [store.ErrNilArgument] for a nil ctx (so do the other methods).
// The record is decoded afresh on every call (or, when M holds no pointer,
// map, slice or interface, copied from the value decoded once when it was
// stored): the caller owns it.
func (s *Store[M]) Get(ctx context.Context, name string) (lease.Record[M], lease.Revision, error) {
	if err := s.check(ctx, "Get", name); err != nil {
		return lease.Record[M]{}, 0, err
	}
	s.mu.Lock()
	var e *entry
	if sl := s.names[name]; sl != nil {
		e = sl.cur
	}
	s.mu.Unlock()
	if e == nil {
		return lease.Record[M]{}, 0, fmt.Errorf("memstore: Get %q: %w", name, store.ErrNotFound)
	}
	rec, err := s.decode(name, e)
	if err != nil {
		return lease.Record[M]{}, 0, err
	}
	return rec, e.rev, nil
}

// CompareAndSwap stores next under name if the current revision equals
// expected (zero: only if no record exists), and returns the stored record
// and its new revision.
//
// On mismatch it returns an error wrapping [store.ErrConflict] together with
// the current record and revision (a zero record and revision when there is
// none). A corrupt current record is never overwritten: CompareAndSwap
// returns an error wrapping [store.ErrCorruptRecord] instead, whatever the
// expected revision. It also refuses a bad name ([store.ErrInvalidName]), a
// record that breaks [store.ValidateRecord] ([store.ErrInvalidRecord]),
// metadata that cannot be encoded ([store.ErrEncode]) or is too large
// ([store.ErrMetadataTooLarge]), and an ended ctx (ctx.Err()); it then
// writes nothing.
//
// The stored record is next with its metadata passed through the codec and
// the monotonic clock readings stripped from its times. When next starts a
// new term (see [store.Renews]), including a create after the name's record
// was lost (see Delete), its Token is raised above every Token the name had
// and to at least 1 ([store.NewToken]); when no token up to lease.MaxToken
// is left for it, CompareAndSwap returns an error wrapping
// [store.ErrTokenExhausted] and writes nothing.
func (s *Store[M]) CompareAndSwap(ctx context.Context, name string, expected lease.Revision, next lease.Record[M]) (lease.Record[M], lease.Revision, error) {
	return s.compareAndSwap(ctx, "CompareAndSwap", name, expected, nil, next)
}

// GuardsReleases reports true: CompareReleasedAndSwap guards its swap. It
// is part of [store.ReleaseGuard].
func (s *Store[M]) GuardsReleases() bool { return true }

// CompareReleasedAndSwap stores next under name as CompareAndSwap does,
// and only if the record stored at revision expected is released and
// shows was; otherwise it returns an error wrapping [store.ErrConflict]
// with the record found. It implements [store.ReleaseGuard].
func (s *Store[M]) CompareReleasedAndSwap(ctx context.Context, name string, expected lease.Revision, was store.Released, next lease.Record[M]) (lease.Record[M], lease.Revision, error) {
	return s.compareAndSwap(ctx, "CompareReleasedAndSwap", name, expected, &was, next)
}

// compareAndSwap is CompareAndSwap, guarded by was when it is not nil
// (CompareReleasedAndSwap); op names the method in errors.
func (s *Store[M]) compareAndSwap(ctx context.Context, op, name string, expected lease.Revision, was *store.Released, next lease.Record[M]) (lease.Record[M], lease.Revision, error) {
	if err := s.check(ctx, op, name); err != nil {
		return lease.Record[M]{}, 0, err
	}
	// A renewal usually writes the metadata stored now: when equal values
	// of M encode alike, the stored bytes and their decoded value serve.
	b, m, same := s.storedIfEqual(name, next.Metadata)
	var rec lease.Record[[]byte]
	if same {
		if err := store.ValidateRecord(next); err != nil {
			return lease.Record[M]{}, 0, fmt.Errorf("memstore: %s %q: %w", op, name, err)
		}
		rec = lease.Record[[]byte]{
			Holder:        next.Holder,
			Token:         next.Token,
			AcquiredAt:    next.AcquiredAt.Round(0),
			RenewedAt:     next.RenewedAt.Round(0),
			LeaseDuration: next.LeaseDuration,
			Transitions:   next.Transitions,
			Claim:         next.Claim,
			Successor:     next.Successor,
			Stamp:         next.Stamp,
			Metadata:      b,
		}
	} else {
		var err error
		if rec, m, err = store.EncodeRecord(s.codec, next); err != nil {
			return lease.Record[M]{}, 0, fmt.Errorf("memstore: %s %q: %w", op, name, err)
		}
		// When M is copied by value and the bytes are those stored now,
		// their decoded value is taken: one decoded value per version.
		if dm, ok := s.decodedNow(name, rec.Metadata); ok {
			m = dm
		}
	}
	var decoded any
	if s.byValue {
		decoded = m
	}
	stored, found, err := s.swap(op, name, expected, was, rec, decoded)
	switch {
	case err == nil:
		return withMetadata(stored.rec, m), stored.rev, nil
	case found != nil: // a conflict with an existing record
		cur, derr := s.decode(name, found)
		if derr != nil {
			return lease.Record[M]{}, 0, derr
		}
		return cur, found.rev, err
	default:
		return lease.Record[M]{}, 0, err
	}
}

// swap is the locked part of CompareAndSwap. On success it returns the stored
// entry; on a conflict, the entry found (nil when absent) and the error.
func (s *Store[M]) swap(op, name string, expected lease.Revision, was *store.Released, rec lease.Record[[]byte], decoded any) (stored, found *entry, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sl := s.names[name]
	if sl != nil {
		found = sl.cur
	}
	if found != nil && found.err != nil {
		return nil, nil, fmt.Errorf("memstore: %s %q: the stored record is not overwritten: %w", op, name, found.err)
	}
	var rev lease.Revision
	if found != nil {
		rev = found.rev
	}
	if rev != expected {
		return nil, found, fmt.Errorf("memstore: %s %q: expected revision %d, found %d: %w", op, name, expected, rev, store.ErrConflict)
	}
	if was != nil && (found == nil || !store.ReleasedAs(found.rec, *was)) {
		return nil, found, fmt.Errorf("memstore: %s %q: the record at revision %d is not the released one expected: %w", op, name, rev, store.ErrConflict)
	}
	if found == nil || !store.Renews(found.rec, rec) {
		// A new term: its token goes above every token the name had,
		// including those of a record that was lost since.
		var floor uint64
		if sl != nil {
			floor = sl.floor
		}
		token, err := store.NewToken(rec.Token, floor)
		if err != nil {
			return nil, nil, fmt.Errorf("memstore: %s %q: %w", op, name, err)
		}
		rec.Token = token
	}
	return s.put(name, rec, nil, decoded), nil, nil
}

// storedIfEqual returns the encoded and decoded metadata of the record
// stored under name if equal values of M encode alike and m equals it.
func (s *Store[M]) storedIfEqual(name string, m M) ([]byte, M, bool) {
	var zero M
	if !s.sameBytes {
		return nil, zero, false
	}
	e := s.current(name)
	if e == nil || e.meta == nil || e.meta != any(m) {
		return nil, zero, false
	}
	return e.rec.Metadata, m, true
}

// current returns the entry stored under name, or nil.
func (s *Store[M]) current(name string) *entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sl := s.names[name]; sl != nil {
		return sl.cur
	}
	return nil
}

// decodedNow returns the decoded metadata of the record stored under name
// if M is copied by value and that record's metadata is b: the same bytes
// decode to the same value, so the stored one serves.
func (s *Store[M]) decodedNow(name string, b []byte) (M, bool) {
	var zero M
	if !s.byValue {
		return zero, false
	}
	e := s.current(name)
	if e == nil || e.meta == nil || !bytes.Equal(e.rec.Metadata, b) {
		return zero, false
	}
	m, ok := e.meta.(M)
	return m, ok
}

// put stores rec under name with the next revision and tells the watchers.
// s.mu is held.
func (s *Store[M]) put(name string, rec lease.Record[[]byte], decodeErr error, decoded any) *entry {
	sl := s.names[name]
	if sl == nil {
		sl = &slot{}
		s.names[name] = sl
	}
	s.rev++
	e := &entry{rec: rec, rev: s.rev, err: decodeErr, meta: decoded}
	sl.cur, sl.written = e, true
	sl.floor = max(sl.floor, rec.Token)
	s.hub.Publish(name, e)
	return e
}

// Delete removes the record of name, as if the backend had lost it. It exists
// to simulate data loss in tests: afterwards Get reports
// [store.ErrNotFound], watchers receive an Absent event, and a
// CompareAndSwap with the zero revision creates the record again.
//
// The loss is not total, as a careful backend would arrange: revisions keep
// growing (the next record of name gets a revision larger than any it had
// before, so revisions never repeat), and a record created after the loss
// gets a Token above every Token the name had. Deleting an absent name does
// nothing.
func (s *Store[M]) Delete(name string) {
	if s.Validate() != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sl := s.names[name]
	if sl == nil || sl.cur == nil {
		return
	}
	sl.cur = nil
	s.hub.Publish(name, nil)
}

// PutRaw stores rec under name with a new revision, whatever is stored now,
// and returns that revision. rec.Metadata is taken as already encoded and
// stored as given: PutRaw bypasses the codec and every check but that of the
// name. It exists to simulate a corrupt record in tests: when the codec
// cannot decode rec.Metadata, or rec breaks [store.ValidateStored] (a
// Token above lease.MaxToken, say), Get returns an error wrapping
// [store.ErrCorruptRecord], CompareAndSwap refuses to overwrite the record
// with the same error, and watchers receive an event whose Err wraps it,
// until the record is replaced by another PutRaw or removed by Delete.
func (s *Store[M]) PutRaw(name string, rec lease.Record[[]byte]) (lease.Revision, error) {
	if err := s.Validate(); err != nil {
		return 0, fmt.Errorf("memstore: PutRaw: %w", err)
	}
	if err := store.ValidateName(name); err != nil {
		return 0, fmt.Errorf("memstore: PutRaw: %w", err)
	}
	rec.Metadata = bytes.Clone(rec.Metadata)
	var (
		decodeErr error
		decoded   any
	)
	if err := store.ValidateStored(rec); err != nil {
		decodeErr = corrupt(name, err)
	} else if m, err := s.codec.Decode(rec.Metadata); err != nil {
		decodeErr = corrupt(name, err)
	} else if s.byValue {
		decoded = m
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.put(name, rec, decodeErr, decoded).rev, nil
}

// Watch delivers the current state of name first (an Absent event when there
// is no record), then every later change in revision order. Writers never
// wait for a watcher: a receiver that falls behind skips intermediate states
// and gets the latest, but never an older revision after a newer one. A
// record that cannot be decoded arrives as an event with its Revision and an
// Err wrapping [store.ErrCorruptRecord]; a Delete arrives as an Absent event.
// Every event is decoded separately, so the receiver owns its records;
// when M holds no pointer, map, slice or interface (so a copy shares
// nothing), each stored version is decoded once and every reader and
// watcher gets its own copy of that value.
//
// The channel is closed when ctx ends; until then the watch is kept (and,
// unless M is copied by value, a goroutine serves it), so cancel ctx when
// done. When M is copied by value, the writer puts each event in the
// channel's one-event buffer itself, replacing one not yet received. Watch returns an error for a bad name
// ([store.ErrInvalidName]) or an ended ctx.
func (s *Store[M]) Watch(ctx context.Context, name string) (<-chan store.Event[M], error) {
	if err := s.check(ctx, "Watch", name); err != nil {
		return nil, err
	}
	if s.byValue {
		return s.watchDirect(ctx, name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return watchutil.Watch(ctx, s.hub, name, s.watcher(name))
}

var _ store.FuncWatcher[struct{}] = (*Store[struct{}])(nil)

// WatchFunc delivers what Watch would send, under the same rules, by
// calling fn: fn(ev, true) for each event, the current state first (called
// before WatchFunc returns), then fn(Event{}, false) once when ctx ends. It
// needs no goroutine: the writer calls fn, under the Store's lock, for
// every watcher of the name, so calls never overlap and fn must return
// quickly and not call the Store. Each call gets a record of its own,
// decoded then (or copied, when M is copied by value). WatchFunc returns an
// error, and never calls fn, for a bad name ([store.ErrInvalidName]), an
// ended ctx, or a nil fn ([store.ErrNilArgument]). It implements
// [store.FuncWatcher].
func (s *Store[M]) WatchFunc(ctx context.Context, name string, fn func(ev store.Event[M], ok bool)) error {
	if err := s.check(ctx, "WatchFunc", name); err != nil {
		return err
	}
	if fn == nil {
		return fmt.Errorf("memstore: WatchFunc %q: %w: fn is nil", name, store.ErrNilArgument)
	}
	return s.watchFunc(ctx, name, fn)
}

// watcher is how a watch of name reads the current state and turns each
// state into an event, decoded as it is delivered. s.mu is held while it
// reads.
func (s *Store[M]) watcher(name string) watchutil.Watcher[*entry, *entry, store.Event[M]] {
	var cur *entry
	if sl := s.names[name]; sl != nil {
		cur = sl.cur
	}
	return watchutil.Every(cur, func(e *entry) store.Event[M] { return s.event(name, e) })
}

// event turns a stored state into the event a watcher receives.
func (s *Store[M]) event(name string, e *entry) store.Event[M] {
	if e == nil {
		return store.Event[M]{Absent: true}
	}
	rec, err := s.decode(name, e)
	if err != nil {
		return store.Event[M]{Revision: e.rev, Err: err}
	}
	return store.Event[M]{Record: rec, Revision: e.rev}
}

// decode returns the record of e with its metadata decoded afresh, or a
// copy of the value decoded when it was stored when M is copied by value.
func (s *Store[M]) decode(name string, e *entry) (lease.Record[M], error) {
	if e.err != nil {
		return lease.Record[M]{}, e.err
	}
	if m, ok := e.meta.(M); ok && e.meta != nil {
		return withMetadata(e.rec, m), nil
	}
	m, err := s.codec.Decode(e.rec.Metadata)
	if err != nil {
		return lease.Record[M]{}, corrupt(name, err)
	}
	return withMetadata(e.rec, m), nil
}

// withMetadata returns r with its encoded metadata replaced by m.
func withMetadata[M any](r lease.Record[[]byte], m M) lease.Record[M] {
	return lease.Record[M]{
		Holder:        r.Holder,
		Token:         r.Token,
		AcquiredAt:    r.AcquiredAt,
		RenewedAt:     r.RenewedAt,
		LeaseDuration: r.LeaseDuration,
		Transitions:   r.Transitions,
		Claim:         r.Claim,
		Successor:     r.Successor,
		Stamp:         r.Stamp,
		Metadata:      m,
	}
}

// corrupt wraps a decoding error of the record of name so that it matches
// store.ErrCorruptRecord.
func corrupt(name string, err error) error { return edge.Corrupt("memstore", name, err) }

// check refuses a Store not made by New, a nil or ended ctx, then a bad
// name, for operation op.
func (s *Store[M]) check(ctx context.Context, op, name string) error {
	return edge.Check(ctx, "memstore", op, name, s.Validate(), store.ValidateName)
}
