package etcdfence

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/internal/nilarg"
)

// Errors returned by this package.
var (
	// ErrCorruptToken: the token key holds something that is not a token
	// (it was written by something other than this package). Nothing is
	// written until it is repaired or deleted.
	ErrCorruptToken = errors.New("etcdfence: the token key does not hold a token")
	// ErrInvalidKey: the key is a token key (see TokenKey), or an operation
	// given to Do touches the resource's token key. Writing it would reset,
	// or forge, a fence.
	ErrInvalidKey = errors.New("etcdfence: invalid key")
	// ErrContention: the token key kept changing while a write waited to
	// go through (other writers with ever higher tokens). Nothing was
	// written.
	ErrContention = errors.New("etcdfence: the token key kept changing")
)

// tokenSuffix ends every token key.
const tokenSuffix = ":fence-token"

// maxAttempts bounds the transactions one write sends.
const maxAttempts = 8

// TokenKey returns the key that holds the highest token accepted for key:
// key + ":fence-token".
func TokenKey(key string) string { return key + tokenSuffix }

// CheckKey returns an error wrapping ErrInvalidKey when key is a token key
// (it ends in ":fence-token"), and nil otherwise.
func CheckKey(key string) error {
	if other, ok := strings.CutSuffix(key, tokenSuffix); ok {
		return fmt.Errorf("%w: %q is the token key of %q: a key that TokenKey returns cannot be fenced itself", ErrInvalidKey, key, other)
	}
	return nil
}

// Put writes value to key, as etcd's Put does with opts (clientv3.WithLease,
// say), if token is at least the highest token accepted for key so far,
// and records token as the highest, in one transaction. Otherwise it writes
// nothing and returns an error wrapping a [fence.StaleTokenError] (and so
// [fence.ErrStaleToken]) that names both tokens. A nil ctx or kv is an error wrapping [fence.ErrNilArgument].
// A token above lease.MaxToken, which no store issues, is refused with an
// error wrapping [fence.ErrTokenOutOfRange] before anything is sent (by Do
// too).
func Put(ctx context.Context, kv clientv3.KV, token fence.Token, key, value string, opts ...clientv3.OpOption) error {
	if err := nilArgs(ctx, "Put", key, kv); err != nil {
		return err
	}
	return do(ctx, "Put", kv, token, key, clientv3.OpPut(key, value, opts...))
}

// PutContext is Put with the token that ctx carries (see fence.WithToken);
// it returns an error wrapping [fence.ErrNoToken] if ctx carries none.
func PutContext(ctx context.Context, kv clientv3.KV, key, value string, opts ...clientv3.OpOption) error {
	if err := nilArgs(ctx, "PutContext", key, kv); err != nil {
		return err
	}
	token, ok := fence.FromContext(ctx)
	if !ok {
		return fmt.Errorf("etcdfence: Put %q: %w", key, fence.ErrNoToken)
	}
	return Put(ctx, kv, token, key, value, opts...)
}

// Do applies ops (puts and deletes of keys the resource stands for) in one
// transaction if token is at least the highest token accepted for resource,
// and records token as the highest (in TokenKey(resource)). Otherwise it
// applies nothing and returns an error wrapping a [fence.StaleTokenError]
// (and so [fence.ErrStaleToken]) that names both tokens.
// An operation on a token key, a range that holds the resource's token
// key, or a nested transaction is refused with [ErrInvalidKey] before anything is sent; keep ranges
// clear of other resources' token keys too. Gets among ops are allowed,
// but their results are not returned.
func Do(ctx context.Context, kv clientv3.KV, token fence.Token, resource string, ops ...clientv3.Op) error {
	if err := nilArgs(ctx, "Do", resource, kv); err != nil {
		return err
	}
	tk := TokenKey(resource)
	for i, op := range ops {
		if op.IsTxn() {
			return fmt.Errorf("etcdfence: Do %q: operation %d: %w: a nested transaction cannot be checked for the token key", resource, i, ErrInvalidKey)
		}
		k := op.KeyBytes()
		if err := CheckKey(string(k)); err != nil {
			return fmt.Errorf("etcdfence: Do %q: operation %d: %w", resource, i, err)
		}
		if end := op.RangeBytes(); len(end) > 0 && bytes.Compare(k, []byte(tk)) <= 0 && (string(end) == "\x00" || bytes.Compare([]byte(tk), end) < 0) {
			return fmt.Errorf("etcdfence: Do %q: operation %d: %w: the range [%q, %q) holds the token key %q", resource, i, ErrInvalidKey, k, end, tk)
		}
	}
	return do(ctx, "Do", kv, token, resource, ops...)
}

