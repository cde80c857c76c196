package lead_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
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

// shortLeaseConfig is the short lease of the hostile tests: a 2s lease, a
// 1.5s renew deadline, 200ms retries.
func shortLeaseConfig() lease.Config {
	return lease.Config{
		LeaseDuration:  2 * time.Second,
		RenewDeadline:  1500 * time.Millisecond,
		RetryInterval:  200 * time.Millisecond,
		RetryJitter:    0.1,
		BackendTimeout: time.Second,
		ErrorInterval:  10 * time.Second,
	}
}

// hostile is a memstore shared by the electors of a test, and an adversary
// that can make it misbehave: answer with a record out of bounds, roll its
// revisions back, push forged watch events. Revisions shown are the
// memstore's plus bias.
type hostile struct {
	mem   *memstore.Store[meta]
	lossy bool

	mu         sync.Mutex
	bias       int64               // revision shown = stored revision + bias
	corrupt    *lease.Record[meta] // shown instead of the stored record at corruptRev
	corruptRev lease.Revision      // a stored revision
	forgers    []chan store.Event[meta]
}

func newHostile(lossy bool, bias int64) *hostile {
	return &hostile{mem: memstore.New[meta](), lossy: lossy, bias: bias}
}

// show turns a stored revision into the one the store shows. h.mu is held.
func (h *hostile) show(rev lease.Revision) lease.Revision {
	if rev == 0 {
		return 0
	}
	return lease.Revision(int64(rev) + h.bias)
}

func (h *hostile) get(ctx context.Context) (lease.Record[meta], lease.Revision, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.corrupt != nil {
		return *h.corrupt, h.show(h.corruptRev), nil
	}
	rec, rev, err := h.mem.Get(ctx, "job")
	return rec, h.show(rev), err
}

func (h *hostile) cas(ctx context.Context, exp lease.Revision, next lease.Record[meta]) (lease.Record[meta], lease.Revision, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.corrupt != nil {
		return *h.corrupt, h.show(h.corruptRev), fmt.Errorf("hostile: %w", store.ErrConflict)
	}
	stored := exp
	if exp != 0 {
		stored = lease.Revision(int64(exp) - h.bias)
	}
	rec, rev, err := h.mem.CompareAndSwap(ctx, "job", stored, next)
	return rec, h.show(rev), err
}

