package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/tenure-go/tenure/lead"
)

// exitCode makes run() exit with a given status.
type exitCode int

func (c exitCode) Error() string { return fmt.Sprintf("exit status %d", int(c)) }

// exitError makes run() print err and exit with code.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// runUsage is the help text of tenure run; the flags follow it.
const runUsage = `usage: tenure run [--store URL] [--identity ID] [--repeat] [--grace 3s] [timing flags] NAME -- COMMAND [ARGS...]

Takes part in the election NAME and runs COMMAND only while this process
leads. The command gets TENURE_TOKEN (the term's fencing token), TENURE_NAME
and TENURE_IDENTITY in its environment. On exit the lease is released, so
another "tenure run" takes over at once.

The command runs in a process group of its own, under a small supervisor
(a second copy of tenure). When the term ends, the command and every
process it started get SIGTERM and, after --grace, SIGKILL; when the
command exits by itself, whatever it left running is stopped the same way.
Leadership is released only once none of them runs. If tenure run itself
is killed (even with SIGKILL), they all get SIGKILL at once. As the command
is not in the terminal's foreground group, it cannot read from a terminal.
` + platformNote + `

tenure run exits when the command exits by itself, with its status (128+N
when signal N ended it; 127 when COMMAND is not found and 126 when it
cannot be run, as in a shell, checked before taking part). When leadership
is lost and the command had to be stopped, tenure run exits too, unless
--repeat: then it waits to lead again and runs the command again in the
new term, until interrupted.

Flags may come before or after NAME; "--" must come before COMMAND, and
everything after it is the command's. Timings come from --lease-duration,
--renew-deadline, --retry-interval and --backend-timeout, which win over
the TENURE_<NAME>_* and TENURE_* environment variables (see
docs/guide.md), which win over the defaults; they are checked together
(lease.Config.Validate), and an error names where each value it involves
came from.

The store URL comes from --store, or else from the TENURE_STORE
environment variable, which keeps a password out of the process list.
When this process claims the lease (in a store that may lose records, the
process that creates the record waits one LeaseDuration before it leads), tenure
run says so and how long it waits. Warnings of the election are lines of
tenure run's own ("tenure run: warning: ..."). With -v, tenure run also
says who leads while it follows (a line when it starts following and one
for each new leader), logs the election's progress, and shows the client
libraries' own log lines (go-redis, client-go) at level INFO; without it
they are dropped.

Examples:
  tenure run --store redis://localhost:6379 nightly -- ./nightly-report
  TENURE_STORE=postgres://app@db/app tenure run --repeat --grace 4s compactor -- ./compact --all
  tenure run nightly --lease-duration 6s --renew-deadline 4s --backend-timeout 2s --grace 1s -- sh -c './report && ./mail'

Flags:
`

// runFlags are the parsed arguments of tenure run.
type runFlags struct {
	url, identity string
	repeat        bool
	grace         time.Duration
	verbose       bool
	timings       timingFlags
	name          string
	command       []string
}

// parseRunFlags parses the arguments of tenure run and checks that the
// command can be run (127 or 126 otherwise, as in a shell, rather than
// once this process leads).
func parseRunFlags(args []string, stderr io.Writer) (runFlags, error) {
	var f runFlags
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.url, "store", "", storeFlagHelp)
	fs.StringVar(&f.identity, "identity", "", "identity in the lease record (default: TENURE_<NAME>_IDENTITY, TENURE_IDENTITY, or hostname plus a random suffix)")
	fs.BoolVar(&f.repeat, "repeat", false, "after losing leadership, wait to lead again and rerun the command, until interrupted")
	fs.DurationVar(&f.grace, "grace", 3*time.Second, "time between SIGTERM and SIGKILL when the command must stop; keep it below LeaseDuration - RenewDeadline (5s by default) so the command is gone before the next leader starts its own")
	fs.BoolVar(&f.verbose, "v", false, "say who leads while following, and log the election's progress, to stderr")
	f.timings.define(fs)
	fs.Usage = func() {
		fmt.Fprint(stderr, runUsage)
		fs.PrintDefaults()
	}
	p, err := parseArgs(fs, args, 1)
	if err != nil {
		return f, err
	}
	if f.name, f.command, err = splitCommand(p, args); err != nil {
		return f, err
	}
	f.timings.visit(fs)
	if f.grace < 0 {
		return f, fmt.Errorf("--grace is %v, must be >= 0", f.grace)
	}
	if _, code, err := lookCommand(f.command[0]); err != nil {
		return f, &exitError{code: code, err: err}
	}
	return f, nil
}

