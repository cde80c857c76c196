package memstore_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/memstore"
	"github.com/tenure-go/tenure/store/storetest"
)

// flat holds no pointer: a copy of it shares nothing.
type flat struct {
	Name  string
	Port  int
	Zones [2]string
}

// With metadata copied by value, each stored version is decoded once,
// however many watchers and readers see it, and each still gets the value.
func TestByValueMetadataIsDecodedOncePerVersion(t *testing.T) {
	var encodes, decodes atomic.Int64
	st := memstore.NewWithCodec(countingCodec[flat]{encodes: &encodes, decodes: &decodes})
	const watchers = 3
	var chans [watchers]<-chan store.Event[flat]
	for i := range chans {
		ch, err := st.Watch(t.Context(), "a")
		if err != nil {
			t.Fatal(err)
		}
		chans[i] = ch
		if ev := next(t, ch); !ev.Absent {
			t.Fatalf("first event %+v, want absent", ev)
		}
	}
	meta := flat{Name: "x", Port: 80, Zones: [2]string{"a", "b"}}
	now := time.Now()
	rec := lease.Record[flat]{Holder: "n1", Token: 1, LeaseDuration: time.Second, AcquiredAt: now, RenewedAt: now, Metadata: meta}
	_, rev := mustSwap(t, st, "a", 0, rec)
	for i := range 3 { // renewals with the same metadata
		rec.RenewedAt = now.Add(time.Duration(i+1) * time.Millisecond)
		_, rev = mustSwap(t, st, "a", rev, rec)
	}
	for _, ch := range chans {
		for {
			ev := next(t, ch)
			if ev.Record.Metadata != meta {
				t.Fatalf("watcher got metadata %+v, want %+v", ev.Record.Metadata, meta)
			}
			if ev.Revision == rev {
				break
			}
		}
	}
	got, _, err := st.Get(t.Context(), "a")
	if err != nil || got.Metadata != meta {
		t.Fatalf("Get = %+v, %v; want metadata %+v", got.Metadata, err, meta)
	}
	if n := decodes.Load(); n != 1 {
		t.Errorf("%d decodes for one metadata value written 4 times, watched 3 times and read; want 1", n)
	}
	if n := encodes.Load(); n != 1 {
		t.Errorf("%d encodes for one metadata value written 4 times; want 1", n)
	}
	// New metadata is decoded once more.
	rec.Metadata.Port = 81
	_, _ = mustSwap(t, st, "a", rev, rec)
	if got, _, _ := st.Get(t.Context(), "a"); got.Metadata.Port != 81 {
		t.Fatalf("Get after a change: port %d, want 81", got.Metadata.Port)
	}
	if n := decodes.Load(); n != 2 {
		t.Errorf("%d decodes after a second value; want 2", n)
	}
	if n := encodes.Load(); n != 2 {
		t.Errorf("%d encodes after a second value; want 2", n)
	}
}

// Metadata with a map is decoded for each reader: no two share the map.
func TestReferenceMetadataIsDecodedPerReader(t *testing.T) {
	st := memstore.New[map[string]string]()
	a, err := st.Watch(t.Context(), "a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := st.Watch(t.Context(), "a")
	if err != nil {
		t.Fatal(err)
	}
	next(t, a)
	next(t, b)
	now := time.Now()
	mustSwap(t, st, "a", 0, lease.Record[map[string]string]{Holder: "n1", Token: 1, LeaseDuration: time.Second, AcquiredAt: now, RenewedAt: now, Metadata: map[string]string{"k": "v"}})
	ea, eb := next(t, a), next(t, b)
	ea.Record.Metadata["k"] = "changed"
	if eb.Record.Metadata["k"] != "v" {
		t.Fatalf("one watcher's change reached another: %q", eb.Record.Metadata["k"])
	}
	if got, _, _ := st.Get(t.Context(), "a"); got.Metadata["k"] != "v" {
		t.Fatalf("a watcher's change reached the store: %q", got.Metadata["k"])
	}
}

// The suite, with metadata that is copied by value: watches delivered by
// the writer, decoded once per version.
func TestConformanceByValue(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store[flat] {
		return memstore.New[flat]()
	}, storetest.WithSamples(flat{}, flat{Name: "ünï", Port: -1, Zones: [2]string{"", "b"}}),
		storetest.WithOversized(func() flat { return flat{Name: strings.Repeat("x", store.MaxMetadataBytes)} }))
}