func (h *hostile) watch(ctx context.Context) (<-chan store.Event[meta], error) {
	in, err := h.mem.Watch(ctx, "job")
	if err != nil {
		return nil, err
	}
	forged := make(chan store.Event[meta], 8)
	h.mu.Lock()
	h.forgers = append(h.forgers, forged)
	h.mu.Unlock()
	out := make(chan store.Event[meta])
	go func() {
		defer close(out)
		for {
			var ev store.Event[meta]
			select {
			case e, ok := <-in:
				if !ok {
					return
				}
				h.mu.Lock()
				if h.corrupt != nil && e.Revision == h.corruptRev {
					e.Record = *h.corrupt
				}
				e.Revision = h.show(e.Revision)
				h.mu.Unlock()
				ev = e
			case ev = <-forged:
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// write stores rec over whatever is stored. h.mu is held.
func (h *hostile) write(rec lease.Record[meta]) lease.Revision {
	_, cur, err := h.mem.Get(context.Background(), "job")
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		panic(err)
	}
	_, rev, err := h.mem.CompareAndSwap(context.Background(), "job", cur, rec)
	if err != nil {
		panic(err)
	}
	return rev
}

// current returns the record and revision shown now.
func (h *hostile) current(t *testing.T) (lease.Record[meta], lease.Revision) {
	t.Helper()
	rec, rev, err := h.get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rec, rev
}

// rollback makes the store show rec at rev from now on, whatever it showed
// before: a restore from a backup.
func (h *hostile) rollback(rec lease.Record[meta], rev lease.Revision) {
	h.mu.Lock()
	defer h.mu.Unlock()
	stored := h.write(rec)
	h.bias = int64(rev) - int64(stored)
}

// poison makes the store show rec, whatever it is, at a new revision; no
// swap applies while it stands.
func (h *hostile) poison(rec lease.Record[meta]) {
	h.mu.Lock()
	defer h.mu.Unlock()
	cur, _, _ := h.mem.Get(context.Background(), "job")
	cur.Holder = "placeholder"
	h.corruptRev = h.write(cur)
	h.corrupt = &rec
}

// replace ends a poison with a valid record at a new revision.
func (h *hostile) replace(rec lease.Record[meta]) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.corrupt = nil
	h.write(rec)
}

// forge pushes ev to every open watch, as anyone who can publish on the
// store's channel can.
func (h *hostile) forge(ev store.Event[meta]) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, f := range h.forgers {
		select {
		case f <- ev:
		default:
		}
	}
}

// view is one elector's connection to the hostile store. It counts the
// elector's requests, and catches a busy loop: under synctest, virtual time
// stands still while an elector sends request after request, so the test
// would hang. After 100 requests at one instant it notes the loop and
// pauses a retry interval, which lets time move on.
type view struct {
	h        *hostile
	requests atomic.Int64

	mu      sync.Mutex
	instant time.Time
	burst   int
	loop    string // the first busy loop seen
}

func (v *view) count() {
	v.requests.Add(1)
	v.mu.Lock()
	now := time.Now()
	if !now.Equal(v.instant) {
		v.instant, v.burst = now, 0
	}
	v.burst++
	looping := v.burst > 100
	if looping && v.loop == "" {
		v.loop = fmt.Sprintf("busy loop: more than 100 requests at %v", now)
	}
	v.mu.Unlock()
	if looping {
		time.Sleep(shortLeaseConfig().RetryInterval)
	}
}

func (v *view) Get(ctx context.Context, name string) (lease.Record[meta], lease.Revision, error) {
	v.count()
	return v.h.get(ctx)
}

func (v *view) CompareAndSwap(ctx context.Context, name string, exp lease.Revision, next lease.Record[meta]) (lease.Record[meta], lease.Revision, error) {
	v.count()
	return v.h.cas(ctx, exp, next)
}

func (v *view) Watch(ctx context.Context, name string) (<-chan store.Event[meta], error) {
	return v.h.watch(ctx)
}

func (v *view) MayLoseRecords() bool { return v.h.lossy }

// WatchCapabilities claims nothing: the hostile store's events are made up.
func (v *view) WatchCapabilities() store.WatchCapabilities { return store.WatchCapabilities{} }

// logRecorder keeps the log records of one elector.
type logRecorder struct {
	mu   sync.Mutex
	logs []logged
}

type logged struct {
	level slog.Level
	msg   string
	attrs map[string]any
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	e := logged{level: r.Level, msg: r.Message, attrs: map[string]any{}}
	r.Attrs(func(a slog.Attr) bool { e.attrs[a.Key] = a.Value.Any(); return true })
	l.mu.Lock()
	l.logs = append(l.logs, e)
	l.mu.Unlock()
	return nil
}
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecorder) WithGroup(string) slog.Handler      { return l }

// count returns how many records with msg were logged at level, and one of
// them.
func (l *logRecorder) count(level slog.Level, msg string) (int, logged) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, last := 0, logged{}
	for _, e := range l.logs {
		if e.level == level && e.msg == msg {
			n, last = n+1, e
		}
	}
	return n, last
}

// fleet is the electors of a test on one hostile store, with a check that
// at most one of them leads at any time.
type fleet struct {
	h      *hostile
	nodes  []*node
	views  []*view
	logs   []*logRecorder
	events chan lead.Change // every change of every elector
	twice  atomic.Value     // the first moment two led, as a string
}

