package pgstore_test

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/fence/pgfence"
	"github.com/tenure-go/tenure/store"
)

// A restore of the table from an older copy brings back the row as it
// was, token and revision included. The next term still gets a token
// above the term the restore lost (new terms' tokens are floored at the
// server's clock), so a fence that accepted the new term's write refuses
// the lost term's late one.
func TestRestoreNeverReusesAToken(t *testing.T) {
	ctx := testCtx(t)
	pool := newPool(t)
	st := newStore(t, pool)
	a, revA := mustSwap(t, st, "job", 0, rec("a", 1))
	backup := freshTable()
	exec(t, pool, "CREATE TABLE "+backup+" AS SELECT * FROM "+st.Table())
	var seq int64
	if err := pool.QueryRow(ctx, "SELECT last_value FROM "+st.Sequence()).Scan(&seq); err != nil {
		t.Fatal(err)
	}
	// b's term, which the restore loses, and its renewals.
	b, revB := mustSwap(t, st, "job", revA, rec("b", a.Token+1))
	for range 3 {
		_, revB = mustSwap(t, st, "job", revB, b)
	}
	exec(t, pool, "DELETE FROM "+st.Table())
	exec(t, pool, "INSERT INTO "+st.Table()+" SELECT * FROM "+backup)
	exec(t, pool, "SELECT setval($1::text::regclass, $2)", st.Sequence(), seq)
	restored, rev, err := st.Get(ctx, "job")
	if err != nil || restored.Holder != "a" || restored.Token != a.Token || rev != revA {
		t.Fatalf("after the restore: %+v at %d, %v; want a's record at %d", restored, rev, err, revA)
	}
	c, revC := mustSwap(t, st, "job", rev, rec("c", restored.Token+1))
	if c.Token <= b.Token {
		t.Fatalf("the term after the restore got token %d, not above the lost term's %d", c.Token, b.Token)
	}
	// The restored sequence hands out numbers it handed out before; the
	// new term's revisions are still above every revision b saw, so b's
	// renewal from its last revision cannot land on c's record.
	for range 3 {
		if revC <= revB {
			t.Fatalf("the new term is at revision %d, not above the lost term's last %d", revC, revB)
		}
		_, revC = mustSwap(t, st, "job", revC, c)
	}
	if _, _, err := st.CompareAndSwap(ctx, "job", revB, b); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("the lost term's renewal from revision %d: %v, want a conflict", revB, err)
	}
	f, err := pgfence.New(pgfence.WithTable(freshTable()))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	write := func(pgx.Tx) error { return nil }
	if err := f.Do(ctx, pool, "resource", fence.Token(c.Token), write); err != nil {
		t.Fatalf("the new term's write: %v", err)
	}
	if err := f.Do(ctx, pool, "resource", fence.Token(b.Token), write); !errors.Is(err, fence.ErrStaleToken) {
		t.Fatalf("the lost term's late write: %v, want an error wrapping fence.ErrStaleToken", err)
	}
}
