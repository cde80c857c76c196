package memstore_test

import (
	"context"
	"errors"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/memstore"
	"github.com/tenure-go/tenure/store/storetest"
)

// No storetest.WithReopen: a memstore's records and token floors live in
// its Store value, so there is nothing to open again; a restart of the
// process loses both, which is why memstore serves one process only. Its
// floor across Delete is TestDeleteThenCreate's.
// A corrupt record is planted with PutRaw.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store[storetest.Meta] {
		return memstore.New[storetest.Meta]()
	}, storetest.WithStamps[storetest.Meta](), storetest.WithCorrupt(func(t *testing.T, st store.Store[storetest.Meta], name string) {
		ms, ok := st.(*memstore.Store[storetest.Meta])
		if !ok {
			t.Fatalf("the store is a %T", st)
		}
		if _, err := ms.PutRaw(name, lease.Record[[]byte]{Holder: "h", Token: 1, LeaseDuration: time.Second, Metadata: []byte("{not json")}); err != nil {
			t.Fatal(err)
		}
	}))
}

// countingCodec is JSON that counts its calls.
type countingCodec[M any] struct {
	store.JSONCodec[M]
	encodes, decodes *atomic.Int64
}

func (c countingCodec[M]) Encode(m M) ([]byte, error) {
	c.encodes.Add(1)
	return c.JSONCodec.Encode(m)
}

func (c countingCodec[M]) Decode(b []byte) (M, error) {
	c.decodes.Add(1)
	return c.JSONCodec.Decode(b)
}

func TestConformanceWithCodec(t *testing.T) {
	var encodes, decodes atomic.Int64
	storetest.Run(t, func(t *testing.T) store.Store[storetest.Meta] {
		return memstore.NewWithCodec(countingCodec[storetest.Meta]{encodes: &encodes, decodes: &decodes})
	})
	if encodes.Load() == 0 || decodes.Load() == 0 {
		t.Errorf("the codec given NewWithCodec was not used: %d encodes, %d decodes", encodes.Load(), decodes.Load())
	}
}

// next returns the next event of ch, failing after a generous timeout.
func next[M any](t *testing.T, ch <-chan store.Event[M]) store.Event[M] {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("watch channel closed")
		}
		return ev
	case <-time.After(storetest.WatchTimeout):
		t.Fatalf("no event within %v", storetest.WatchTimeout)
	}
	panic("unreachable")
}

// mustSwap calls CompareAndSwap, which must succeed.
func mustSwap[M any](t *testing.T, st *memstore.Store[M], name string, expected lease.Revision, r lease.Record[M]) (lease.Record[M], lease.Revision) {
	t.Helper()
	got, rev, err := st.CompareAndSwap(t.Context(), name, expected, r)
	if err != nil {
		t.Fatalf("CompareAndSwap(%q, %d): %v", name, expected, err)
	}
	return got, rev
}

type labels struct {
	Labels map[string]string
	Tags   []string
}

func newLabels() labels {
	return labels{Labels: map[string]string{"k": "before"}, Tags: []string{"before"}}
}

func (l labels) mutate() {
	l.Labels["k"] = "after"
	l.Tags[0] = "after"
}