func startFleet(t *testing.T, h *hostile, n int) *fleet {
	t.Helper()
	f := &fleet{h: h, events: make(chan lead.Change, 1000)}
	for i := range n {
		v := &view{h: h}
		l := &logRecorder{}
		nd := start(t, v, fmt.Sprintf("e%d", i), lead.WithConfig(shortLeaseConfig()), lead.WithLogger(slog.New(l)),
			lead.WithObserver(func(c lead.Change) { f.events <- c }))
		f.nodes, f.views, f.logs = append(f.nodes, nd), append(f.views, v), append(f.logs, l)
	}
	// Sample who leads every millisecond of virtual time.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			var who []string
			for _, nd := range f.nodes {
				if nd.e.IsLeader() {
					who = append(who, nd.e.Identity())
				}
			}
			if len(who) > 1 {
				f.twice.CompareAndSwap(nil, fmt.Sprintf("%v lead at once at %v", who, time.Now()))
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		if v := f.twice.Load(); v != nil {
			t.Errorf("two leaders: %s", v)
		}
		for i, v := range f.views {
			v.mu.Lock()
			if v.loop != "" {
				t.Errorf("%s: %s", f.nodes[i].e.Identity(), v.loop)
			}
			v.mu.Unlock()
		}
	})
	return f
}

// next waits for the next change of any elector.
func (f *fleet) next(t *testing.T) lead.Change {
	t.Helper()
	select {
	case c := <-f.events:
		return c
	case <-time.After(10 * time.Minute):
		t.Fatal("no leadership change within 10 minutes")
		return lead.Change{}
	}
}

// none checks that no elector reported a change.
func (f *fleet) none(t *testing.T, while string) {
	t.Helper()
	synctest.Wait()
	select {
	case c := <-f.events:
		t.Fatalf("%s: %s %v (token %d)", while, c.Term.Identity, c.Kind, c.Term.Token)
	default:
	}
}

func (f *fleet) requests() []int64 {
	out := make([]int64, len(f.views))
	for i, v := range f.views {
		out[i] = v.requests.Load()
	}
	return out
}

// withinBudget checks the request budget of docs/design.md over a window w
// that started when the counts were before: an elector sends at most one
// scheduled request per RetryInterval, at most maxQuick (2) quick ones after
// each scheduled request or hinted read, and hinted reads only for watch
// events the store confirms (none here: the adversary writes nothing
// meanwhile) or at most one per RetryInterval for contradicted ones. So at
// most 3·(2·⌈w/RetryInterval⌉ + 2) requests. want is a tighter figure the
// scenario allows, checked too.
func (f *fleet) withinBudget(t *testing.T, before []int64, w time.Duration, want int64) {
	t.Helper()
	windows := int64((w + shortLeaseConfig().RetryInterval - 1) / shortLeaseConfig().RetryInterval)
	budget := 3 * (2*windows + 2)
	for i, n := range f.requests() {
		got := n - before[i]
		if got > budget || got > want {
			t.Errorf("%s sent %d requests in %v; budget %d, expected at most %d", f.nodes[i].e.Identity(), got, w, budget, want)
		}
	}
}

// settle lets time pass (d of virtual time) and the electors react.
func settle(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}

