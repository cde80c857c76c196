package main

import (
	"context"
	"io"

	"github.com/tenure-go/tenure/internal/demo"
)

// runDemo is `tenure demo`: the scripted demo that `make demo` also runs
// (through cmd/tenure-demo, which compiles far less).
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return demo.Run(ctx, "tenure demo", args, stdout, stderr)
}
