package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
)

// grandchildScript is a job that ignores SIGTERM, as a careless one does:
// it prints "gc IDENTITY TOKEN PID" on stdout and sleeps.
const grandchildScript = `trap '' TERM
echo "gc $TENURE_IDENTITY $TENURE_TOKEN $$"
exec sleep 600
`

// treeRun is one "tenure run" process whose command's tree reports on the
// process's stdout, a pipe the test holds the read end of: it reaches
// end-of-file only when tenure run and every process of the tree have
// exited.
type treeRun struct {
	cmd     *exec.Cmd
	stderr  *syncBuffer
	started chan int      // PIDs of grandchildren, from their "gc" lines
	gone    chan struct{} // closed at end-of-file: the whole tree is gone

	mu   sync.Mutex
	pids []int // every grandchild's
}

func startTreeRun(t *testing.T, bin string, env []string, args ...string) *treeRun {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	tr := &treeRun{
		cmd:     exec.Command(bin, args...),
		stderr:  &syncBuffer{},
		started: make(chan int, 10),
		gone:    make(chan struct{}),
	}
	tr.cmd.Env = append(os.Environ(), env...)
	tr.cmd.Stdout, tr.cmd.Stderr = w, tr.stderr
	tr.cmd.WaitDelay = time.Second // a process left behind must not hang the test
	if err := tr.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	go func() {
		defer close(tr.gone)
		s := bufio.NewScanner(r)
		for s.Scan() {
			if f := strings.Fields(s.Text()); len(f) == 4 && f[0] == "gc" {
				pid, _ := strconv.Atoi(f[3])
				tr.mu.Lock()
				tr.pids = append(tr.pids, pid)
				tr.mu.Unlock()
				tr.started <- pid
			}
		}
		r.Close()
	}()
	t.Cleanup(func() {
		_ = tr.cmd.Process.Kill()
		_ = tr.cmd.Wait()
		// What a broken tenure run left behind (the test has failed).
		tr.mu.Lock()
		defer tr.mu.Unlock()
		for _, pid := range tr.pids {
			if alive(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	return tr
}

// grandchild waits for the next grandchild's PID.
func (tr *treeRun) grandchild(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case pid := <-tr.started:
		return pid
	case <-time.After(within):
		t.Fatalf("no grandchild started within %v; stderr:\n%s", within, tr.stderr.String())
		return 0
	}
}

// waitGone waits until every process of the tree has exited.
func (tr *treeRun) waitGone(t *testing.T, within time.Duration, what string) {
	t.Helper()
	select {
	case <-tr.gone:
	case <-time.After(within):
		t.Fatalf("%s: processes of the command still run %v later; stderr:\n%s", what, within, tr.stderr.String())
	}
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z'
}

// overlapSampler watches a set of PIDs and records an instant at which two
// of them ran at once.
type overlapSampler struct {
	mu      sync.Mutex
	pids    []int
	overlap string
	stop    chan struct{}
	done    chan struct{}
}

func newOverlapSampler() *overlapSampler {
	s := &overlapSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go s.run()
	return s
}

func (s *overlapSampler) add(pid int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pids = append(s.pids, pid)
}

func (s *overlapSampler) run() {
	defer close(s.done)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
		s.mu.Lock()
		pids := append([]int(nil), s.pids...)
		s.mu.Unlock()
		for i, a := range pids {
			for _, b := range pids[i+1:] {
				// a alive before and after b is seen alive: a ran when b did.
				if alive(a) && alive(b) && alive(a) {
					s.mu.Lock()
					if s.overlap == "" {
						s.overlap = "grandchildren " + strconv.Itoa(a) + " and " + strconv.Itoa(b) + " ran at once"
					}
					s.mu.Unlock()
				}
			}
		}
	}
}

func (s *overlapSampler) result() string {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.overlap
}

// TestRunStopsTheWholeTree: the command is an "sh -c" wrapper around a job
// that ignores SIGTERM. Across a leadership move between two tenure run
// processes on a real Redis, two jobs never run at once: the old leader's
// job is killed after --grace before the lease is released. Then tenure
// run is SIGKILLed and its job dies with it.
func TestRunStopsTheWholeTree(t *testing.T) {
	bin := tenureBinary(t)
	url := "unix://" + testcluster.PackageRedis(t).Addr()
	dir := t.TempDir()
	script := filepath.Join(dir, "gc.sh")
	if err := os.WriteFile(script, []byte(grandchildScript), 0o644); err != nil {
		t.Fatal(err)
	}
	name := "tree-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	env := []string{"TREE_SCRIPT=" + script, "TENURE_LEASE_DURATION=2s",
		"TENURE_RENEW_DEADLINE=1500ms", "TENURE_RETRY_INTERVAL=200ms", "TENURE_BACKEND_TIMEOUT=500ms"}
	start := func(id string) *treeRun {
		return startTreeRun(t, bin, env, "run", "--store", url, "--identity", id, "--grace", "1s", name,
			"--", "sh", "-c", `sh "$TREE_SCRIPT"; echo done`)
	}
	sampler := newOverlapSampler()
	a := start("a")
	sampler.add(a.grandchild(t, 20*time.Second))
	b := start("b")
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	sampler.add(b.grandchild(t, 20*time.Second))
	a.waitGone(t, 10*time.Second, "after a was stopped")
	if !strings.Contains(a.stderr.String(), "did not stop within 1s; sending SIGKILL") {
		t.Errorf("a does not say it killed what ignored SIGTERM:\n%s", a.stderr.String())
	}

	// SIGKILL: no cleanup by tenure run itself.
	if err := b.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	b.waitGone(t, 10*time.Second, "after b was killed")
	if o := sampler.result(); o != "" {
		t.Fatalf("%s\na:\n%s\nb:\n%s", o, a.stderr.String(), b.stderr.String())
	}
}

// TestRunKilledTakesItsWholeTree: when tenure run is SIGKILLed, its command
// and everything the command started die with it, even a process that
// ignores SIGTERM and one that moved to a session of its own.
func TestRunKilledTakesItsWholeTree(t *testing.T) {
	bin := tenureBinary(t)
	setsid, err := exec.LookPath("setsid")
	if err != nil {
		t.Skip("no setsid command")
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "gc.sh")
	if err := os.WriteFile(script, []byte(grandchildScript), 0o644); err != nil {
		t.Fatal(err)
	}
	tr := startTreeRun(t, bin, []string{"TREE_SCRIPT=" + script, "SETSID=" + setsid},
		"run", "--store", "memory://k", "job", "--", "sh", "-c", `sh "$TREE_SCRIPT" & "$SETSID" sh "$TREE_SCRIPT" & wait`)
	pids := []int{tr.grandchild(t, 20*time.Second), tr.grandchild(t, 20*time.Second)}
	if err := tr.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	tr.waitGone(t, 10*time.Second, "after tenure run was killed")
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("grandchild %d outlived its killed tenure run", pid)
		}
	}
}

