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

	"github.com/tenure-go/tenure/internal/demo"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs the demo and returns the exit code: 0 when it ends by itself or
// for -h, 1 with a line on stderr otherwise, as `tenure demo` does.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	err := demo.Run(ctx, "tenure-demo", args, stdout, stderr)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	default:
		fmt.Fprintf(stderr, "tenure-demo: %v\n", err)
		return 1
	}
}
