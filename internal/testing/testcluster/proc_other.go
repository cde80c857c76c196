//go:build !unix

package testcluster

import (
	"errors"
	"os"
	"runtime"
	"syscall"
)

// errServersUnsupported: the harness starts its servers only on Unix
// systems. Outside them it has no signals to stop a server gracefully, to
// pause it or to make it die with the test binary, and no way to run
// PostgreSQL as another user, so every helper reports the servers as
// unavailable: the tests skip, or fail under TENURE_REQUIRE_BACKENDS=1.
var errServersUnsupported = errors.New("testcluster: real servers are started only on Linux and other Unix systems, not on " + runtime.GOOS)

func serversSupported() error { return errServersUnsupported }

// serverAttr has nothing to set outside Unix.
func serverAttr(syscall.Signal, *runAs) *syscall.SysProcAttr { return nil }

func pauseProcess(*os.Process) error { return errServersUnsupported }

func resumeProcess(*os.Process) error { return errServersUnsupported }
