package redisfence_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/fence/redisfence"
)

// The token key of resource "acct" is "{acct}.fence-token", itself a
// valid key name: Set(1, "{acct}.fence-token", "1") would reset acct's
// fence and let a stale write through. Such a key is refused, and the
// stale write with it.
func TestTokenKeyCannotBeWritten(t *testing.T) {
	c, prefix := client(t)
	ctx := t.Context()
	acct := prefix + "acct"
	if err := redisfence.Set(ctx, c, 10, acct, "from term 10", 0); err != nil {
		t.Fatal(err)
	}
	tokenKey := redisfence.TokenKey(acct)
	if tokenKey != "{"+acct+"}.fence-token" {
		t.Fatalf("TokenKey(%q) = %q", acct, tokenKey)
	}
	err := redisfence.Set(ctx, c, 1, tokenKey, "1", 0)
	if !errors.Is(err, redisfence.ErrInvalidKey) || !strings.Contains(err.Error(), acct) {
		t.Fatalf("Set(1, %q, \"1\"): error %v, want ErrInvalidKey naming %q", tokenKey, err, acct)
	}
	if _, err := redisfence.Highest(ctx, c, tokenKey); !errors.Is(err, redisfence.ErrInvalidKey) {
		t.Errorf("Highest(%q): error %v, want ErrInvalidKey", tokenKey, err)
	}
	if err := redisfence.Set(ctx, c, 9, acct, "stale write of term 9", 0); !errors.Is(err, fence.ErrStaleToken) {
		t.Fatalf("the stale write after the attack: %v, want fence.ErrStaleToken", err)
	}
	if v := get(t, c, acct); v != "from term 10" {
		t.Fatalf("value = %q, want term 10's", v)
	}
	if h, err := redisfence.Highest(ctx, c, acct); err != nil || h != 10 {
		t.Fatalf("Highest = %d, %v; want 10", h, err)
	}
	// A key with a hash tag has the other form of token key.
	tagged := "{" + prefix + "user1}.profile"
	if err := redisfence.Set(ctx, c, 10, tagged, "v", 0); err != nil {
		t.Fatal(err)
	}
	if err := redisfence.Set(ctx, c, 1, redisfence.TokenKey(tagged), "1", 0); !errors.Is(err, redisfence.ErrInvalidKey) {
		t.Fatalf("Set of %q: %v, want ErrInvalidKey", redisfence.TokenKey(tagged), err)
	}
	// Keys that merely end like token keys, but are nobody's, are fine.
	for _, k := range []string{prefix + "x.fence-token", prefix + "x:fence-token", "{}.fence-token", prefix + "fence-token"} {
		if err := redisfence.Set(ctx, c, 1, k, "v", 0); err != nil {
			t.Errorf("Set(%q): %v", k, err)
		}
	}
}

// hostileKey draws keys from pieces that make token keys and hash tags.
func hostileKey() *rapid.Generator[string] {
	piece := rapid.SampledFrom([]string{"", "a", "acct", "{", "}", ":", ".", "{}", "fence-token", ":fence-token", ".fence-token", "}.fence-token", "{a}", "ü"})
	return rapid.Custom(func(t *rapid.T) string {
		return strings.Join(rapid.SliceOfN(piece, 0, 6).Draw(t, "pieces"), "")
	})
}

// No key that Set accepts is the token key of another key, and distinct
// keys have distinct token keys, whatever the names.
func TestTokenKeysNeverCollideProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a := hostileKey().Draw(t, "a")
		b := hostileKey().Draw(t, "b")
		// Also try b as a's token key, and a key built from it.
		switch rapid.IntRange(0, 2).Draw(t, "shape") {
		case 1:
			b = redisfence.TokenKey(a)
		case 2:
			b = redisfence.TokenKey(redisfence.TokenKey(a))
		}
		if a != b && redisfence.TokenKey(a) == redisfence.TokenKey(b) {
			t.Fatalf("TokenKey(%q) = TokenKey(%q) = %q", a, b, redisfence.TokenKey(a))
		}
		for _, pair := range [][2]string{{a, b}, {b, a}} {
			value, other := pair[0], pair[1]
			if redisfence.CheckKey(value) == nil && value == redisfence.TokenKey(other) {
				t.Fatalf("CheckKey accepts %q, the token key of %q", value, other)
			}
		}
		if redisfence.CheckKey(redisfence.TokenKey(a)) == nil {
			t.Fatalf("CheckKey accepts TokenKey(%q) = %q", a, redisfence.TokenKey(a))
		}
	})
}

// The same against the real server: whatever a writer with a low token
// does through Set to a hostile key b, the fence of a hostile key a keeps
// refusing a stale write.
func TestHostileKeysOnTheServer(t *testing.T) {
	c, prefix := client(t)
	ctx := t.Context()
	n := 0
	rapid.Check(t, func(t *rapid.T) {
		n++
		scope := fmt.Sprintf("%s%d:", prefix, n) // keys of one case are new
		// a is a key that may hold a value: not itself a token key.
		a := scope + hostileKey().Filter(func(k string) bool { return redisfence.CheckKey(scope+k) == nil }).Draw(t, "a")
		b := hostileKey().Draw(t, "b")
		switch rapid.IntRange(0, 2).Draw(t, "shape") {
		case 0:
			b = scope + b
		case 1:
			b = redisfence.TokenKey(a)
		case 2:
			b = "{" + a + "}" + b
		}
		if err := redisfence.Set(ctx, c, 10, a, "ten", 0); err != nil {
			t.Fatalf("Set(10, %q): %v", a, err)
		}
		err := redisfence.Set(ctx, c, 1, b, "1", 0)
		if err != nil && !errors.Is(err, redisfence.ErrInvalidKey) && !errors.Is(err, fence.ErrStaleToken) {
			t.Fatalf("Set(1, %q): %v", b, err)
		}
		if b == redisfence.TokenKey(a) && !errors.Is(err, redisfence.ErrInvalidKey) {
			t.Fatalf("Set(1, %q), the token key of %q: %v, want ErrInvalidKey", b, a, err)
		}
		if a != b {
			if err := redisfence.Set(ctx, c, 9, a, "stale", 0); !errors.Is(err, fence.ErrStaleToken) {
				t.Fatalf("after Set(1, %q): stale Set(9, %q) = %v, want fence.ErrStaleToken", b, a, err)
			}
			if h, err := redisfence.Highest(ctx, c, a); err != nil || h != 10 {
				t.Fatalf("after Set(1, %q): Highest(%q) = %d, %v; want 10", b, a, h, err)
			}
		}
	})
}
