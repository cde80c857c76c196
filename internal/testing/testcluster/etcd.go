package testcluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// Etcd is a private single-member etcd for tests, on free loopback ports,
// with its data in a temporary directory of its own. It can be killed and
// started again on the same ports with the same data, as a member that
// crashed and came back. It runs with --unsafe-no-fsync (a killed process
// still leaves its writes in the page cache, so Kill loses nothing; a crash
// of the machine would).
//
// The harness does not link the etcd client: tests make their own from
// Endpoint. Its methods are safe for concurrent use.
type Etcd struct {
	bin       string
	dir       string
	clientURL string
	peerURL   string

	mu   sync.Mutex
	proc *kubeProc
}

// StartEtcd starts a private etcd and waits until it answers /health. The
// caller must Close it. It fails when etcd cannot be found (see EtcdEnv)
// or does not become ready; tests should rather use NewEtcd or
// PackageEtcd, which turn that into a skip.
func StartEtcd() (*Etcd, error) {
	if err := serversSupported(); err != nil {
		return nil, err
	}
	bin := etcdBinary()
	if bin == "" || !kubeExecutable(bin) {
		return nil, fmt.Errorf("etcd: not found (`apt-get install etcd-server`, or set %s)", EtcdEnv)
	}
	var errs []error
	for range 3 { // a port taken between picking and binding: try again
		dir, err := os.MkdirTemp("", "tenure-etcd-")
		if err != nil {
			return nil, fmt.Errorf("etcd: temporary directory: %w", err)
		}
		client, err1 := freePort()
		peer, err2 := freePort()
		if err := errors.Join(err1, err2); err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
		e := &Etcd{
			bin:       bin,
			dir:       dir,
			clientURL: fmt.Sprintf("http://127.0.0.1:%d", client),
			peerURL:   fmt.Sprintf("http://127.0.0.1:%d", peer),
		}
		e.mu.Lock()
		err = e.startLocked()
		e.mu.Unlock()
		if err == nil {
			return e, nil
		}
		_ = os.RemoveAll(dir)
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// NewEtcd starts a private etcd for tb alone and stops it when tb ends. It
// calls Unavailable (skip, or fail under TENURE_REQUIRE_BACKENDS=1) when
// etcd cannot be started. Use it for tests that kill or restart the
// server; the others should share one with PackageEtcd.
func NewEtcd(tb testing.TB) *Etcd {
	tb.Helper()
	e, err := StartEtcd()
	if err != nil {
		Unavailable(tb, "etcd: %v", err)
	}
	tb.Cleanup(func() {
		if err := e.Close(); err != nil {
			tb.Errorf("etcd: close: %v", err)
		}
	})
	return e
}

var pkgEtcd = shared[*Etcd]{what: "etcd", start: StartEtcd, restart: (*Etcd).Start}

// PackageEtcd returns the etcd shared by the tests of the calling package,
// starting it on first use. It calls Unavailable when etcd cannot be
// started. The package's TestMain must stop it (Main does). Tests on the
// shared server must not kill it, and should use key prefixes of their own.
func PackageEtcd(tb testing.TB) *Etcd {
	tb.Helper()
	return pkgEtcd.get(tb)
}

// StopPackageEtcd stops the server that PackageEtcd started, if any.
func StopPackageEtcd() { pkgEtcd.stop() }

// Endpoint is the client URL, http://127.0.0.1:PORT. It does not change
// across Kill and Start.
func (e *Etcd) Endpoint() string { return e.clientURL }

// Dir is the server's directory: its data in Dir()/data, its log in
// Dir()/etcd.log.
func (e *Etcd) Dir() string { return e.dir }

// Running reports whether the server process is alive.
func (e *Etcd) Running() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.proc.alive()
}

// Kill kills the server with SIGKILL, as a crash would, and waits for it to
// exit. Its data stays for Start.
func (e *Etcd) Kill() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.proc.stop(syscall.SIGKILL, kubeStopTimeout)
	return nil
}

// Start starts the server again after Kill, on the same ports with the same
// data, and waits until it is healthy. Starting a running server does
// nothing.
func (e *Etcd) Start() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.proc.alive() {
		return nil
	}
	return e.startLocked()
}

// Pause stops the server process with SIGSTOP: it keeps its connections
// and its data but answers nothing until Resume.
func (e *Etcd) Pause() error { return e.signal("pause", pauseProcess) }

// Resume continues a server stopped by Pause.
func (e *Etcd) Resume() error { return e.signal("resume", resumeProcess) }

func (e *Etcd) signal(what string, do func(*os.Process) error) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.proc.alive() {
		return fmt.Errorf("etcd: %s: the server is not running", what)
	}
	if err := do(e.proc.cmd.Process); err != nil {
		return fmt.Errorf("etcd: %s: %w", what, err)
	}
	return nil
}

// Close kills the server and removes its directory.
func (e *Etcd) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.proc.stop(syscall.SIGKILL, kubeStopTimeout)
	return os.RemoveAll(e.dir)
}

// Log returns the end of the server's log, for failure messages.
func (e *Etcd) Log() string { return kubeLogTail(filepath.Join(e.dir, "etcd.log")) }

// startLocked starts etcd and waits until it answers /health.
func (e *Etcd) startLocked() error {
	p, err := spawnServer("etcd", e.dir, "etcd", e.bin,
		"--name", "default",
		"--data-dir", filepath.Join(e.dir, "data"),
		"--listen-client-urls", e.clientURL,
		"--advertise-client-urls", e.clientURL,
		"--listen-peer-urls", e.peerURL,
		"--initial-advertise-peer-urls", e.peerURL,
		"--initial-cluster", "default="+e.peerURL,
		"--unsafe-no-fsync",
	)
	if err != nil {
		return err
	}
	e.proc = p
	if err := waitHTTP(p, e.clientURL+"/health", "", etcdReadyTimeout, func(body string) bool {
		return strings.Contains(body, `"health":"true"`)
	}); err != nil {
		p.stop(syscall.SIGKILL, kubeStopTimeout)
		return fmt.Errorf("etcd: %w\n%s", err, kubeLogTail(p.log))
	}
	return nil
}
