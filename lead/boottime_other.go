//go:build !linux

package lead

import "time"

// bootClocks reports that the system has no boot time apart from the
// monotonic clock that this package can read: the wall clock alone reveals
// stops (see systemClock).
func bootClocks() (mono, boot time.Duration, ok bool) { return 0, 0, false }
