package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/storeurl"
)

// The test binary doubles as the command that "tenure run" starts: with
// TENURE_TEST_CHILD set to a unix socket path, it reports
// "start IDENTITY TOKEN" there, waits for SIGTERM, reports "stop IDENTITY
// TOKEN" and exits with status 3.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == superviseArg {
		os.Exit(supervise(os.Args[2:], os.Stderr))
	}
	if sock := os.Getenv("TENURE_TEST_CHILD"); sock != "" {
		os.Exit(child(sock))
	}
	testcluster.Main(m, func() {
		if binDir != "" {
			os.RemoveAll(binDir)
		}
	})
}

// The tenure binary the tests run as separate processes, built once.
var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

// tenureBinary builds the tenure command once per test binary and returns
// its path.
func tenureBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "tenure-bin-"); binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "tenure")
		if out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

func child(sock string) int {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	c, err := net.Dial("unix", sock)
	if err != nil {
		return 99
	}
	who := os.Getenv("TENURE_IDENTITY") + " " + os.Getenv("TENURE_TOKEN") + " " + os.Getenv("TENURE_NAME")
	fmt.Fprintf(c, "start %s\n", who)
	if os.Getenv("TENURE_TEST_CHILD_EXIT") != "" {
		c.Close()
		return 4
	}
	<-term
	fmt.Fprintf(c, "stop %s\n", who)
	c.Close()
	return 3
}

// reports collects what children say on a unix socket.
type reports struct {
	sock  string
	lines chan string
}

func listen(t *testing.T) *reports {
	t.Helper()
	dir, err := os.MkdirTemp("", "tenure-cli")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	r := &reports{sock: filepath.Join(dir, "s"), lines: make(chan string, 100)}
	l, err := net.Listen("unix", r.sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				s := bufio.NewScanner(c)
				for s.Scan() {
					r.lines <- s.Text()
				}
			}()
		}
	}()
	return r
}

// next returns the next report as (event, identity, token).
func (r *reports) next(t *testing.T, within time.Duration) (string, string, uint64) {
	t.Helper()
	select {
	case l := <-r.lines:
		f := strings.Fields(l)
		tok, _ := strconv.ParseUint(f[2], 10, 64)
		return f[0], f[1], tok
	case <-time.After(within):
		t.Fatalf("no report from a child within %v", within)
		return "", "", 0
	}
}

