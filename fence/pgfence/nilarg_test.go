package pgfence_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/fence/pgfence"
)

// A nil or zero Fence, a nil ctx, a nil database handle (typed nil
// included) and a nil write are errors wrapping fence.ErrNilArgument that
// name them; nothing panics. No server is needed.
func TestNilArguments(t *testing.T) {
	var nilCtx context.Context
	var nilF *pgfence.Fence
	zero := &pgfence.Fence{}
	var nilPool *pgxpool.Pool
	var nilTx pgx.Tx
	ok, err := pgfence.New()
	if err != nil {
		t.Fatal(err)
	}
	ctx := fence.WithToken(context.Background(), 1)
	write := func(pgx.Tx) error { return nil }
	// A pool that connects when first used: none of these uses it.
	pool, err := pgxpool.New(ctx, "postgres://u@127.0.0.1:1/db")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	tests := []struct {
		name    string
		f       func() error
		mention string
	}{
		{"Migrate: nil Fence", func() error { return nilF.Migrate(ctx, nilPool) }, "*Fence is nil"},
		{"Migrate: zero Fence", func() error { return zero.Migrate(ctx, nilPool) }, "not made by New"},
		{"Migrate: nil ctx", func() error { return ok.Migrate(nilCtx, nilPool) }, "ctx is nil"},
		{"Migrate: typed nil pool", func() error { return ok.Migrate(ctx, nilPool) }, "db is nil"},
		{"Check: nil tx", func() error { return ok.Check(ctx, nilTx, "r", 1) }, "tx is nil"},
		{"Check: nil ctx", func() error { return ok.Check(nilCtx, nilTx, "r", 1) }, "ctx is nil"},
		{"Check: zero Fence", func() error { return zero.Check(ctx, nilTx, "r", 1) }, "not made by New"},
		{"Do: nil db", func() error { return ok.Do(ctx, nil, "r", 1, write) }, "db is nil"},
		{"Do: typed nil pool", func() error { return ok.Do(ctx, nilPool, "r", 1, write) }, "db is nil"},
		{"Do: nil write", func() error { return ok.Do(ctx, pool, "r", 1, nil) }, "write is nil"},
		{"Do: zero pool", func() error { return ok.Do(ctx, new(pgxpool.Pool), "r", 1, write) }, "db (*pgxpool.Pool) was not made by its constructor"},
		{"Do: zero conn", func() error { return ok.Do(ctx, new(pgx.Conn), "r", 1, write) }, "db (*pgx.Conn) was not made by its constructor"},
		{"Migrate: zero pool", func() error { return ok.Migrate(ctx, new(pgxpool.Pool)) }, "was not made by its constructor"},
		{"Do: nil Fence", func() error { return nilF.Do(ctx, nilPool, "r", 1, write) }, "*Fence is nil"},
		{"DoContext: nil ctx", func() error { return ok.DoContext(nilCtx, nilPool, "r", write) }, "ctx is nil"},
		{"DoContext: nil write", func() error { return ok.DoContext(ctx, pool, "r", nil) }, "write is nil"},
		{"Highest: zero pool", func() error { _, _, err := ok.Highest(ctx, new(pgxpool.Pool), "r"); return err }, "was not made by its constructor"},
		{"Highest: nil db", func() error { _, _, err := ok.Highest(ctx, nil, "r"); return err }, "db is nil"},
		{"Highest: nil Fence", func() error { _, _, err := nilF.Highest(ctx, nil, "r"); return err }, "*Fence is nil"},
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
			t.Errorf("%s = %v; want fence.ErrNilArgument naming %q", tt.name, err, tt.mention)
		}
	}
	if nilF.Table() != "" || nilF.SchemaSQL() != "" || zero.SchemaSQL() != "" {
		t.Error("a nil or zero Fence names a table")
	}
}
