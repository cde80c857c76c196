package main

import (
	"bytes"
	"context"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runSimArgs(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), append([]string{"sim"}, args...), &out, &errOut)
	return out.String() + errOut.String(), code
}

func TestSimSameSeedSameOutput(t *testing.T) {
	dir := t.TempDir()
	svgA, svgB := filepath.Join(dir, "a.svg"), filepath.Join(dir, "b.svg")
	a, codeA := runSimArgs(t, "-seed", "5", "-duration", "4m", "-svg", svgA)
	b, codeB := runSimArgs(t, "-seed", "5", "-duration", "4m", "-svg", svgB)
	if a != b || codeA != codeB {
		t.Fatalf("two runs of seed 5 differ:\n%s\n---\n%s", a, b)
	}
	for _, want := range []string{"n0 ", "n4 ", "terms (", "store (", "faults (", "checks: "} {
		if !strings.Contains(a, want) {
			t.Errorf("output lacks %q:\n%s", want, a)
		}
	}
	sa, err := os.ReadFile(svgA)
	if err != nil {
		t.Fatal(err)
	}
	sb, _ := os.ReadFile(svgB)
	if !bytes.Equal(sa, sb) {
		t.Fatal("two runs of seed 5 wrote different SVGs")
	}
	if err := xml.Unmarshal(sa, new(struct{})); err != nil {
		t.Fatalf("the SVG is not well-formed XML: %v", err)
	}
	if c, _ := runSimArgs(t, "-seed", "6", "-duration", "4m"); c == a {
		t.Fatal("seeds 5 and 6 gave the same output")
	}
}

func TestSimCommand(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"help", []string{"-h"}, 0, "Examples:"},
		{"calm run holds", []string{"-calm", "-nodes", "3", "-duration", "1m"}, 0, "checks: OK"},
		{"drift past the bound makes two leaders", []string{"-seed", "3", "-nodes", "3", "-duration", "5m", "-drift-beyond", "-crash", "-partition"}, 1, "one-leader check failed"},
		{"bad timings", []string{"-lease", "5s", "-renew", "6s"}, 1, "RenewDeadline"},
		{"bad width", []string{"-width", "3"}, 1, "-width"},
		{"stray argument", []string{"extra"}, 1, "unexpected arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, code := runSimArgs(t, tt.args...)
			if code != tt.code || !strings.Contains(out, tt.want) {
				t.Fatalf("exit %d (want %d), output lacks %q or is:\n%s", code, tt.code, tt.want, out)
			}
		})
	}
}
