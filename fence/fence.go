package fence

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/tenure-go/tenure/lease"
)

// Errors returned by this package and its subpackages.
var (
	// ErrStaleToken: the write carries a token lower than one already
	// accepted, so it comes from a term that has ended.
	ErrStaleToken = errors.New("fence: stale token")
	// ErrNoToken: the context carries no token.
	ErrNoToken = errors.New("fence: no token in context")
	// ErrNilArgument: a nil context, client, transaction or receiver was
	// passed where a usable one is needed. The error names the argument.
	ErrNilArgument = errors.New("fence: nil argument")
	// ErrTokenOutOfRange: the token is above lease.MaxToken, so no store
	// issued it. Accepting it would lock the resource against every token
	// a real term can carry, for good.
	ErrTokenOutOfRange = errors.New("fence: token above lease.MaxToken")
)

// StaleTokenError is the error a fence of this module returns for a stale
// token: it names the token refused and, when the fence knows it, the
// highest token accepted. It wraps ErrStaleToken, so errors.Is(err,
// ErrStaleToken) matches it; errors.AsType[*StaleTokenError](err) reads
// the tokens.
type StaleTokenError struct {
	// Token is the token refused.
	Token Token
	// Highest is the highest token accepted for the resource, which is
	// larger than Token; zero when the fence could not read it (a token
	// is stale only below an accepted one, so zero is never the answer).
	Highest Token
}

// Error says which token was refused and what the highest accepted is.
func (e *StaleTokenError) Error() string {
	if e.Highest == 0 {
		return fmt.Sprintf("%v: token %d refused, below the highest accepted", ErrStaleToken, e.Token)
	}
	return fmt.Sprintf("%v: token %d refused, the highest accepted is %d", ErrStaleToken, e.Token, e.Highest)
}

// Unwrap returns ErrStaleToken.
func (e *StaleTokenError) Unwrap() error { return ErrStaleToken }

// Token is a fencing token: the identity of one leadership term. Tokens of
// later terms are strictly larger. The zero Token is never issued.
type Token uint64

// CheckToken returns nil when t is at most lease.MaxToken, the largest token
// a store issues, and otherwise an error wrapping ErrTokenOutOfRange that
// names t and the bound. Every fence of this module refuses such a token
// with it before recording anything.
func CheckToken(t Token) error {
	if uint64(t) > lease.MaxToken {
		return fmt.Errorf("%w: token %d is above %d: no store issues it", ErrTokenOutOfRange, t, lease.MaxToken)
	}
	return nil
}

type ctxKey struct{}

// WithToken returns a copy of ctx that carries t. A nil ctx is taken as
// context.Background().
func WithToken(ctx context.Context, t Token) context.Context {
	if ctx == nil {
		ctx = context.Background()
	}
	return context.WithValue(ctx, ctxKey{}, t)
}

// FromContext returns the token that ctx carries, if any (none for a nil
// ctx).
func FromContext(ctx context.Context) (Token, bool) {
	if ctx == nil {
		return 0, false
	}
	t, ok := ctx.Value(ctxKey{}).(Token)
	return t, ok
}

// Register guards an in-process resource: it accepts a write only when the
// write's token is at least the highest token it has accepted. The zero
// Register accepts any token. It is safe for concurrent use. The methods of
// a nil *Register return an error wrapping ErrNilArgument (Highest returns
// zero).
type Register struct {
	mu      sync.Mutex
	highest Token
}

// Highest returns the highest token accepted so far (zero if none).
func (r *Register) Highest() Token {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.highest
}

// Check accepts t and remembers it if t is at least the highest token
// accepted so far; otherwise it returns a *StaleTokenError (wrapping
// ErrStaleToken) naming t and the highest token accepted.
func (r *Register) Check(t Token) error {
	return r.Do(t, nil)
}

// Do runs write while holding the register's lock if t is at least the
// highest token accepted so far, and then remembers t; writes that pass
// through the same Register are thus applied in token order. If t is stale
// Do returns a *StaleTokenError (wrapping ErrStaleToken) naming t and the
// highest token accepted, without calling write. If write
// returns an error, t is not remembered and the error is returned. A nil
// write only checks and remembers t. A token above lease.MaxToken is
// refused with an error wrapping ErrTokenOutOfRange (see CheckToken).
func (r *Register) Do(t Token, write func() error) error {
	if r == nil {
		return fmt.Errorf("%w: Register.Do: the *Register is nil", ErrNilArgument)
	}
	if err := CheckToken(t); err != nil {
		return fmt.Errorf("fence: Register.Do: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if t < r.highest {
		return &StaleTokenError{Token: t, Highest: r.highest}
	}
	if write != nil {
		if err := write(); err != nil {
			return err
		}
	}
	r.highest = t
	return nil
}

// DoContext is Do with the token taken from ctx; it returns an error
// wrapping ErrNoToken if ctx carries none, and one wrapping ErrNilArgument
// for a nil ctx.
func (r *Register) DoContext(ctx context.Context, write func() error) error {
	if r == nil {
		return fmt.Errorf("%w: Register.DoContext: the *Register is nil", ErrNilArgument)
	}
	if ctx == nil {
		return fmt.Errorf("%w: Register.DoContext: ctx is nil", ErrNilArgument)
	}
	t, ok := FromContext(ctx)
	if !ok {
		return ErrNoToken
	}
	return r.Do(t, write)
}
