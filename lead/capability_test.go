package lead_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/memstore"
)

// plainWrapper is what a user writes to add metrics or tracing to a store:
// it embeds store.Store[M] and nothing else, so it hides every optional
// interface of the store it wraps.
type plainWrapper struct{ store.Store[meta] }

// forwardingWrapper forwards the optional interfaces with the helpers of
// package store, as docs/guide.md shows.
type forwardingWrapper struct{ store.Store[meta] }

func (w forwardingWrapper) MayLoseRecords() bool { return store.MayLoseRecords(w.Store) }

func (w forwardingWrapper) Watch(ctx context.Context, name string) (<-chan store.Event[meta], error) {
	return store.Watch(ctx, w.Store, name)
}

func (w forwardingWrapper) WatchCapabilities() store.WatchCapabilities {
	return store.WatchCapabilitiesOf(w.Store)
}

// countingWrapper forwards like forwardingWrapper and counts Watch calls.
type countingWrapper struct {
	forwardingWrapper
	watches *atomic.Int32
}

func (w countingWrapper) Watch(ctx context.Context, name string) (<-chan store.Event[meta], error) {
	w.watches.Add(1)
	return w.forwardingWrapper.Watch(ctx, name)
}

// logRecord is one record kept by recorder.
type logRecord struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

// recorder keeps every log record.
type recorder struct {
	mu      sync.Mutex
	records []logRecord
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	lr := logRecord{level: rec.Level, msg: rec.Message, attrs: map[string]string{}}
	rec.Attrs(func(a slog.Attr) bool { lr.attrs[a.Key] = a.Value.String(); return true })
	r.mu.Lock()
	r.records = append(r.records, lr)
	r.mu.Unlock()
	return nil
}
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }

// find returns the records at level whose message contains substr.
func (r *recorder) find(level slog.Level, substr string) []logRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []logRecord
	for _, rec := range r.records {
		if rec.level == level && strings.Contains(rec.msg, substr) {
			out = append(out, rec)
		}
	}
	return out
}

// leaders counts the nodes that report IsLeader.
func leaders(nodes ...*node) int {
	n := 0
	for _, x := range nodes {
		if x.e.IsLeader() {
			n++
		}
	}
	return n
}

// A wrapper that hides store.Lossy makes the elector assume the store may
// lose records: the first leader of a new name waits out its own claim for
// a LeaseDuration, and there is still exactly one.
func TestPlainWrapperIsTreatedAsLossy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := plainWrapper{memstore.New[meta]()}
		logs := &recorder{}
		log := lead.WithLogger(slog.New(logs))
		began := time.Now()
		a, b, c := start(t, st, "a", log), start(t, st, "b", log), start(t, st, "c", log)
		lease := fastConfig().LeaseDuration
		time.Sleep(lease - time.Millisecond)
		synctest.Wait()
		for _, n := range []*node{a, b, c} {
			select {
			case ch := <-n.changes:
				t.Fatalf("%s reported %v %v after the start, before a LeaseDuration passed", n.e.Identity(), ch.Kind, time.Since(began))
			default:
			}
		}
		if got := leaders(a, b, c); got != 0 {
			t.Fatalf("%d leaders before a LeaseDuration passed", got)
		}
		time.Sleep(lease)
		firstLeader(t, a, b, c) // fails if two reported a term
		if got := leaders(a, b, c); got != 1 {
			t.Fatalf("%d leaders, want 1", got)
		}
		if got := logs.find(slog.LevelWarn, "store.Lossy"); len(got) != 3 || !strings.Contains(got[0].msg, "store.MayLoseRecords") {
			t.Errorf("warnings about store.Lossy: %+v; want one per elector, saying what to do", got)
		}
		if got := logs.find(slog.LevelInfo, "store.Watcher"); len(got) != 3 || !strings.Contains(got[0].msg, "store.Watch") {
			t.Errorf("notes about store.Watcher: %+v; want one per elector, saying what to do", got)
		}
		debug := logs.find(slog.LevelDebug, "store capabilities")
		if len(debug) != 3 || debug[0].attrs["may_lose_records"] != "true" || debug[0].attrs["watch"] != "false" {
			t.Errorf("debug records of capabilities: %+v", debug)
		}
	})
}

