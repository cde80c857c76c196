package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"demo", "several workers on the in-memory store, leaders handing over", runDemo},
		{"sim", "deterministic simulation of many nodes with faults, and its checks", runSim},
		{"get", "print an election's lease record", runGet},
		{"watch", "print a line per change of a lease record", runWatch},
		{"ui", "serve a live web page of the elections under a prefix", runUI},
		{"ls", "list the elections of a store as a table, or live with --watch", runLs},
		{"run", "run a command only while this process leads", runRun},
		{"plan", "derive timings from the outage, drift and failover you can tolerate", runPlan},
	}
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == superviseArg {
		os.Exit(supervise(os.Args[2:], os.Stderr))
	}
	routeLibraryLogs()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	// An argument typed in the wrong place may be a secret: never echo it.
	stderr = newRedactor(stderr, args)
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands() {
		if c.name == args[0] {
			err := c.run(ctx, args[1:], stdout, stderr)
			var code exitCode
			var coded *exitError
			switch {
			case err == nil:
				return 0
			case errors.As(err, &code):
				return int(code)
			case errors.As(err, &coded):
				fmt.Fprintf(stderr, "tenure %s: %s\n", c.name, oneLine(err.Error()))
				return coded.code
			case errors.Is(err, flag.ErrHelp):
				return 0
			default:
				fmt.Fprintf(stderr, "tenure %s: %s\n", c.name, oneLine(err.Error()))
				return 1
			}
		}
	}
	fmt.Fprintf(stderr, "tenure: unknown command %q\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: tenure COMMAND [flags]")
	fmt.Fprintln(w, "\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'tenure COMMAND -h' for a command's flags.")
}
