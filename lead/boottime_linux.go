//go:build linux

package lead

import (
	"syscall"
	"time"
	"unsafe"
)

// Linux's clocks: CLOCK_MONOTONIC, and CLOCK_BOOTTIME, which is
// CLOCK_MONOTONIC plus the time the system was suspended.
const (
	clockMonotonic = 1
	clockBoottime  = 7
)

// bootClocks reads the system's monotonic clock and its boot time, both
// from the kernel (not through the time package, whose clock a test's
// synctest bubble replaces), the monotonic one before and after the boot
// time; ok is false if a read failed or the two monotonic readings are
// more than bootBracket apart (the thread was descheduled in between).
func bootClocks() (mono, boot time.Duration, ok bool) {
	m1, ok1 := clockGettime(clockMonotonic)
	b, ok2 := clockGettime(clockBoottime)
	m2, ok3 := clockGettime(clockMonotonic)
	if !ok1 || !ok2 || !ok3 || m2-m1 > bootBracket {
		return 0, 0, false
	}
	return m1, b, true
}

// clockGettime reads the clock id.
func clockGettime(id uintptr) (time.Duration, bool) {
	var ts syscall.Timespec
	if _, _, errno := syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, id, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
