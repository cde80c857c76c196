//go:build unix

package testcluster

import (
	"os"
	"syscall"
)

// serversSupported reports whether this platform can run the servers: Unix
// systems can.
func serversSupported() error { return nil }

// pauseProcess stops p with SIGSTOP: it keeps its connections and its data
// but runs no more until resumeProcess.
func pauseProcess(p *os.Process) error { return p.Signal(syscall.SIGSTOP) }

// resumeProcess continues a process stopped by pauseProcess.
func resumeProcess(p *os.Process) error { return p.Signal(syscall.SIGCONT) }
