package redisfence_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/fence/redisfence"
	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store/redisstore"
)

// client returns a client of the shared server and a key prefix unique to
// the test.
func client(t *testing.T) (*redis.Client, string) {
	t.Helper()
	c := testcluster.PackageRedis(t).Client(t)
	return c, fmt.Sprintf("redisfence:%s:%d:", t.Name(), time.Now().UnixNano())
}

func get(t *testing.T, c *redis.Client, key string) string {
	t.Helper()
	v, err := c.Get(t.Context(), key).Result()
	if err != nil {
		t.Fatalf("GET %s: %v", key, err)
	}
	return v
}

// An old leader's write is refused once a new leader has written, with
// tokens issued by the Redis store itself.
func TestOldLeaderRefusedAfterNewLeaderWrote(t *testing.T) {
	c, prefix := client(t)
	ctx := t.Context()
	st, err := redisstore.New[struct{}](c, redisstore.WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	old, rev, err := st.CompareAndSwap(ctx, "job", 0, lease.Record[struct{}]{Holder: "old", Token: 1, AcquiredAt: now, RenewedAt: now, LeaseDuration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	key := prefix + "report"
	oldCtx := fence.WithToken(ctx, fence.Token(old.Token))
	if err := redisfence.SetContext(oldCtx, c, key, "from the old leader", 0); err != nil {
		t.Fatalf("the old leader's first write: %v", err)
	}

	// The lease expires; a new leader takes over with a new term.
	cur, _, err := st.CompareAndSwap(ctx, "job", rev, lease.Record[struct{}]{Holder: "new", Token: old.Token + 1, AcquiredAt: now, RenewedAt: now, LeaseDuration: time.Second, Transitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	if cur.Token <= old.Token {
		t.Fatalf("new term token %d is not above the old %d", cur.Token, old.Token)
	}
	newCtx := fence.WithToken(ctx, fence.Token(cur.Token))
	if err := redisfence.SetContext(newCtx, c, key, "from the new leader", 0); err != nil {
		t.Fatalf("the new leader's write: %v", err)
	}
	err = redisfence.SetContext(oldCtx, c, key, "late write from the old leader", 0)
	if !errors.Is(err, fence.ErrStaleToken) {
		t.Fatalf("the old leader's late write: error %v, want one wrapping fence.ErrStaleToken", err)
	}
	if v := get(t, c, key); v != "from the new leader" {
		t.Fatalf("value = %q after the refused write, want the new leader's", v)
	}
	if h, err := redisfence.Highest(ctx, c, key); err != nil || h != fence.Token(cur.Token) {
		t.Fatalf("Highest = %d, %v; want %d", h, err, cur.Token)
	}
	// The new leader may keep writing with the same token.
	if err := redisfence.SetContext(newCtx, c, key, "again", 0); err != nil {
		t.Fatalf("a second write in the same term: %v", err)
	}
}

func TestSetOrdersTokens(t *testing.T) {
	c, prefix := client(t)
	ctx := t.Context()
	key := prefix + "k"
	if h, err := redisfence.Highest(ctx, c, key); err != nil || h != 0 {
		t.Fatalf("Highest of a fresh key = %d, %v; want 0, nil", h, err)
	}
	steps := []struct {
		token fence.Token
		ok    bool
	}{
		{9, true},
		{10, true},
		{10, true},
		{9, false},
		{0, false},
		{99, true},  // a longer decimal
		{100, true}, // crosses a power of ten
		{99, false}, // shorter, smaller
		{1 << 52, true},
		{fence.Token(lease.MaxToken) - 1, true},
		{fence.Token(lease.MaxToken), true}, // the largest a store issues
		{fence.Token(lease.MaxToken) - 1, false},
	}
	for i, s := range steps {
		v := fmt.Sprint(i)
		err := redisfence.Set(ctx, c, s.token, key, v, 0)
		switch {
		case s.ok && err != nil:
			t.Fatalf("step %d: Set with token %d: %v", i, s.token, err)
		case !s.ok && !errors.Is(err, fence.ErrStaleToken):
			t.Fatalf("step %d: Set with token %d: error %v, want fence.ErrStaleToken", i, s.token, err)
		case s.ok && get(t, c, key) != v:
			t.Fatalf("step %d: the value was not written", i)
		}
	}
	if h, err := redisfence.Highest(ctx, c, key); err != nil || h != fence.Token(lease.MaxToken) {
		t.Fatalf("Highest = %d, %v; want lease.MaxToken", h, err)
	}
}

// A token above lease.MaxToken, which no store issues, is refused before
// anything is written: accepted, it would lock the key against every real
// token for good.
func TestSetRefusesTokensAboveMaxToken(t *testing.T) {
	c, prefix := client(t)
	ctx := t.Context()
	key := prefix + "k"
	if err := redisfence.Set(ctx, c, 7, key, "seven", 0); err != nil {
		t.Fatal(err)
	}
	for _, tok := range []fence.Token{fence.Token(lease.MaxToken) + 1, 1 << 63, math.MaxUint64} {
		err := redisfence.Set(ctx, c, tok, key, "forged", 0)
		if !errors.Is(err, fence.ErrTokenOutOfRange) || !strings.Contains(err.Error(), fmt.Sprint(uint64(tok))) {
			t.Fatalf("Set with token %d: %v, want an error wrapping fence.ErrTokenOutOfRange naming the token", tok, err)
		}
		if err := redisfence.SetContext(fence.WithToken(ctx, tok), c, key, "forged", 0); !errors.Is(err, fence.ErrTokenOutOfRange) {
			t.Fatalf("SetContext with token %d: %v, want fence.ErrTokenOutOfRange", tok, err)
		}
		if h, err := redisfence.Highest(ctx, c, key); err != nil || h != 7 {
			t.Fatalf("after token %d: Highest = %d, %v; want 7", tok, h, err)
		}
		if v := get(t, c, key); v != "seven" {
			t.Fatalf("after token %d: the value is %q", tok, v)
		}
	}
	if err := redisfence.Set(ctx, c, fence.Token(lease.MaxToken), key, "max", 0); err != nil {
		t.Fatalf("Set with lease.MaxToken: %v", err)
	}
}

func TestSetExpiration(t *testing.T) {
	c, prefix := client(t)
	ctx := t.Context()
	key := prefix + "ttl"
	if err := redisfence.Set(ctx, c, 3, key, "v", time.Minute); err != nil {
		t.Fatal(err)
	}
	if ttl := c.PTTL(ctx, key).Val(); ttl <= 0 || ttl > time.Minute {
		t.Fatalf("PTTL = %v, want within (0, 1m]", ttl)
	}
	if ttl := c.PTTL(ctx, redisfence.TokenKey(key)).Val(); ttl != -1 {
		t.Fatalf("the token key has PTTL %v, want none (-1)", ttl)
	}
	if err := redisfence.Set(ctx, c, 3, key, "v", 0); err != nil {
		t.Fatal(err)
	}
	if ttl := c.PTTL(ctx, key).Val(); ttl != -1 {
		t.Fatalf("after a write without expiration PTTL = %v, want none (-1)", ttl)
	}
	if err := redisfence.Set(ctx, c, 3, key, "v", -time.Second); err == nil {
		t.Fatal("a negative expiration was accepted")
	}
}

func TestSetContextWithoutToken(t *testing.T) {
	c, prefix := client(t)
	err := redisfence.SetContext(t.Context(), c, prefix+"k", "v", 0)
	if !errors.Is(err, fence.ErrNoToken) {
		t.Fatalf("error %v, want one wrapping fence.ErrNoToken", err)
	}
}

func TestCorruptTokenKeyIsRefused(t *testing.T) {
	c, prefix := client(t)
	ctx := t.Context()
	key := prefix + "corrupt"
	for _, bad := range []string{"seven", "007", "-1", "", "123456789012345678901", "18446744073709551616", "99999999999999999999"} {
		if err := c.Set(ctx, redisfence.TokenKey(key), bad, 0).Err(); err != nil {
			t.Fatal(err)
		}
		err := redisfence.Set(ctx, c, fence.Token(lease.MaxToken), key, "v", 0)
		if !errors.Is(err, redisfence.ErrCorruptToken) {
			t.Errorf("token key %q: Set error %v, want ErrCorruptToken", bad, err)
		}
		if _, err := redisfence.Highest(ctx, c, key); !errors.Is(err, redisfence.ErrCorruptToken) {
			t.Errorf("token key %q: Highest error %v, want ErrCorruptToken", bad, err)
		}
		if n := c.Exists(ctx, key).Val(); n != 0 {
			t.Fatalf("token key %q: the value was written", bad)
		}
	}
}

func TestCancelledContext(t *testing.T) {
	c, prefix := client(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := redisfence.Set(ctx, c, 1, prefix+"k", "v", 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want one wrapping context.Canceled", err)
	}
}

// hashTag is the part of key that Redis Cluster hashes, per the cluster
// specification.
func hashTag(key string) string {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			return key[open+1 : open+1+end]
		}
	}
	return key
}

func TestTokenKeysAreDistinctFromEveryKey(t *testing.T) {
	keys := []string{
		"plain", "a:b:c", "{user1}.profile", "x{tag}y{other}", "{user1}", "{x}",
		"x", "open{only", "{}empty-tag", "{}", "a}b", "{}a}", "", "ünï{cødé}",
	}
	seen := map[string]string{}
	for _, k := range keys {
		tk := redisfence.TokenKey(k)
		if tk == k {
			t.Errorf("TokenKey(%q) is the key itself", k)
		}
		if other, dup := seen[tk]; dup {
			t.Errorf("TokenKey(%q) = TokenKey(%q) = %q", k, other, tk)
		}
		seen[tk] = k
		// Same slot unless the key has a '}' but no hash tag.
		sameSlot := hashTag(tk) == hashTag(k)
		hasTag := hashTag(k) != k
		if !sameSlot && k != "" && (hasTag || !strings.Contains(k, "}")) {
			t.Errorf("TokenKey(%q) = %q hashes by %q, the key by %q", k, tk, hashTag(tk), hashTag(k))
		}
	}
	// Token keys of distinct keys never collide, even of keys built to look
	// like another's token key.
	for _, k := range keys {
		for _, derived := range []string{redisfence.TokenKey(k), "{" + k + "}", k + ":fence-token", "{" + k + "}.fence-token"} {
			if derived != k && redisfence.TokenKey(derived) == redisfence.TokenKey(k) {
				t.Errorf("TokenKey(%q) = TokenKey(%q)", derived, k)
			}
		}
	}
}

// In Redis Cluster the token key shares the value key's slot, so Set works
// for keys with a hash tag and keys without braces; a key with a '}' but no
// hash tag cannot, and Set says so.
func TestClusterSetNeedsTheTokenKeyInTheValueKeysSlot(t *testing.T) {
	srv := testcluster.NewRedisCluster(t)
	c := srv.ClusterClient(t)
	ctx := t.Context()
	for _, key := range []string{"plain", "a:b:c", "{user1}.profile", "x{tag}y", "open{only"} {
		if err := redisfence.Set(ctx, c, 5, key, "new", 0); err != nil {
			t.Errorf("Set(%q): %v", key, err)
			continue
		}
		if err := redisfence.Set(ctx, c, 4, key, "old", 0); !errors.Is(err, fence.ErrStaleToken) {
			t.Errorf("Set(%q) with an old token: %v, want ErrStaleToken", key, err)
		}
		if v, err := c.Get(ctx, key).Result(); err != nil || v != "new" {
			t.Errorf("GET %q = %q, %v", key, v, err)
		}
	}
	for _, key := range []string{"a}b", "{}empty-tag"} {
		if err := redisfence.Set(ctx, c, 5, key, "v", 0); err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
			t.Errorf("Set(%q): %v, want a CROSSSLOT error", key, err)
		}
	}
}

// The stale token's error names the token refused and the highest
// accepted.
func TestStaleErrorNamesTheHighestAccepted(t *testing.T) {
	c, prefix := client(t)
	ctx := t.Context()
	key := prefix + "v"
	if err := redisfence.Set(ctx, c, 9, key, "term 9", 0); err != nil {
		t.Fatal(err)
	}
	err := redisfence.Set(ctx, c, 3, key, "term 3", 0)
	se, ok := errors.AsType[*fence.StaleTokenError](err)
	if !ok || se.Token != 3 || se.Highest != 9 || !errors.Is(err, fence.ErrStaleToken) {
		t.Fatalf("Set(3) after Set(9) = %v, want a StaleTokenError{3, 9}", err)
	}
	if !strings.Contains(err.Error(), "token 3 refused, the highest accepted is 9") {
		t.Errorf("error %q does not name both tokens", err)
	}
	if got := get(t, c, key); got != "term 9" {
		t.Errorf("value %q, want term 9", got)
	}
}
