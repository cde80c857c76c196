package fence_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/lease"
)

func TestRegisterRefusesLowerTokens(t *testing.T) {
	var r fence.Register
	steps := []struct {
		token fence.Token
		stale bool
	}{
		{3, false}, {3, false}, {2, true}, {5, false}, {4, true}, {0, true}, {6, false},
	}
	for i, s := range steps {
		err := r.Check(s.token)
		if got := errors.Is(err, fence.ErrStaleToken); got != s.stale {
			t.Fatalf("step %d: Check(%d) = %v, want stale=%v", i, s.token, err, s.stale)
		}
	}
	if got := r.Highest(); got != 6 {
		t.Fatalf("Highest = %d, want 6", got)
	}
}

// A token above lease.MaxToken, which no store issues, is refused and not
// remembered: accepted, it would lock the Register against every real
// token for good.
func TestRegisterRefusesTokensAboveMaxToken(t *testing.T) {
	var r fence.Register
	if err := r.Check(7); err != nil {
		t.Fatal(err)
	}
	for _, tok := range []fence.Token{fence.Token(lease.MaxToken) + 1, 1 << 63, ^fence.Token(0)} {
		called := false
		for name, try := range map[string]func() error{
			"Check": func() error { return r.Check(tok) },
			"Do":    func() error { return r.Do(tok, func() error { called = true; return nil }) },
			"DoContext": func() error {
				return r.DoContext(fence.WithToken(context.Background(), tok), func() error { called = true; return nil })
			},
		} {
			err := try()
			if !errors.Is(err, fence.ErrTokenOutOfRange) || !strings.Contains(err.Error(), fmt.Sprint(uint64(tok))) {
				t.Fatalf("%s(%d) = %v, want an error wrapping ErrTokenOutOfRange naming the token", name, tok, err)
			}
		}
		if called {
			t.Fatalf("token %d: the write ran", tok)
		}
		if err := fence.CheckToken(tok); !errors.Is(err, fence.ErrTokenOutOfRange) {
			t.Fatalf("CheckToken(%d) = %v", tok, err)
		}
		if got := r.Highest(); got != 7 {
			t.Fatalf("after token %d: Highest = %d, want 7", tok, got)
		}
	}
	for _, tok := range []fence.Token{0, 1, fence.Token(lease.MaxToken)} {
		if err := fence.CheckToken(tok); err != nil {
			t.Errorf("CheckToken(%d) = %v, want nil", tok, err)
		}
	}
	if err := r.Check(fence.Token(lease.MaxToken)); err != nil || r.Highest() != fence.Token(lease.MaxToken) {
		t.Fatalf("Check(lease.MaxToken) = %v, Highest %d", err, r.Highest())
	}
}

func TestDoDoesNotRememberFailedWrite(t *testing.T) {
	var r fence.Register
	boom := errors.New("boom")
	if err := r.Do(7, func() error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("Do = %v, want boom", err)
	}
	if got := r.Highest(); got != 0 {
		t.Fatalf("Highest after failed write = %d, want 0", got)
	}
	calls := 0
	if err := r.Do(1, func() error { calls++; return nil }); err != nil || calls != 1 {
		t.Fatalf("Do(1) = %v with %d calls, want nil and 1", err, calls)
	}
}

func TestContextTokenFencesDoContext(t *testing.T) {
	ctx := context.Background()
	if _, ok := fence.FromContext(ctx); ok {
		t.Fatal("empty context carries a token")
	}
	var r fence.Register
	if err := r.DoContext(ctx, nil); !errors.Is(err, fence.ErrNoToken) {
		t.Fatalf("DoContext without token = %v, want ErrNoToken", err)
	}
	ctx = fence.WithToken(ctx, 42)
	if tok, ok := fence.FromContext(ctx); !ok || tok != 42 {
		t.Fatalf("FromContext = %d, %v; want 42, true", tok, ok)
	}
	if err := r.DoContext(fence.WithToken(ctx, 41), nil); err != nil {
		t.Fatalf("first write with 41: %v", err)
	}
	if err := r.DoContext(ctx, nil); err != nil {
		t.Fatalf("write with 42 after 41: %v", err)
	}
}

// TestRegisterConcurrentWritesNeverGoBackwards has many writers with random
// tokens; the accepted tokens, in the order the register applied them, must
// never decrease.
func TestRegisterConcurrentWritesNeverGoBackwards(t *testing.T) {
	var r fence.Register
	var applied []fence.Token // appended under the register's lock
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 200 {
				tok := fence.Token((g*7919 + i*104729) % 1000)
				_ = r.Do(tok, func() error { applied = append(applied, tok); return nil })
			}
		})
	}
	wg.Wait()
	for i := 1; i < len(applied); i++ {
		if applied[i] < applied[i-1] {
			t.Fatalf("write %d applied token %d after %d", i, applied[i], applied[i-1])
		}
	}
	if len(applied) == 0 {
		t.Fatal("no write was applied")
	}
}

// A stale token's error names the token refused and the highest accepted.
func TestRegisterStaleErrorNamesBothTokens(t *testing.T) {
	var r fence.Register
	if err := r.Check(5); err != nil {
		t.Fatal(err)
	}
	err := r.Check(3)
	se, ok := errors.AsType[*fence.StaleTokenError](err)
	if !ok || se.Token != 3 || se.Highest != 5 || !errors.Is(err, fence.ErrStaleToken) {
		t.Fatalf("Check(3) after 5 = %v, want a StaleTokenError{3, 5} wrapping ErrStaleToken", err)
	}
	if want := "fence: stale token: token 3 refused, the highest accepted is 5"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	unknown := &fence.StaleTokenError{Token: 3}
	if want := "fence: stale token: token 3 refused, below the highest accepted"; unknown.Error() != want {
		t.Errorf("error %q, want %q", unknown, want)
	}
}
