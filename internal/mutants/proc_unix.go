//go:build unix

package mutants

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// setGroup runs cmd in a process group of its own and makes its
// cancellation kill the whole group: go test's test binaries, and the
// servers they started, end with it.
func setGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}

// lockScratch takes an exclusive lock on path, held until unlock or the
// process ends: two runs that shared a scratch copy would apply their
// mutants to each other's tests.
func lockScratch(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("another run uses the scratch copy (%s): %w", path, err)
	}
	return func() { f.Close() }, nil
}