func (r *reports) none(t *testing.T, within time.Duration) {
	t.Helper()
	select {
	case l := <-r.lines:
		t.Fatalf("unexpected report %q", l)
	case <-time.After(within):
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// fastEnv sets short timings for every elector in this process.
func fastEnv(t *testing.T) {
	t.Setenv("TENURE_LEASE_DURATION", "2s")
	t.Setenv("TENURE_RENEW_DEADLINE", "1500ms")
	t.Setenv("TENURE_RETRY_INTERVAL", "200ms")
	t.Setenv("TENURE_BACKEND_TIMEOUT", "500ms")
}

// inProcess runs "tenure ARGS" in this process; memory:// stores are shared
// through o.
func inProcess(ctx context.Context, o *storeurl.Opener, args ...string) (int, *syncBuffer) {
	var out syncBuffer
	return run(context.WithValue(ctx, openerKey{}, o), args, &out, &out), &out
}

func TestRunInProcessOnlyOneChildThenHandover(t *testing.T) {
	fastEnv(t)
	r := listen(t)
	t.Setenv("TENURE_TEST_CHILD", r.sock)
	o := &storeurl.Opener{}
	self, _ := os.Executable()
	type proc struct {
		cancel context.CancelFunc
		code   chan int
	}
	startRun := func(id string) *proc {
		ctx, cancel := context.WithCancel(context.Background())
		p := &proc{cancel: cancel, code: make(chan int, 1)}
		go func() {
			code, _ := inProcess(ctx, o, "run", "--store", "memory://cli", "--identity", id, "--grace", "5s", "job", "--", self)
			p.code <- code
		}()
		t.Cleanup(func() { cancel() })
		return p
	}
	a := startRun("a")
	ev, who, tok := r.next(t, 10*time.Second)
	if ev != "start" || who != "a" || tok != 1 {
		t.Fatalf("first report %s %s %d", ev, who, tok)
	}
	b := startRun("b")
	r.none(t, 500*time.Millisecond) // b follows: its child does not start

	// get shows the leader.
	code, out := inProcess(context.Background(), o, "get", "--store", "memory://cli", "-o", "json", "job")
	var rec recordJSON
	if err := json.Unmarshal([]byte(out.String()), &rec); code != 0 || err != nil || rec.Holder != "a" || rec.Token != 1 {
		t.Fatalf("get: %d %q (%v)", code, out.String(), err)
	}

	stopped := time.Now()
	a.cancel() // as if a got SIGTERM
	if ev, who, _ := r.next(t, 10*time.Second); ev != "stop" || who != "a" {
		t.Fatalf("want a's child to stop, got %s %s", ev, who)
	}
	if code := <-a.code; code != 3 {
		t.Fatalf("a exited %d, want its child's status 3", code)
	}
	ev, who, tok = r.next(t, 10*time.Second)
	if ev != "start" || who != "b" || tok != 2 {
		t.Fatalf("after a stopped: %s %s %d", ev, who, tok)
	}
	if took := time.Since(stopped); took > time.Second {
		t.Fatalf("b's child started %v after a was stopped; want within a second", took)
	}
	b.cancel()
	r.next(t, 10*time.Second)
	if code := <-b.code; code != 3 {
		t.Fatalf("b exited %d", code)
	}
}

func TestRunExitsWithChildStatus(t *testing.T) {
	fastEnv(t)
	r := listen(t)
	t.Setenv("TENURE_TEST_CHILD", r.sock)
	t.Setenv("TENURE_TEST_CHILD_EXIT", "1")
	self, _ := os.Executable()
	code, out := inProcess(context.Background(), &storeurl.Opener{}, "run", "--store", "memory://x", "job", "--", self)
	if code != 4 {
		t.Fatalf("exit %d, want 4:\n%s", code, out.String())
	}
	// fastEnv leaves 500ms between RenewDeadline and LeaseDuration, less
	// than the default 3s grace: tenure run says so.
	if !strings.Contains(out.String(), "warning: --grace 3s is not below LeaseDuration - RenewDeadline (500ms)") {
		t.Errorf("no grace warning:\n%s", out.String())
	}
	r.next(t, time.Second)
}

func TestGetAndWatchMemory(t *testing.T) {
	fastEnv(t)
	o := &storeurl.Opener{}
	code, out := inProcess(context.Background(), o, "get", "--store", "memory://gw", "job")
	if code != exitNoRecord || !strings.Contains(out.String(), `no lease record for "job"`) {
		t.Fatalf("get on empty store: %d %q", code, out.String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The watch prints the current state (no record) first; wait for that
	// line, so that the run below starts only once the watch is on.
	var watched syncBuffer
	first := make(chan struct{})
	released := &seenWriter{buf: &watched, want: "holder=(released) token=1", seen: make(chan struct{})}
	watchOut := &firstWrite{w: released, first: first}
	w := make(chan *syncBuffer, 1)
	go func() {
		run(context.WithValue(ctx, openerKey{}, o), []string{"watch", "--store", "memory://gw", "job"}, watchOut, watchOut)
		w <- &watched
	}()
	select {
	case <-first:
	case <-time.After(10 * time.Second):
		t.Fatal("watch printed nothing")
	}
	r := listen(t)
	t.Setenv("TENURE_TEST_CHILD", r.sock)
	t.Setenv("TENURE_TEST_CHILD_EXIT", "1")
	self, _ := os.Executable()
	if code, out := inProcess(context.Background(), o, "run", "--store", "memory://gw", "--identity", "solo", "job", "--", self); code != 4 {
		t.Fatalf("run: %d %s", code, out.String())
	}
	code, out = inProcess(context.Background(), o, "get", "--store", "memory://gw", "job")
	if code != 0 || !strings.Contains(out.String(), "holder:       (none: released)") || !strings.Contains(out.String(), "token:        1") {
		t.Fatalf("get after run: %d\n%s", code, out.String())
	}
	// The release is stored; its watch event may still be on its way.
	// Stop the watch once it printed it (or after 10s, and fail below).
	select {
	case <-released.seen:
	case <-time.After(10 * time.Second):
	}
	cancel()
	text := (<-w).String()
	for _, want := range []string{"job  no record", "holder=solo token=1", "holder=(released) token=1"} {
		if !strings.Contains(text, want) {
			t.Errorf("watch output lacks %q:\n%s", want, text)
		}
	}
}

func TestCommandErrors(t *testing.T) {
	t.Setenv("TENURE_STORE", "")
	o := &storeurl.Opener{}
	tests := []struct {
		args    []string
		code    int
		mention string
	}{
		{[]string{"get", "job"}, 1, "--store or TENURE_STORE is required"},
		{[]string{"get", "--store", "nosuch://x", "job"}, 1, `unknown scheme: "nosuch"`},
		{[]string{"get", "--store", "redis://user:hunter2@127.0.0.1:1/0", "job"}, 1, "xxxxx"},
		{[]string{"get", "--store", "memory://x", "-o", "yaml", "job"}, 1, `-o is "yaml"`},
		{[]string{"get", "--store", "memory://x"}, 1, "want exactly one election NAME"},
		{[]string{"run", "--store", "memory://x", "job"}, 1, "want a COMMAND"},
		{[]string{"run", "--store", "memory://x", "--grace", "-1s", "job", "--", "true"}, 1, "--grace is -1s"},
		{[]string{"get", "-h"}, 0, "tenure get --store redis://localhost:6379 nightly-report"},
		{[]string{"watch", "-h"}, 0, "Examples:"},
		{[]string{"run", "-h"}, 0, "Examples:"},
	}
	for _, tt := range tests {
		code, out := inProcess(context.Background(), o, tt.args...)
		if code != tt.code || !strings.Contains(out.String(), tt.mention) {
			t.Errorf("tenure %v: exit %d, output:\n%s\nwant exit %d mentioning %q", tt.args, code, out.String(), tt.code, tt.mention)
		}
		if strings.Contains(out.String(), "hunter2") {
			t.Errorf("tenure %v printed the password:\n%s", tt.args, out.String())
		}
	}
}

// TestArgumentsEchoedInErrorsHideSecrets: wherever tenure echoes an
// argument (an unknown command, an argument where none belongs, a flag
// value it cannot parse), a URL's password and an argument that looks like
// a bare secret are hidden.
func TestArgumentsEchoedInErrorsHideSecrets(t *testing.T) {
	t.Setenv("TENURE_STORE", "")
	const token = "ghp_R4nd0mT0kenW1thH1ghEntr0py"
	o := &storeurl.Opener{}
	tests := []struct {
		name    string
		args    []string
		mention string // what the message still says
	}{
		{"URL as the command", []string{"redis://u:hunter2@127.0.0.1:1/0", "get"}, "unknown command"},
		{"URL where NAME belongs", []string{"run", "--store", "memory://x", "redis://u:hunter2@127.0.0.1:1/0"}, "want a COMMAND to run after \"redis://u:xxxxx@127.0.0.1:1/0\""},
		{"short password", []string{"run", "--store", "memory://x", "redis://u:pw@host/0"}, "redis://u:xxxxx@host/0"},
		{"password in the query", []string{"run", "--store", "memory://x", "postgres://app@db/x?password=hunter2"}, "password=xxxxx"},
		{"URL as a flag value", []string{"run", "--store", "memory://x", "--grace", "redis://u:hunter2@h/0", "job", "true"}, "invalid value"},
		{"URL as a --flag=value", []string{"run", "--store", "memory://x", "--grace=redis://u:hunter2@h/0", "job", "true"}, "invalid value"},
		{"URL as a sim argument", []string{"sim", "redis://u:hunter2@h/0"}, "unexpected arguments"},
		{"token where NAME belongs", []string{"run", "--store", "memory://x", token}, "want a COMMAND"},
		{"token as -o", []string{"get", "--store", "memory://x", "-o", token, "job"}, "want text or json"},
		{"token as a sim argument", []string{"sim", token}, "unexpected arguments"},
		{"a plain NAME stays", []string{"run", "--store", "memory://x", "billing-cron-2024"}, `after "billing-cron-2024"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out := inProcess(context.Background(), o, tt.args...)
			if code == 0 || !strings.Contains(out.String(), tt.mention) {
				t.Errorf("tenure %v: exit %d, output:\n%s\nwant an error mentioning %q", tt.name, code, out.String(), tt.mention)
			}
			for _, secret := range []string{"hunter2", ":pw@", token} {
				if strings.Contains(out.String(), secret) {
					t.Errorf("tenure %s printed the secret %q:\n%s", tt.name, secret, out.String())
				}
			}
		})
	}
}

// TestRunTwoProcesses runs two tenure processes against real Redis and
// PostgreSQL servers: only one child runs; stopping the leader moves the
// child to the other process within a second, with a larger token.
func TestRunTwoProcesses(t *testing.T) {
	bin := tenureBinary(t)
	backends := []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"redis", func(t *testing.T) string { return "unix://" + testcluster.PackageRedis(t).Addr() }},
		{"postgres", func(t *testing.T) string { return testcluster.PackagePostgres(t).DSN() }},
	}
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			url := be.url(t)
			r := listen(t)
			self, _ := os.Executable()
			name := "two-" + strconv.FormatInt(time.Now().UnixNano(), 36)
			start := func(id string) (*exec.Cmd, *syncBuffer) {
				var out syncBuffer
				cmd := exec.Command(bin, "run", "--store", url, "--identity", id, name, "--", self)
				cmd.Env = append(os.Environ(), "TENURE_TEST_CHILD="+r.sock, "TENURE_LEASE_DURATION=2s",
					"TENURE_RENEW_DEADLINE=1500ms", "TENURE_RETRY_INTERVAL=200ms", "TENURE_BACKEND_TIMEOUT=500ms")
				cmd.Stdout, cmd.Stderr = &out, &out
				cmd.WaitDelay = 5 * time.Second // a child left behind must not hang the test
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					// SIGTERM, so that tenure stops its child and releases.
					_ = cmd.Process.Signal(syscall.SIGTERM)
					stopped := make(chan struct{})
					go func() { _ = cmd.Wait(); close(stopped) }()
					select {
					case <-stopped:
					case <-time.After(15 * time.Second):
						_ = cmd.Process.Kill()
						<-stopped
					}
				})
				return cmd, &out
			}
			a, aout := start("a")
			ev, who, tok := r.next(t, 20*time.Second)
			if ev != "start" || who != "a" {
				t.Fatalf("first: %s %s %d\n%s", ev, who, tok, aout.String())
			}
			_, bout := start("b")
			r.none(t, time.Second)
			stopped := time.Now()
			if err := a.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if ev, who, _ := r.next(t, 10*time.Second); ev != "stop" || who != "a" {
				t.Fatalf("want a's child to stop: %s %s", ev, who)
			}
			ev, who, tok2 := r.next(t, 10*time.Second)
			if ev != "start" || who != "b" || tok2 <= tok {
				t.Fatalf("after a stopped: %s %s %d (a had %d)\n%s", ev, who, tok2, tok, bout.String())
			}
			if took := time.Since(stopped); took > time.Second {
				t.Fatalf("handover took %v, want within a second", took)
			}
			if err := a.Wait(); err == nil || a.ProcessState.ExitCode() != 3 {
				t.Fatalf("a exited %v, want status 3\n%s", err, aout.String())
			}
		})
	}
}

// firstWrite passes writes to w and closes first at the first one.
type firstWrite struct {
	w     io.Writer
	first chan struct{}
	once  sync.Once
}

func (f *firstWrite) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	f.once.Do(func() { close(f.first) })
	return n, err
}

// seenWriter writes to buf, and closes seen once what buf holds contains
// want.
type seenWriter struct {
	buf  *syncBuffer
	want string
	seen chan struct{}
	once sync.Once
}

func (s *seenWriter) Write(p []byte) (int, error) {
	n, err := s.buf.Write(p)
	if strings.Contains(s.buf.String(), s.want) {
		s.once.Do(func() { close(s.seen) })
	}
	return n, err
}