func TestHostileRecordIsRefusedReportedAndOutlived(t *testing.T) {
	for _, lossy := range []bool{false, true} {
		t.Run(fmt.Sprintf("lossy=%v", lossy), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := shortLeaseConfig()
				h := newHostile(lossy, 0)
				f := startFleet(t, h, 3)
				first := f.next(t)
				if first.Kind != lead.Started {
					t.Fatalf("first change %+v", first)
				}
				settle(time.Second)

				poisoned := time.Now()
				before := f.requests()
				h.poison(lease.Record[meta]{Holder: "evil", Token: math.MaxUint64, Transitions: math.MaxUint64, LeaseDuration: math.MaxInt64})
				c := f.next(t)
				if c.Kind != lead.Stopped || c.Term.Token != first.Term.Token || !errors.Is(c.Reason, lead.ErrLeadershipLost) {
					t.Fatalf("after the poison: %+v", c)
				}
				if took := time.Since(poisoned); took > cfg.MaxRetryInterval() {
					t.Errorf("the leader stepped down %v after the poison; want within a retry interval", took)
				}
				settle(5 * time.Second)
				f.none(t, "while a corrupt record stands")
				for i, n := range f.nodes {
					if err := n.e.Err(); !errors.Is(err, store.ErrCorruptRecord) {
						t.Errorf("%s: Err() = %v, want ErrCorruptRecord", n.e.Identity(), err)
					}
					got, rec := f.logs[i].count(slog.LevelError, "store holds a corrupt record; not overwriting it, and not leading until it is replaced or removed")
					if got != 1 || rec.attrs["error"] == nil {
						t.Errorf("%s logged the corrupt record %d times at Error in 5s (ErrorInterval 10s), want 1 with its error", n.e.Identity(), got)
					}
				}
				// Polls only: one read per retry interval, plus the leader's
				// renewal and the step-down.
				f.withinBudget(t, before, time.Since(poisoned), int64(time.Since(poisoned)/cfg.RetryInterval)+3)

				// The adversary replaces it with a valid record of a holder
				// that is gone: it is waited out for its own lease, not for
				// the poison's.
				fixed := time.Now()
				h.replace(lease.Record[meta]{Holder: "gone", Token: 7, Transitions: 3, LeaseDuration: cfg.LeaseDuration})
				c = f.next(t)
				took := time.Since(fixed)
				if c.Kind != lead.Started || c.Term.Token <= 7 {
					t.Fatalf("after the fix: %+v, want a term with a token above 7", c)
				}
				if took < cfg.LeaseDuration || took > cfg.LeaseDuration+cfg.MaxRetryInterval() {
					t.Errorf("a leader %v after the record was fixed; want within [L, L+RetryInterval] = [%v, %v]", took, cfg.LeaseDuration, cfg.LeaseDuration+cfg.MaxRetryInterval())
				}
				settle(time.Second)
				f.none(t, "after the new leader started")
				for _, n := range f.nodes {
					if err := n.e.Err(); err != nil {
						t.Errorf("%s: Err() = %v after the fix", n.e.Identity(), err)
					}
				}
			})
		})
	}
}

