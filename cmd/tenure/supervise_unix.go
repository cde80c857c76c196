//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"
	"time"
)

// How tenure run keeps the whole tree of the command within the term, on
// Unix systems.
//
// tenure run does not start the command itself. It starts a supervisor, a
// second copy of its own binary (the hidden mode superviseArg), which
// starts the command and stays its parent:
//
//	tenure run ──lifeline pipe──> supervisor ──> command (own process group)
//	                                               └─> its children...
//
//   - The command leads a process group of its own, so that one signal
//     reaches everything it starts that does not leave the group.
//   - On Linux the supervisor is a child subreaper
//     (PR_SET_CHILD_SUBREAPER): whatever the command starts and orphans,
//     even a daemon that double-forks into a new session, is re-parented
//     to the supervisor instead of init, so the supervisor can find every
//     descendant (in /proc) and reap it.
//   - tenure run holds the write end of a pipe whose read end only the
//     supervisor has: however tenure run ends, SIGKILL included, the kernel
//     closes it and the supervisor reads end-of-file. It then SIGKILLs the
//     group and every descendant at once, since no one vouches for the
//     term any more. (On Linux the command also gets SIGKILL if the
//     supervisor itself is killed.)
//   - At the end of a term tenure run sends the supervisor SIGTERM; the
//     supervisor sends SIGTERM (and SIGCONT) to the group and to every
//     descendant outside it, each process once, and SIGKILL to whatever
//     is left after the grace period.
//     When the command exits by itself, what it left running is stopped
//     the same way. The supervisor exits, with the command's status, only
//     once no process of the tree is left, so when tenure run releases the
//     lease nothing of the term runs any more.
//
// Outside Linux there is no subreaper: processes that leave the command's
// process group (setsid, setpgid) escape, though a SIGKILL of tenure run
// still takes the group with it.

// runChild runs command through the supervisor until it exits or ctx ends,
// and returns its exit status (128+N when signal N ended it).
func runChild(ctx context.Context, command, env []string, grace time.Duration, stderr io.Writer) (int, error) {
	lifeR, lifeW, err := os.Pipe()
	if err != nil {
		return 1, fmt.Errorf("%w: %w", errSupervisor, err)
	}
	defer lifeW.Close()
	args := append([]string{superviseArg, grace.String(), "--"}, command...)
	cmd := exec.Command(selfExecutable(), args...)
	cmd.Args[0] = "tenure"
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = env
	cmd.ExtraFiles = []*os.File{lifeR} // fd 3
	err = cmd.Start()
	lifeR.Close()
	if err != nil {
		return 1, fmt.Errorf("%w: %w", errSupervisor, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		_ = cmd.Process.Signal(syscall.SIGTERM)
		backstop := time.NewTimer(grace + supervisorSlack)
		select {
		case <-done:
		case <-backstop.C:
			// The supervisor should have killed the tree by now: close
			// the lifeline, which makes it kill everything at once.
			fmt.Fprintf(stderr, "tenure run: the supervisor of %s did not exit within %v; killing the command's processes\n", command[0], grace+supervisorSlack)
			lifeW.Close()
			<-done
		}
		backstop.Stop()
	}
	return waitStatus(cmd.ProcessState), nil
}

// supervisorSlack is how long after the grace period tenure run waits for
// the supervisor before it forces the end of the tree.
const supervisorSlack = 5 * time.Second

// waitStatus is the exit status of a process as a shell gives it.
func waitStatus(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// supervise is the supervisor: args are GRACE -- COMMAND [ARGS...], and fd
// 3 is the lifeline. It returns the command's exit status.
func supervise(args []string, stderr io.Writer) int {
	if len(args) < 3 || args[1] != "--" {
		fmt.Fprintf(stderr, "tenure: %s is tenure run's own mode, not a command\n", superviseArg)
		return 2
	}
	grace, err := time.ParseDuration(args[0])
	if err != nil || grace < 0 {
		fmt.Fprintf(stderr, "tenure: %s: bad grace period %q\n", superviseArg, args[0])
		return 2
	}
	command := args[2:]
	nameSelf()
	// The command's parent-death signal (Linux) belongs to the thread that
	// starts it: keep this goroutine on one thread until the process exits.
	runtime.LockOSThread()

	// Signals: SIGTERM ends the term. The others come from the terminal,
	// to tenure run's whole process group, which the supervisor is in:
	// tenure run ends the term itself (or dies, closing the lifeline). One
	// that was ignored stays ignored, for the command to inherit (nohup).
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM)
	for _, s := range []os.Signal{syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT} {
		if !signal.Ignored(s) {
			signal.Notify(sigs, s)
		}
	}
	lifeline := os.NewFile(3, "lifeline")
	if lifeline == nil {
		fmt.Fprintf(stderr, "tenure: %s: no lifeline (fd 3)\n", superviseArg)
		return 2
	}
	syscall.CloseOnExec(3)
	parentGone := make(chan struct{})
	go func() {
		var b [1]byte
		_, _ = lifeline.Read(b[:]) // returns when tenure run is gone
		close(parentGone)
	}()
	if err := adoptOrphans(); err != nil {
		fmt.Fprintf(stderr, "tenure run: warning: %v: processes that leave the command's process group will not be stopped\n", err)
	}

	path, code, err := lookCommand(command[0])
	if err != nil {
		fmt.Fprintf(stderr, "tenure run: %v\n", err)
		return code
	}
	pid, err := syscall.ForkExec(path, command, &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{0, 1, 2},
		Sys:   commandAttr(),
	})
	if err != nil {
		fmt.Fprintf(stderr, "tenure run: cannot start %s: %v\n", command[0], err)
		if errors.Is(err, syscall.ENOENT) {
			return 127
		}
		return 126
	}
	t := tree{pgid: pid}
	return t.supervise(pid, grace, command[0], sigs, parentGone, stderr)
}

