package pgfence_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/fence/pgfence"
	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store/pgstore"
)

func TestMain(m *testing.M) {
	testcluster.Main(m)
}

func newPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pg := testcluster.PackagePostgres(t)
	cfg, err := pgxpool.ParseConfig(pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 8
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

var seq atomic.Int64

func unique(prefix string) string { return fmt.Sprintf("%s_%d_%d", prefix, os.Getpid(), seq.Add(1)) }

// setup returns a migrated Fence on a table of its own and a data table
// "jobs" of its own, with one row (id 1).
func setup(t *testing.T, pool *pgxpool.Pool, opts ...pgfence.Option) (*pgfence.Fence, string) {
	t.Helper()
	ctx := t.Context()
	if len(opts) == 0 {
		opts = []pgfence.Option{pgfence.WithTable(unique("fences"))}
	}
	f, err := pgfence.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	jobs := pgx.Identifier{unique("jobs")}.Sanitize()
	if _, err := pool.Exec(ctx, "CREATE TABLE "+jobs+" (id int PRIMARY KEY, writer text NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "INSERT INTO "+jobs+" VALUES (1, 'nobody')"); err != nil {
		t.Fatal(err)
	}
	return f, jobs
}

func writer(t *testing.T, pool *pgxpool.Pool, jobs string) string {
	t.Helper()
	var w string
	if err := pool.QueryRow(t.Context(), "SELECT writer FROM "+jobs+" WHERE id = 1").Scan(&w); err != nil {
		t.Fatal(err)
	}
	return w
}

// write sets the job's writer under token, through f.
func write(ctx context.Context, f *pgfence.Fence, pool *pgxpool.Pool, jobs string, token fence.Token, who string) error {
	return f.Do(ctx, pool, "jobs", token, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "UPDATE "+jobs+" SET writer = $1 WHERE id = 1", who)
		return err
	})
}

func TestOldTokenRefusedAfterNewerWrote(t *testing.T) {
	pool := newPool(t)
	ctx := t.Context()
	f, jobs := setup(t, pool)
	if err := write(ctx, f, pool, jobs, 7, "term 7"); err != nil {
		t.Fatalf("term 7: %v", err)
	}
	if err := write(ctx, f, pool, jobs, 7, "term 7 again"); err != nil {
		t.Fatalf("term 7, second write: %v", err)
	}
	if err := write(ctx, f, pool, jobs, 8, "term 8"); err != nil {
		t.Fatalf("term 8: %v", err)
	}
	called := false
	err := f.Do(ctx, pool, "jobs", 7, func(tx pgx.Tx) error { called = true; return nil })
	if !errors.Is(err, fence.ErrStaleToken) || called {
		t.Fatalf("late write of term 7: %v (write called: %v), want ErrStaleToken before the write", err, called)
	}
	if w := writer(t, pool, jobs); w != "term 8" {
		t.Fatalf("writer = %q, want term 8", w)
	}
	// Check after the write, in the caller's own transaction: the stale
	// write is rolled back.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "UPDATE "+jobs+" SET writer = 'stale' WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	if err := f.Check(ctx, tx, "jobs", 7); !errors.Is(err, fence.ErrStaleToken) {
		t.Fatalf("Check(7) after 8: %v", err)
	}
	_ = tx.Rollback(ctx)
	if w := writer(t, pool, jobs); w != "term 8" {
		t.Fatalf("writer = %q, want term 8", w)
	}
	if h, ok, err := f.Highest(ctx, pool, "jobs"); err != nil || !ok || h != 8 {
		t.Fatalf("Highest = %d, %v, %v; want 8", h, ok, err)
	}
	// Another resource has a fence of its own.
	if err := f.Do(ctx, pool, "other", 1, func(pgx.Tx) error { return nil }); err != nil {
		t.Fatalf("another resource: %v", err)
	}
}

func TestFailedWriteRecordsNothing(t *testing.T) {
	pool := newPool(t)
	ctx := t.Context()
	f, jobs := setup(t, pool)
	if err := write(ctx, f, pool, jobs, 3, "term 3"); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if err := f.Do(ctx, pool, "jobs", 9, func(pgx.Tx) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("Do = %v, want boom", err)
	}
	if h, _, _ := f.Highest(ctx, pool, "jobs"); h != 3 {
		t.Fatalf("Highest = %d after a failed write under 9, want 3", h)
	}
	if err := write(ctx, f, pool, jobs, 4, "term 4"); err != nil {
		t.Fatalf("term 4 after the failed 9: %v", err)
	}
}

