//go:build unix

package redisstore_test

import (
	"syscall"
	"time"
)

// cpuTime is the user plus system CPU time of the process (the client's:
// the server is a process of its own), and whether the system told it.
func cpuTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
