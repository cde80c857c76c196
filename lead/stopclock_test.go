package lead

import (
	"context"
	"math"
	"sync"
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
func TestStopDetector(t *testing.T) {
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

func (c *stoppingClock) AfterFunc(d time.Duration, f func()) Timer {
	return time.AfterFunc(d, func() {
		c.mu.Lock()
		if c.stopped {
			c.held = append(c.held, f)
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		f()
	})
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
	c *stoppingClock
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
// three leases while elector b takes over, and resumes it.
func stopLeader(t *testing.T, det stopDetector, clock, hide bool) stopOutcome {
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
					ok := ctx.Err() == nil
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
			if got := stopLeader(t, det, c.clock, c.hide); got != c.want {
				t.Fatalf("on resume: %+v, want %+v", got, c.want)
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
			got := stopLeader(t, c.det, true, false)
			if !got.successor || !got.leader || !got.bodyLive {
				t.Fatalf("on resume: %+v; the mutant went unnoticed", got)
			}
		})
	}
}
