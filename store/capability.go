package store

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/tenure-go/tenure/internal/nilarg"
	"github.com/tenure-go/tenure/lease"
)

// This file holds the helpers for the optional interfaces a Store may
// implement (Lossy, Watcher, FuncWatcher, MetadataChecker, Validator,
// Immediate, ReleaseGuard, CreateVoucher, Batcher). Each answers for any Store:
// the store's own answer when it implements the interface, and a
// conservative one when it does not. Wrappers forward the interfaces with
// them (see "Wrapping a store" in docs/guide.md):
//
//	type Timed[M any] struct{ store.Store[M] }
//
//	func (t Timed[M]) MayLoseRecords() bool { return store.MayLoseRecords(t.Store) }
//	func (t Timed[M]) CheckMetadata(m M) error { return store.CheckMetadata(t.Store, m) }
//	func (t Timed[M]) Validate() error { return store.Validate(t.Store) }
//	func (t Timed[M]) Watch(ctx context.Context, name string) (<-chan store.Event[M], error) {
//		return store.Watch(ctx, t.Store, name)
//	}
//	func (t Timed[M]) WatchCapabilities() store.WatchCapabilities {
//		return store.WatchCapabilitiesOf(t.Store) // only while it passes events on unchanged
//	}
//	func (t Timed[M]) WatchFunc(ctx context.Context, name string, fn func(store.Event[M], bool)) error {
//		return store.WatchFunc(ctx, t.Store, name, fn) // store.WatchFuncVia(ctx, t, ...) if Watch changes events
//	}
//	func (t Timed[M]) GuardsReleases() bool { return store.ReleaseGuardOf(t.Store) != nil }
//	func (t Timed[M]) CompareReleasedAndSwap(ctx context.Context, name string, expected lease.Revision, was store.Released, next lease.Record[M]) (lease.Record[M], lease.Revision, error) {
//		return store.CompareReleasedAndSwap(ctx, t.Store, name, expected, was, next)
//	}
//	func (t Timed[M]) VouchesCreates() bool { return store.CreateVoucherOf(t.Store) != nil }
//	func (t Timed[M]) CreateVouched(ctx context.Context, name string, next lease.Record[M]) (lease.Record[M], lease.Revision, bool, error) {
//		return store.CreateVouched(ctx, t.Store, name, next)
//	}
//	func (t Timed[M]) BatchesSwaps() bool { return store.BatcherOf(t.Store) != nil }
//	func (t Timed[M]) CompareAndSwapBatch(ctx context.Context, swaps []store.Swap[M]) []store.SwapResult[M] {
//		return store.CompareAndSwapBatch(ctx, t.Store, swaps)
//	}

// Immediate is implemented by stores whose Get and CompareAndSwap never
// wait: no I/O, no lock held by anything that waits (memstore). Electors
// then run those operations on the goroutine that steps them instead of
// starting a goroutine for each, which at thousands of elections in a
// process is a fifth of their CPU. It is for speed only: a store that does
// not say so (or a wrapper that hides it) gets a goroutine per operation,
// which is always right. A store that says so and then waits stalls every
// election its elector's loop steps (a lead.Group's, all of them), so a
// wrapper that adds any wait must not forward it. That costs time, not
// safety: each term's work still ends at its deadline (lead's term
// watchdog has a timer of its own), while observers learn of changes
// late; the simulator's runtime sweep runs such a store.
type Immediate interface {
	// AnswersImmediately reports whether Get and CompareAndSwap return
	// without waiting.
	AnswersImmediately() bool
}

// AnswersImmediately reports whether st's operations never wait: what st's
// AnswersImmediately method says when st implements Immediate, and false
// (the conservative answer) when it does not or st is nil.
func AnswersImmediately[M any](st Store[M]) bool {
	if i, ok := st.(Immediate); ok && !nilarg.IsNil(i) {
		return i.AnswersImmediately()
	}
	return false
}

