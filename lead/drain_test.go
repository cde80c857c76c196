package lead_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store/memstore"
)

// bodyLog records when bodies start and end, on the fake clock, in the
// order they do.
type bodyLog struct {
	mu     sync.Mutex
	events []bodyEvent
}

type bodyEvent struct {
	who   string
	start bool
	at    time.Time
}

func (l *bodyLog) add(who string, start bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, bodyEvent{who, start, time.Now()})
}

// overlap returns an error naming the first instant at which bodies of two
// electors ran at once (a body's start after another's start and before
// its end, in the order recorded), or nil.
func (l *bodyLog) overlap() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	running := map[string]time.Time{}
	for _, ev := range l.events {
		if !ev.start {
			delete(running, ev.who)
			continue
		}
		for who, since := range running {
			if who != ev.who {
				return fmt.Errorf("%s's body started at %v while %s's, started at %v, still ran", ev.who, ev.at.Format(time.StampMilli), who, since.Format(time.StampMilli))
			}
		}
		running[ev.who] = ev.at
	}
	return nil
}

// slowBody is a body that takes 500 ms to return after its context is
// cancelled (its clean-up, say); started is closed when it starts.
func slowBody(log *bodyLog, who string, started chan<- struct{}) func(context.Context, lead.Term) error {
	var once sync.Once
	return func(ctx context.Context, _ lead.Term) error {
		log.add(who, true)
		once.Do(func() { close(started) })
		<-ctx.Done()
		<-time.After(500 * time.Millisecond) // the clean-up's work
		log.add(who, false)
		return nil
	}
}

// recordingBody records each run of a body that returns when its context
// ends.
func recordingBody(log *bodyLog, who string) func(context.Context, lead.Term) error {
	return func(ctx context.Context, _ lead.Term) error {
		log.add(who, true)
		<-ctx.Done()
		log.add(who, false)
		return nil
	}
}

// newElector makes an elector of "job" on st with the test timings.
func newElector(t *testing.T, st *memstore.Store[meta], id string, opts ...lead.Option) *lead.Elector[meta] {
	t.Helper()
	e, err := lead.New("job", st, append([]lead.Option{lead.WithIdentity(id), lead.WithConfig(fastConfig()), lead.WithLookupEnv(nil)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// handover runs the scenario of how: elector a leads with a body that takes
// 500 ms to return once cancelled, b waits with a body of its own, then a's
// term ends as how says. It returns the bodies' log once b's body runs.
func handover(t *testing.T, how string, unsafe bool) *bodyLog {
	log := &bodyLog{}
	st := memstore.New[meta]()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan struct{})
	var a *lead.Elector[meta]
	var end func()
	switch how {
	case "group member removed":
		g, err := lead.NewGroup(st, lead.WithConfig(fastConfig()), lead.WithLookupEnv(nil))
		if err != nil {
			t.Fatal(err)
		}
		if a, err = g.Add("job", lead.WithIdentity("a")); err != nil {
			t.Fatal(err)
		}
		if unsafe {
			lead.ReleaseWithoutWaiting(a)
		}
		gdone := make(chan error, 1)
		go func() { gdone <- g.Run(ctx) }()
		defer func() { cancel(); <-gdone }()
		end = func() { g.Remove("job") }
	default:
		a = newElector(t, st, "a")
		if unsafe {
			lead.ReleaseWithoutWaiting(a)
		}
		actx, acancel := context.WithCancel(ctx)
		adone := make(chan error, 1)
		go func() { adone <- a.Run(actx) }()
		defer func() { acancel(); <-adone }()
		end = acancel
		if how == "resign" {
			end = func() {
				if err := a.Resign(ctx); err != nil {
					t.Errorf("Resign = %v", err)
				}
				if a.IsLeader() {
					t.Error("IsLeader is true after Resign returned")
				}
			}
		}
	}
	aBody := make(chan struct{})
	go func() {
		defer close(aBody)
		if how == "every's fn" {
			a.Every(ctx, 100*time.Millisecond, slowBody(log, "a", started))
		} else {
			a.Lead(ctx, slowBody(log, "a", started))
		}
	}()
	defer func() { cancel(); <-aBody }()
	<-started
	b := newElector(t, st, "b")
	bdone := make(chan error, 1)
	go func() { bdone <- b.Run(ctx) }()
	defer func() { cancel(); <-bdone }()
	led := make(chan error, 1)
	go func() { led <- b.Lead(ctx, recordingBody(log, "b"), lead.Repeat()) }()
	synctest.Wait()
	end()
	synctest.Wait()
	for !b.IsLeader() {
		<-time.After(100 * time.Millisecond)
	}
	synctest.Wait()
	cancel()
	<-led
	return log
}

var handovers = []string{"run's ctx ends", "group member removed", "every's fn", "resign"}

// A body that takes 500 ms to return after its term ended never runs beside
// its successor's body: the lease is released only once it has returned.
func TestSlowBodyNeverOverlapsItsSuccessor(t *testing.T) {
	for _, how := range handovers {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				log := handover(t, how, false)
				if err := log.overlap(); err != nil {
					t.Fatal(err)
				}
				var aEnd, bStart time.Time
				for _, ev := range log.events {
					switch {
					case ev.who == "a" && !ev.start && aEnd.IsZero():
						aEnd = ev.at
					case ev.who == "b" && ev.start && bStart.IsZero():
						bStart = ev.at
					}
				}
				if aEnd.IsZero() || bStart.IsZero() {
					t.Fatalf("a's body ended at %v, b's started at %v: want both", aEnd, bStart)
				}
				// Released once the body returned: b leads at once, not
				// after the lease expired.
				if gap := bStart.Sub(aEnd); gap > 100*time.Millisecond {
					t.Fatalf("b's body started %v after a's ended; want a handover at once", gap)
				}
			})
		})
	}
}

