//go:build !unix

package redisstore_test

import "time"

// cpuTime reports no CPU time: the system has no getrusage.
func cpuTime() (time.Duration, bool) { return 0, false }