// MetadataChecker is implemented by stores that can tell, without a round
// trip, whether they would accept metadata: CheckMetadata returns an error
// wrapping ErrEncode or ErrMetadataTooLarge for metadata that
// CompareAndSwap would refuse, and nil otherwise. Electors call it (through
// the function CheckMetadata) when they are given new metadata, so that
// metadata the store cannot take is refused at once instead of at the next
// write.
type MetadataChecker[M any] interface {
	CheckMetadata(m M) error
}

// MayLoseRecords reports whether st may lose records: what st's
// MayLoseRecords method says when st implements Lossy, and true (the
// conservative answer) when it does not or st is nil.
func MayLoseRecords[M any](st Store[M]) bool {
	if l, ok := st.(Lossy); ok && !nilarg.IsNil(l) {
		return l.MayLoseRecords()
	}
	return true
}

// Watch calls st's Watch method when st implements Watcher. Otherwise it
// returns an error wrapping ErrWatchUnsupported (and errors.ErrUnsupported),
// which electors take for "poll instead": they do not watch that store
// again. So a wrapper may forward Watch whether or not its store can watch.
// Watch returns an error wrapping ErrNilArgument for a nil ctx or st.
func Watch[M any](ctx context.Context, st Store[M], name string) (<-chan Event[M], error) {
	switch {
	case ctx == nil:
		return nil, fmt.Errorf("store: Watch %q: %w: ctx is nil", name, ErrNilArgument)
	case nilarg.IsNil(st):
		return nil, fmt.Errorf("store: Watch %q: %w: st is nil", name, ErrNilArgument)
	}
	w, ok := st.(Watcher[M])
	if !ok {
		return nil, fmt.Errorf("store: Watch %q: %w: %T does not implement store.Watcher", name, ErrWatchUnsupported, st)
	}
	return w.Watch(ctx, name)
}

// WatchCapabilitiesOf returns what st's watch events are worth: st's
// WatchCapabilities when st implements Watcher, and the zero value (the
// conservative answer: events are hints) when it does not or st is nil.
func WatchCapabilitiesOf[M any](st Store[M]) WatchCapabilities {
	if w, ok := st.(Watcher[M]); ok && !nilarg.IsNil(w) {
		return w.WatchCapabilities()
	}
	return WatchCapabilities{}
}

// CheckMetadata reports whether st would accept m: st's CheckMetadata when
// st implements MetadataChecker; otherwise whether JSONCodec can encode m
// within MaxMetadataBytes (what every store of this module does by
// default). That fallback is a guess for a store with a codec of its own:
// such a store should implement MetadataChecker. The error wraps ErrEncode
// or ErrMetadataTooLarge, or ErrNilArgument for a nil st.
func CheckMetadata[M any](st Store[M], m M) error {
	if nilarg.IsNil(st) {
		return fmt.Errorf("store: CheckMetadata: %w: st is nil", ErrNilArgument)
	}
	if c, ok := st.(MetadataChecker[M]); ok {
		return c.CheckMetadata(m)
	}
	return CheckCodec[M](JSONCodec[M]{}, m)
}

// CheckCodec reports whether a store that encodes metadata with c would
// accept m: c encodes it within MaxMetadataBytes, and decodes what it
// encoded. Stores implement MetadataChecker with it. The error wraps
// ErrEncode or ErrMetadataTooLarge, or ErrNilArgument for a nil c.
func CheckCodec[M any](c Codec[M], m M) error {
	_, _, err := encodeChecked(c, m)
	return err
}

// Validator is implemented by stores that can tell, without a round trip,
// that they cannot be used: a zero value that was not made by the store's
// constructor, say. Validate returns nil for a usable store, and otherwise
// an error that says why (wrapping ErrNilArgument for a nil or zero store).
type Validator interface {
	Validate() error
}

// Validate reports whether st is clearly unusable, without a round trip:
// st is nil or holds a nil pointer (a nil *memstore.Store, say); st is a
// struct, or a pointer to one, that embeds a nil store (a wrapper around
// nothing); or st implements Validator and its Validate fails. The error
// wraps ErrNilArgument, or is what Validate returned. Electors call it in
// lead.New, so that such a store is refused there rather than failing
// every operation later.
func Validate[M any](st Store[M]) error {
	if nilarg.IsNil(st) {
		if st == nil {
			return fmt.Errorf("%w: the store is nil", ErrNilArgument)
		}
		return fmt.Errorf("%w: the store is a nil %T", ErrNilArgument, st)
	}
	if field := nilEmbedded(st); field != "" {
		return fmt.Errorf("%w: the store embedded in %T (field %s) is nil", ErrNilArgument, st, field)
	}
	if v, ok := st.(Validator); ok {
		return v.Validate()
	}
	return nil
}

