package pgstore

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

// plans returns how many executions of the swap statement, prepared on
// the one connection of st's pool, PostgreSQL ran on a generic plan and on
// a custom one.
func plans(ctx context.Context, t *testing.T, st *Store[string]) (generic, custom int64) {
	t.Helper()
	c, err := st.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	err = c.QueryRow(ctx, "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1", st.sqlUpdate).Scan(&generic, &custom)
	if err != nil {
		t.Fatalf("the swap statement is not prepared on the connection: %v", err)
	}
	return generic, custom
}

// The first read on a connection runs the swap statement there until
// PostgreSQL keeps its generic plan, so that a follower's takeover after a
// release, often the first swap it sends on that connection, is not
// planned anew (see warmRuns).
func TestReadLeavesTheSwapOnItsGenericPlan(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	st := internalStore(t, func(cfg *pgxpool.Config) {
		cfg.MaxConns = 1 // every call below runs on the same session
	})
	now := time.Now()
	held := lease.Record[string]{Holder: "a", AcquiredAt: now, RenewedAt: now, LeaseDuration: time.Minute, Metadata: "m"}
	_, rev, err := st.CompareAndSwap(ctx, "job", 0, held) // a create: another statement
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Get(ctx, "job"); err != nil {
		t.Fatal(err)
	}
	generic, custom := plans(ctx, t, st)
	if generic < 1 {
		t.Fatalf("after the first read, the swap ran %d times on a generic plan and %d on a custom one; want the warm-up to reach the generic plan", generic, custom)
	}

	// The leader releases, and a follower takes over with a guarded swap:
	// both on the generic plan, neither planned anew.
	released := held
	released.Holder = ""
	rel, rev, err := st.CompareAndSwap(ctx, "job", rev, released)
	if err != nil {
		t.Fatal(err)
	}
	next := lease.Record[string]{Holder: "b", AcquiredAt: now, RenewedAt: now, LeaseDuration: time.Minute, Metadata: "m"}
	if _, _, err := st.CompareReleasedAndSwap(ctx, "job", rev, store.Released{Token: rel.Token, Transitions: rel.Transitions, LeaseDuration: rel.LeaseDuration}, next); err != nil {
		t.Fatal(err)
	}
	g2, c2 := plans(ctx, t, st)
	if c2 != custom || g2 != generic+2 {
		t.Fatalf("the release and the takeover ran on %d generic and %d custom plans; want 2 generic, 0 custom", g2-generic, c2-custom)
	}
}
