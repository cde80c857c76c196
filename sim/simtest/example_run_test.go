package simtest_test

import (
	"strings"
	"testing"
)

// TestExampleRun runs ExampleRun's code, which an example cannot run
// itself (it needs a *testing.T), and checks its output.
func TestExampleRun(t *testing.T) {
	var b strings.Builder
	runExample(t, &b)
	if b.String() != exampleRunOutput {
		t.Fatalf("got:\n%s\nwant:\n%s", b.String(), exampleRunOutput)
	}
}
