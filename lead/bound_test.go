package lead_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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

// smallestConfig is the Config with the shortest timings Validate accepts.
func smallestConfig() lease.Config {
	return lease.Config{
		LeaseDuration:  lease.MinDuration + 2,
		RenewDeadline:  lease.MinDuration + 1,
		RetryInterval:  lease.MinDuration,
		RetryJitter:    0,
		BackendTimeout: lease.MinDuration,
		ErrorInterval:  lease.MinErrorInterval,
	}
}

// requestLog is a store wrapper that keeps the time of every request an
// elector sends (reads, swaps, watch starts) and, while fail says so,
// fails them.
type requestLog struct {
	store.Store[meta]
	fail func(n int64) bool // nil: never; n counts the requests from 1
	n    atomic.Int64
	mu   sync.Mutex
	at   []time.Time
}

var errRefused = errors.New("store refuses")

func (r *requestLog) MayLoseRecords() bool { return store.MayLoseRecords(r.Store) }

func (r *requestLog) WatchCapabilities() store.WatchCapabilities {
	return store.WatchCapabilitiesOf(r.Store)
}

// request records one request and tells whether it fails.
func (r *requestLog) request() bool {
	n := r.n.Add(1)
	r.mu.Lock()
	r.at = append(r.at, time.Now())
	r.mu.Unlock()
	return r.fail != nil && r.fail(n)
}

func (r *requestLog) Get(ctx context.Context, name string) (lease.Record[meta], lease.Revision, error) {
	if r.request() {
		return lease.Record[meta]{}, 0, errRefused
	}
	return r.Store.Get(ctx, name)
}

func (r *requestLog) CompareAndSwap(ctx context.Context, name string, exp lease.Revision, next lease.Record[meta]) (lease.Record[meta], lease.Revision, error) {
	if r.request() {
		return lease.Record[meta]{}, 0, errRefused
	}
	return r.Store.CompareAndSwap(ctx, name, exp, next)
}

func (r *requestLog) Watch(ctx context.Context, name string) (<-chan store.Event[meta], error) {
	if r.request() {
		return nil, errRefused
	}
	return store.Watch(ctx, r.Store, name)
}

// busiest returns the most requests sent in any window of length w.
func busiest(at []time.Time, w time.Duration) int {
	most, j := 0, 0
	for i := range at {
		for at[i].Sub(at[j]) >= w {
			j++
		}
		most = max(most, i-j+1)
	}
	return most
}

// lineLog counts log records by time, except the ones of terms starting
// and ending (which lease.MaxLinesPerErrorInterval leaves out).
type lineLog struct {
	mu sync.Mutex
	at []time.Time
}

func (h *lineLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *lineLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "started leading" || r.Message == "stopped leading" {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.at = append(h.at, time.Now())
	return nil
}
func (h *lineLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *lineLog) WithGroup(string) slog.Handler      { return h }

// With the smallest Config Validate accepts, no elector sends more than
// lease.MaxRequestsPerSecond store requests in any second, or logs more
// than lease.MaxLinesPerErrorInterval lines for repeating problems in any
// ErrorInterval: whether the store answers, refuses everything, or refuses
// every other request or every third. Three electors share one memstore,
// each through a wrapper of its own that counts what it sends.
func TestSmallestConfigStaysWithinTheRequestBound(t *testing.T) {
	cfg := smallestConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	const run = 5 * time.Second
	for _, tc := range []struct {
		name string
		fail func(n int64) bool
	}{
		{"store answers", nil},
		{"store refuses everything", func(int64) bool { return true }},
		{"store refuses every other request", func(n int64) bool { return n%2 == 0 }},
		{"store refuses every third request", func(n int64) bool { return n%3 == 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				shared := memstore.New[meta]()
				var logs []*requestLog
				var lines []*lineLog
				var nodes []*node
				for i := range 3 {
					rl := &requestLog{Store: shared, fail: tc.fail}
					ll := &lineLog{}
					logs, lines = append(logs, rl), append(lines, ll)
					nodes = append(nodes, start(t, rl, fmt.Sprint("e", i), lead.WithConfig(cfg), lead.WithLogger(slog.New(ll))))
				}
				drained := make(chan struct{})
				for _, n := range nodes {
					go func() {
						for {
							select {
							case <-n.changes:
							case <-drained:
								return
							}
						}
					}()
				}
				time.Sleep(run)
				for _, n := range nodes {
					n.cancel()
					<-n.e.Done()
				}
				close(drained)
				for i, rl := range logs {
					rl.mu.Lock()
					most, total := busiest(rl.at, time.Second), len(rl.at)
					rl.mu.Unlock()
					t.Logf("elector %d: %d requests in %v, at most %d in a second (bound %d)", i, total, run, most, lease.MaxRequestsPerSecond)
					if most > lease.MaxRequestsPerSecond {
						t.Errorf("elector %d sent %d store requests in one second, above lease.MaxRequestsPerSecond (%d)", i, most, lease.MaxRequestsPerSecond)
					}
					if total == 0 {
						t.Errorf("elector %d sent no request: the test measures nothing", i)
					}
				}
				for i, ll := range lines {
					ll.mu.Lock()
					most := busiest(ll.at, cfg.ErrorInterval)
					ll.mu.Unlock()
					t.Logf("elector %d: at most %d log lines in an ErrorInterval (bound %d)", i, most, lease.MaxLinesPerErrorInterval)
					if most > lease.MaxLinesPerErrorInterval {
						t.Errorf("elector %d logged %d lines in one ErrorInterval (%v), above lease.MaxLinesPerErrorInterval (%d)", i, most, cfg.ErrorInterval, lease.MaxLinesPerErrorInterval)
					}
				}
			})
		})
	}
}
