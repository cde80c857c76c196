package redisfence

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/internal/nilarg"
)

// Errors returned by this package.
var (
	// ErrCorruptToken: the token key holds something that is not a token
	// (it was written by something other than this package). Nothing is
	// written until it is repaired or deleted.
	ErrCorruptToken = errors.New("redisfence: the token key does not hold a token")
	// ErrInvalidKey: the key is the token key of another key (see
	// TokenKey). Writing it would reset, or forge, that key's fence.
	ErrInvalidKey = errors.New("redisfence: invalid key")
)

// setScript is the whole of Set.
//
//	KEYS[1] the value key, KEYS[2] the token key
//	ARGV[1] the token (decimal), ARGV[2] the value, ARGV[3] the expiry in
//	milliseconds ("0": none)
//
// Replies {"ok"}, {"stale", highest} or {"corrupt", found}. Tokens are
// compared as decimal strings: Lua numbers are doubles and would round
// tokens above 2^53.
var setScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[2])
if cur then
  if not (cur == '0' or string.match(cur, '^[1-9]%d*$')) or #cur > 20 or (#cur == 20 and cur > '18446744073709551615') then
    return {'corrupt', cur}
  end
  if #cur > #ARGV[1] or (#cur == #ARGV[1] and cur > ARGV[1]) then
    return {'stale', cur}
  end
end
if ARGV[3] ~= '0' then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
else
  redis.call('SET', KEYS[1], ARGV[2])
end
if cur ~= ARGV[1] then
  redis.call('SET', KEYS[2], ARGV[1])