func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseRunFlags(args, stderr)
	if err != nil {
		return err
	}
	// Without -v only warnings and errors are shown, as lines of tenure
	// run's own; -v shows the election's progress with every detail.
	logger := slog.New(newLineHandler(stderr, "tenure run", slog.LevelWarn))
	if f.verbose {
		logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	libraryLog.Store(logger)
	st, err := openStore(ctx, f.url)
	if err != nil {
		return err
	}
	defer st.Close()

	opts := []lead.Option{lead.WithLogger(logger)}
	if f.identity != "" {
		opts = append(opts, lead.WithIdentity(f.identity))
	}
	if cfg, ok, err := f.timings.config(f.name, os.LookupEnv); err != nil {
		return err
	} else if ok {
		opts = append(opts, lead.WithConfig(cfg))
	}
	e, err := lead.New(f.name, st, opts...)
	if err != nil {
		return err
	}
	if cfg := e.Config(); f.grace >= cfg.LeaseDuration-cfg.RenewDeadline {
		fmt.Fprintf(stderr, "tenure run: warning: --grace %v is not below LeaseDuration - RenewDeadline (%v): a command slow to stop may still run when the next leader starts its own\n",
			f.grace, cfg.LeaseDuration-cfg.RenewDeadline)
	}
	runCtx, stopRun := context.WithCancel(context.WithoutCancel(ctx))
	leaders, err := e.Leaders(runCtx)
	if err != nil {
		stopRun()
		return err
	}
	followed := make(chan struct{})
	go func() {
		defer close(followed)
		sayLeaders(leaders, e.Identity(), f.name, f.verbose, stderr)
	}()
	runErr := make(chan error, 1)
	go func() { runErr <- e.Run(runCtx) }()
	defer func() {
		stopRun() // releases the lease
		if err := <-runErr; err != nil {
			fmt.Fprintf(stderr, "tenure run: %v\n", err)
		}
		<-followed
	}()
	return leadCommand(ctx, e, f, stderr)
}

// leadCommand runs the command in each term e leads, until the command
// exits by itself, leadership is lost (without --repeat), or ctx ends.
func leadCommand(ctx context.Context, e *lead.Elector[rawMeta], f runFlags, stderr io.Writer) error {
	status := 0
	body := func(tctx context.Context, t lead.Term) error {
		fmt.Fprintf(stderr, "tenure run: %s leads %q with token %d; starting %s\n", e.Identity(), f.name, t.Token, f.command[0])
		code, err := runChild(tctx, f.command, commandEnv(t), f.grace, stderr)
		status = code
		switch {
		case err != nil:
			return err
		case code != 0:
			return fmt.Errorf("%w: %s: exit status %d", errChildFailed, f.command[0], code)
		}
		return nil
	}
	for {
		err := e.Lead(ctx, body)
		switch {
		case ctx.Err() != nil:
			return exitCode(status)
		case errors.Is(err, lead.ErrLeadershipLost) && f.repeat:
			fmt.Fprintf(stderr, "tenure run: lost leadership of %q; the command was stopped; waiting to lead again\n", f.name)
		case errors.Is(err, lead.ErrLeadershipLost):
			fmt.Fprintf(stderr, "tenure run: lost leadership of %q; the command was stopped\n", f.name)
			return exitCode(status)
		case errors.Is(err, errCommandNotFound), errors.Is(err, errCommandNotExecutable):
			return &exitError{code: status, err: err}
		case err != nil && !errors.Is(err, errChildFailed):
			return err
		default: // the command exited by itself
			return exitCode(status)
		}
	}
}

