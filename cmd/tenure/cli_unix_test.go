//go:build unix

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tenure-go/tenure/storeurl"
)

// TestRunCommandCannotRun: as in a shell, a command that does not exist
// exits 127 and one that cannot be run 126, with a message, before tenure
// run takes part in the election.
func TestRunCommandCannotRun(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "not-executable")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\necho hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		command string
		code    int
		mention string
	}{
		{filepath.Join(dir, "missing"), 127, "command not found"},
		{"tenure-no-such-command", 127, "command not found"},
		{notExec, 126, "command cannot be run"},
		{dir, 126, "command cannot be run"},
	}
	for _, tt := range tests {
		code, out := inProcess(context.Background(), &storeurl.Opener{}, "run", "--store", "memory://cannot", "job", "--", tt.command)
		if code != tt.code || !strings.Contains(out.String(), tt.mention) {
			t.Errorf("tenure run -- %s: exit %d, output:\n%s\nwant exit %d mentioning %q", tt.command, code, out.String(), tt.code, tt.mention)
		}
		if strings.Contains(out.String(), "leads") {
			t.Errorf("tenure run -- %s took part in the election:\n%s", tt.command, out.String())
		}
	}
}
