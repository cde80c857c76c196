package lead

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/memstore"
)

// The detector counts a second clock's lead over the monotonic clock as a
// stop once it passes the tolerance, whole, short stops adding up; a second
// clock set back moves the base, so that a later stop still counts in
// full; a lead of centuries counts for lease.MaxDuration, once.
func TestStopDetectorCountsLeadsPastTheTolerance(t *testing.T) {
	const ms = time.Millisecond
	type reading struct{ mono, second time.Duration }
	for _, c := range []struct {
		name     string
		readings []reading
		want     time.Duration
	}{
		{"clocks agree", []reading{{0, 0}, {time.Second, time.Second}, {time.Hour, time.Hour}}, 0},
		{"read noise within the tolerance", []reading{{0, 0}, {100 * ms, 105 * ms}, {200 * ms, 198 * ms}, {300 * ms, 307 * ms}}, 0},
		{"a stop", []reading{{0, 0}, {time.Second, 31 * time.Second}}, 30 * time.Second},
		{"a stop, then the clocks agree again", []reading{{0, 0}, {time.Second, 31 * time.Second}, {2 * time.Second, 32 * time.Second}}, 30 * time.Second},
		{"two stops", []reading{{0, 0}, {time.Second, 6 * time.Second}, {2 * time.Second, 17 * time.Second}}, 15 * time.Second},
		{"short stops add up", []reading{{0, 0}, {ms, 7 * ms}, {2 * ms, 14 * ms}}, 12 * ms},
		{"the second clock set back, then a stop", []reading{{0, 0}, {time.Second, -time.Hour}, {2 * time.Second, -time.Hour + 21*time.Second}}, 20 * time.Second},
		{"the second clock set back is no stop", []reading{{0, 0}, {time.Second, -time.Hour}, {2 * time.Second, -time.Hour + time.Second}}, 0},
		{"a lead of centuries counts once, at most lease.MaxDuration", []reading{{0, 0}, {time.Second, math.MaxInt64}, {2 * time.Second, math.MaxInt64}}, lease.MaxDuration},
		{"readings at the ends of the range", []reading{{0, math.MinInt64}, {time.Second, math.MaxInt64}}, lease.MaxDuration},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := stopDetector{tolerance: stopTolerance}
			var got time.Duration
			for _, r := range c.readings {
				got = d.observe(r.mono, r.second)
			}
			if got != c.want {
				t.Fatalf("counted %v, want %v", got, c.want)
			}
		})
	}
}

// The default clock counts no stop while the machine runs, and never
// counts less than before.
func TestSystemClockCountsNoStopWhileRunning(t *testing.T) {
	c := newSystemClock()
	var last time.Duration
	for range 1000 {
		got := c.stoppedTotal()
		if got < last {
			t.Fatalf("the total went back from %v to %v", last, got)
		}
		last = got
	}
	if last != 0 {
		t.Fatalf("counted %v of stops in a running process", last)
	}
}

// stoppingClock is the clock of a process that its machine stops (a VM
// paused, a system suspended, a SIGSTOP), in a synctest bubble whose time
// is real time: while the process is stopped its timers' functions wait
// (nothing runs) and, if the monotonic clock stops too, Now stands still,
// then reads behind real time. Its second clock is real time, less the
// stops it does not show (hidden), read through det as systemClock reads
// its second clocks.
type stoppingClock struct {
	mu       sync.Mutex
	det      stopDetector
	epoch    time.Time
	stopped  bool     // the process does not run
	held     []func() // timers' functions that came due meanwhile
	frozen   bool     // the monotonic clock stands still (while stopped)
	hide     bool     // and the second clock does too
	frozenAt time.Time
	behind   time.Duration // how far the monotonic clock is behind real time
	hidden   time.Duration // how far the second clock is
}

func newStoppingClock(det stopDetector) *stoppingClock {
	return &stoppingClock{det: det, epoch: time.Now()}
}

func (c *stoppingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nowLocked()
}

func (c *stoppingClock) nowLocked() time.Time {
	if c.frozen {
		return c.frozenAt
	}
	return time.Now().Add(-c.behind)
}

