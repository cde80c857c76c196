package edge

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

// Check is the opening of every method of a store of package pkg, for
// operation op on name: it returns usable (the store's Validate, wrapped)
// when it is not nil, then an error wrapping store.ErrNilArgument for a nil
// ctx, then ctx.Err(), then what validName says of name. Every error
// starts with "pkg: op".
func Check(ctx context.Context, pkg, op, name string, usable error, validName func(string) error) error {
	if usable != nil {
		return fmt.Errorf("%s: %s %q: %w", pkg, op, name, usable)
	}
	if ctx == nil {
		return fmt.Errorf("%s: %s %q: %w: ctx is nil", pkg, op, name, store.ErrNilArgument)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %s %q: %w", pkg, op, name, err)
	}
	if err := validName(name); err != nil {
		return fmt.Errorf("%s: %s: %w", pkg, op, err)
	}
	return nil
}

// CheckList is Check for a store's List of the names under prefix, which
// may be any string.
func CheckList(ctx context.Context, pkg, prefix string, usable error) error {
	return Check(ctx, pkg, "List", prefix, usable, func(string) error { return nil })
}

// Corrupt wraps err, why the record of name in a store of package pkg
// cannot be read, so that it matches store.ErrCorruptRecord.
func Corrupt(pkg, name string, err error) error {
	if errors.Is(err, store.ErrCorruptRecord) {
		return fmt.Errorf("%s: record %q: %w", pkg, name, err)
	}
	return fmt.Errorf("%s: record %q: %w: %w", pkg, name, store.ErrCorruptRecord, err)
}

// FormatTime renders t as RFC 3339 in UTC to the nanosecond, "" for the
// zero time. Times outside years 0-9999 have no RFC 3339 form and are
// refused.
func FormatTime(t time.Time) (string, error) {
	if t.IsZero() {
		return "", nil
	}
	if y := t.Year(); y < 0 || y > 9999 {
		return "", fmt.Errorf("time %v is outside years 0-9999", t)
	}
	return t.UTC().Format(time.RFC3339Nano), nil
}

// ParseTime reverses FormatTime.
func ParseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not an RFC 3339 time", s)
	}
	return t.UTC(), nil
}

// StoredTime is t as a store that keeps FormatTime's text returns it:
// ParseTime(FormatTime(t)).
func StoredTime(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.Round(0).UTC()
}

// FormatTimes formats the AcquiredAt and RenewedAt of r with FormatTime.
// The error wraps store.ErrInvalidRecord and names the field.
func FormatTimes[M any](r lease.Record[M]) (acquired, renewed string, err error) {
	if acquired, err = FormatTime(r.AcquiredAt); err != nil {
		return "", "", fmt.Errorf("%w: AcquiredAt: %w", store.ErrInvalidRecord, err)
	}
	if renewed, err = FormatTime(r.RenewedAt); err != nil {
		return "", "", fmt.Errorf("%w: RenewedAt: %w", store.ErrInvalidRecord, err)
	}
	return acquired, renewed, nil
}

// Rounds splits the swaps of a batch, by their names in order, into rounds
// in which no name appears twice: the k-th swap of each name goes in
// round k. Run one round after the other, each name's swaps run in the
// order given. It returns the positions of each round's swaps.
func Rounds[M any](swaps []store.Swap[M]) [][]int {
	seen := make(map[string]int, len(swaps))
	var rounds [][]int
	for i, sw := range swaps {
		k := seen[sw.Name]
		seen[sw.Name] = k + 1
		if k == len(rounds) {
			rounds = append(rounds, nil)
		}
		rounds[k] = append(rounds[k], i)
	}
	return rounds
}
