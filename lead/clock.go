package lead

import "time"

// Clock tells time and runs functions later. The default is the system's
// clock, which also detects the stops of the monotonic clock (a suspend, a
// paused VM) and has the elector count them as elapsed time (see
// docs/design.md, "Clocks that stop"); a Clock given with WithClock counts
// none. Times it returns should carry a monotonic reading, as time.Now's
// do: the elector measures every safety interval as a difference of two
// Now values.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending call made by Clock.AfterFunc.
type Timer interface {
	// Stop prevents the call if it has not happened yet.
	Stop() bool
}
