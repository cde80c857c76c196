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

// The demo's output, line by line: a graceful handover, a late write of
// the ended term refused by the fence with both tokens, a crash that the
// crashed worker says nothing of and its successor tells of, followers
// seeing each leader through Elector.Leaders with its metadata, tokens
// that only grow with never two leaders at once, and a last line that
// sums it up.
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
		checkDemoOutput(t, out.String(), true)
	})
}

var (
	startedRe = regexp.MustCompile(`^\s*[\d.]+s  (worker-\d+)\s+started leading  token=(\d+)  \((.*)\)$`)
	stoppedRe = regexp.MustCompile(`^\s*[\d.]+s  (worker-\d+)\s+stopped leading  token=(\d+)`)
	killRe    = regexp.MustCompile(`^\s*[\d.]+s  --- killing (worker-\d+): from now on it neither renews nor says anything$`)
	graceRe   = regexp.MustCompile(`^\s*[\d.]+s  --- stopping (worker-\d+) gracefully: it releases the lease$`)
	sightRe   = regexp.MustCompile(`^\s*[\d.]+s  (worker-\d+)\s+sees (worker-(\d+)) lead  token=(\d+)  addr=10\.0\.0\.(\d+):8080  \(through Elector\.Leaders`)
	staleRe   = regexp.MustCompile(`^\s*[\d.]+s  (worker-\d+)\s+late write with its old token=(\d+): refused by the fence, which has accepted token=(\d+)$`)
	speakerRe = regexp.MustCompile(`^\s*[\d.]+s  (worker-\d+) `)
	doneRe    = regexp.MustCompile(`^demo done: (\d+) handovers \((\d+) after a release, (\d+) after a crash\), 1 stale write refused; the fence accepted writes up to token=(\d+)$`)
)

// checkDemoOutput checks the demo's output; wantCrash says that it must
// show a crash (with 4 workers it always does).
func checkDemoOutput(t *testing.T, text string, wantCrash bool) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	var (
		leader            string // who leads, "" when nobody does
		last              uint64 // the last term's token
		killed            = map[string]bool{}
		released          string // the worker stopped gracefully last
		crashes, releases int
		stale, sightings  int
		terms             = map[string]uint64{} // each worker's last token
	)
	for n, line := range lines {
		if m := speakerRe.FindStringSubmatch(line); m != nil && killed[m[1]] {
			t.Fatalf("line %d: %s speaks after it was killed:\n%s", n+1, m[1], text)
		}
		switch {
		case killRe.MatchString(line):
			w := killRe.FindStringSubmatch(line)[1]
			if w != leader {
				t.Fatalf("line %d: killing %s, but %q leads:\n%s", n+1, w, leader, text)
			}
			killed[w] = true
		case graceRe.MatchString(line):
			if w := graceRe.FindStringSubmatch(line)[1]; w != leader {
				t.Fatalf("line %d: stopping %s, but %q leads:\n%s", n+1, w, leader, text)
			}
		case startedRe.MatchString(line):
			s := startedRe.FindStringSubmatch(line)
			tok, _ := strconv.ParseUint(s[2], 10, 64)
			if tok <= last {
				t.Fatalf("line %d: token %d after %d:\n%s", n+1, tok, last, text)
			}
			switch {
			case leader == "" && last == 0:
				if s[3] != "took the lease: no record yet" {
					t.Errorf("line %d: the first term says %q", n+1, s[3])
				}
			case leader == "":
				if want := "took over at once: " + released + " released the lease"; !strings.HasPrefix(s[3], want) {
					t.Errorf("line %d: after a release, the successor says %q, want %q", n+1, s[3], want)
				}
				releases++
			case killed[leader]:
				// The crash is told by the successor, from the store.
				if want := "took over after " + leader + "'s lease expired: it crashed or stalled, no renewal for 2"; !strings.HasPrefix(s[3], want) {
					t.Errorf("line %d: after a crash, the successor says %q, want %q", n+1, s[3], want)
				}
				crashes++
			default:
				t.Fatalf("line %d: %s started leading while %s leads:\n%s", n+1, s[1], leader, text)
			}
			leader, last, terms[s[1]] = s[1], tok, tok
		case stoppedRe.MatchString(line):
			s := stoppedRe.FindStringSubmatch(line)
			if s[1] != leader {
				t.Fatalf("line %d: %s stopped leading but %q leads:\n%s", n+1, s[1], leader, text)
			}
			leader, released = "", s[1]
		case sightRe.MatchString(line):
			s := sightRe.FindStringSubmatch(line)
			tok, _ := strconv.ParseUint(s[4], 10, 64)
			if s[2] != leader || tok != last || s[3] != s[5] || s[1] == leader {
				t.Fatalf("line %d: a follower's sighting disagrees with the leader %s (token %d), or its metadata with the sighted worker:\n%s", n+1, leader, last, text)
			}
			sightings++
		case staleRe.MatchString(line):
			s := staleRe.FindStringSubmatch(line)
			old, _ := strconv.ParseUint(s[2], 10, 64)
			high, _ := strconv.ParseUint(s[3], 10, 64)
			if s[1] != released || old != terms[s[1]] || high != last || old >= high {
				t.Fatalf("line %d: the late write is not %s's old token %d refused for %d:\n%s", n+1, released, terms[released], last, text)
			}
			stale++
		}
	}
	if stale != 1 || releases == 0 || sightings < releases+crashes || wantCrash && crashes == 0 {
		t.Errorf("%d stale writes refused (want 1), %d handovers after a release, %d after a crash, %d sightings through Leaders:\n%s",
			stale, releases, crashes, sightings, text)
	}
	final := lines[len(lines)-1]
	m := doneRe.FindStringSubmatch(final)
	if m == nil {
		t.Fatalf("the last line is %q, want the summary:\n%s", final, text)
	}
	if m[1] != strconv.Itoa(releases+crashes) || m[2] != strconv.Itoa(releases) || m[3] != strconv.Itoa(crashes) || m[4] != strconv.FormatUint(last, 10) {
		t.Errorf("the summary %q does not count %d releases, %d crashes, token %d", final, releases, crashes, last)
	}
	for _, bad := range []string{"error", "fail", "refused:"} {
		if strings.Contains(strings.ToLower(final), bad) {
			t.Errorf("the last line reads like an error: %q", final)
		}
	}
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
// then ends with the third, not waiting for yet another leader. Each run
// ends in virtual time, or fails at its deadline.
func TestDemoWithThreeWorkersEnds(t *testing.T) {
	for range 8 {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var out bytes.Buffer
			if err := demo.Run(ctx, "tenure demo", []string{"-workers", "3"}, &out, &out); err != nil {
				t.Fatalf("%v:\n%s", err, out.String())
			}
			checkDemoOutput(t, out.String(), false)
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