// trapScript is a job whose shell counts the SIGTERMs it gets: each one
// runs the trap, which appends a line to $TRAP_FILE. After the first, it
// keeps running for a second (ten sleeps of 100ms, restarted by every
// later SIGTERM), time for a second signal to arrive, then exits.
const trapScript = `n=-1
trap 'echo TERM >> "$TRAP_FILE"; n=10' TERM
echo "gc $TENURE_IDENTITY $TENURE_TOKEN $$"
while [ "$n" -ne 0 ]; do
	sleep 0.1
	if [ "$n" -gt 0 ]; then n=$((n-1)); fi
done
`

// TestRunSignalsTheCommandOnce: at the end of a term the command's shell
// gets one SIGTERM, not one through its process group and another as a
// descendant of the supervisor: a trap with cleanup that must not run
// twice runs once.
func TestRunSignalsTheCommandOnce(t *testing.T) {
	bin := tenureBinary(t)
	dir := t.TempDir()
	script, trapFile := filepath.Join(dir, "trap.sh"), filepath.Join(dir, "traps")
	if err := os.WriteFile(script, []byte(trapScript), 0o644); err != nil {
		t.Fatal(err)
	}
	tr := startTreeRun(t, bin, []string{"TRAP_SCRIPT=" + script, "TRAP_FILE=" + trapFile},
		"run", "--store", "memory://trap", "--grace", "4s", "job", "--", "sh", "-c", `sh "$TRAP_SCRIPT"`)
	tr.grandchild(t, 20*time.Second)
	if err := tr.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	tr.waitGone(t, 10*time.Second, "after tenure run got SIGTERM")
	b, err := os.ReadFile(trapFile)
	if err != nil {
		t.Fatalf("the trap never ran: %v; stderr:\n%s", err, tr.stderr.String())
	}
	if n := strings.Count(string(b), "TERM"); n != 1 {
		t.Fatalf("the command's shell got SIGTERM %d times, want once; stderr:\n%s", n, tr.stderr.String())
	}
}