// TestTermsApplyInTokenOrder: while an old term's transaction holds the
// fence, a newer term's write waits for it; once the newer one committed,
// the old term cannot write any more.
func TestTermsApplyInTokenOrder(t *testing.T) {
	pool := newPool(t)
	ctx := t.Context()
	f, jobs := setup(t, pool)
	old, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Rollback(ctx)
	if err := f.Check(ctx, old, "jobs", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := old.Exec(ctx, "UPDATE "+jobs+" SET writer = 'term 1' WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- write(ctx, f, pool, jobs, 2, "term 2") }()
	if err := old.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("term 2: %v", err)
	}
	if err := write(ctx, f, pool, jobs, 1, "term 1 late"); !errors.Is(err, fence.ErrStaleToken) {
		t.Fatalf("term 1 after term 2: %v", err)
	}
	if w := writer(t, pool, jobs); w != "term 2" {
		t.Fatalf("writer = %q, want term 2", w)
	}
}

func TestDoContext(t *testing.T) {
	pool := newPool(t)
	ctx := t.Context()
	f, jobs := setup(t, pool)
	noop := func(pgx.Tx) error { return nil }
	if err := f.DoContext(ctx, pool, "jobs", noop); !errors.Is(err, fence.ErrNoToken) {
		t.Fatalf("DoContext without a token: %v", err)
	}
	if err := f.DoContext(fence.WithToken(ctx, 5), pool, "jobs", noop); err != nil {
		t.Fatal(err)
	}
	if err := f.DoContext(fence.WithToken(ctx, 4), pool, "jobs", noop); !errors.Is(err, fence.ErrStaleToken) {
		t.Fatalf("DoContext(4) after 5: %v", err)
	}
	_ = jobs
}

func TestHostileNamesAndLargeTokens(t *testing.T) {
	pool := newPool(t)
	ctx := t.Context()
	if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS y (n int)`); err != nil {
		t.Fatal(err)
	}
	f, _ := setup(t, pool, pgfence.WithTable(`f"; DROP TABLE y; --`+unique("")))
	noop := func(pgx.Tx) error { return nil }
	for _, res := range []string{`it's`, `"; DROP TABLE y; --`, "日本語 ✓"} {
		if err := f.Do(ctx, pool, res, fence.Token(lease.MaxToken), noop); err != nil {
			t.Fatalf("Do(%q): %v", res, err)
		}
		if err := f.Do(ctx, pool, res, fence.Token(lease.MaxToken)-1, noop); !errors.Is(err, fence.ErrStaleToken) {
			t.Fatalf("Do(%q) with a lower token: %v", res, err)
		}
		if h, _, err := f.Highest(ctx, pool, res); err != nil || h != fence.Token(lease.MaxToken) {
			t.Fatalf("Highest(%q) = %d, %v", res, h, err)
		}
	}
	for _, bad := range []string{"", "a\x00b", "\xff"} {
		if err := f.Do(ctx, pool, bad, 1, noop); !errors.Is(err, pgfence.ErrInvalidResource) {
			t.Fatalf("Do(%q): %v, want ErrInvalidResource", bad, err)
		}
	}
	var canary bool
	if err := pool.QueryRow(ctx, "SELECT to_regclass('public.y') IS NOT NULL").Scan(&canary); err != nil || !canary {
		t.Fatalf("the canary table y is gone (%v)", err)
	}
	for _, opt := range []pgfence.Option{pgfence.WithTable(), pgfence.WithTable(""), pgfence.WithTable("a", "b", "c"), pgfence.WithTable("a\x00")} {
		if _, err := pgfence.New(opt); !errors.Is(err, pgfence.ErrInvalidOption) {
			t.Errorf("New with a bad table: %v", err)
		}
	}
}

// A token above lease.MaxToken, which no store issues, is refused by Check,
// Do and DoContext before anything is recorded: accepted, it would lock the
// resource against every real token for good.
func TestRefusesTokensAboveMaxToken(t *testing.T) {
	pool := newPool(t)
	ctx := t.Context()
	f, jobs := setup(t, pool)
	if err := write(ctx, f, pool, jobs, 7, "seven"); err != nil {
		t.Fatal(err)
	}
	for _, tok := range []fence.Token{fence.Token(lease.MaxToken) + 1, 1 << 63, ^fence.Token(0)} {
		set := func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, "UPDATE "+jobs+" SET writer = 'forged' WHERE id = 1")
			return err
		}
		for name, try := range map[string]func() error{
			"Do":        func() error { return f.Do(ctx, pool, "jobs", tok, set) },
			"DoContext": func() error { return f.DoContext(fence.WithToken(ctx, tok), pool, "jobs", set) },
			"Check": func() error {
				return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return f.Check(ctx, tx, "jobs", tok) })
			},
		} {
			err := try()
			if !errors.Is(err, fence.ErrTokenOutOfRange) || !strings.Contains(err.Error(), fmt.Sprint(uint64(tok))) {
				t.Fatalf("%s with token %d: %v, want an error wrapping fence.ErrTokenOutOfRange naming the token", name, tok, err)
			}
		}
		if h, _, err := f.Highest(ctx, pool, "jobs"); err != nil || h != 7 {
			t.Fatalf("after token %d: Highest = %d, %v; want 7", tok, h, err)
		}
		if w := writer(t, pool, jobs); w != "seven" {
			t.Fatalf("after token %d: writer is %q", tok, w)
		}
	}
	if err := write(ctx, f, pool, jobs, fence.Token(lease.MaxToken), "max"); err != nil {
		t.Fatalf("Do with lease.MaxToken: %v", err)
	}
}

