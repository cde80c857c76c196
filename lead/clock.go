package lead

import "time"

// Clock tells time and runs functions later. The default is the real clock.
// Times it returns should carry a monotonic reading, as time.Now's do: the
// elector measures every safety interval as a difference of two Now values.
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

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