func TestRollbackIsReportedAndWaitedOut(t *testing.T) {
	tests := []struct {
		name string
		roll func(h *hostile, rec lease.Record[meta], rev lease.Revision)
	}{
		{"same holder and token 1000 revisions lower", func(h *hostile, rec lease.Record[meta], rev lease.Revision) {
			h.rollback(rec, rev-1000)
		}},
		{"revision 1 with the holder cleared", func(h *hostile, rec lease.Record[meta], rev lease.Revision) {
			rec.Holder = ""
			h.rollback(rec, 1)
		}},
		{"record removed", func(h *hostile, rec lease.Record[meta], rev lease.Revision) {
			h.mem.Delete("job")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := shortLeaseConfig()
				h := newHostile(false, 5000)
				f := startFleet(t, h, 3)
				first := f.next(t)
				if first.Kind != lead.Started {
					t.Fatalf("first change %+v", first)
				}
				settle(time.Second)

				rec, rev := h.current(t)
				rolled := time.Now()
				before := f.requests()
				tt.roll(h, rec, rev)
				c := f.next(t)
				if c.Kind != lead.Stopped || c.Term.Token != first.Term.Token {
					t.Fatalf("after the rollback: %+v, want the leader to step down", c)
				}
				if took := time.Since(rolled); took > cfg.MaxRetryInterval() {
					t.Errorf("the leader stepped down %v after the rollback; want within a retry interval", took)
				}
				settle(cfg.MaxRetryInterval())
				for i, n := range f.nodes {
					if err := n.e.Err(); !errors.Is(err, lead.ErrRevisionRollback) {
						t.Errorf("%s: Err() = %v, want ErrRevisionRollback", n.e.Identity(), err)
					}
					got, e := f.logs[i].count(slog.LevelError, "store revision went back")
					if got != 1 || e.attrs["newest"] == nil || e.attrs["revision"] == nil {
						t.Errorf("%s logged the rollback %d times (%v), want once at Error with both revisions", n.e.Identity(), got, e.attrs)
					}
				}
				c = f.next(t)
				took := time.Since(rolled)
				if c.Kind != lead.Started || c.Term.Token <= first.Term.Token {
					t.Fatalf("after the rollback: %+v, want a new term with a token above %d", c, first.Term.Token)
				}
				if took < cfg.LeaseDuration || took > cfg.LeaseDuration+cfg.MaxRetryInterval() {
					t.Errorf("a leader %v after the rollback; want within [L, L+RetryInterval] = [%v, %v]", took, cfg.LeaseDuration, cfg.LeaseDuration+cfg.MaxRetryInterval())
				}
				// Polls, and around the hold's end an acquire and a
				// conflict's retry at most.
				f.withinBudget(t, before, time.Since(rolled), int64(time.Since(rolled)/cfg.RetryInterval)+4)
				settle(3 * time.Second)
				f.none(t, "after the new leader started")
				for _, n := range f.nodes {
					if err := n.e.Err(); err != nil {
						t.Errorf("%s: Err() = %v once the rollback was waited out", n.e.Identity(), err)
					}
				}
			})
		})
	}
}

func TestForgedWatchEventsChangeNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := shortLeaseConfig()
		h := newHostile(false, 0)
		f := startFleet(t, h, 3)
		first := f.next(t)
		if first.Kind != lead.Started {
			t.Fatalf("first change %+v", first)
		}
		settle(time.Second)

		forged := []store.Event[meta]{
			{Record: lease.Record[meta]{Holder: "evil", Token: lease.MaxToken, Transitions: lease.MaxToken, LeaseDuration: lease.MaxDuration}, Revision: math.MaxUint64},
			{Record: lease.Record[meta]{Token: 3, LeaseDuration: cfg.LeaseDuration}, Revision: math.MaxUint64 - 1},
			{Absent: true},
			{Record: lease.Record[meta]{Holder: "evil", Token: math.MaxUint64, LeaseDuration: math.MaxInt64}, Revision: 1 << 62},
			{Revision: 1 << 61, Err: fmt.Errorf("forged: %w", store.ErrCorruptRecord)},
		}
		began := time.Now()
		before := f.requests()
		const flood = 10 * time.Second
		for i := 0; time.Since(began) < flood; i++ {
			h.forge(forged[i%len(forged)])
			time.Sleep(10 * time.Millisecond)
		}
		f.none(t, "during the flood of forged events")
		leaders := 0
		for _, n := range f.nodes {
			if n.e.IsLeader() {
				leaders++
				if n.e.Identity() != first.Term.Identity {
					t.Errorf("%s leads, %s led before the flood", n.e.Identity(), first.Term.Identity)
				}
			}
			if rec, ok := n.e.Record(); !ok || rec.Holder != first.Term.Identity || rec.Token != uint64(first.Term.Token) {
				t.Errorf("%s: Record() = %+v, %v after the flood", n.e.Identity(), rec, ok)
			}
		}
		if leaders != 1 {
			t.Fatalf("%d leaders after the flood", leaders)
		}
		// A scheduled request and at most one read for a forged event per
		// retry interval.
		f.withinBudget(t, before, flood, 2*int64(flood/cfg.RetryInterval)+4)

		// After a release the lease goes to a follower, once the waits
		// the forged revisions imposed are over: an event the store does
		// not confirm may be a rollback's lost write, whose writer may
		// still lead, so each costs a follower at most a LeaseDuration
		// from the read that contradicted it.
		var leader *node
		for _, n := range f.nodes {
			if n.e.IsLeader() {
				leader = n
			}
		}
		released := time.Now()
		leader.stop(t)
		// Each elector reports on its own goroutine: the two changes may
		// come in either order.
		var stopped, started bool
		for !stopped || !started {
			c := f.next(t)
			switch {
			case c.Kind == lead.Stopped && c.Term.Identity == leader.e.Identity() && !stopped:
				stopped = true
			case c.Kind == lead.Started && c.Term.Identity != leader.e.Identity() && c.Term.Token > first.Term.Token && !started:
				started = true
				if took := time.Since(released); took >= cfg.LeaseDuration+cfg.RetryInterval {
					t.Errorf("successor led %v after the release; want less than a LeaseDuration and a retry interval", took)
				}
			default:
				t.Fatalf("after the release: %+v", c)
			}
		}
	})
}

