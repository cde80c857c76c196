package fence_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tenure-go/tenure/fence"
)

// A nil *Register, a nil ctx and a nil write never panic: the first two are
// errors wrapping ErrNilArgument that name them, a nil write only checks.
func TestNilArguments(t *testing.T) {
	var nilR *fence.Register
	var nilCtx context.Context
	tests := []struct {
		name    string
		f       func() error
		mention string
	}{
		{"Check on a nil Register", func() error { return nilR.Check(1) }, "*Register is nil"},
		{"Do on a nil Register", func() error { return nilR.Do(1, func() error { return nil }) }, "*Register is nil"},
		{"DoContext on a nil Register", func() error {
			return nilR.DoContext(fence.WithToken(context.Background(), 1), nil)
		}, "*Register is nil"},
		{"DoContext with a nil ctx", func() error { return new(fence.Register).DoContext(nilCtx, nil) }, "ctx is nil"},
		{"DoContext on a nil Register, with no token", func() error { return nilR.DoContext(context.Background(), nil) }, "*Register is nil"},
	}
	for _, tt := range tests {
		err := func() (err error) {
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("panic: %v", p)
				}
			}()
			return tt.f()
		}()
		if !errors.Is(err, fence.ErrNilArgument) || !strings.Contains(err.Error(), tt.mention) {
			t.Errorf("%s = %v; want ErrNilArgument naming %q", tt.name, err, tt.mention)
		}
	}
	if nilR.Highest() != 0 {
		t.Error("Highest of a nil Register is not 0")
	}
	if _, ok := fence.FromContext(nilCtx); ok {
		t.Error("FromContext(nil) found a token")
	}
	if tok, ok := fence.FromContext(fence.WithToken(nilCtx, 7)); !ok || tok != 7 {
		t.Errorf("WithToken(nil, 7) carries %d, %v", tok, ok)
	}
	if err := new(fence.Register).Do(3, nil); err != nil {
		t.Errorf("Do with a nil write = %v, want a check only", err)
	}
}
