package testcluster

import (
	"fmt"
	"os"
	"sync"
	"testing"
)

// shared is a server started on first use and shared by the tests of one
// test binary: the one behind PackageRedis, PackagePostgres or PackageKube.
type shared[S interface {
	Running() bool
	Close() error
}] struct {
	what  string // the server, in messages
	start func() (S, error)
	// restart, if set, starts again a shared server found stopped.
	restart func(S) error

	mu  sync.Mutex
	s   S
	up  bool
	err error // of the start, which is not retried
}

// get returns the server, starting it on first use. When it cannot be had
// it ends tb through Unavailable.
func (sh *shared[S]) get(tb testing.TB) S {
	tb.Helper()
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if !sh.up && sh.err == nil {
		sh.s, sh.err = sh.start()
		sh.up = sh.err == nil
	}
	if sh.err != nil {
		Unavailable(tb, "%s is unavailable: %v", sh.what, sh.err)
		var none S
		return none
	}
	if sh.restart != nil && !sh.s.Running() {
		if err := sh.restart(sh.s); err != nil {
			tb.Fatalf("testcluster: the shared %s was stopped and cannot be started again: %v", sh.what, err)
		}
	}
	return sh.s
}

// stop stops and removes the server, if started, and forgets a failed
// start.
func (sh *shared[S]) stop() {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.up {
		if err := sh.s.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "testcluster: stopping the shared %s: %v\n", sh.what, err)
		}
	}
	var none S
	sh.s, sh.up, sh.err = none, false, nil
}

// Main runs a test binary's tests, runs cleanups, stops every shared server
// they started, and exits with their status: the whole TestMain of a
// package whose tests use PackageRedis, PackagePostgres, PackageKube or
// PackageEtcd.
func Main(m *testing.M, cleanups ...func()) {
	code := m.Run()
	for _, c := range cleanups {
		c()
	}
	StopPackageRedis()
	StopPackagePostgres()
	StopPackageKube()
	StopPackageEtcd()
	os.Exit(code)
}
