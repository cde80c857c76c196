package pgstore_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/store/pgstore"
	"github.com/tenure-go/tenure/store/storetest"
)

func TestMain(m *testing.M) {
	testcluster.Main(m)
}

// newPool returns a pool on the package's private cluster, closed when the
// test ends. It skips (or fails under TENURE_REQUIRE_BACKENDS=1) when no
// cluster can be had.
func newPool(tb testing.TB, configure ...func(*pgxpool.Config)) *pgxpool.Pool {
	tb.Helper()
	pg := testcluster.PackagePostgres(tb)
	cfg, err := pgxpool.ParseConfig(pg.DSN())
	if err != nil {
		tb.Fatal(err)
	}
	for _, f := range configure {
		f(cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close)
	return pool
}

var tables atomic.Int64

// freshTable returns a table name no other test uses.
func freshTable() string {
	return fmt.Sprintf("leases_%d_%d", os.Getpid(), tables.Add(1))
}

// newStore returns a Store on a table of its own.
func newStore(tb testing.TB, pool *pgxpool.Pool, opts ...pgstore.Option) *pgstore.Store[storetest.Meta] {
	tb.Helper()
	opts = append([]pgstore.Option{pgstore.WithTable(freshTable())}, opts...)
	st, err := pgstore.New[storetest.Meta](pool, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return st
}
