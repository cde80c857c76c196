package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"testing/synctest"
)

func TestRunEndsByItself(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		if code := run(context.Background(), nil, &out, &out); code != 0 {
			t.Fatalf("exit %d:\n%s", code, out.String())
		}
		if !strings.HasPrefix(out.String(), "tenure demo: 4 workers elect a leader") || !strings.Contains(out.String(), "\ndemo done: ") {
			t.Fatalf("not the demo's output:\n%s", out.String())
		}
	})
}

func TestRunExitCodes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-h"}, 0, "usage: tenure-demo [-workers N] [-step D]"},
		{[]string{"-workers", "2"}, 1, "tenure-demo: -workers is 2, must be at least 3"},
		{[]string{"-nope"}, 1, "tenure-demo: flag provided but not defined: -nope"},
	} {
		var out bytes.Buffer
		if code := run(context.Background(), tc.args, &out, &out); code != tc.code || !strings.Contains(out.String(), tc.want) {
			t.Errorf("run %q: exit %d, want %d with %q:\n%s", tc.args, code, tc.code, tc.want, out.String())
		}
	}
}