// tree is the command's process tree: its process group, and on Linux
// every descendant of the supervisor.
type tree struct{ pgid int }

// signal sends sig to the group, then to every descendant outside it, so
// that each process gets sig once: a process in the group that got it
// twice would run its handler twice (a shell's trap, a cleanup that must
// not run twice). A descendant may exit and its PID be reused between the
// scan and the signal: PIDs are not reused that fast. One that leaves the
// group between the group's signal and the scan gets sig twice, one that
// joins it then gets none; neither happens in the microseconds between.
func (t tree) signal(sig syscall.Signal) {
	_ = syscall.Kill(-t.pgid, sig)
	for _, pid := range descendants() {
		if t.inGroup(pid) {
			continue
		}
		_ = syscall.Kill(pid, sig)
	}
}

// inGroup reports whether pid is in the command's process group, which
// the group's signal reached. A process whose group cannot be read (it
// exited) is not: signalling it again is harmless.
func (t tree) inGroup(pid int) bool {
	pgid, err := syscall.Getpgid(pid)
	return err == nil && pgid == t.pgid
}

// groupAlive reports whether a process of the group is left.
func (t tree) groupAlive() bool {
	err := syscall.Kill(-t.pgid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

type exited struct {
	pid    int
	status syscall.WaitStatus
}

// supervise waits for the command (pid) and every process of the tree,
// stops the tree at the end of the term or when the command has exited,
// and kills it when tenure run is gone. It returns the command's status.
func (t tree) supervise(pid int, grace time.Duration, name string, sigs <-chan os.Signal, parentGone <-chan struct{}, stderr io.Writer) int {
	reaped, noChildren := reapChildren()
	s := &supervision{t: t, pid: pid, grace: grace, name: name, stderr: stderr, status: -1}
	for !s.childrenGone || t.groupAlive() {
		select {
		case sig := <-sigs:
			if sig == syscall.SIGTERM {
				s.stop()
			}
		case <-parentGone:
			parentGone = nil
			s.kill()
		case e := <-reaped:
			s.reaped(e)
		case <-noChildren:
			noChildren = nil
			s.noChildren()
		case <-s.graceOver:
			s.graceEnded()
		case <-s.sweepC:
			if s.killing {
				t.signal(syscall.SIGKILL)
			}
		}
	}
	return s.exitStatus()
}

// reapChildren reaps every child of the supervisor on a goroutine of its
// own: each one on reaped, then noChildren is closed when none is left
// (ECHILD: on Linux, the tree is empty).
func reapChildren() (reaped <-chan exited, noChildren <-chan struct{}) {
	r, none := make(chan exited), make(chan struct{})
	go func() {
		for {
			var ws syscall.WaitStatus
			p, err := syscall.Wait4(-1, &ws, 0, nil)
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			if err != nil {
				close(none)
				return
			}
			r <- exited{p, ws}
		}
	}()
	return r, none
}

// supervision is the state of tree.supervise.
type supervision struct {
	t      tree
	pid    int // the command's
	grace  time.Duration
	name   string
	stderr io.Writer

	status       int // the command's, once it exited; -1 before
	stopping     bool
	killing      bool
	childrenGone bool
	graceOver    <-chan time.Time // the grace period of a stop; nil when none runs
	sweep        *time.Ticker     // signals again what is left; nil until needed
	sweepC       <-chan time.Time
}

// startSweep starts signalling the tree periodically, once.
func (s *supervision) startSweep() {
	if s.sweep == nil {
		s.sweep = time.NewTicker(20 * time.Millisecond)
		s.sweepC = s.sweep.C
	}
}

// stop sends the tree SIGTERM (once) and starts the grace period.
func (s *supervision) stop() {
	if s.stopping {
		return
	}
	s.stopping = true
	s.t.signal(syscall.SIGTERM)
	s.t.signal(syscall.SIGCONT) // a stopped process acts on SIGTERM only once continued
	s.graceOver = time.After(s.grace)
}

// kill sends the tree SIGKILL, and again on every sweep.
func (s *supervision) kill() {
	s.killing, s.stopping = true, true
	s.graceOver = nil
	s.t.signal(syscall.SIGKILL)
	s.startSweep() // for what was forked between the scan and the signal
}

// reaped takes a child reaped: when it is the command, its status, and
// what it left behind is stopped.
func (s *supervision) reaped(e exited) {
	if e.pid != s.pid {
		return
	}
	s.status = e.status.ExitStatus()
	if e.status.Signaled() {
		s.status = 128 + int(e.status.Signal())
	}
	s.stop()
}

// noChildren notes that no child is left.
func (s *supervision) noChildren() {
	s.childrenGone = true
	s.startSweep() // outside Linux, group members may remain
}

// graceEnded kills what did not stop within the grace period.
func (s *supervision) graceEnded() {
	if s.status < 0 {
		fmt.Fprintf(s.stderr, "tenure run: %s did not stop within %v; sending SIGKILL\n", s.name, s.grace)
	} else {
		fmt.Fprintf(s.stderr, "tenure run: processes %s left did not stop within %v; sending SIGKILL\n", s.name, s.grace)
	}
	s.kill()
}

// exitStatus is the supervisor's: the command's, or 128+SIGKILL when it
// never exited by itself (it was killed with the tree).
func (s *supervision) exitStatus() int {
	if s.status < 0 {
		return 128 + int(syscall.SIGKILL)
	}
	return s.status
}
