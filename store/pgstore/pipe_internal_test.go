package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenure-go/tenure/internal/batch"
	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

// pipeStore returns a Store on a pool of its own, in the given exec mode,
// on a table of the test's own.
func pipeStore(t *testing.T, mode pgx.QueryExecMode) *Store[string] {
	t.Helper()
	return internalStore(t, func(cfg *pgxpool.Config) { cfg.ConnConfig.DefaultQueryExecMode = mode })
}

// internalStore returns a Store on a pool of its own, configured by
// configure, on a table of the test's own, created.
func internalStore(t *testing.T, configure func(*pgxpool.Config)) *Store[string] {
	t.Helper()
	pg := testcluster.PackagePostgres(t)
	cfg, err := pgxpool.ParseConfig(pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	configure(cfg)
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	st, err := New[string](pool, WithTable(fmt.Sprintf("pipe_%d", time.Now().UnixNano())))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	return st
}

// Statements sent in one pipeline stand alone: each runs in order, as if
// sent by itself, and one that fails undoes nothing of the others, which
// commit.
func TestPipelineStatementsStandAlone(t *testing.T) {
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeExec} {
		t.Run(mode.String(), func(t *testing.T) {
			st := pipeStore(t, mode)
			ctx := t.Context()
			enc := func(holder string) lease.Record[[]byte] {
				now := time.Now()
				return lease.Record[[]byte]{Holder: holder, Token: 1, AcquiredAt: now, RenewedAt: now, LeaseDuration: time.Second, Metadata: []byte(`"m"`)}
			}
			bad := st.swapCall("c", 0, nil, 1, enc("x"))
			bad.args[8] = `"no_such_sequence"` // nextval fails: the statement fails
			calls := []pgCall{
				st.swapCall("a", 0, nil, 1, enc("first")),
				st.swapCall("a", 0, nil, 1, enc("second")), // finds the row the first wrote
				bad,
				st.swapCall("b", 0, nil, 1, enc("third")),
			}
			out := st.runPipe(ctx, calls)
			row := func(i int) *swapRow {
				t.Helper()
				if out[i].Err != nil || len(out[i].V.rows) != 1 {
					t.Fatalf("statement %d: %d rows, %v; want one", i, len(out[i].V.rows), out[i].Err)
				}
				return out[i].V.rows[0].(*swapRow)
			}
			if r := row(0); !r.written || *r.r.holder != "first" {
				t.Errorf("first create: written %v, holder %q", r.written, *r.r.holder)
			}
			if r := row(1); r.written || *r.r.holder != "first" {
				t.Errorf("second create of a: written %v, holder %q; want the first's row, not written", r.written, *r.r.holder)
			}
			var pgErr *pgconn.PgError
			if !errors.As(out[2].Err, &pgErr) {
				t.Errorf("statement with a missing sequence: %v, want a PgError", out[2].Err)
			}
			if r := row(3); !r.written || *r.r.holder != "third" {
				t.Errorf("create after the failed statement: written %v, holder %q", r.written, *r.r.holder)
			}
			for name, holder := range map[string]string{"a": "first", "b": "third"} {
				if got, _, err := st.Get(ctx, name); err != nil || got.Holder != holder {
					t.Errorf("Get(%s) after the pipeline: %q, %v; want %q", name, got.Holder, err, holder)
				}
			}
			if _, _, err := st.Get(ctx, "c"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("Get(c) of the failed statement: %v, want ErrNotFound", err)
			}
			// The pool's connections still work, for pipelines too.
			out = st.runPipe(ctx, []pgCall{st.swapCall("d", 0, nil, 1, enc("d")), st.swapCall("e", 0, nil, 1, enc("e"))})
			if out[0].Err != nil || out[1].Err != nil {
				t.Fatalf("pipeline after a failed statement: %v, %v", out[0].Err, out[1].Err)
			}
		})
	}
}

// Swaps made at once through the public API share pipelines, of at most
// pipeSize statements, and each stands alone: creates of distinct names
// all succeed, of 40 racers on one name exactly one wins and the others
// get ErrConflict with its record.
func TestConcurrentSwapsSharePipelines(t *testing.T) {
	st := pipeStore(t, pgx.QueryExecModeCacheStatement)
	ctx := t.Context()
	var shared, largest atomic.Int64
	st.pipe = newPipe(func(ctx context.Context, calls []pgCall) []batch.Answer[pgAnswer] {
		n := int64(len(calls))
		if n > 1 {
			shared.Add(n)
		}
		for {
			m := largest.Load()
			if n <= m || largest.CompareAndSwap(m, n) {
				break
			}
		}
		return st.runPipe(ctx, calls)
	})
	for round := range 5 {
		race := fmt.Sprintf("race-%d", round)
		var wg sync.WaitGroup
		var wins atomic.Int32
		start := make(chan struct{})
		for i := range 40 {
			wg.Go(func() {
				<-start
				now := time.Now()
				r := lease.Record[string]{Holder: fmt.Sprint("racer-", i), Token: 1, AcquiredAt: now, RenewedAt: now, LeaseDuration: time.Second}
				got, rev, err := st.CompareAndSwap(ctx, race, 0, r)
				switch {
				case err == nil:
					wins.Add(1)
				case errors.Is(err, store.ErrConflict):
					if rev == 0 || got.Holder == "" {
						t.Errorf("racer %d: conflict without the winner's record", i)
					}
				default:
					t.Errorf("racer %d: %v", i, err)
				}
			})
			wg.Go(func() {
				<-start
				now := time.Now()
				name := fmt.Sprintf("own-%d-%d", round, i)
				r := lease.Record[string]{Holder: "solo", Token: 1, AcquiredAt: now, RenewedAt: now, LeaseDuration: time.Second}
				if _, _, err := st.CompareAndSwap(ctx, name, 0, r); err != nil {
					t.Errorf("create of %s: %v", name, err)
				}
			})
		}
		close(start)
		wg.Wait()
		if n := wins.Load(); n != 1 {
			t.Fatalf("round %d: %d racers won, want 1", round, n)
		}
	}
	if shared.Load() == 0 {
		t.Fatal("no swap went out in a pipeline with others")
	}
	if n := largest.Load(); n > pipeSize {
		t.Fatalf("a pipeline carried %d statements, more than pipeSize (%d)", n, pipeSize)
	}
	t.Logf("%d of 400 swaps shared a pipeline, at most %d in one", shared.Load(), largest.Load())
}