// Metadata is copied through the codec: neither the caller's value, nor the
// record CompareAndSwap returned, nor an event a watcher received shares
// anything with what is stored or with another watcher's event.
func TestCopyOnWrite(t *testing.T) {
	st := memstore.New[labels]()
	const name = "cow"
	w1, err := st.Watch(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	w2, err := st.Watch(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	next(t, w1)
	next(t, w2)

	wrote := lease.Record[labels]{LeaseDuration: time.Second, Holder: "a", Token: 1, Metadata: newLabels()}
	got, _ := mustSwap(t, st, name, 0, wrote)
	wrote.Metadata.mutate()
	got.Metadata.mutate()
	next(t, w1).Record.Metadata.mutate()

	if ev := next(t, w2); !cmp.Equal(ev.Record.Metadata, newLabels()) {
		t.Errorf("second watcher got %+v, want %+v", ev.Record.Metadata, newLabels())
	}
	read, _, err := st.Get(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(read.Metadata, newLabels()) {
		t.Errorf("Get = %+v after the caller mutated its copies, want %+v", read.Metadata, newLabels())
	}
}

func TestCorruptRecord(t *testing.T) {
	ctx := t.Context()
	st := memstore.New[labels]()
	const name = "corrupt"
	_, rev0 := mustSwap(t, st, name, 0, lease.Record[labels]{LeaseDuration: time.Second, Holder: "a", Token: 4})
	rev, err := st.PutRaw(name, lease.Record[[]byte]{Holder: "a", Token: 5, LeaseDuration: time.Second, Metadata: []byte(`{"Labels": [`)})
	if err != nil {
		t.Fatal(err)
	}
	if rev <= rev0 {
		t.Fatalf("PutRaw revision %d, want above %d", rev, rev0)
	}
	wantCorrupt := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, store.ErrCorruptRecord) || errors.Is(err, store.ErrConflict) {
			t.Errorf("%s: error = %v, want one wrapping store.ErrCorruptRecord (and not ErrConflict)", what, err)
		}
	}
	_, _, err = st.Get(ctx, name)
	wantCorrupt("Get", err)
	for _, expected := range []lease.Revision{rev, 0, rev0} {
		_, _, err = st.CompareAndSwap(ctx, name, expected, lease.Record[labels]{LeaseDuration: time.Second, Holder: "b", Token: 6})
		wantCorrupt("CompareAndSwap", err)
	}
	_, _, err = st.Get(ctx, name)
	wantCorrupt("Get after the refused swaps", err)

	events, err := st.Watch(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if ev := next(t, events); ev.Revision != rev || ev.Absent || !errors.Is(ev.Err, store.ErrCorruptRecord) {
		t.Errorf("first event = %+v, want revision %d with an error wrapping store.ErrCorruptRecord", ev, rev)
	}

	// A repair (another PutRaw, here with valid metadata) makes it readable.
	rev, err = st.PutRaw(name, lease.Record[[]byte]{Holder: "a", Token: 5, LeaseDuration: time.Second, Metadata: []byte(`{"Tags":["fixed"]}`)})
	if err != nil {
		t.Fatal(err)
	}
	got, gotRev, err := st.Get(ctx, name)
	if err != nil || gotRev != rev || got.Token != 5 || !cmp.Equal(got.Metadata.Tags, []string{"fixed"}) {
		t.Errorf("Get after repair = %+v, %d, %v; want token 5, tags [fixed], revision %d", got, gotRev, err, rev)
	}
	if ev := next(t, events); ev.Revision != rev || ev.Err != nil || ev.Record.Holder != "a" {
		t.Errorf("event after repair = %+v, want revision %d held by a", ev, rev)
	}
	mustSwap(t, st, name, rev, lease.Record[labels]{LeaseDuration: time.Second, Holder: "b", Token: 6})
}

func TestPutRawInvalidName(t *testing.T) {
	st := memstore.New[labels]()
	if _, err := st.PutRaw("", lease.Record[[]byte]{}); !errors.Is(err, store.ErrInvalidName) {
		t.Errorf("PutRaw(\"\") error = %v, want one wrapping store.ErrInvalidName", err)
	}
}

// After Delete, revisions never repeat and tokens start above the lost ones.
func TestDeleteThenCreate(t *testing.T) {
	ctx := t.Context()
	st := memstore.New[labels]()
	const name = "lost"
	events, err := st.Watch(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	next(t, events)
	_, rev1 := mustSwap(t, st, name, 0, lease.Record[labels]{LeaseDuration: time.Second, Holder: "a", Token: 5})
	next(t, events)
	held, rev2 := mustSwap(t, st, name, rev1, lease.Record[labels]{LeaseDuration: time.Second, Holder: "a", Token: 5})
	if ev := next(t, events); ev.Revision != rev2 {
		t.Fatalf("event revision %d, want %d", ev.Revision, rev2)
	}

	st.Delete(name)
	st.Delete(name) // deleting an absent name does nothing
	if ev := next(t, events); !ev.Absent || ev.Revision != 0 {
		t.Errorf("event after Delete = %+v, want Absent", ev)
	}
	if _, _, err := st.Get(ctx, name); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get after Delete: error = %v, want store.ErrNotFound", err)
	}
	cur, rev, err := st.CompareAndSwap(ctx, name, rev2, held)
	if !errors.Is(err, store.ErrConflict) || rev != 0 || cur.Holder != "" {
		t.Errorf("swap from the lost revision = %+v, %d, %v; want a conflict with nothing", cur, rev, err)
	}

	got, rev3 := mustSwap(t, st, name, 0, lease.Record[labels]{LeaseDuration: time.Second, Holder: "b", Token: 1})
	if rev3 <= rev2 {
		t.Errorf("revision after Delete = %d, want above %d", rev3, rev2)
	}
	if got.Token != 6 {
		t.Errorf("token after Delete = %d, want 6, above the lost 5", got.Token)
	}
	if ev := next(t, events); ev.Revision != rev3 || ev.Record.Token != 6 {
		t.Errorf("event after re-create = %+v, want revision %d token 6", ev, rev3)
	}

	st.Delete(name)
	if got, _ := mustSwap(t, st, name, 0, lease.Record[labels]{LeaseDuration: time.Second, Holder: "c", Token: 100}); got.Token != 100 {
		t.Errorf("token = %d, want the 100 asked, which is above the floor", got.Token)
	}
	// With the floor at the largest token, no token is left for a create.
	if _, err := st.PutRaw(name, lease.Record[[]byte]{Holder: "d", Token: lease.MaxToken, LeaseDuration: time.Second, Metadata: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	st.Delete(name)
	if _, _, err := st.CompareAndSwap(ctx, name, 0, lease.Record[labels]{LeaseDuration: time.Second, Holder: "e", Token: 1}); !errors.Is(err, store.ErrTokenExhausted) {
		t.Errorf("create with no token left: error = %v, want store.ErrTokenExhausted", err)
	}
	if _, _, err := st.Get(ctx, name); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get after the refused create: error = %v, want store.ErrNotFound", err)
	}
}

// A reader that does not keep up gets fewer events, never an older revision
// after a newer one, and never holds up a writer.
// TestWatchCoalesces runs on both kinds of watch: served by a goroutine that decodes
// (labels holds a map) and delivered by the writer (flat is copied by value).
func TestWatchCoalesces(t *testing.T) {
	t.Run("decoded", testWatchCoalesces[labels])
	t.Run("by value", testWatchCoalesces[flat])
}

func testWatchCoalesces[M any](t *testing.T) {
	st := memstore.New[M]()
	const name = "slow"
	const writes = 1000
	events, err := st.Watch(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	var rev lease.Revision
	for i := range writes {
		_, rev = mustSwap(t, st, name, rev, lease.Record[M]{LeaseDuration: time.Second, Holder: "a", Token: uint64(i)})
	}
	// Nobody read during the writes, so the watch holds at most one state
	// in hand and one pending: the last write arrives within two events.
	var got []lease.Revision
	for len(got) == 0 || got[len(got)-1] != rev {
		ev := next(t, events)
		if len(got) > 0 && ev.Revision <= got[len(got)-1] {
			t.Fatalf("revision %d after %d", ev.Revision, got[len(got)-1])
		}
		got = append(got, ev.Revision)
	}
	if len(got) > 2 {
		t.Errorf("a reader idle during %d writes got %d events %v, want at most 2", writes, len(got), got)
	}
}

// Readers of different speeds watch while a writer writes: each sees
// strictly increasing revisions and tokens, up to the last write.
// TestWatchSlowReaderNeverGoesBack runs on both kinds of watch: served by a goroutine that decodes
// (labels holds a map) and delivered by the writer (flat is copied by value).
func TestWatchSlowReaderNeverGoesBack(t *testing.T) {
	t.Run("decoded", testWatchSlowReaderNeverGoesBack[labels])
	t.Run("by value", testWatchSlowReaderNeverGoesBack[flat])
}

func testWatchSlowReaderNeverGoesBack[M any](t *testing.T) {
	st := memstore.New[M]()
	const name = "racing"
	const writes = 2000
	var wg sync.WaitGroup
	for reader := range 4 {
		events, err := st.Watch(t.Context(), name)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			var prev lease.Revision
			var prevToken uint64
			for prevToken != writes {
				ev, ok := <-events
				switch {
				case !ok:
					t.Errorf("reader %d: channel closed", reader)
					return
				case ev.Absent && prev != 0:
					t.Errorf("reader %d: Absent after revision %d", reader, prev)
					return
				case ev.Absent:
					continue
				case ev.Revision <= prev || ev.Record.Token <= prevToken:
					t.Errorf("reader %d: revision %d token %d after revision %d token %d", reader, ev.Revision, ev.Record.Token, prev, prevToken)
					return
				}
				prev, prevToken = ev.Revision, ev.Record.Token
				for range reader * 100 { // the higher the reader, the slower
					runtime.Gosched()
				}
			}
		})
	}
	var rev lease.Revision
	for i := range writes {
		_, rev = mustSwap(t, st, name, rev, lease.Record[M]{LeaseDuration: time.Second, Holder: "a", Token: uint64(i + 1)})
	}
	wg.Wait()
}

// TestWatchClosesOnCancel runs on both kinds of watch: served by a goroutine that decodes
// (labels holds a map) and delivered by the writer (flat is copied by value).
func TestWatchClosesOnCancel(t *testing.T) {
	t.Run("decoded", testWatchClosesOnCancel[labels])
	t.Run("by value", testWatchClosesOnCancel[flat])
}

func testWatchClosesOnCancel[M any](t *testing.T) {
	st := memstore.New[M]()
	ctx, cancel := context.WithCancel(t.Context())
	events, err := st.Watch(ctx, "closing")
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	timeout := time.After(storetest.WatchTimeout)
	for open := true; open; {
		select {
		case _, open = <-events:
		case <-timeout:
			t.Fatalf("the channel is still open %v after cancel", storetest.WatchTimeout)
		}
	}
	if _, err := st.Watch(ctx, "closing"); !errors.Is(err, context.Canceled) {
		t.Errorf("Watch with a cancelled context: error = %v, want context.Canceled", err)
	}
	// The store forgets a name that was only watched: a later watch still
	// starts from Absent.
	events, err = st.Watch(t.Context(), "closing")
	if err != nil {
		t.Fatal(err)
	}
	if ev := next(t, events); !ev.Absent {
		t.Errorf("first event = %+v, want Absent", ev)
	}
}

func TestLongestName(t *testing.T) {
	st := memstore.New[labels]()
	name := strings.Repeat("ü", store.MaxNameBytes/2) + "a"
	if len(name) != store.MaxNameBytes {
		t.Fatalf("test name is %d bytes", len(name))
	}
	mustSwap(t, st, name, 0, lease.Record[labels]{LeaseDuration: time.Second, Holder: strings.Repeat("h", store.MaxHolderBytes)})
}

// A cancelled context wins over every other error: the store does nothing.
func TestCancelledContextFirst(t *testing.T) {
	st := memstore.New[labels]()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, _, err := st.Get(ctx, ""); !errors.Is(err, context.Canceled) || errors.Is(err, store.ErrInvalidName) {
		t.Errorf("Get: error = %v, want context.Canceled alone", err)
	}
	if _, _, err := st.CompareAndSwap(ctx, "x", 0, lease.Record[labels]{LeaseDuration: -1}); !errors.Is(err, context.Canceled) {
		t.Errorf("CompareAndSwap: error = %v, want context.Canceled", err)
	}
}

func TestEncodeFailureKeepsRecord(t *testing.T) {
	ctx := t.Context()
	st := memstore.New[float64]()
	want, rev := mustSwap(t, st, "enc", 0, lease.Record[float64]{LeaseDuration: time.Second, Holder: "a", Token: 1, Metadata: 1.5})
	_, _, err := st.CompareAndSwap(ctx, "enc", rev, lease.Record[float64]{LeaseDuration: time.Second, Holder: "a", Token: 1, Metadata: math.NaN()})
	if !errors.Is(err, store.ErrEncode) {
		t.Errorf("CompareAndSwap of NaN: error = %v, want store.ErrEncode", err)
	}
	got, gotRev, err := st.Get(ctx, "enc")
	if err != nil || gotRev != rev || got != want {
		t.Errorf("Get = %+v, %d, %v; want %+v, %d", got, gotRev, err, want, rev)
	}
}

// failingCodec encodes but cannot decode.
type failingCodec struct{ store.JSONCodec[int] }

func (failingCodec) Decode([]byte) (int, error) { return 0, errors.New("no decoding today") }

func TestCodecThatCannotDecodeIsRefused(t *testing.T) {
	ctx := t.Context()
	st := memstore.NewWithCodec(failingCodec{})
	_, _, err := st.CompareAndSwap(ctx, "fail", 0, lease.Record[int]{LeaseDuration: time.Second, Holder: "a", Metadata: 1})
	if !errors.Is(err, store.ErrEncode) || errors.Is(err, store.ErrCorruptRecord) {
		t.Errorf("CompareAndSwap: error = %v, want store.ErrEncode (and not ErrCorruptRecord)", err)
	}
	if _, _, err := st.Get(ctx, "fail"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get: error = %v, want store.ErrNotFound", err)
	}
}

func TestTimesLoseMonotonicReading(t *testing.T) {
	st := memstore.New[labels]()
	now := time.Now()
	got, _ := mustSwap(t, st, "times", 0, lease.Record[labels]{AcquiredAt: now, RenewedAt: now.Add(time.Second)})
	if got.AcquiredAt != now.Round(0) || got.RenewedAt != now.Add(time.Second).Round(0) {
		t.Errorf("times = %v, %v; want %v, %v without monotonic readings", got.AcquiredAt, got.RenewedAt, now.Round(0), now.Add(time.Second).Round(0))
	}
}

func TestNilCodec(t *testing.T) {
	st := memstore.NewWithCodec[labels](nil)
	got, _ := mustSwap(t, st, "nil", 0, lease.Record[labels]{Metadata: newLabels()})
	if !cmp.Equal(got.Metadata, newLabels()) {
		t.Errorf("metadata = %+v, want %+v", got.Metadata, newLabels())
	}
}

// CheckMetadata refuses exactly what CompareAndSwap refuses.
func TestCheckMetadataAgreesWithCompareAndSwap(t *testing.T) {
	st := memstore.NewWithCodec[string](shortStrings{})
	for _, m := range []string{"ok", "far too long for the codec", strings.Repeat("x", store.MaxMetadataBytes)} {
		checkErr := st.CheckMetadata(m)
		_, _, swapErr := st.CompareAndSwap(t.Context(), "job", 0, lease.Record[string]{Token: 1, Metadata: m})
		for _, target := range []error{store.ErrEncode, store.ErrMetadataTooLarge} {
			if errors.Is(checkErr, target) != errors.Is(swapErr, target) {
				t.Errorf("metadata of %d bytes: CheckMetadata = %v, CompareAndSwap = %v", len(m), checkErr, swapErr)
			}
		}
		if (checkErr == nil) != (swapErr == nil) {
			t.Errorf("metadata of %d bytes: CheckMetadata = %v, CompareAndSwap = %v", len(m), checkErr, swapErr)
		}
		st.Delete("job")
	}
}

// shortStrings is JSON for strings of at most 10 bytes.
type shortStrings struct{ store.JSONCodec[string] }

func (c shortStrings) Encode(s string) ([]byte, error) {
	if len(s) > 10 && len(s) < 1000 {
		return nil, errors.New("too long for this codec")
	}
	return c.JSONCodec.Encode(s)
}

// A record outside the bounds of store.ValidateStored (one PutRaw wrote, as
// an older version or a hand edit might) is corrupt: Get, CompareAndSwap
// and Watch report it, and nothing overwrites it.
func TestOutOfBoundsRecordIsCorrupt(t *testing.T) {
	ctx := t.Context()
	for _, c := range []struct {
		label string
		rec   lease.Record[[]byte]
	}{
		{"token 2^64-1", lease.Record[[]byte]{Holder: "a", Token: math.MaxUint64, LeaseDuration: time.Second}},
		{"token above lease.MaxToken", lease.Record[[]byte]{Holder: "a", Token: lease.MaxToken + 1, LeaseDuration: time.Second}},
		{"transitions 2^64-1", lease.Record[[]byte]{Holder: "a", Token: 1, Transitions: math.MaxUint64, LeaseDuration: time.Second}},
		{"held with no LeaseDuration", lease.Record[[]byte]{Holder: "a", Token: 1}},
		{"LeaseDuration of 290 years", lease.Record[[]byte]{Holder: "a", Token: 1, LeaseDuration: math.MaxInt64}},
		{"holder with a control character", lease.Record[[]byte]{Holder: "a\x1b[2J", Token: 1, LeaseDuration: time.Second}},
	} {
		t.Run(c.label, func(t *testing.T) {
			st := memstore.New[labels]()
			const name = "bounds"
			c.rec.Metadata = []byte(`{}`)
			rev, err := st.PutRaw(name, c.rec)
			if err != nil {
				t.Fatal(err)
			}
			if _, gotRev, err := st.Get(ctx, name); !errors.Is(err, store.ErrCorruptRecord) || gotRev != 0 {
				t.Errorf("Get: revision %d, error %v; want ErrCorruptRecord", gotRev, err)
			}
			for _, expected := range []lease.Revision{rev, 0} {
				next := lease.Record[labels]{Holder: "b", Token: 2, LeaseDuration: time.Second}
				if _, _, err := st.CompareAndSwap(ctx, name, expected, next); !errors.Is(err, store.ErrCorruptRecord) {
					t.Errorf("CompareAndSwap from %d: error %v, want ErrCorruptRecord", expected, err)
				}
			}
			events, err := st.Watch(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			if ev := next(t, events); !errors.Is(ev.Err, store.ErrCorruptRecord) || ev.Revision != rev {
				t.Errorf("first event = %+v, want revision %d with an Err wrapping ErrCorruptRecord", ev, rev)
			}
		})
	}
}

// WatchFunc is called by the writer itself: when a write returns, its
// event has been delivered. A corrupt record arrives with Err, a Delete as
// Absent, and the end of ctx as one call with false.
func TestWatchFuncDeliversInTheWriter(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	st := memstore.New[labels]()
	const name = "direct"
	var (
		got   []store.Event[labels]
		ended = make(chan struct{})
	)
	err := st.WatchFunc(ctx, name, func(ev store.Event[labels], ok bool) {
		if !ok {
			close(ended)
			return
		}
		got = append(got, ev)
	})
	if err != nil {
		t.Fatal(err)
	}
	last := func(what string) store.Event[labels] {
		t.Helper()
		if len(got) == 0 {
			t.Fatalf("%s: no event delivered", what)
		}
		return got[len(got)-1]
	}
	if ev := last("first"); len(got) != 1 || !ev.Absent {
		t.Fatalf("events before any write = %+v, want one Absent", got)
	}
	_, rev := mustSwap(t, st, name, 0, lease.Record[labels]{LeaseDuration: time.Second, Holder: "a", Token: 1, Metadata: labels{Labels: map[string]string{"k": "v"}}})
	if ev := last("after a swap"); ev.Revision != rev || ev.Record.Metadata.Labels["k"] != "v" {
		t.Fatalf("event after a swap = %+v, want revision %d", ev, rev)
	}
	rev, err = st.PutRaw(name, lease.Record[[]byte]{Holder: "a", Token: 1, LeaseDuration: time.Second, Metadata: []byte(`{`)})
	if err != nil {
		t.Fatal(err)
	}
	if ev := last("after a corrupt PutRaw"); ev.Revision != rev || !errors.Is(ev.Err, store.ErrCorruptRecord) {
		t.Fatalf("event after a corrupt PutRaw = %+v, want revision %d with ErrCorruptRecord", ev, rev)
	}
	st.Delete(name)
	if ev := last("after Delete"); !ev.Absent || len(got) != 4 {
		t.Fatalf("events = %+v, want 4, the last Absent", got)
	}
	cancel()
	<-ended
	mustSwap(t, st, name, 0, lease.Record[labels]{LeaseDuration: time.Second, Holder: "b", Token: 1})
	if len(got) != 4 {
		t.Fatalf("events after the watch ended: %+v", got[4:])
	}
}