// nilEmbedded returns the name of an embedded field of st (a struct, or a
// pointer to one) that has the methods of a Store and is nil, or "".
func nilEmbedded(st any) string {
	v := reflect.ValueOf(st)
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return ""
	}
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if !f.Anonymous {
			continue
		}
		switch fv := v.Field(i); fv.Kind() {
		case reflect.Interface, reflect.Pointer:
			_, get := f.Type.MethodByName("Get")
			_, swap := f.Type.MethodByName("CompareAndSwap")
			if get && swap && fv.IsNil() {
				return f.Name
			}
		}
	}
	return ""
}

// WatchFunc watches name on st, delivering by calling fn as
// FuncWatcher.WatchFunc does: with st's WatchFunc when st implements
// FuncWatcher, and otherwise as WatchFuncVia does with st's Watch. It
// returns an error wrapping ErrWatchUnsupported when st cannot watch, and
// ErrNilArgument for a nil ctx, st or fn.
func WatchFunc[M any](ctx context.Context, st Store[M], name string, fn func(ev Event[M], ok bool)) error {
	switch {
	case ctx == nil:
		return fmt.Errorf("store: WatchFunc %q: %w: ctx is nil", name, ErrNilArgument)
	case nilarg.IsNil(st):
		return fmt.Errorf("store: WatchFunc %q: %w: st is nil", name, ErrNilArgument)
	case fn == nil:
		return fmt.Errorf("store: WatchFunc %q: %w: fn is nil", name, ErrNilArgument)
	}
	if fw, ok := st.(FuncWatcher[M]); ok {
		return fw.WatchFunc(ctx, name, fn)
	}
	w, ok := st.(Watcher[M])
	if !ok {
		return fmt.Errorf("store: WatchFunc %q: %w: %T does not implement store.Watcher", name, ErrWatchUnsupported, st)
	}
	return WatchFuncVia(ctx, w, name, fn)
}

// WatchFuncVia watches name with w's Watch, and delivers by calling fn as
// FuncWatcher.WatchFunc does, from a goroutine that calls fn for each event
// it receives, then fn(Event{}, false) when the channel closes. It never
// uses w's WatchFunc: a wrapper that changes Watch implements WatchFunc
// with it, on its own Watch (store.WatchFunc on itself would call that
// WatchFunc again). It returns Watch's error, an error when Watch returns a
// nil channel, and one wrapping ErrNilArgument for a nil ctx, w or fn.
func WatchFuncVia[M any](ctx context.Context, w Watcher[M], name string, fn func(ev Event[M], ok bool)) error {
	switch {
	case ctx == nil:
		return fmt.Errorf("store: WatchFunc %q: %w: ctx is nil", name, ErrNilArgument)
	case nilarg.IsNil(w):
		return fmt.Errorf("store: WatchFunc %q: %w: the Watcher is nil", name, ErrNilArgument)
	case fn == nil:
		return fmt.Errorf("store: WatchFunc %q: %w: fn is nil", name, ErrNilArgument)
	}
	ch, err := w.Watch(ctx, name)
	if err != nil {
		return err
	}
	if ch == nil {
		return fmt.Errorf("store: WatchFunc %q: %T's Watch returned a nil channel and no error", name, w)
	}
	go func() {
		for ev := range ch {
			fn(ev, true)
		}
		fn(Event[M]{}, false)
	}()
	return nil
}

// Released is what a guarded swap (ReleaseGuard) requires of the record it
// replaces, besides its revision: no holder, and these fields. They are
// the fields an elector builds its new term on (the token it goes above,
// the transitions it counts on, the lease it remembers, the successor the
// release names, "" for none), so a swap that succeeds proves that the
// record it replaced was exactly the released one the elector was told
// of: a forged event showing a release that names the elector, or names
// nobody, cannot make it take over a release that names another.
type Released struct {
	Token         uint64
	Transitions   uint64
	LeaseDuration time.Duration
	Successor     string
}

