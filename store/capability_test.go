package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

// bare is a Store with neither Lossy nor Watcher.
type bare struct{}

func (bare) Get(context.Context, string) (lease.Record[int], lease.Revision, error) {
	return lease.Record[int]{}, 0, store.ErrNotFound
}

func (bare) CompareAndSwap(_ context.Context, _ string, _ lease.Revision, next lease.Record[int]) (lease.Record[int], lease.Revision, error) {
	return next, 1, nil
}

// lossless says it keeps every record, and watches.
type lossless struct {
	bare
	watched *string
}

func (lossless) MayLoseRecords() bool { return false }

func (l lossless) Watch(_ context.Context, name string) (<-chan store.Event[int], error) {
	*l.watched = name
	return make(chan store.Event[int]), nil
}

func (lossless) WatchCapabilities() store.WatchCapabilities {
	return store.WatchCapabilities{Authentic: true}
}

// wrapper embeds a store and forwards the optional interfaces with the
// package's helpers.
type wrapper struct{ store.Store[int] }

func (w wrapper) MayLoseRecords() bool { return store.MayLoseRecords(w.Store) }

func (w wrapper) Watch(ctx context.Context, name string) (<-chan store.Event[int], error) {
	return store.Watch(ctx, w.Store, name)
}

func (w wrapper) WatchCapabilities() store.WatchCapabilities {
	return store.WatchCapabilitiesOf(w.Store)
}