// AfterFunc calls f once Now has advanced by d: as late, in real time, as
// the monotonic clock stood still meanwhile.
func (c *stoppingClock) AfterFunc(d time.Duration, f func()) Timer {
	tm := &stoppingTimer{}
	target := c.Now().Add(d)
	var fire func()
	fire = func() {
		c.mu.Lock()
		switch {
		case tm.done.Load():
			c.mu.Unlock()
		case c.stopped:
			c.held = append(c.held, fire)
			c.mu.Unlock()
		case c.nowLocked().Before(target):
			tm.set(time.AfterFunc(target.Sub(c.nowLocked()), fire))
			c.mu.Unlock()
		default:
			c.mu.Unlock()
			if tm.done.CompareAndSwap(false, true) {
				f()
			}
		}
	}
	tm.set(time.AfterFunc(d, fire))
	return tm
}

// stoppingTimer is a stoppingClock's Timer.
type stoppingTimer struct {
	done atomic.Bool // fired or stopped
	mu   sync.Mutex
	t    *time.Timer
}

func (tm *stoppingTimer) set(t *time.Timer) {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	tm.t = t
}

func (tm *stoppingTimer) Stop() bool {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	tm.t.Stop()
	return tm.done.CompareAndSwap(false, true)
}

func (c *stoppingClock) stoppedTotal() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	second := time.Now().Add(-c.hidden)
	if c.frozen && c.hide {
		second = c.frozenAt.Add(c.behind - c.hidden)
	}
	return c.det.observe(c.nowLocked().Sub(c.epoch), second.Sub(c.epoch))
}

// stop stops the process; clock stops its monotonic clock too, and hide
// its second clock as well.
func (c *stoppingClock) stop(clock, hide bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.frozenAt = c.nowLocked()
	c.stopped, c.frozen, c.hide = true, clock, clock && hide
}

// resume lets the process run again, its timers' functions still held.
func (c *stoppingClock) resume() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.frozen {
		lag := time.Now().Add(-c.behind).Sub(c.frozenAt)
		c.behind += lag
		if c.hide {
			c.hidden += lag
		}
	}
	c.stopped, c.frozen, c.hide = false, false, false
}

// release runs the timers' functions held while stopped.
func (c *stoppingClock) release() {
	c.mu.Lock()
	held := c.held
	c.held = nil
	c.mu.Unlock()
	for _, f := range held {
		f()
	}
}

// gatedStore is a store that cannot watch, whose calls wait while its
// process is stopped.
type gatedStore struct {
	store.Store[struct{}]
	c    *stoppingClock
	fail *atomic.Bool // swaps fail
}

