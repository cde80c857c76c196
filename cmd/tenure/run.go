package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/tenure-go/tenure/lead"
)

// exitCode makes run() exit with a given status.
type exitCode int

func (c exitCode) Error() string { return fmt.Sprintf("exit status %d", int(c)) }

func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("store", "", "store URL (memory://, redis://, postgres://, kubernetes://NAMESPACE)")
	identity := fs.String("identity", "", "identity in the lease record (default: TENURE_<NAME>_IDENTITY, TENURE_IDENTITY, or hostname plus a random suffix)")
	repeat := fs.Bool("repeat", false, "after losing leadership, wait to lead again and rerun the command, until interrupted")
	grace := fs.Duration("grace", 3*time.Second, "time between SIGTERM and SIGKILL when the command must stop; keep it below LeaseDuration - RenewDeadline (5s by default) so the command is gone before the next leader starts its own")
	verbose := fs.Bool("v", false, "log the election's progress to stderr")
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: tenure run --store URL [--identity ID] [--repeat] [--grace 3s] NAME -- COMMAND [ARGS...]

Takes part in the election NAME and runs COMMAND only while this process
leads. The command gets TENURE_TOKEN (the term's fencing token), TENURE_NAME
and TENURE_IDENTITY in its environment. When leadership is lost, the
command gets SIGTERM and, after --grace, SIGKILL. On exit the lease is
released, so another "tenure run" takes over at once.

tenure run exits when the command exits by itself, with its status (128+N
when signal N ended it). When leadership is lost and the command had to be
stopped, tenure run exits too, unless --repeat: then it waits to lead again
and runs the command again in the new term, until interrupted. Timings come from the TENURE_*
environment variables (see docs/guide.md).

Examples:
  tenure run --store redis://localhost:6379 nightly -- ./nightly-report
  tenure run --store postgres://app@db/app --repeat --grace 4s compactor -- ./compact --all

Flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	name, command, err := splitCommand(fs.Args())
	if err != nil {
		fs.Usage()
		return err
	}
	if *grace < 0 {
		return fmt.Errorf("--grace is %v, must be >= 0", *grace)
	}
	st, err := openStore(ctx, *url)
	if err != nil {
		return err
	}
	defer st.Close()

	logLevel := slog.LevelWarn
	if *verbose {
		logLevel = slog.LevelInfo
	}
	opts := []lead.Option{lead.WithLogger(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: logLevel})))}
	if *identity != "" {
		opts = append(opts, lead.WithIdentity(*identity))
	}
	e, err := lead.New(name, st, opts...)
	if err != nil {
		return err
	}
	if cfg := e.Config(); *grace >= cfg.LeaseDuration-cfg.RenewDeadline {
		fmt.Fprintf(stderr, "tenure run: warning: --grace %v is not below LeaseDuration - RenewDeadline (%v): a command slow to stop may still run when the next leader starts its own\n",
			*grace, cfg.LeaseDuration-cfg.RenewDeadline)
	}
	runCtx, stopRun := context.WithCancel(context.WithoutCancel(ctx))
	runErr := make(chan error, 1)
	go func() { runErr <- e.Run(runCtx) }()
	defer func() {
		stopRun() // releases the lease
		if err := <-runErr; err != nil {
			fmt.Fprintf(stderr, "tenure run: %v\n", err)
		}
	}()

	status := 0
	body := func(tctx context.Context, t lead.Term) error {
		fmt.Fprintf(stderr, "tenure run: %s leads %q with token %d; starting %s\n", e.Identity(), name, t.Token, command[0])
		code, err := runChild(tctx, command, t, *grace, stderr)
		status = code
		return err
	}
	for {
		err := e.Lead(ctx, body)
		switch {
		case ctx.Err() != nil:
			return exitCode(status)
		case errors.Is(err, lead.ErrLeadershipLost) && *repeat:
			fmt.Fprintf(stderr, "tenure run: lost leadership of %q; the command was stopped; waiting to lead again\n", name)
		case errors.Is(err, lead.ErrLeadershipLost):
			fmt.Fprintf(stderr, "tenure run: lost leadership of %q; the command was stopped\n", name)
			return exitCode(status)
		case err != nil && !errors.Is(err, errChildFailed):
			return err
		default: // the command exited by itself
			return exitCode(status)
		}
	}
}

// errChildFailed: the command exited with a non-zero status.
var errChildFailed = errors.New("command failed")

// runChild runs command until it exits or ctx ends; then it sends SIGTERM
// and, after grace, SIGKILL. It returns the command's exit status.
func runChild(ctx context.Context, command []string, t lead.Term, grace time.Duration, stderr io.Writer) (int, error) {
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(),
		"TENURE_TOKEN="+strconv.FormatUint(uint64(t.Token), 10),
		"TENURE_NAME="+t.Name,
		"TENURE_IDENTITY="+t.Identity,
	)
	// If tenure run dies without stopping the command (SIGKILL), the
	// command must not run on without leadership: the kernel kills it when
	// the thread that started it exits, so that thread stays locked to the
	// goroutine that waits for the command.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	started := make(chan error, 1)
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		done <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		return 127, fmt.Errorf("cannot start %s: %w", command[0], err)
	}
	var werr error
	select {
	case werr = <-done:
	case <-ctx.Done():
		_ = cmd.Process.Signal(syscall.SIGTERM)
		timer := time.NewTimer(grace)
		select {
		case werr = <-done:
			timer.Stop()
		case <-timer.C:
			fmt.Fprintf(stderr, "tenure run: %s did not stop within %v; sending SIGKILL\n", command[0], grace)
			_ = cmd.Process.Kill()
			werr = <-done
		}
	}
	code := cmd.ProcessState.ExitCode()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		code = 128 + int(ws.Signal())
	}
	if werr != nil && code == 0 {
		code = 1
	}
	if code != 0 {
		return code, fmt.Errorf("%w: %s: exit status %d", errChildFailed, command[0], code)
	}
	return 0, nil
}