func TestMayLoseRecords(t *testing.T) {
	var watched string
	var nilLossless *lossyPtr
	tests := []struct {
		name string
		st   store.Store[int]
		want bool
	}{
		{"nil store", nil, true},
		{"store without Lossy", bare{}, true},
		{"store that says no", lossless{watched: &watched}, false},
		{"embedding wrapper hides it", struct{ store.Store[int] }{lossless{watched: &watched}}, true},
		{"forwarding wrapper", wrapper{lossless{watched: &watched}}, false},
		{"forwarding wrapper over a store without Lossy", wrapper{bare{}}, true},
		{"typed nil Lossy", nilLossless, true},
	}
	for _, tt := range tests {
		if got := store.MayLoseRecords(tt.st); got != tt.want {
			t.Errorf("%s: MayLoseRecords = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// lossyPtr has MayLoseRecords on a pointer that it dereferences.
type lossyPtr struct {
	bare
	may bool
}

func (l *lossyPtr) MayLoseRecords() bool { return l.may }

func TestWatchCapabilitiesOf(t *testing.T) {
	var watched string
	tests := []struct {
		name string
		st   store.Store[int]
		want bool
	}{
		{"nil store", nil, false},
		{"store without Watcher", bare{}, false},
		{"authentic store", lossless{watched: &watched}, true},
		{"embedding wrapper hides it", struct{ store.Store[int] }{lossless{watched: &watched}}, false},
		{"forwarding wrapper", wrapper{lossless{watched: &watched}}, true},
		{"forwarding wrapper over a store without Watcher", wrapper{bare{}}, false},
	}
	for _, tt := range tests {
		if got := store.WatchCapabilitiesOf(tt.st).Authentic; got != tt.want {
			t.Errorf("%s: WatchCapabilitiesOf(...).Authentic = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestWatchHelper(t *testing.T) {
	ctx := context.Background()
	var watched string
	if _, err := store.Watch(ctx, wrapper{lossless{watched: &watched}}, "job"); err != nil || watched != "job" {
		t.Fatalf("Watch through a forwarding wrapper = %v, watched %q", err, watched)
	}
	_, err := store.Watch(ctx, wrapper{bare{}}, "job")
	if !errors.Is(err, store.ErrWatchUnsupported) || !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("Watch of a store that cannot watch = %v, want ErrWatchUnsupported", err)
	}
}

// checked has a limit of its own: metadata up to 9.
type checked struct{ bare }

func (checked) CheckMetadata(m int) error {
	if m > 9 {
		return store.ErrMetadataTooLarge
	}
	return nil
}

func TestCheckMetadata(t *testing.T) {
	if err := store.CheckMetadata[int](checked{}, 10); !errors.Is(err, store.ErrMetadataTooLarge) {
		t.Errorf("CheckMetadata with the store's own check = %v", err)
	}
	if err := store.CheckMetadata[int](checked{}, 1); err != nil {
		t.Errorf("CheckMetadata with the store's own check = %v", err)
	}
	if err := store.CheckMetadata[int](bare{}, 10); err != nil {
		t.Errorf("CheckMetadata falling back to JSON = %v", err)
	}
	// The JSON fallback: what JSONCodec cannot encode, and the size limit.
	if err := store.CheckCodec(store.JSONCodec[func()]{}, func() {}); !errors.Is(err, store.ErrEncode) {
		t.Errorf("CheckCodec of a func = %v, want ErrEncode", err)
	}
	big := string(make([]byte, store.MaxMetadataBytes))
	if err := store.CheckCodec(store.JSONCodec[string]{}, big); !errors.Is(err, store.ErrMetadataTooLarge) {
		t.Errorf("CheckCodec of %d bytes = %v, want ErrMetadataTooLarge", len(big), err)
	}
	if err := store.CheckCodec[int](oneWay{}, 1); !errors.Is(err, store.ErrEncode) {
		t.Errorf("CheckCodec with a codec that cannot decode = %v, want ErrEncode", err)
	}
}

// oneWay encodes and cannot decode.
type oneWay struct{ store.JSONCodec[int] }

func (oneWay) Decode([]byte) (int, error) { return 0, errors.New("one way") }

// Every function of package store given a nil argument returns an error
// wrapping ErrNilArgument that names it, and panics nowhere.
func TestNilArguments(t *testing.T) {
	var nilCtx context.Context
	var nilLossy *lossyPtr
	tests := []struct {
		name    string
		f       func() error
		mention string
	}{
		{"Watch: nil ctx", func() error { _, err := store.Watch[int](nilCtx, bare{}, "job"); return err }, "ctx is nil"},
		{"Watch: nil st", func() error { _, err := store.Watch[int](context.Background(), nil, "job"); return err }, "st is nil"},
		{"Watch: typed nil st", func() error { _, err := store.Watch[int](context.Background(), nilLossy, "job"); return err }, "st is nil"},
		{"CheckMetadata: nil st", func() error { return store.CheckMetadata[int](nil, 1) }, "st is nil"},
		{"CheckCodec: nil c", func() error { return store.CheckCodec[int](nil, 1) }, "c is nil"},
		{"EncodeMetadata: nil c", func() error { _, err := store.EncodeMetadata[int](nil, 1); return err }, "c is nil"},
		{"Validate: nil st", func() error { return store.Validate[int](nil) }, "store is nil"},
		{"Validate: typed nil st", func() error { return store.Validate[int](nilLossy) }, "nil *store_test.lossyPtr"},
		{"Validate: wrapper around nil", func() error { return store.Validate[int](wrapper{}) }, "field Store"},
		{"WatchFunc: nil ctx", func() error { return store.WatchFunc[int](nilCtx, bare{}, "job", ignore) }, "ctx is nil"},
		{"WatchFunc: nil st", func() error { return store.WatchFunc[int](context.Background(), nil, "job", ignore) }, "st is nil"},
		{"WatchFunc: typed nil st", func() error { return store.WatchFunc[int](context.Background(), nilLossy, "job", ignore) }, "st is nil"},
		{"WatchFunc: nil fn", func() error { return store.WatchFunc[int](context.Background(), bare{}, "job", nil) }, "fn is nil"},
		{"WatchFuncVia: nil ctx", func() error { return store.WatchFuncVia[int](nilCtx, &chanWatcher{}, "job", ignore) }, "ctx is nil"},
		{"WatchFuncVia: nil w", func() error { return store.WatchFuncVia[int](context.Background(), nil, "job", ignore) }, "Watcher is nil"},
		{"WatchFuncVia: typed nil w", func() error {
			return store.WatchFuncVia[int](context.Background(), (*chanWatcher)(nil), "job", ignore)
		}, "Watcher is nil"},
		{"WatchFuncVia: nil fn", func() error { return store.WatchFuncVia[int](context.Background(), &chanWatcher{}, "job", nil) }, "fn is nil"},
		{"Validate: pointer wrapper around nil", func() error { return store.Validate[int](&wrapper{}) }, "field Store"},
	}
	for _, tt := range tests {
		err := func() (err error) {
			defer func() {
				if p := recover(); p != nil {
					err = errors.New("panic")
				}
			}()
			return tt.f()
		}()
		if !errors.Is(err, store.ErrNilArgument) || !strings.Contains(err.Error(), tt.mention) {
			t.Errorf("%s = %v; want ErrNilArgument naming %q", tt.name, err, tt.mention)
		}
	}
	if !store.MayLoseRecords[int](nil) {
		t.Error("MayLoseRecords(nil) = false, want the conservative true")
	}
	if err := store.Validate[int](wrapper{bare{}}); err != nil {
		t.Errorf("Validate of a usable wrapper = %v", err)
	}
}

// immediate says whether it answers immediately, on a pointer that it
// dereferences.
type immediate struct {
	bare
	yes bool
}

func (i *immediate) AnswersImmediately() bool { return i.yes }

// Only a store that says so answers immediately: not one without the
// method, one that says false, one hidden by an embedding wrapper, a nil
// store or a typed nil.
func TestAnswersImmediately(t *testing.T) {
	var nilImmediate *immediate
	tests := []struct {
		name string
		st   store.Store[int]
		want bool
	}{
		{"nil store", nil, false},
		{"store without Immediate", bare{}, false},
		{"store that says yes", &immediate{yes: true}, true},
		{"store that says no", &immediate{}, false},
		{"embedding wrapper hides it", struct{ store.Store[int] }{&immediate{yes: true}}, false},
		{"typed nil Immediate", nilImmediate, false},
	}
	for _, tt := range tests {
		if got := store.AnswersImmediately(tt.st); got != tt.want {
			t.Errorf("%s: AnswersImmediately = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// guarded is a store with a release guard that says yes or no; its
// guarded swap reports the guard it was given.
type guarded struct {
	bare
	yes bool
	was *store.Released
}

func (g *guarded) GuardsReleases() bool { return g.yes }

func (g *guarded) CompareReleasedAndSwap(_ context.Context, _ string, _ lease.Revision, was store.Released, next lease.Record[int]) (lease.Record[int], lease.Revision, error) {
	g.was = &was
	return next, 2, nil
}

// guardWrapper forwards the guard with the package's helpers.
type guardWrapper struct{ store.Store[int] }

func (w guardWrapper) GuardsReleases() bool { return store.ReleaseGuardOf(w.Store) != nil }

func (w guardWrapper) CompareReleasedAndSwap(ctx context.Context, name string, expected lease.Revision, was store.Released, next lease.Record[int]) (lease.Record[int], lease.Revision, error) {
	return store.CompareReleasedAndSwap(ctx, w.Store, name, expected, was, next)
}

// Only a store that says so guards releases: not one without the method,
// one that says false, one hidden by an embedding wrapper, a wrapper of a
// store without a guard, a nil store or a typed nil. A wrapper that
// forwards with the helpers answers for its store, and its guarded swap
// reaches the store's.
func TestReleaseGuardOf(t *testing.T) {
	var nilGuarded *guarded
	yes := &guarded{yes: true}
	tests := []struct {
		name string
		st   store.Store[int]
		want bool
	}{
		{"nil store", nil, false},
		{"store without ReleaseGuard", bare{}, false},
		{"store that says yes", yes, true},
		{"store that says no", &guarded{}, false},
		{"embedding wrapper hides it", struct{ store.Store[int] }{yes}, false},
		{"forwarding wrapper of a guard", guardWrapper{yes}, true},
		{"forwarding wrapper of a store without one", guardWrapper{bare{}}, false},
		{"forwarding wrapper of a store that says no", guardWrapper{&guarded{}}, false},
		{"typed nil", nilGuarded, false},
	}
	for _, tt := range tests {
		if got := store.ReleaseGuardOf(tt.st) != nil; got != tt.want {
			t.Errorf("%s: ReleaseGuardOf found one: %v, want %v", tt.name, got, tt.want)
		}
	}

	ctx := t.Context()
	was := store.Released{Token: 4, Transitions: 2, LeaseDuration: 15}
	if _, rev, err := store.CompareReleasedAndSwap(ctx, guardWrapper{yes}, "n", 7, was, lease.Record[int]{Holder: "a"}); err != nil || rev != 2 || yes.was == nil || *yes.was != was {
		t.Errorf("through a forwarding wrapper: rev %d, err %v, the store got %+v; want rev 2 and the guard %+v", rev, err, yes.was, was)
	}
	for _, st := range []store.Store[int]{bare{}, &guarded{}, guardWrapper{bare{}}} {
		if _, _, err := store.CompareReleasedAndSwap(ctx, st, "n", 7, was, lease.Record[int]{}); !errors.Is(err, errors.ErrUnsupported) {
			t.Errorf("%T: CompareReleasedAndSwap error %v, want one wrapping errors.ErrUnsupported", st, err)
		}
	}
	var nilCtx context.Context
	if _, _, err := store.CompareReleasedAndSwap(nilCtx, yes, "n", 7, was, lease.Record[int]{}); !errors.Is(err, store.ErrNilArgument) {
		t.Errorf("nil ctx: error %v, want one wrapping store.ErrNilArgument", err)
	}
	if _, _, err := store.CompareReleasedAndSwap(ctx, nil, "n", 7, was, lease.Record[int]{}); !errors.Is(err, store.ErrNilArgument) {
		t.Errorf("nil store: error %v, want one wrapping store.ErrNilArgument", err)
	}
}

// ReleasedAs is the guard: a released record with the three fields.
func TestReleasedAs(t *testing.T) {
	was := store.Released{Token: 4, Transitions: 2, LeaseDuration: 15}
	rel := lease.Record[int]{Token: 4, Transitions: 2, LeaseDuration: 15}
	held := rel
	held.Holder = "a"
	for _, c := range []struct {
		name string
		r    lease.Record[int]
		want bool
	}{
		{"the released record", rel, true},
		{"held", held, false},
		{"another token", lease.Record[int]{Token: 5, Transitions: 2, LeaseDuration: 15}, false},
		{"other transitions", lease.Record[int]{Token: 4, Transitions: 3, LeaseDuration: 15}, false},
		{"another duration", lease.Record[int]{Token: 4, Transitions: 2, LeaseDuration: 16}, false},
	} {
		if got := store.ReleasedAs(c.r, was); got != c.want {
			t.Errorf("%s: ReleasedAs = %v, want %v", c.name, got, c.want)
		}
	}
}
