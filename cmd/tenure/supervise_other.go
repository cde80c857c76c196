//go:build !unix

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"
)

// platformNote is what tenure run -h says of this platform.
const platformNote = `On this system (not Unix) there is no supervisor: the command is started
directly and killed at once at the end of the term (no SIGTERM, --grace is
not used), processes it starts are not tracked and may outlive the term,
and if tenure run itself is killed the command runs on.`

// runChild runs command until it exits or ctx ends; then it kills it. It
// returns the command's exit status.
func runChild(ctx context.Context, command, env []string, _ time.Duration, _ io.Writer) (int, error) {
	path, code, err := lookCommand(command[0])
	if err != nil {
		return code, err
	}
	cmd := exec.Command(path, command[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = env
	if err := cmd.Start(); err != nil {
		return 126, fmt.Errorf("cannot start %s: %w", command[0], err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-done
	}
	return cmd.ProcessState.ExitCode(), nil
}

// supervise does not exist outside Unix.
func supervise(_ []string, stderr io.Writer) int {
	fmt.Fprintf(stderr, "tenure: %s is tenure run's own mode, and exists only on Unix\n", superviseArg)
	return 2
}
