package testcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// runAs is a user to run a server as.
type runAs struct{ uid, gid uint32 }

// PostgresBinEnv names an environment variable that, when set, is the
// directory holding initdb and postgres. Otherwise the newest
// /usr/lib/postgresql/*/bin is used.
const PostgresBinEnv = "TENURE_POSTGRES_BIN"

// Postgres is a private PostgreSQL cluster for tests: initdb in a temporary
// directory, one postgres server on a free loopback port, run as the
// postgres user when the tests run as root (PostgreSQL refuses to run as
// root). It trusts every local connection and runs with fsync off: it is
// for tests only.
//
// Its methods are safe for concurrent use. The port stays the same across
// Stop and Start, so a DSN taken once stays valid.
type Postgres struct {
	bin  string // directory of initdb and postgres
	root string // temporary directory: data/, the socket, the log
	port int    // TCP port on 127.0.0.1
	as   *runAs // the postgres user when we are root, else nil

	mu     sync.Mutex
	cmd    *exec.Cmd     // the running server, nil when stopped
	exited chan struct{} // closed when cmd has exited
	gone   bool          // Close was called
}

// StartPostgres creates and starts a new cluster. It returns an error when
// the binaries are missing or the server does not come up; the error says
// why, with the end of the server's log when there is one. Close it when
// done. Most tests want PackagePostgres instead.
func StartPostgres() (*Postgres, error) {
	if err := serversSupported(); err != nil {
		return nil, err
	}
	bin, err := postgresBin()
	if err != nil {
		return nil, err
	}
	p := &Postgres{bin: bin}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("postgres: running as root, and PostgreSQL refuses root, but there is no postgres user to run it as: %w", err)
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("postgres: user postgres: %w", err)
		}
		p.as = &runAs{uid: uint32(uid), gid: uint32(gid)}
	}
	// Not t.TempDir: it lives under a directory only root may enter.
	root, err := os.MkdirTemp("", "tenure-pg-*")
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	p.root = root
	if p.as != nil {
		if err := os.Chown(root, int(p.as.uid), int(p.as.gid)); err != nil {
			p.removeRoot()
			return nil, fmt.Errorf("postgres: chown %s: %w", root, err)
		}
	}
	if err := p.initdb(); err != nil {
		p.removeRoot()
		return nil, err
	}
	// A free port may be taken by someone else between our probe and the
	// server's bind: try a few.
	for attempt := 0; ; attempt++ {
		if p.port, err = freePort(); err != nil {
			p.removeRoot()
			return nil, err
		}
		if err = p.Start(); err == nil {
			return p, nil
		}
		if attempt == 2 || !strings.Contains(err.Error(), "could not bind") {
			p.removeRoot()
			return nil, err
		}
	}
}

// postgresBin finds the directory holding initdb and postgres.
func postgresBin() (string, error) {
	dirs := []string{}
	if d := os.Getenv(PostgresBinEnv); d != "" {
		dirs = append(dirs, d)
	} else {
		found, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
		// Newest major version first.
		sort.Slice(found, func(i, j int) bool { return versionOf(found[i]) > versionOf(found[j]) })
		dirs = append(dirs, found...)
	}
	for _, d := range dirs {
		if isExecutable(filepath.Join(d, "initdb")) && isExecutable(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	if d := os.Getenv(PostgresBinEnv); d != "" {
		return "", fmt.Errorf("postgres: no initdb and postgres in %s=%s", PostgresBinEnv, d)
	}
	return "", errors.New("postgres: no PostgreSQL server binaries in /usr/lib/postgresql/*/bin (install the postgresql package, e.g. with scripts/backends.sh, or set " + PostgresBinEnv + ")")
}

func versionOf(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("testcluster: finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// command returns a command that runs as the postgres user when we are root.
func (p *Postgres) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(p.bin, name), args...)
	cmd.Dir = p.root
	cmd.Env = append(os.Environ(), "LC_ALL=C", "TZ=UTC", "PGTZ=UTC")
	// If this test process dies without stopping the server, the server
	// shuts down at once instead of lingering (Linux).
	cmd.SysProcAttr = serverAttr(syscall.SIGQUIT, p.as)
	if p.as != nil {
		cmd.Env = append(cmd.Env, "HOME="+p.root, "USER=postgres", "LOGNAME=postgres")
	}
	return cmd
}

func (p *Postgres) dataDir() string { return filepath.Join(p.root, "data") }
func (p *Postgres) logFile() string { return filepath.Join(p.root, "postgres.log") }

func (p *Postgres) initdb() error {
	cmd := p.command("initdb", "-D", p.dataDir(), "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--no-locale", "--no-sync")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("postgres: initdb: %w\n%s", err, tail(string(out), 2000))
	}
	return nil
}

// Start starts the server if it is not running and waits until it accepts
// connections (30 s at most).
func (p *Postgres) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gone {
		return errors.New("postgres: Start after Close")
	}
	if p.cmd != nil {
		return nil
	}
	logf, err := os.OpenFile(p.logFile(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	defer logf.Close()
	cmd := p.command("postgres", "-D", p.dataDir(), "-p", strconv.Itoa(p.port), "-k", p.root,
		"-c", "listen_addresses=127.0.0.1",
		// fsync off: a crash of the server (Crash) keeps every commit,
		// since the kernel keeps what was written; only a crash of the
		// machine would lose it. synchronous_commit stays on for that.
		"-c", "fsync=off", "-c", "full_page_writes=off",
		"-c", "max_connections=200", "-c", "shared_buffers=32MB")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("postgres: starting %s: %w", cmd.Path, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	p.cmd, p.exited = cmd, exited

	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn, err := pgx.Connect(ctx, p.dsn())
		if err == nil {
			err = conn.Ping(ctx)
			_ = conn.Close(ctx)
		}
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			p.cmd, p.exited = nil, nil
			return fmt.Errorf("postgres: the server exited at start: %w\n%s", err, p.logTail())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.stopLocked(syscall.SIGQUIT)
			return fmt.Errorf("postgres: the server is not ready after 30s: %w\n%s", err, p.logTail())
		}
	}
}

// Stop shuts the server down ("fast" shutdown: open sessions are ended) and
// waits until it has exited. Stopping a stopped server does nothing.
func (p *Postgres) Stop() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopLocked(syscall.SIGINT)
}