// DoContext is Do with the token that ctx carries (see fence.WithToken);
// it returns an error wrapping [fence.ErrNoToken] if ctx carries none.
func DoContext(ctx context.Context, kv clientv3.KV, resource string, ops ...clientv3.Op) error {
	if err := nilArgs(ctx, "DoContext", resource, kv); err != nil {
		return err
	}
	token, ok := fence.FromContext(ctx)
	if !ok {
		return fmt.Errorf("etcdfence: Do %q: %w", resource, fence.ErrNoToken)
	}
	return Do(ctx, kv, token, resource, ops...)
}

// do runs the fenced transactions of Put and Do.
func do(ctx context.Context, op string, kv clientv3.KV, token fence.Token, key string, ops ...clientv3.Op) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("etcdfence: %s %q: %w", op, key, err)
	}
	if err := CheckKey(key); err != nil {
		return fmt.Errorf("etcdfence: %s: %w", op, err)
	}
	if err := fence.CheckToken(token); err != nil {
		return fmt.Errorf("etcdfence: %s %q: %w", op, key, err)
	}
	tk := TokenKey(key)
	want := strconv.FormatUint(uint64(token), 10)
	// First the common case: the token key already holds this token.
	cmp := clientv3.Compare(clientv3.Value(tk), "=", want)
	then := ops
	for attempt := range maxAttempts {
		resp, err := kv.Txn(ctx).If(cmp).Then(then...).Else(clientv3.OpGet(tk)).Commit()
		if err != nil {
			return fmt.Errorf("etcdfence: %s %q: %w", op, key, err)
		}
		if resp.Succeeded {
			return nil
		}
		if len(resp.Responses) != 1 || resp.Responses[0].GetResponseRange() == nil {
			return fmt.Errorf("etcdfence: %s %q: unexpected reply of %d responses (attempt %d)", op, key, len(resp.Responses), attempt+1)
		}
		var rev int64 // the token key's mod revision; 0: absent
		if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
			cur, err := parseToken(kvs[0].Value)
			if err != nil {
				return fmt.Errorf("etcdfence: %s %q: %w: %s %v", op, key, ErrCorruptToken, tk, err)
			}
			if cur > token {
				return fmt.Errorf("etcdfence: %s %q: %w", op, key, &fence.StaleTokenError{Token: token, Highest: cur})
			}
			rev = kvs[0].ModRevision
			if cur == token {
				// Written meanwhile by another writer of this term.
				cmp = clientv3.Compare(clientv3.ModRevision(tk), "=", rev)
				then = ops
				continue
			}
		}
		// A higher token: write it, if the token key has not moved since.
		cmp = clientv3.Compare(clientv3.ModRevision(tk), "=", rev)
		then = append(append([]clientv3.Op(nil), ops...), clientv3.OpPut(tk, want))
	}
	return fmt.Errorf("etcdfence: %s %q: %w (%d attempts)", op, key, ErrContention, maxAttempts)
}

// Highest returns the highest token accepted for key, or zero when none
// has been. Like Put, it refuses a token key ([ErrInvalidKey]).
func Highest(ctx context.Context, kv clientv3.KV, key string) (fence.Token, error) {
	if err := nilArgs(ctx, "Highest", key, kv); err != nil {
		return 0, err
	}
	if err := CheckKey(key); err != nil {
		return 0, fmt.Errorf("etcdfence: Highest: %w", err)
	}
	resp, err := kv.Get(ctx, TokenKey(key))
	if err != nil {
		return 0, fmt.Errorf("etcdfence: Highest %q: %w", key, err)
	}
	if len(resp.Kvs) == 0 {
		return 0, nil
	}
	t, err := parseToken(resp.Kvs[0].Value)
	if err != nil {
		return 0, fmt.Errorf("etcdfence: Highest %q: %w: %s %v", key, ErrCorruptToken, TokenKey(key), err)
	}
	return t, nil
}

// parseToken reads a token key's value: a decimal uint64 without leading
// zeros.
func parseToken(value []byte) (fence.Token, error) {
	t, err := strconv.ParseUint(string(value), 10, 64)
	if err != nil || strconv.FormatUint(t, 10) != string(value) {
		return 0, fmt.Errorf("holds %q", value)
	}
	return fence.Token(t), nil
}

// nilArgs returns an error wrapping fence.ErrNilArgument when ctx or kv is
// nil (kv may be a typed nil, a nil *clientv3.Client, say).
func nilArgs(ctx context.Context, op, key string, kv any) error {
	switch {
	case ctx == nil:
		return fmt.Errorf("etcdfence: %s %q: %w: ctx is nil", op, key, fence.ErrNilArgument)
	case nilarg.IsNil(kv):
		return fmt.Errorf("etcdfence: %s %q: %w: kv is nil", op, key, fence.ErrNilArgument)
	}
	if c, ok := kv.(*clientv3.Client); ok && nilarg.IsNil(c.KV) {
		return fmt.Errorf("etcdfence: %s %q: %w: kv is a *clientv3.Client not made by clientv3.New", op, key, fence.ErrNilArgument)
	}
	return nil
}
