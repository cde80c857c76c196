package main

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func TestDemoHandsOverAndEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		start := time.Now()
		if code := run(context.Background(), []string{"demo"}, &out, &out); code != 0 {
			t.Fatalf("exit %d:\n%s", code, out.String())
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
	var out bytes.Buffer
	if code := run(context.Background(), []string{"demo", "-workers", "2"}, &out, &out); code != 1 || !strings.Contains(out.String(), "at least 3") {
		t.Fatalf("exit %d: %s", code, out.String())
	}
	out.Reset()
	if code := run(context.Background(), []string{"nope"}, &out, &out); code != 2 || !strings.Contains(out.String(), "unknown command") {
		t.Fatalf("exit %d: %s", code, out.String())
	}
}
