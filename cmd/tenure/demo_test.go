package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// tenure demo runs the demo package's demo: it ends by itself with exit 0
// and its closing line, and its flag errors exit 1 named by the command.
// It runs in virtual time; a demo that never ends fails at the deadline.
func TestDemoCommand(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var out bytes.Buffer
		if code := run(ctx, []string{"demo", "-workers", "3"}, &out, &out); code != 0 {
			t.Fatalf("exit %d:\n%s", code, out.String())
		}
		if !strings.Contains(out.String(), "\ndemo done: ") {
			t.Fatalf("output lacks its closing line:\n%s", out.String())
		}
	})
}

func TestDemoRejectsBadFlags(t *testing.T) {
	var out bytes.Buffer
	if code := run(context.Background(), []string{"demo", "-workers", "2"}, &out, &out); code != 1 || !strings.Contains(out.String(), "tenure demo: -workers is 2, must be at least 3") {
		t.Fatalf("exit %d: %s", code, out.String())
	}
	out.Reset()
	if code := run(context.Background(), []string{"demo", "-h"}, &out, &out); code != 0 || !strings.Contains(out.String(), "usage: tenure demo [-workers N]") {
		t.Fatalf("exit %d: %s", code, out.String())
	}
	out.Reset()
	if code := run(context.Background(), []string{"nope"}, &out, &out); code != 2 || !strings.Contains(out.String(), "unknown command") {
		t.Fatalf("exit %d: %s", code, out.String())
	}
}
