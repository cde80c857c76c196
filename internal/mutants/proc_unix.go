//go:build unix

package mutants

import (
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
