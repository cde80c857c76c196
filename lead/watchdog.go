package lead

import (
	"sync"
	"time"
)

// termWatchdog ends a term's context at the term's local deadline even if
// Run's loop is late (stalled by a slow logger or observer, starved of
// CPU). Every renewal moves the deadline later; rather than a new timer for
// each (one per RetryInterval), the timer stays where it is, and when it
// fires before the deadline it sets itself again for the deadline then in
// force: one timer per RenewDeadline or so. A deadline moved earlier (a
// Reconfigure) moves the timer at once. Either way the context ends no
// later than the deadline in force.
//
// It is the Timer of activeTerm.watchdog: Stop stops it for good.
type termWatchdog struct {
	clock Clock
	now   func() time.Duration // time since the elector's epoch
	fire  func()               // ends the term's context

	mu      sync.Mutex
	until   time.Duration // the deadline in force
	at      time.Duration // when timer fires
	timer   Timer
	stopped bool
}

func newTermWatchdog(clock Clock, now func() time.Duration, fire func()) *termWatchdog {
	return &termWatchdog{clock: clock, now: now, fire: fire}
}

// set makes until the deadline.
func (w *termWatchdog) set(until time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	w.until = until
	if w.timer != nil && w.at <= until {
		return // it fires first, and then looks at the deadline
	}
	if w.timer != nil {
		w.timer.Stop()
	}
	w.startLocked(w.now())
}

// restart sets the timer again for the deadline in force, counting from
// now: the elector's time moved ahead of the clock's (a counted stop), so
// the timer set before would come late.
func (w *termWatchdog) restart() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	if w.timer != nil {
		w.timer.Stop()
	}
	w.startLocked(w.now())
}

func (w *termWatchdog) startLocked(now time.Duration) {
	w.at = w.until
	w.timer = w.clock.AfterFunc(max(w.until-now, 0), w.fired)
}

// fired runs when the timer fires: it ends the term if the deadline has
// come, and otherwise waits for it.
func (w *termWatchdog) fired() {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return
	}
	if now := w.now(); now < w.until {
		w.startLocked(now)
		w.mu.Unlock()
		return
	}
	w.mu.Unlock()
	w.fire()
}

// Stop stops the watchdog for good, and reports whether a timer was
// pending.
func (w *termWatchdog) Stop() bool {
	if w == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	if w.timer == nil {
		return false
	}
	return w.timer.Stop()
}