// ReleaseGuard is implemented by stores whose compare-and-swap can also
// check what the record it replaces holds: a swap that succeeds only if
// the record at the expected revision is released. Electors use it to
// take over a release they heard of on a watch that anyone may publish on
// (Redis Pub/Sub, PostgreSQL NOTIFY), without reading the record first: a
// forged "released at revision r" makes the guarded swap fail with a
// conflict (showing the real record), never overwrite a live lease. A
// store that does not implement it, says false, or is hidden by a wrapper
// has its electors read first, which is always right. A wrapper forwards
// both methods (store.ReleaseGuardOf answers for any store); one that
// changes CompareAndSwap must not let its store's CompareReleasedAndSwap
// be promoted past it.
type ReleaseGuard[M any] interface {
	// GuardsReleases reports whether CompareReleasedAndSwap guards the
	// swap as it says: a wrapper answers for the store it wraps.
	GuardsReleases() bool
	// CompareReleasedAndSwap stores next under name as CompareAndSwap
	// does, and only if, in addition, the record stored at revision
	// expected has no holder and was's Token, Transitions, LeaseDuration
	// and Successor. When the revision matches but the record does not,
	// it returns an error wrapping ErrConflict with the record and
	// revision found, as for a revision that does not match. It never
	// creates a record: with expected 0 it writes nothing and returns an
	// error wrapping ErrConflict with what is stored (a zero record and
	// revision when nothing is).
	CompareReleasedAndSwap(ctx context.Context, name string, expected lease.Revision, was Released, next lease.Record[M]) (lease.Record[M], lease.Revision, error)
}

// ReleaseGuardOf returns st's ReleaseGuard when st implements it and says
// that it guards releases, and nil (the conservative answer: read before
// taking a release over) when it does not or st is nil.
func ReleaseGuardOf[M any](st Store[M]) ReleaseGuard[M] {
	if g, ok := st.(ReleaseGuard[M]); ok && !nilarg.IsNil(g) && g.GuardsReleases() {
		return g
	}
	return nil
}

// CompareReleasedAndSwap calls st's guarded swap (see ReleaseGuard) when
// ReleaseGuardOf finds one; otherwise it writes nothing and returns an
// error wrapping errors.ErrUnsupported. A wrapper forwards
// CompareReleasedAndSwap with it (and GuardsReleases with ReleaseGuardOf),
// so that its electors swap from a heard release exactly when the wrapped
// store can guard the swap. It returns an error wrapping ErrNilArgument
// for a nil ctx or st.
func CompareReleasedAndSwap[M any](ctx context.Context, st Store[M], name string, expected lease.Revision, was Released, next lease.Record[M]) (lease.Record[M], lease.Revision, error) {
	switch {
	case ctx == nil:
		return lease.Record[M]{}, 0, fmt.Errorf("store: CompareReleasedAndSwap %q: %w: ctx is nil", name, ErrNilArgument)
	case nilarg.IsNil(st):
		return lease.Record[M]{}, 0, fmt.Errorf("store: CompareReleasedAndSwap %q: %w: st is nil", name, ErrNilArgument)
	}
	g := ReleaseGuardOf(st)
	if g == nil {
		return lease.Record[M]{}, 0, fmt.Errorf("store: CompareReleasedAndSwap %q: %T cannot guard a swap: %w", name, st, errors.ErrUnsupported)
	}
	return g.CompareReleasedAndSwap(ctx, name, expected, was, next)
}

// ReleasedAs reports whether r, stored at a revision a guarded swap
// expects, is the released record was describes (see ReleaseGuard). Stores
// that check the guard in Go use it.
func ReleasedAs[M any](r lease.Record[M], was Released) bool {
	return r.Holder == "" && r.Token == was.Token && r.Transitions == was.Transitions && r.LeaseDuration == was.LeaseDuration &&
		r.Successor == was.Successor
}