// TestOldLeaderRefused runs two electors on pgstore: the first leads and
// writes, then crashes (stops renewing without releasing) and stays
// "paused"; the second takes over once the lease expired and writes; then
// the first, waking up, writes with its old term's token and is refused.
func TestOldLeaderRefused(t *testing.T) {
	pool := newPool(t)
	ctx := t.Context()
	f, jobs := setup(t, pool)
	st, err := pgstore.New[struct{}](pool, pgstore.WithTable(unique("leases")))
	if err != nil {
		t.Fatal(err)
	}
	cfg := lease.Config{LeaseDuration: time.Second, RenewDeadline: 600 * time.Millisecond,
		RetryInterval: 100 * time.Millisecond, RetryJitter: 0.1, BackendTimeout: 200 * time.Millisecond, ErrorInterval: time.Second}

	started := func(id string) (*lead.Elector[struct{}], chan lead.Term) {
		terms := make(chan lead.Term, 4)
		e, err := lead.New("fenced-job", st, lead.WithIdentity(id), lead.WithConfig(cfg),
			lead.WithReleaseOnStop(false),
			lead.WithObserver(func(c lead.Change) {
				if c.Kind == lead.Started {
					terms <- c.Term
				}
			}))
		if err != nil {
			t.Fatal(err)
		}
		return e, terms
	}
	a, aTerms := started("old-leader")
	actx, stopA := context.WithCancel(ctx)
	go a.Run(actx)
	oldTerm := <-aTerms
	if err := write(ctx, f, pool, jobs, oldTerm.Token, "old-leader"); err != nil {
		t.Fatalf("the old leader's write in its term: %v", err)
	}
	stopA() // a crash: no release
	<-a.Done()

	b, bTerms := started("new-leader")
	bctx, stopB := context.WithCancel(ctx)
	defer stopB()
	go b.Run(bctx)
	newTerm := <-bTerms
	if newTerm.Token <= oldTerm.Token {
		t.Fatalf("new term's token %d is not above the old %d", newTerm.Token, oldTerm.Token)
	}
	if err := write(ctx, f, pool, jobs, newTerm.Token, "new-leader"); err != nil {
		t.Fatalf("the new leader's write: %v", err)
	}
	err = write(ctx, f, pool, jobs, oldTerm.Token, "old-leader, late")
	if !errors.Is(err, fence.ErrStaleToken) {
		t.Fatalf("the old leader's late write: %v, want ErrStaleToken", err)
	}
	if w := writer(t, pool, jobs); w != "new-leader" {
		t.Fatalf("writer = %q, want new-leader", w)
	}
}

// The stale token's error names the token refused and the highest
// accepted, from Do and from Check, whose transaction stays usable to roll
// back.
func TestStaleErrorNamesTheHighestAccepted(t *testing.T) {
	ctx := t.Context()
	pool := newPool(t)
	f, jobs := setup(t, pool)
	if err := write(ctx, f, pool, jobs, 7, "term 7"); err != nil {
		t.Fatal(err)
	}
	check := func(what string, err error) {
		t.Helper()
		se, ok := errors.AsType[*fence.StaleTokenError](err)
		if !ok || se.Token != 5 || se.Highest != 7 || !errors.Is(err, fence.ErrStaleToken) {
			t.Fatalf("%s = %v, want a StaleTokenError{5, 7}", what, err)
		}
		if !strings.Contains(err.Error(), "token 5 refused, the highest accepted is 7") {
			t.Errorf("%s: error %q does not name both tokens", what, err)
		}
	}
	check("Do(5)", write(ctx, f, pool, jobs, 5, "term 5"))
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	check("Check(5)", f.Check(ctx, tx, "jobs", 5))
	if err := tx.Rollback(ctx); err != nil {
		t.Fatalf("Rollback after a stale Check: %v", err)
	}
	if got := writer(t, pool, jobs); got != "term 7" {
		t.Errorf("writer %q, want term 7", got)
	}
}
