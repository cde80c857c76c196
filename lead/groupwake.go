package lead

import (
	"sync"
	"time"

	"github.com/tenure-go/tenure/fsm"
	"github.com/tenure-go/tenure/lease"
)

// wakeGrain is the finest grid a Group's shared wakes are rounded up to,
// and maxWakeGrain the coarsest (see wakeGrains).
const (
	wakeGrain    = 10 * time.Millisecond
	maxWakeGrain = 100 * time.Millisecond
)

// wakeGrid is a Group's shared wakes: one timer for every member due at
// the same instant of a grid. With thousands of electors, a timer each
// (and the goroutine each starts when it fires) was the largest part of an
// idle Group's CPU, and the coarser the grid, the more electors each wake
// of the loop serves and the more calls go to the store together.
type wakeGrid[M any] struct {
	loop *loop[M] // where the wakes are posted

	// Under mu: the clock of the members that share the wakes and the
	// instant slots count from, the slots armed, by number, and each
	// member's slot (member.slot, member.slotted).
	mu    sync.Mutex
	clock Clock
	base  time.Time
	slots map[int64]*wakeSlot[M]
}

// wakeSlot is one instant of the grid: a timer, and the members to wake
// then (those that re-armed elsewhere since are skipped).
type wakeSlot[M any] struct {
	timer Timer
	ms    []*member[M]
}

// shareWake is the runner's wake at at (clockNow being the clock's time
// now and epoch the elector's), on the Group's grid if sharesWakes allows:
// it then stops the runner's own timer, arms the shared wake and reports
// true. Otherwise the runner sets a timer of its own.
func (m *member[M]) shareWake(r *runner[M], at time.Duration, clockNow, epoch time.Time) bool {
	grains, ok := m.sharesWakes(r, at, clockNow.Sub(epoch))
	if !ok {
		return false
	}
	r.stopTimer()
	m.g.wakes.wakeAt(m, r.e.clock, clockNow, epoch.Add(at), grains)
	return true
}

// unwake cancels the member's shared wake, if it has one.
func (m *member[M]) unwake() {
	w := &m.g.wakes
	w.mu.Lock()
	defer w.mu.Unlock()
	m.slotted = false
}

// sharesWakes reports whether r's wake at (now is now) is one the Group's
// grid serves, and on which grid (wakeGrains): a leader's wake to renew,
// for an elector on the Group's clock whose RetryInterval is ten times the
// finest grid at least and whose renewals have four grains to spare before
// the deadline (the wake may come a grain late: see wakeGrains), within
// the hour (the grid's arithmetic stays small), and not one that a grain
// late could push to or past the deadline: the term ends for IsLeader at
// that instant, and its observers must be told then, not a grain later.
// Every other wake is the elector's own. A follower's or an expiring
// leader's wakes lead to a takeover, whose time the liveness bound counts
// from them (a read that first shows a dead leader's last revision starts
// the wait), and they are few: followers hearing renewals read once per
// LeaseDuration.
func (m *member[M]) sharesWakes(r *runner[M], at, now time.Duration) (grains int64, ok bool) {
	if !m.groupClock || r.m.State() != fsm.Leader || r.cfg.RetryInterval < 10*wakeGrain ||
		r.cfg.RenewDeadline-r.cfg.MaxRetryInterval() < 4*wakeGrain || at-now >= time.Hour {
		return 0, false
	}
	grains = wakeGrains(r.cfg)
	late := at + time.Duration(grains)*wakeGrain // at-now < 1h: no overflow
	return grains, late < r.m.LeaderUntil()
}

// wakeGrains is the grid, in instants of wakeGrain, that the shared wakes
// of an elector with Config c are rounded up to: a twentieth of
// RetryInterval, rounded down to whole instants (the 10,000 elections of a
// Group at the default timings then wake their loop and send their
// renewals ten times a second, not a hundred), at most maxWakeGrain, and
// at most a quarter of the time a leader's renewal has to spare before its
// deadline (RenewDeadline - MaxRetryInterval), so that the first renewal
// after a success never loses the margin a Config leaves (with less than
// four of the finest grains to spare, wakes are not shared: sharesWakes).
// At least one.
func wakeGrains(c lease.Config) int64 {
	g := min(c.RetryInterval/20, maxWakeGrain, (c.RenewDeadline-c.MaxRetryInterval())/4)
	return max(int64(g/wakeGrain), 1)
}

// wakeAt wakes m's runner (msgWake) at the first instant at or after t
// that is a multiple of grains instants of the grid (grains >= 1), on
// clock c (the Group's, which every member that calls this shares), now
// being c's time now. One timer serves every member due at that instant.
// A wake comes at most grains*wakeGrain late, which the machine takes as
// any slow step: it reads the clock when it steps, and a term's watchdog
// has a timer of its own.
func (w *wakeGrid[M]) wakeAt(m *member[M], c Clock, now, t time.Time, grains int64) {
	w.mu.Lock()
	if w.clock == nil {
		w.clock, w.base = c, now
	}
	d := t.Sub(w.base)
	k := max(grains, 1)
	n := ceilDiv(ceilDiv(int64(d), int64(wakeGrain)), k) * k
	if m.slotted && m.slot == n {
		w.mu.Unlock()
		return
	}
	m.slot, m.slotted = n, true
	s := w.slots[n]
	fresh := s == nil
	if fresh {
		if w.slots == nil {
			w.slots = make(map[int64]*wakeSlot[M])
		}
		s = &wakeSlot[M]{}
		w.slots[n] = s
	}
	s.ms = append(s.ms, m)
	at := w.base.Add(time.Duration(n) * wakeGrain)
	w.mu.Unlock()
	if !fresh {
		return
	}
	// Outside mu: a clock may run f before AfterFunc returns.
	timer := c.AfterFunc(max(at.Sub(now), 0), func() { w.fire(n) })
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.slots[n] == s {
		s.timer = timer
	} else if timer != nil {
		timer.Stop() // it fired already, or stop came first
	}
}

// ceilDiv is a/b rounded up, for b > 0 and any a.
func ceilDiv(a, b int64) int64 {
	q := a / b // rounded towards zero: up for a < 0
	if a%b > 0 {
		q++
	}
	return q
}

// fire wakes the members due at slot n. Their runners are set: a member's
// runner is made (startMember) before its first step, on the loop.
func (w *wakeGrid[M]) fire(n int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.slots[n]
	if s == nil {
		return
	}
	delete(w.slots, n)
	for _, m := range s.ms {
		if !m.slotted || m.slot != n {
			continue
		}
		m.slotted = false
		w.loop.post(m.r, msgWake)
	}
}

// stop stops the timers of the shared wakes (Group.Run returns).
func (w *wakeGrid[M]) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.slots {
		if s.timer != nil { // nil: a clock's, or not set yet (wakeAt stops it)
			s.timer.Stop()
		}
	}
	w.slots = nil
}