// sayLeaders prints a line when leaders reports that this process
// (identity) claims the lease: it does not lead for a while, and says
// why. With verbose, it also prints a line for each change of leader while
// this process does not lead: who leads, with its token and metadata, and
// that this process waits. It returns when leaders is closed.
func sayLeaders(leaders <-chan lead.Leader[rawMeta], identity, name string, verbose bool, stderr io.Writer) {
	self := printable(identity)
	for l := range leaders {
		switch {
		case l.Self && l.Claim:
			fmt.Fprintf(stderr, "tenure run: %s claims %q (token %d): the store may have lost a record whose holder could still lead, so %s leads in %v, with a new token, unless another process takes the lease first\n",
				self, name, l.Token, self, l.Record.LeaseDuration)
		case !verbose:
			// Without -v, only this process's claim is told.
		case l.Self:
			// The term's own line says so ("leads ... starting").
		case l.Holder != "" && l.Claim:
			fmt.Fprintf(stderr, "tenure run: %s claims %q (token %d): it does not lead yet, and takes the lease with a new token once its claim has stood %v, unless another process takes it first; %s follows\n",
				printable(l.Holder), name, l.Token, l.Record.LeaseDuration, self)
		case l.Holder != "":
			meta := ""
			if m := string(l.Record.Metadata); m != "" && m != "null" {
				meta = ", metadata " + safeJSON(l.Record.Metadata)
			}
			fmt.Fprintf(stderr, "tenure run: %s leads %q (token %d%s); %s follows and waits to lead\n",
				printable(l.Holder), name, l.Token, meta, self)
		case l.Present:
			fmt.Fprintf(stderr, "tenure run: nobody leads %q (the lease was released); %s tries to take it\n", name, self)
		default:
			fmt.Fprintf(stderr, "tenure run: no lease record for %q yet; %s tries to take the lease\n", name, self)
		}
	}
}

// Errors of tenure run.
var (
	// errChildFailed: the command exited with a non-zero status.
	errChildFailed = errors.New("command failed")
	// errCommandNotFound: the command does not exist (exit status 127).
	errCommandNotFound = errors.New("command not found")
	// errCommandNotExecutable: the command exists but cannot be run (exit
	// status 126).
	errCommandNotExecutable = errors.New("command cannot be run")
	// errSupervisor: the supervisor of the command cannot be started.
	errSupervisor = errors.New("cannot start the command's supervisor")
)

// superviseArg, as the first argument, runs the tenure binary as the
// supervisor of a command of tenure run (see supervise_unix.go). It is not
// a command for people.
const superviseArg = "__tenure-run-supervisor"

// lookCommand finds the command name as a shell would, and when it cannot
// be run returns the status a shell exits with: 127 when it does not
// exist, 126 when it exists but cannot be run (no execute permission, a
// directory).
func lookCommand(name string) (path string, status int, err error) {
	path, err = exec.LookPath(name)
	switch {
	case err == nil:
		return path, 0, nil
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		return "", 127, fmt.Errorf("%w: %w", errCommandNotFound, err)
	default:
		return "", 126, fmt.Errorf("%w: %w", errCommandNotExecutable, err)
	}
}

// commandEnv is the environment of the command in term t.
func commandEnv(t lead.Term) []string {
	return append(os.Environ(),
		"TENURE_TOKEN="+strconv.FormatUint(uint64(t.Token), 10),
		"TENURE_NAME="+t.Name,
		"TENURE_IDENTITY="+t.Identity,
	)
}