end
return {'ok'}
`)

// Set writes value to key, as SET does, if token is at least the highest
// token accepted for key so far, and records token as the highest; both
// happen atomically in one round trip (EVALSHA, with EVAL when the server
// lost the script cache). Otherwise it writes nothing and returns an error
// wrapping a [fence.StaleTokenError] (and so [fence.ErrStaleToken]) that
// names both tokens.
//
// An expiration above zero sets the value's time to live (rounded down to a
// millisecond, at least one); zero writes a value that does not expire. The
// token key never expires.
//
// c is any go-redis client: *redis.Client, *redis.ClusterClient,
// *redis.Ring, or a failover client. In Redis Cluster, key must either
// contain a hash tag or no '}' at all, so that its token key lives in the
// same slot (see TokenKey). go-redis cuts a blocked command at ctx's
// deadline only when the client has ContextTimeoutEnabled. A nil ctx or c
// is an error wrapping [fence.ErrNilArgument] (so in SetContext and
// Highest).
//
// A token above lease.MaxToken, which no store issues, is refused with an
// error wrapping [fence.ErrTokenOutOfRange] before anything is sent.
//
// A key that is the token key of another key is refused with an error
// wrapping [ErrInvalidKey], before anything is sent: writing it would set
// that other key's highest token, and let a stale write through.
func Set(ctx context.Context, c redis.Scripter, token fence.Token, key, value string, expiration time.Duration) error {
	if err := nilArgs(ctx, "Set", key, c); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("redisfence: Set %q: %w", key, err)
	}
	if err := CheckKey(key); err != nil {
		return fmt.Errorf("redisfence: Set: %w", err)
	}
	if expiration < 0 {
		return fmt.Errorf("redisfence: Set %q: negative expiration %v", key, expiration)
	}
	if err := fence.CheckToken(token); err != nil {
		return fmt.Errorf("redisfence: Set %q: %w", key, err)
	}
	px := "0"
	if expiration > 0 {
		px = strconv.FormatInt(max(expiration.Milliseconds(), 1), 10)
	}
	want := strconv.FormatUint(uint64(token), 10)
	reply, err := setScript.Run(ctx, c, []string{key, TokenKey(key)}, want, value, px).StringSlice()
	if err != nil {
		return fmt.Errorf("redisfence: Set %q: %w", key, err)
	}
	switch {
	case len(reply) == 1 && reply[0] == "ok":
		return nil
	case len(reply) == 2 && reply[0] == "stale":
		highest, _ := strconv.ParseUint(reply[1], 10, 64) // checked by the script; 0 (unknown) if not
		return fmt.Errorf("redisfence: Set %q: %w", key, &fence.StaleTokenError{Token: token, Highest: fence.Token(highest)})
	case len(reply) == 2 && reply[0] == "corrupt":
		return fmt.Errorf("redisfence: Set %q: %w: %s holds %q", key, ErrCorruptToken, TokenKey(key), reply[1])
	default:
		return fmt.Errorf("redisfence: Set %q: unexpected reply %q", key, reply)
	}
}

// SetContext is Set with the token that ctx carries (see fence.WithToken);
// it returns an error wrapping [fence.ErrNoToken] if ctx carries none.
func SetContext(ctx context.Context, c redis.Scripter, key, value string, expiration time.Duration) error {
	if err := nilArgs(ctx, "SetContext", key, c); err != nil {
		return err
	}
	token, ok := fence.FromContext(ctx)
	if !ok {
		return fmt.Errorf("redisfence: Set %q: %w", key, fence.ErrNoToken)
	}
	return Set(ctx, c, token, key, value, expiration)
}

// Highest returns the highest token accepted for key, or zero when none has
// been. Like Set, it refuses a key that is the token key of another key
// ([ErrInvalidKey]).
func Highest(ctx context.Context, c redis.Cmdable, key string) (fence.Token, error) {
	if err := nilArgs(ctx, "Highest", key, c); err != nil {
		return 0, err
	}
	if err := CheckKey(key); err != nil {
		return 0, fmt.Errorf("redisfence: Highest: %w", err)
	}
	s, err := c.Get(ctx, TokenKey(key)).Result()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("redisfence: Highest %q: %w", key, err)
	}
	t, err := strconv.ParseUint(s, 10, 64)
	if err != nil || strconv.FormatUint(t, 10) != s {
		return 0, fmt.Errorf("redisfence: Highest %q: %w: %s holds %q", key, ErrCorruptToken, TokenKey(key), s)
	}
	return fence.Token(t), nil
}

// TokenKey returns the key that holds the highest token accepted for key:
//
//   - key + ":fence-token" when key has a Redis Cluster hash tag (a
//     non-empty {...}), which the token key then shares;
//   - "{" + key + "}.fence-token" when key has no hash tag and no '}', so
//     that the whole key is the token key's hash tag and both hash to the
//     same slot;
//   - key + ":fence-token" otherwise (a '}' but no hash tag, or the empty
//     key): such a key cannot share its slot with another, so Set fails on
//     it in Redis Cluster (CROSSSLOT).
//
// Distinct keys always get distinct token keys, and a key that CheckKey
// accepts is never the token key of another.
func TokenKey(key string) string {
	if key == "" || hasHashTag(key) || strings.Contains(key, "}") {
		return key + ":fence-token"
	}
	return "{" + key + "}.fence-token"
}

// nilArgs returns an error wrapping fence.ErrNilArgument when ctx or the
// client c is nil (c may be a typed nil, a nil *redis.Client, say).
func nilArgs(ctx context.Context, op, key string, c any) error {
	switch {
	case ctx == nil:
		return fmt.Errorf("redisfence: %s %q: %w: ctx is nil", op, key, fence.ErrNilArgument)
	case nilarg.IsNil(c):
		return fmt.Errorf("redisfence: %s %q: %w: c is nil", op, key, fence.ErrNilArgument)
	case unmade(c):
		return fmt.Errorf("redisfence: %s %q: %w: c (%T) was not made by its constructor (redis.NewClient, redis.NewClusterClient)", op, key, fence.ErrNilArgument, c)
	}
	return nil
}

// unmade reports whether c is a client of go-redis's own types that its
// constructor did not make (a zero value), which go-redis dereferences
// and panics on.
func unmade(c any) (zero bool) {
	// A zero *redis.Client has no embedded base client either: asking for
	// its options panics, which is the answer.
	defer func() {
		if recover() != nil {
			zero = true
		}
	}()
	switch c := c.(type) {
	case *redis.Client:
		return c.Options() == nil
	case *redis.ClusterClient:
		return c.Options() == nil
	}
	return false
}

// CheckKey returns an error wrapping ErrInvalidKey when key is the token
// key of another key (TokenKey(other) == key), and nil otherwise. Set and
// Highest refuse such keys, so that no value key is ever some key's token
// key: writing "{acct}.fence-token" as a value would otherwise reset the
// fence of "acct". Every token key ends in ":fence-token" or
// ".fence-token"; keys that do not are always accepted.
func CheckKey(key string) error {
	for _, other := range tokenKeyOf(key) {
		if TokenKey(other) == key {
			return fmt.Errorf("%w: %q is the token key of %q: a key that TokenKey returns for another key cannot be fenced itself", ErrInvalidKey, key, other)
		}
	}
	return nil
}

// tokenKeyOf returns the keys whose token key key could be, one for each
// form TokenKey returns.
func tokenKeyOf(key string) []string {
	var cands []string
	if k, ok := strings.CutSuffix(key, ":fence-token"); ok {
		cands = append(cands, k)
	}
	if k, ok := strings.CutSuffix(key, "}.fence-token"); ok && strings.HasPrefix(k, "{") {
		cands = append(cands, k[1:])
	}
	return cands
}

// hasHashTag reports whether Redis Cluster hashes key by a tag: a '{'
// followed later by a '}' with at least one byte between them.
func hasHashTag(key string) bool {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return false
	}
	return strings.IndexByte(key[open+1:], '}') > 0
}
