package lead_test

import (
	"context"
	"errors"
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

// unwatchable is a store whose Watch always fails; while hold is set, its
// reads wait for their deadline.
type unwatchable struct {
	store.Store[meta]
	hold atomic.Bool
}

var errWatchDown = errors.New("watch refused")

func (u *unwatchable) MayLoseRecords() bool { return store.MayLoseRecords(u.Store) }

func (u *unwatchable) WatchCapabilities() store.WatchCapabilities { return store.WatchCapabilities{} }

func (u *unwatchable) Watch(context.Context, string) (<-chan store.Event[meta], error) {
	return nil, errWatchDown
}

func (u *unwatchable) Get(ctx context.Context, name string) (lease.Record[meta], lease.Revision, error) {
	if u.hold.Load() {
		<-ctx.Done()
		return lease.Record[meta]{}, 0, ctx.Err()
	}
	return u.Store.Get(ctx, name)
}

// failureLog counts the "store operation failed" records per op.
type failureLog struct {
	mu     sync.Mutex
	count  map[string]int
	levels map[string]slog.Level
}

func (h *failureLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *failureLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "store operation failed" {
		return nil
	}
	op := ""
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "op" {
			op = a.Value.String()
		}
		return true
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	h.count[op]++
	h.levels[op] = r.Level
	return nil
}
func (h *failureLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *failureLog) WithGroup(string) slog.Handler      { return h }

// A watch that fails is a failed store operation like any other: Err
// reports it until the store next answers, and the log says so at Warn at
// most once per ErrorInterval (docs/guide.md, Failure behaviour).
func TestWatchFailuresReachErrAndAreLoggedOncePerInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &failureLog{count: map[string]int{}, levels: map[string]slog.Level{}}
		u := &unwatchable{Store: memstore.New[meta]()}
		u.hold.Store(true)
		n := start(t, u, "a", lead.WithLogger(slog.New(h)))
		// The first read waits for its deadline; the watch has failed.
		synctest.Wait()
		if err := n.e.Err(); !errors.Is(err, errWatchDown) {
			t.Fatalf("Err = %v, want the watch's failure", err)
		}
		u.hold.Store(false)
		// 25s of watches failing every RetryInterval (0.5s), with
		// ErrorInterval 10s.
		time.Sleep(25 * time.Second)
		n.stop(t)
		h.mu.Lock()
		defer h.mu.Unlock()
		if got := h.count["watch"]; got != 3 {
			t.Fatalf("logged %d watch failures in 25s, want 3 (at 0s, 10s, 20s)", got)
		}
		if got := h.levels["watch"]; got != slog.LevelWarn {
			t.Fatalf("watch failures logged at %v, want WARN", got)
		}
	})
}

// A term ends once, also when Run stops because the store refuses a
// renewal for good: one Stopped, and no term open once Run returned.
func TestTermEndsOnceWhenTheStoreRefusesARenewal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := start(t, uncheckedStore{memstore.New[meta]()}, "a")
		started := n.next(t)
		if started.Kind != lead.Started {
			t.Fatalf("first change %+v, want Started", started)
		}
		if err := n.e.SetMetadata(meta{Addr: strings.Repeat("x", store.MaxMetadataBytes)}); err != nil {
			t.Fatal(err)
		}
		if err := <-n.done; !errors.Is(err, store.ErrMetadataTooLarge) {
			t.Fatalf("Run = %v, want ErrMetadataTooLarge", err)
		}
		stopped := n.next(t)
		if stopped.Kind != lead.Stopped || stopped.Term != started.Term || !errors.Is(stopped.Reason, lead.ErrLeadershipLost) {
			t.Fatalf("second change %+v, want Stopped of %+v", stopped, started.Term)
		}
		select {
		case c := <-n.changes:
			t.Fatalf("reported more: %+v", c)
		default:
		}
		if s := n.e.Status(); s.InTerm || s.Leading {
			t.Fatalf("after Run returned: Status = %+v", s)
		}
	})
}

// When Run's ctx ends, the term ends for that reason, once, even if its
// deadline passes at the same instant.
func TestTermEndsOnceWhenRunsContextEndsAtTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &flaky{Store: memstore.New[meta]()}
		n := start(t, f, "a")
		started := n.next(t)
		// Renewals fail from now on: the term's deadline is RenewDeadline
		// after its last renewal was sent. Stop Run just as it passes.
		f.down.Store(true)
		deadline := n.e.Status().Deadline
		time.Sleep(time.Until(deadline))
		n.cancel()
		if err := <-n.done; err != nil {
			t.Fatalf("Run = %v", err)
		}
		stopped := n.next(t)
		if stopped.Kind != lead.Stopped || stopped.Term != started.Term {
			t.Fatalf("second change %+v, want Stopped of %+v", stopped, started.Term)
		}
		select {
		case c := <-n.changes:
			t.Fatalf("reported more: %+v", c)
		default:
		}
	})
}