func TestTokensExhaustedIsReportedAndNoTermStarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := shortLeaseConfig()
		h := newHostile(false, 0)
		if _, _, err := h.mem.CompareAndSwap(context.Background(), "job", 0, lease.Record[meta]{Token: lease.MaxToken, Transitions: 9, LeaseDuration: time.Second}); err != nil {
			t.Fatal(err)
		}
		began := time.Now()
		f := startFleet(t, h, 3)
		const w = 15 * time.Second
		settle(w)
		f.none(t, "with every token used")
		for i, n := range f.nodes {
			if err := n.e.Err(); !errors.Is(err, store.ErrTokenExhausted) {
				t.Errorf("%s: Err() = %v, want ErrTokenExhausted", n.e.Identity(), err)
			}
			// At 0s and 10s, with ErrorInterval 10s.
			if got, e := f.logs[i].count(slog.LevelError, "fencing tokens exhausted"); got != 2 || e.attrs["token"] != lease.MaxToken {
				t.Errorf("%s logged exhaustion %d times in 15s (%v), want 2 at Error with the token", n.e.Identity(), got, e.attrs)
			}
			if rec, ok := n.e.Record(); !ok || rec.Token != lease.MaxToken {
				t.Errorf("%s: Record() = %+v, %v", n.e.Identity(), rec, ok)
			}
		}
		// Polls only.
		f.withinBudget(t, make([]int64, 3), time.Since(began), int64(w/cfg.RetryInterval)+1)
	})
}

// liar is a store whose successful swaps answer with a record out of bounds.
type liar struct {
	*memstore.Store[meta]
}

func (l liar) CompareAndSwap(ctx context.Context, name string, exp lease.Revision, next lease.Record[meta]) (lease.Record[meta], lease.Revision, error) {
	rec, rev, err := l.Store.CompareAndSwap(ctx, name, exp, next)
	if err == nil {
		rec.LeaseDuration = -1
	}
	return rec, rev, err
}

func TestSwapAnsweredWithARecordOutOfBoundsIsNotLedOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &logRecorder{}
		n := start(t, liar{memstore.New[meta]()}, "a", lead.WithConfig(shortLeaseConfig()), lead.WithLogger(slog.New(h)))
		// The store holds a valid record: reads find it (so Err() clears
		// again), the elector waits it out and acquires again, and each
		// swap's answer lies again.
		settle(5 * time.Second)
		select {
		case c := <-n.changes:
			t.Fatalf("led on a swap answered with a record out of bounds: %+v", c)
		default:
		}
		got, e := h.count(slog.LevelError, "store holds a corrupt record; not overwriting it, and not leading until it is replaced or removed")
		if err, _ := e.attrs["error"].(error); got != 1 || !errors.Is(err, store.ErrCorruptRecord) {
			t.Fatalf("logged %d times at Error in 5s (%v), want once, with an error wrapping ErrCorruptRecord", got, e.attrs)
		}
	})
}