// A wrapper that forwards Lossy and Watch keeps the fast path: the first
// leader leads at once, and a release is taken over without polling.
func TestForwardingWrapperKeepsFastPath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := forwardingWrapper{memstore.New[meta]()}
		logs := &recorder{}
		log := lead.WithLogger(slog.New(logs))
		a, b := start(t, st, "a", log), start(t, st, "b", log)
		leader, _ := firstLeader(t, a, b) // at once: no time has passed
		other := b
		if leader == b {
			other = a
		}
		time.Sleep(time.Second)
		released := time.Now()
		leader.stop(t)
		if c := other.next(t); c.Kind != lead.Started {
			t.Fatalf("change %+v", c)
		}
		if waited := time.Since(released); waited >= fastConfig().RetryInterval {
			t.Fatalf("successor led %v after the release; want less than a retry interval (watch forwarded)", waited)
		}
		if got := append(logs.find(slog.LevelWarn, "store"), logs.find(slog.LevelInfo, "store.Watcher")...); len(got) != 0 {
			t.Errorf("capability complaints for a forwarding wrapper: %+v", got)
		}
		debug := logs.find(slog.LevelDebug, "store capabilities")
		if len(debug) != 2 || debug[0].attrs["may_lose_records"] != "false" || debug[0].attrs["watch"] != "true" {
			t.Errorf("debug records of capabilities: %+v", debug)
		}
	})
}

// A wrapper that forwards Watch to a store that cannot watch gets
// ErrWatchUnsupported: the elector polls and does not ask again.
func TestWatchUnsupportedIsNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var watches atomic.Int32
		st := countingWrapper{forwardingWrapper{plainWrapper{memstore.New[meta]()}}, &watches}
		n := start(t, st, "a")
		n.next(t)
		time.Sleep(10 * fastConfig().RetryInterval)
		synctest.Wait()
		if got := watches.Load(); got != 1 {
			t.Fatalf("Watch called %d times in 10 retry intervals, want 1", got)
		}
	})
}

// readCounting forwards like forwardingWrapper, counts Get calls, and says
// its watch events are hints unless authentic is set.
type readCounting struct {
	forwardingWrapper
	reads     *atomic.Int32
	authentic bool
}

func (w readCounting) Get(ctx context.Context, name string) (lease.Record[meta], lease.Revision, error) {
	w.reads.Add(1)
	return w.forwardingWrapper.Get(ctx, name)
}

func (w readCounting) WatchCapabilities() store.WatchCapabilities {
	if !w.authentic {
		return store.WatchCapabilities{}
	}
	return w.forwardingWrapper.WatchCapabilities()
}

// On a store whose watch events are authentic (memstore's are) the
// successor takes a release over on its watch event, without a read; on
// one whose events are hints it reads first.
func TestAuthenticWatchSkipsTheRead(t *testing.T) {
	for _, authentic := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			var reads atomic.Int32
			st := readCounting{forwardingWrapper{memstore.New[meta]()}, &reads, authentic}
			a, b := start(t, st, "a"), start(t, st, "b")
			leader, _ := firstLeader(t, a, b)
			other := b
			if leader == b {
				other = a
			}
			time.Sleep(time.Second)
			synctest.Wait()
			before := reads.Load()
			leader.stop(t)
			if c := other.next(t); c.Kind != lead.Started {
				t.Fatalf("change %+v", c)
			}
			want := int32(1)
			if authentic {
				want = 0
			}
			if got := reads.Load() - before; got != want {
				t.Errorf("authentic %v: %d reads during the handover, want %d", authentic, got, want)
			}
		})
	}
}

// watchOnly has a Watch method but not WatchCapabilities: it is no
// store.Watcher, and the elector says so.
type watchOnly struct{ store.Store[meta] }

func (w watchOnly) Watch(ctx context.Context, name string) (<-chan store.Event[meta], error) {
	return store.Watch(ctx, w.Store, name)
}

func TestWatchWithoutCapabilitiesIsWarned(t *testing.T) {
	logs := &recorder{}
	if _, err := lead.New("job", watchOnly{memstore.New[meta]()}, lead.WithLogger(slog.New(logs)), lead.WithLookupEnv(nil)); err != nil {
		t.Fatal(err)
	}
	if got := logs.find(slog.LevelWarn, "WatchCapabilities"); len(got) != 1 || !strings.Contains(got[0].msg, "store.WatchCapabilitiesOf") {
		t.Errorf("warnings: %+v; want one saying to forward WatchCapabilities", got)
	}
}