func (s gatedStore) wait() {
	for {
		s.c.mu.Lock()
		stopped := s.c.stopped
		s.c.mu.Unlock()
		if !stopped {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

func (s gatedStore) Get(ctx context.Context, name string) (lease.Record[struct{}], lease.Revision, error) {
	s.wait()
	return s.Store.Get(ctx, name)
}

func (s gatedStore) CompareAndSwap(ctx context.Context, name string, exp lease.Revision, next lease.Record[struct{}]) (lease.Record[struct{}], lease.Revision, error) {
	s.wait()
	if s.fail != nil && s.fail.Load() {
		return lease.Record[struct{}]{}, 0, errors.New("gatedStore: refused")
	}
	return s.Store.CompareAndSwap(ctx, name, exp, next)
}

func (gatedStore) MayLoseRecords() bool { return false }

// stopOutcome is what a stopped leader saw at the instant it resumed,
// before any timer of its own ran: whether IsLeader said it leads, and
// whether its body's next iteration found its context live; and whether
// the other elector led meanwhile.
type stopOutcome struct {
	leader, bodyLive, successor bool
}

// stopLeader runs elector a (on a stoppingClock with detector det) until
// it leads, with a body that reports each iteration, then stops a's
// process (and its clock, if clock; that clock's stop hidden, if hide) for
// three leases while elector b takes over, and resumes it. The body tells
// whether its term is live by isLive(ctx): ctx.Err() == nil (errLive) or
// ctx.Done() not closed (doneLive).
func stopLeader(t *testing.T, det stopDetector, clock, hide bool, isLive func(context.Context) bool) stopOutcome {
	t.Helper()
	var out stopOutcome
	synctest.Test(t, func(t *testing.T) {
		cfg := lease.DefaultConfig()
		cfg.LeaseDuration, cfg.RenewDeadline, cfg.RetryInterval, cfg.BackendTimeout = 3*time.Second, 2*time.Second, 500*time.Millisecond, time.Second
		mem := memstore.New[struct{}]()
		c := newStoppingClock(det)
		opts := []Option{WithConfig(cfg), WithLookupEnv(nil)}
		a, err := New("job", store.Store[struct{}](gatedStore{Store: mem, c: c}), append(opts, WithIdentity("a"), WithClock(c))...)
		if err != nil {
			t.Fatal(err)
		}
		b, err := New("job", store.Store[struct{}](mem), append(opts, WithIdentity("b"))...)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() { _ = a.Run(ctx) }()
		live := make(chan bool)
		next := make(chan struct{})
		done := make(chan struct{}) // the test is over
		defer close(done)
		go func() {
			_ = a.Lead(ctx, func(ctx context.Context, _ Term) error {
				for {
					ok := isLive(ctx)
					select {
					case live <- ok:
					case <-done:
						return nil
					}
					if !ok {
						return ctx.Err()
					}
					select {
					case <-next:
					case <-done:
						return nil
					}
				}
			})
		}()
		if !<-live {
			t.Fatal("the body's first iteration found its context done")
		}
		go func() { _ = b.Run(ctx) }()
		time.Sleep(cfg.RetryInterval)
		synctest.Wait()
		c.stop(clock, hide)
		time.Sleep(3 * cfg.LeaseDuration)
		synctest.Wait()
		out.successor = b.IsLeader()
		c.resume()
		out.leader = a.IsLeader()
		next <- struct{}{}
		out.bodyLive = <-live
		c.release()
		cancel()
		synctest.Wait()
	})
	return out
}

// A leader whose process stops for longer than the lease, while a
// follower takes over, does not lead at the instant it resumes, before any
// timer of its own runs: IsLeader says so, and its body's next iteration
// finds its context done. Whether its clock went on (a SIGSTOP: the
// deadline has passed) or stopped with it (a paused VM, a suspend: the
// second clock reveals how long). A stop nothing reveals is the one case
// where it still believes it leads: only fencing covers it.
func TestStoppedLeaderDoesNotLeadOnResume(t *testing.T) {
	det := stopDetector{tolerance: stopTolerance}
	for _, c := range []struct {
		name        string
		clock, hide bool
		want        stopOutcome
	}{
		{"process stopped, its clock going on", false, false, stopOutcome{successor: true}},
		{"process and clock stopped, the stop revealed", true, false, stopOutcome{successor: true}},
		{"process and clock stopped, nothing reveals it", true, true, stopOutcome{successor: true, leader: true, bodyLive: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := stopLeader(t, det, c.clock, c.hide, errLive); got != c.want {
				t.Fatalf("on resume: %+v, want %+v", got, c.want)
			}
		})
	}
}

// errLive and doneLive tell whether a term's context is live, the two ways
// a body may ask.
func errLive(ctx context.Context) bool { return ctx.Err() == nil }

func doneLive(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return false
	default:
		return true
	}
}

// A body that watches only its context's Done channel finds it closed at
// the instant a stopped leader resumes past its deadline, before any timer
// of its own (the watchdog that cancels the context) has run.
func TestStoppedLeadersDoneIsClosedOnResume(t *testing.T) {
	for _, c := range []struct {
		name  string
		clock bool
	}{
		{"process stopped, its clock going on", false},
		{"process and clock stopped, the stop revealed", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := stopLeader(t, stopDetector{tolerance: stopTolerance}, c.clock, false, doneLive)
			if want := (stopOutcome{successor: true}); got != want {
				t.Fatalf("on resume: %+v, want %+v", got, want)
			}
		})
	}
}

// Unsafe variants of the detection are caught by the test above: with the
// check off (no stop counted), or a tolerance looser than the stop, the
// stopped leader resumes leading beside its successor.
func TestStopDetectionMutantsAreCaught(t *testing.T) {
	for _, c := range []struct {
		name string
		det  stopDetector
	}{
		{"tolerance of an hour", stopDetector{tolerance: time.Hour}},
		{"no check", stopDetector{tolerance: math.MaxInt64}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := stopLeader(t, c.det, true, false, errLive)
			if !got.successor || !got.leader || !got.bodyLive {
				t.Fatalf("on resume: %+v; the mutant went unnoticed", got)
			}
		})
	}
}

// blockOn is a slog handler that blocks on release when a record's message
// begins with prefix: Run's loop, which logs, stalls there.
type blockOn struct {
	prefix  string
	release chan struct{}
}

func (h blockOn) Enabled(context.Context, slog.Level) bool { return true }
func (h blockOn) Handle(_ context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, h.prefix) {
		<-h.release
	}
	return nil
}
func (h blockOn) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h blockOn) WithGroup(string) slog.Handler      { return h }

