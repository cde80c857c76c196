package lead

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// The watchdog fires at the deadline in force, whether it moved later
// (renewals: the timer stays and sets itself again) or earlier (a
// Reconfigure: the timer moves), and never after Stop.
func TestTermWatchdogFiresAtTheDeadlineInForce(t *testing.T) {
	for _, c := range []struct {
		name  string
		moves func(w *termWatchdog) // from 0s, the deadline set to 10s
		want  time.Duration         // when it fires (0: never)
	}{
		{"deadline kept", func(*termWatchdog) {}, 10 * time.Second},
		{"moved later", func(w *termWatchdog) { w.set(12 * time.Second); w.set(25 * time.Second) }, 25 * time.Second},
		{"moved later, then earlier after the first timer fired", func(w *termWatchdog) {
			w.set(30 * time.Second)
			time.Sleep(11 * time.Second) // the timer set for 10s fired and waits for 30s
			w.set(15 * time.Second)
		}, 15 * time.Second},
		{"moved earlier", func(w *termWatchdog) { w.set(4 * time.Second) }, 4 * time.Second},
		{"moved later and earlier", func(w *termWatchdog) { w.set(20 * time.Second); w.set(7 * time.Second) }, 7 * time.Second},
		{"deadline passed", func(w *termWatchdog) { time.Sleep(time.Second); w.set(0) }, time.Second},
		{"stopped", func(w *termWatchdog) { w.set(20 * time.Second); w.Stop() }, 0},
		{"stopped while waiting after the first timer", func(w *termWatchdog) {
			w.set(30 * time.Second)
			time.Sleep(11 * time.Second)
			w.Stop()
		}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				epoch := time.Now()
				fired := make(chan time.Duration, 2)
				w := newTermWatchdog(newSystemClock(), func() time.Duration { return time.Since(epoch) }, func() {
					fired <- time.Since(epoch)
				})
				w.set(10 * time.Second)
				c.moves(w)
				time.Sleep(time.Minute)
				synctest.Wait()
				var got []time.Duration
				for len(fired) > 0 {
					got = append(got, <-fired)
				}
				switch {
				case c.want == 0 && len(got) != 0:
					t.Fatalf("fired at %v after Stop", got)
				case c.want != 0 && (len(got) != 1 || got[0] != c.want):
					t.Fatalf("fired at %v, want once at %v", got, c.want)
				}
			})
		})
	}
	var nilDog *termWatchdog
	if nilDog.Stop() {
		t.Error("Stop of a nil watchdog reported a pending timer")
	}
}

// After the elector's time jumps ahead of the clock (a counted stop),
// restart sets the timer for the deadline in elector time: it fires when
// the elector's time reaches the deadline, not when the clock would have.
func TestTermWatchdogFiresOnElectorTimeAfterACountedStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		epoch := time.Now()
		var mu sync.Mutex
		var jump time.Duration
		now := func() time.Duration {
			mu.Lock()
			defer mu.Unlock()
			return time.Since(epoch) + jump
		}
		fired := make(chan time.Duration, 1)
		w := newTermWatchdog(newSystemClock(), now, func() { fired <- time.Since(epoch) })
		w.set(10 * time.Second)
		time.Sleep(3 * time.Second)
		mu.Lock()
		jump = 5 * time.Second
		mu.Unlock()
		w.restart()
		time.Sleep(time.Minute)
		synctest.Wait()
		if got := <-fired; got != 5*time.Second {
			t.Fatalf("fired %v after the start, want 5s (10s of elector time, 5s of it a jump)", got)
		}
	})
}
