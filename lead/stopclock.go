package lead

import (
	"sync"
	"time"

	"github.com/tenure-go/tenure/lease"
)

// stopCounter is a Clock that can tell how long its monotonic clock stood
// still while real time went on (the default clock: see systemClock). The
// elector counts those stops as elapsed time (see Elector.countStopsLocked).
type stopCounter interface {
	// stoppedTotal returns the time the clock is known to have stood still,
	// summed since it was made: it never decreases.
	stoppedTotal() time.Duration
}

// stopTolerance is how far a second clock may run ahead of the monotonic
// clock before the difference counts as a stop: reading two clocks one
// after the other is not exact (a thread descheduled between the two
// readings), and the wall clock's own small corrections. A stop of up to
// that much, uncounted, is a moment of clock rate 0, which the margin
// between RenewDeadline and LeaseDuration absorbs (the default's is 5s).
const stopTolerance = 10 * time.Millisecond

// bootBracket is how close together the two readings of the monotonic
// clock around a reading of the boot time must be for the pair to be used
// (bootClocks): each is a system call of its own, and a thread descheduled
// in between would make them disagree by the delay.
const bootBracket = time.Millisecond

// bootEvery is how often, at most, systemClock reads the boot time (its
// system calls cost a microsecond or more in a VM, and IsLeader may be
// called in a loop): once per millisecond of the monotonic clock. A
// suspend sets the wall clock forward too, at once, which is read on
// every call; the boot time still counts one that the wall clock's own
// steps would hide.
const bootEvery = time.Millisecond

// stopDetector finds the stops of a monotonic clock from a second clock
// that goes on when the monotonic one stands still: the boot time (which
// counts a system suspend) or the wall clock (which the hypervisor or NTP
// set forward after a pause of the VM). Each reading gives the second clock's
// lead over the monotonic one, less the stops already counted; the lowest
// such lead seen is where the clocks agree (base). A lead above base by more
// than tolerance is counted as a stop, whole (several short stops add up
// until they pass the tolerance); a lead below base (the wall clock set
// back) becomes the new base, so that a later stop is measured from there.
type stopDetector struct {
	tolerance time.Duration
	started   bool
	base      time.Duration
	counted   time.Duration
}

// observe takes one reading of both clocks (each since an epoch of its own)
// and returns the stops counted so far. A single stop counts for at most
// lease.MaxDuration, more than any RenewDeadline: a wall clock set forward
// by centuries must not carry the elector's time to the end of its range
// (the rest of such a lead becomes the base).
func (d *stopDetector) observe(mono, second time.Duration) time.Duration {
	lead := satSub(satSub(second, mono), d.counted)
	switch {
	case !d.started:
		d.started, d.base = true, lead
	case lead < d.base:
		d.base = lead
	case satSub(lead, d.base) > d.tolerance:
		gap := satSub(lead, d.base)
		stop := min(gap, lease.MaxDuration)
		d.counted = satAdd(d.counted, stop)
		d.base = satAdd(d.base, gap-stop) // what is not counted is not counted again
	}
	return d.counted
}

// systemClock is the default Clock: the system's, which also counts the
// stops of its monotonic clock (Go's, CLOCK_MONOTONIC on Linux), which
// stands still while the whole machine is stopped: a system suspend, a VM
// paused by its hypervisor. Two second clocks reveal them: everywhere the
// wall clock once it has been set forward (by the kernel at once after a
// suspend, by the hypervisor's agent or NTP after a pause of the VM), and
// on Linux the boot time (CLOCK_BOOTTIME, which counts a suspend). A stop nothing reveals, or that the wall clock only
// catches up on slowly, is not counted (see docs/design.md, "Clocks that
// stop").
type systemClock struct {
	mu    sync.Mutex
	epoch time.Time // the first reading, with its monotonic reading
	wall  stopDetector
	boot  stopDetector
	total time.Duration
	// The boot time was last read at bootAt (monotonic, since epoch).
	bootRead bool
	bootAt   time.Duration
}

func newSystemClock() *systemClock {
	c := &systemClock{epoch: time.Now(), wall: stopDetector{tolerance: stopTolerance}, boot: stopDetector{tolerance: stopTolerance}}
	c.stoppedTotal()
	return c
}

func (*systemClock) Now() time.Time { return time.Now() }

func (*systemClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

func (c *systemClock) stoppedTotal() time.Duration {
	_, total := c.nowStopped()
	return total
}

// nowStopped returns the time now and stoppedTotal, both from one
// reading of the clock.
func (c *systemClock) nowStopped() (time.Time, time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now() // one reading of the wall clock and the monotonic one
	mono := now.Sub(c.epoch)
	c.total = max(c.total, c.wall.observe(mono, now.Round(0).Sub(c.epoch.Round(0))))
	if !c.bootRead || mono-c.bootAt >= bootEvery {
		c.bootRead, c.bootAt = true, mono
		if m, boot, ok := bootClocks(); ok {
			c.total = max(c.total, c.boot.observe(m, boot))
		}
	}
	return now, c.total
}

// satAdd is a + b, saturated.
func satAdd(a, b time.Duration) time.Duration {
	s := a + b
	switch {
	case a > 0 && b > 0 && s < 0:
		return time.Duration(1<<63 - 1)
	case a < 0 && b < 0 && s >= 0:
		return time.Duration(-1 << 63)
	}
	return s
}

// satSub is a - b, saturated.
func satSub(a, b time.Duration) time.Duration {
	if b == time.Duration(-1<<63) {
		return satAdd(satAdd(a, 1<<63-1), 1)
	}
	return satAdd(a, -b)
}