// shortStop runs elector a, on a stoppingClock and a store whose swaps
// fail once told to, until it leads; stops its process and clock for
// stop, revealed, 100ms into a retry interval; and returns the real
// time of its renewals after the resume and when its term's context was
// done, with its deadline in real time. With failFirst, its swaps fail from
// the stop on. Run's loop stalls at its first log of the stop.
func shortStop(t *testing.T, failFirst bool, stop time.Duration) (renewals []time.Time, done, deadline time.Time) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		cfg := lease.DefaultConfig()
		cfg.LeaseDuration, cfg.RenewDeadline, cfg.RetryInterval, cfg.BackendTimeout, cfg.RetryJitter = 3*time.Second, 2*time.Second, 500*time.Millisecond, time.Second, 0
		c := newStoppingClock(stopDetector{tolerance: stopTolerance})
		var fail atomic.Bool
		st := &timedStore{gatedStore: gatedStore{Store: memstore.New[struct{}](), c: c, fail: &fail}}
		release := make(chan struct{})
		log := slog.New(blockOn{prefix: "the clock stood still", release: release})
		if !failFirst {
			close(release) // the loop does not stall
		}
		a, err := New("job", store.Store[struct{}](st), WithConfig(cfg), WithLookupEnv(nil), WithIdentity("a"), WithClock(c), WithLogger(log))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ran := make(chan struct{})
		go func() { _ = a.Run(ctx); close(ran) }()
		for !a.IsLeader() {
			time.Sleep(10 * time.Millisecond)
		}
		_, termCtx, _ := a.currentTerm()
		time.Sleep(5*cfg.RetryInterval + 100*time.Millisecond) // renewals at whole retry intervals
		fail.Store(failFirst)
		c.stop(true, false)
		time.Sleep(stop)
		c.resume()
		st.mark()
		deadline = a.Status().Deadline // on a's clock
		c.mu.Lock()
		deadline = deadline.Add(c.behind) // in real time
		c.mu.Unlock()
		c.release()
		closed := make(chan time.Time, 1)
		go func() {
			<-termCtx.Done()
			closed <- time.Now()
		}()
		time.Sleep(cfg.RenewDeadline)
		synctest.Wait()
		if failFirst {
			done = <-closed
			close(release)
		}
		renewals = st.since()
		cancel()
		<-ran
	})
	return renewals, done, deadline
}

// timedStore records the real times of the swaps since mark.
type timedStore struct {
	gatedStore
	mu    sync.Mutex
	on    bool
	swaps []time.Time
}

func (s *timedStore) mark() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.on = true
}

func (s *timedStore) since() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.swaps
}

func (s *timedStore) CompareAndSwap(ctx context.Context, name string, exp lease.Revision, next lease.Record[struct{}]) (lease.Record[struct{}], lease.Revision, error) {
	s.mu.Lock()
	if s.on {
		s.swaps = append(s.swaps, time.Now())
	}
	s.mu.Unlock()
	return s.gatedStore.CompareAndSwap(ctx, name, exp, next)
}

// After a short stop, revealed, the term goes on, on the elector's time,
// though the timers set before the stop, on the clock, would come a stop
// late: the next renewal comes when it was due (the wake is set again),
// and, with the renewals failing from the stop on and Run's loop stalled,
// the term's context is done at its deadline (the watchdog is set again).
func TestTermKeepsItsTimesAfterACountedStop(t *testing.T) {
	renewals, _, _ := shortStop(t, false, 200*time.Millisecond)
	if len(renewals) == 0 {
		t.Fatal("no renewal after the stop")
	}
	// The stop came 100ms into a retry interval of 500ms and lasted 200ms:
	// the next renewal is due 200ms after the resume, on the schedule.
	start := renewals[0].Truncate(time.Second) // the bubble's time starts on a whole second
	if got := renewals[0].Sub(start) % (500 * time.Millisecond); got != 0 {
		t.Errorf("the first renewal after the stop came %v off the retry schedule", got)
	}
	// A stop of 1.5s, the renewals failing: the deadline comes 400ms after
	// the resume, the watchdog's timer set before it a stop later.
	_, done, deadline := shortStop(t, true, 1500*time.Millisecond)
	if d := done.Sub(deadline); d < 0 || d >= time.Millisecond {
		t.Errorf("the term's context was done %v after its deadline, want within 1ms", d)
	}
}
