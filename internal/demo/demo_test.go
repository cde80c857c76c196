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

// With 3 workers the two that release the lease may lead first; the demo
// then ends with the third (it used to wait for yet another leader, for
// ever). Each run ends in virtual time, or fails at its deadline.
func TestDemoWithThreeWorkersEnds(t *testing.T) {
	for range 8 {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var out bytes.Buffer
			if err := demo.Run(ctx, "tenure demo", []string{"-workers", "3"}, &out, &out); err != nil {
				t.Fatalf("%v:\n%s", err, out.String())
			}
			if !strings.Contains(out.String(), "stopping every worker") {
				t.Fatalf("output lacks its closing line:\n%s", out.String())
			}
		})
	}
}

// When ctx ends first, Run returns its error once every worker has
// stopped: nothing is printed after Run returned.
func TestDemoPrintsNothingAfterItReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		var out bytes.Buffer
		err := demo.Run(ctx, "tenure demo", nil, &out, &out)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Run: %v, want context.DeadlineExceeded:\n%s", err, out.String())
		}
		printed := out.String()
		synctest.Wait()
		if out.String() != printed {
			t.Fatalf("printed after Run returned:\n%s", strings.TrimPrefix(out.String(), printed))
		}
		if !strings.Contains(printed, "stopped leading") {
			t.Fatalf("the leader's stop is not printed before Run returns:\n%s", printed)
		}
	})
}
