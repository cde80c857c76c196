package demo_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-go/tenure/internal/demo"
)

func TestDemoHandsOverAndEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		start := time.Now()
		if err := demo.Run(context.Background(), "tenure demo", nil, &out, &out); err != nil {
			t.Fatalf("%v:\n%s", err, out.String())
		}
		if took := time.Since(start); took > 30*time.Second {
			t.Fatalf("demo took %v, want under 30s", took)
		}
		text := out.String()
		for _, want := range []string{"stops gracefully", "crashes: stops renewing", "stopping every worker"} {
			if !strings.Contains(text, want) {
				t.Errorf("output lacks %q:\n%s", want, text)
			}
		}
		// Tokens of successive terms strictly increase, and no two
		// workers lead at once.
		re := regexp.MustCompile(`(worker-\d+)\s+(started|stopped) leading\s+token=(\d+)`)
		var leader string
		var last uint64
		for _, m := range re.FindAllStringSubmatch(text, -1) {
			tok, _ := strconv.ParseUint(m[3], 10, 64)
			switch m[2] {
			case "started":
				if leader != "" {
					t.Fatalf("%s started leading while %s leads:\n%s", m[1], leader, text)
				}
				if tok <= last {
					t.Fatalf("token %d after %d:\n%s", tok, last, text)
				}
				leader, last = m[1], tok
			case "stopped":
				if m[1] != leader {
					t.Fatalf("%s stopped leading but %q leads:\n%s", m[1], leader, text)
				}
				leader = ""
			}
		}
		if last < 3 {
			t.Fatalf("only %d terms:\n%s", last, text)
		}
	})
}

func TestDemoRejectsBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-workers", "2"}, "-workers is 2, must be at least 3"},
		{[]string{"-step", "0s"}, "-step is 0s, must be > 0"},
		{[]string{"-nope"}, "flag provided but not defined: -nope"},
	} {
		var out bytes.Buffer
		err := demo.Run(context.Background(), "tenure-demo", tc.args, &out, &out)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Run %q: %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

func TestDemoHelpNamesTheCommand(t *testing.T) {
	var out bytes.Buffer
	if err := demo.Run(context.Background(), "tenure-demo", []string{"-h"}, &out, &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("Run -h: %v, want flag.ErrHelp", err)
	}
	if !strings.HasPrefix(out.String(), "usage: tenure-demo [-workers N]") || !strings.Contains(out.String(), "tenure-demo -workers 5") {
		t.Fatalf("usage does not name tenure-demo:\n%s", out.String())
	}
}

func TestDemoNilArguments(t *testing.T) {
	var nilCtx context.Context
	var out bytes.Buffer
	for _, tc := range []struct {
		label          string
		ctx            context.Context
		stdout, stderr io.Writer
	}{
		{"ctx", nilCtx, &out, &out},
		{"stdout", context.Background(), nil, &out},
		{"stderr", context.Background(), &out, nil},
		{"stdout", context.Background(), (*bytes.Buffer)(nil), &out},
	} {
		if err := demo.Run(tc.ctx, "tenure-demo", nil, tc.stdout, tc.stderr); err == nil || !strings.Contains(err.Error(), tc.label+" is nil") {
			t.Errorf("Run with a nil %s: %v", tc.label, err)
		}
	}
}