// Crash stops the server the way a power cut would ("immediate" shutdown:
// no checkpoint, sessions dropped) and waits until it has exited. The next
// Start recovers from the write-ahead log.
func (p *Postgres) Crash() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopLocked(syscall.SIGQUIT)
}

func (p *Postgres) stopLocked(sig syscall.Signal) error {
	if p.cmd == nil {
		return nil
	}
	cmd, exited := p.cmd, p.exited
	p.cmd, p.exited = nil, nil
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("postgres: signalling the server: %w", err)
	}
	select {
	case <-exited:
		return nil
	case <-time.After(30 * time.Second):
	}
	_ = cmd.Process.Kill()
	<-exited
	return errors.New("postgres: the server did not stop within 30s and was killed")
}

// Restart stops the server and starts it again on the same port.
func (p *Postgres) Restart() error {
	if err := p.Stop(); err != nil {
		return err
	}
	return p.Start()
}

// Running reports whether the server process is running.
func (p *Postgres) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil
}

// Close stops the server and removes its directory. The Postgres cannot be
// started again.
func (p *Postgres) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gone {
		return nil
	}
	p.gone = true
	err := p.stopLocked(syscall.SIGINT)
	p.removeRoot()
	return err
}

func (p *Postgres) removeRoot() {
	if p.root != "" {
		_ = os.RemoveAll(p.root)
	}
}

// DSN returns a connection string for the postgres database as the postgres
// superuser, over TCP on 127.0.0.1.
func (p *Postgres) DSN() string { return p.dsn() }

func (p *Postgres) dsn() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", p.port)
}

// Port returns the server's TCP port on 127.0.0.1.
func (p *Postgres) Port() int { return p.port }

// Log returns the end of the server's log, for failure messages.
func (p *Postgres) Log() string { return p.logTail() }

func (p *Postgres) logTail() string {
	b, err := os.ReadFile(p.logFile())
	if err != nil {
		return "(no server log: " + err.Error() + ")"
	}
	return "server log:\n" + tail(string(b), 4000)
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

var pkgPostgres = shared[*Postgres]{what: "PostgreSQL", start: StartPostgres}

// PackagePostgres returns the cluster shared by the tests of the calling
// test binary, starting it on first use. When no cluster can be had it ends
// tb through Unavailable: a skip, or a failure when
// TENURE_REQUIRE_BACKENDS=1. A start that failed is not retried.
//
// Stop the shared cluster at the end with StopPackagePostgres, from
// TestMain:
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		testcluster.StopPackagePostgres()
//		os.Exit(code)
//	}
//
// A test that stops the server must start it again before it ends, so that
// the tests after it find it running.
func PackagePostgres(tb testing.TB) *Postgres {
	tb.Helper()
	return pkgPostgres.get(tb)
}

// StopPackagePostgres stops and removes the cluster PackagePostgres started,
// if any.
func StopPackagePostgres() { pkgPostgres.stop() }