// The same handovers with the release made without waiting for the bodies
// (the unsafe variant) do run the two bodies at once: the test above
// catches it.
func TestReleaseWithoutWaitingOverlaps(t *testing.T) {
	for _, how := range handovers {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				if err := handover(t, how, true).overlap(); err == nil {
					t.Fatal("no overlap: the unsafe variant went unnoticed")
				}
			})
		})
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A body that never returns: at the term's deadline Run gives up without
// releasing (the record keeps its holder), logs a warning and returns
// ErrBodiesStillRunning; the successor leads only once the lease expired.
func TestBodyThatNeverReturnsLetsTheLeaseExpire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New[meta]()
		logs := &syncBuffer{}
		a := newElector(t, st, "a", lead.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
		actx, acancel := context.WithCancel(context.Background())
		adone := make(chan error, 1)
		go func() { adone <- a.Run(actx) }()
		stuck := make(chan struct{})
		defer close(stuck)
		started := make(chan struct{})
		go a.Lead(context.Background(), func(context.Context, lead.Term) error {
			close(started)
			<-stuck // ignores its context
			return nil
		})
		<-started
		bStarted := make(chan time.Time, 1)
		b := newElector(t, st, "b", lead.WithObserver(func(c lead.Change) {
			if c.Kind == lead.Started {
				bStarted <- time.Now()
			}
		}))
		bctx, bcancel := context.WithCancel(context.Background())
		defer bcancel()
		go b.Run(bctx)
		<-time.After(time.Second)
		deadline := a.Status().Deadline
		ended := time.Now()
		acancel()
		if a.IsLeader() {
			t.Fatal("IsLeader is true once Run's ctx ended")
		}
		err := <-adone
		returned := time.Now()
		if !errors.Is(err, lead.ErrBodiesStillRunning) {
			t.Fatalf("Run = %v, want ErrBodiesStillRunning", err)
		}
		if returned.Before(ended.Add(time.Millisecond)) || returned.After(deadline) {
			t.Fatalf("Run returned %v after ctx ended; the term's deadline was %v after", returned.Sub(ended), deadline.Sub(ended))
		}
		rec, _, err := st.Get(context.Background(), "job")
		if err != nil || rec.Holder != "a" {
			t.Fatalf("record after Run returned: %+v, %v; want it still held by a", rec, err)
		}
		if out := logs.String(); !strings.Contains(out, "level=WARN") || !strings.Contains(out, "name=job") || !strings.Contains(out, "bodies=1") {
			t.Fatalf("no warning naming the election and the bodies running:\n%s", out)
		}
		at := <-bStarted
		if expires := rec.RenewedAt.Add(fastConfig().LeaseDuration); at.Before(expires) {
			t.Fatalf("b led at %v, before a's lease expired at %v", at.Format(time.StampMilli), expires.Format(time.StampMilli))
		}
	})
}

// renewalsFail is a memstore whose swaps writing holder "a" fail while
// down is set: a's renewals fail, its release (no holder) and everyone
// else's writes go through.
type renewalsFail struct {
	*memstore.Store[meta]
	down atomic.Bool
}

func (s *renewalsFail) CompareAndSwap(ctx context.Context, name string, exp lease.Revision, next lease.Record[meta]) (lease.Record[meta], lease.Revision, error) {
	if s.down.Load() && next.Holder == "a" {
		return lease.Record[meta]{}, 0, errors.New("store unreachable")
	}
	return s.Store.CompareAndSwap(ctx, name, exp, next)
}

// A term that ends by its deadline (its renewals failed) releases its
// lease only once its bodies have returned; released at once (the unsafe
// variant), the successor's body runs beside the old one.
func TestTermEndedByItsDeadlineReleasesAfterItsBodies(t *testing.T) {
	for _, unsafe := range []bool{false, true} {
		t.Run(fmt.Sprint("unsafe=", unsafe), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				log := &bodyLog{}
				st := &renewalsFail{Store: memstore.New[meta]()}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				a, err := lead.New("job", st, lead.WithIdentity("a"), lead.WithConfig(fastConfig()), lead.WithLookupEnv(nil))
				if err != nil {
					t.Fatal(err)
				}
				if unsafe {
					lead.ReleaseWithoutWaiting(a)
				}
				adone := make(chan error, 1)
				go func() { adone <- a.Run(ctx) }()
				defer func() { cancel(); <-adone }()
				started := make(chan struct{})
				aBody := make(chan struct{})
				go func() { defer close(aBody); a.Lead(ctx, slowBody(log, "a", started)) }()
				defer func() { cancel(); <-aBody }()
				<-started
				b, err := lead.New("job", st, lead.WithIdentity("b"), lead.WithConfig(fastConfig()), lead.WithLookupEnv(nil))
				if err != nil {
					t.Fatal(err)
				}
				bdone := make(chan error, 1)
				go func() { bdone <- b.Run(ctx) }()
				defer func() { cancel(); <-bdone }()
				led := make(chan error, 1)
				go func() { led <- b.Lead(ctx, recordingBody(log, "b")) }()
				synctest.Wait()
				st.down.Store(true)
				for !b.IsLeader() {
					<-time.After(100 * time.Millisecond)
				}
				synctest.Wait()
				cancel()
				<-led
				err = log.overlap()
				if unsafe && err == nil {
					t.Fatal("no overlap: the unsafe variant went unnoticed")
				}
				if !unsafe && err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}
