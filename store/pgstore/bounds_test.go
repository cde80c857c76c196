package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/pgstore"
	"github.com/tenure-go/tenure/store/storetest"
)

// editKeep changes the row of name with set (SQL), keeping its revision:
// what an older version of Tenure, a careless script or a restore leaves
// behind. It returns the revision.
func editKeep(t *testing.T, pool *pgxpool.Pool, st *pgstore.Store[storetest.Meta], name, set string) lease.Revision {
	t.Helper()
	var rev *int64
	err := pool.QueryRow(testCtx(t), "UPDATE "+st.Table()+" SET "+set+" WHERE name = $1 RETURNING revision", name).Scan(&rev)
	if err != nil {
		t.Fatalf("edit of %q (%s): %v", name, set, err)
	}
	if rev == nil {
		return 0
	}
	return lease.Revision(*rev)
}

// snapshot returns the row of name as text, to compare before and after.
func snapshot(t *testing.T, pool *pgxpool.Pool, st *pgstore.Store[storetest.Meta], name string) string {
	t.Helper()
	var s string
	if err := pool.QueryRow(testCtx(t), "SELECT r::text FROM "+st.Table()+" AS r WHERE name = $1", name).Scan(&s); err != nil {
		t.Fatalf("snapshot of %q: %v", name, err)
	}
	return s
}

// wantCorrupt checks that Get, swaps from each of revs (and from 0) and a
// new watch all report the record of name as corrupt, naming substr, and
// that the row is unchanged.
func wantCorrupt(t *testing.T, pool *pgxpool.Pool, st *pgstore.Store[storetest.Meta], name, substr string, revs ...lease.Revision) {
	t.Helper()
	ctx := testCtx(t)
	before := snapshot(t, pool, st, name)
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, store.ErrCorruptRecord) || errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), substr) {
			t.Errorf("%s: error %v, want ErrCorruptRecord naming %q", what, err, substr)
		}
	}
	_, rev, err := st.Get(ctx, name)
	check("Get", err)
	if rev != 0 {
		t.Errorf("Get returned revision %d with a corrupt record", rev)
	}
	for _, exp := range append([]lease.Revision{0}, revs...) {
		for _, next := range []lease.Record[storetest.Meta]{rec("a", 1), rec("b", 0), rec("b", 2)} {
			_, rev, err := st.CompareAndSwap(ctx, name, exp, next)
			check(fmt.Sprintf("CompareAndSwap from %d of %s with token %d", exp, next.Holder, next.Token), err)
			if rev != 0 {
				t.Errorf("CompareAndSwap returned revision %d with a corrupt record", rev)
			}
		}
	}
	if after := snapshot(t, pool, st, name); after != before {
		t.Errorf("the corrupt row was overwritten:\n%s\n->\n%s", before, after)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := st.Watch(wctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, w); !errors.Is(ev.Err, store.ErrCorruptRecord) {
		t.Errorf("first event of a watch: %+v, want an Err wrapping ErrCorruptRecord", ev)
	}
}

// A row outside the bounds of store.ValidateStored is corrupt, whether the
// edit gave it a new revision (as the docs say to) or kept the one a caller
// may still hold: no swap overwrites it.
func TestOutOfBoundsRowIsCorrupt(t *testing.T) {
	pool := newPool(t)
	st := newStore(t, pool)
	cases := []struct{ set, substr string }{
		{"token = 18446744073709551615", "token"},
		{"token = 9007199254740992", "token"},
		{"transitions = 18446744073709551615", "Transitions"},
		{"lease_duration_ns = 9223372036854775807", "LeaseDuration"},
		{"lease_duration_ns = 604800000000001", "LeaseDuration"},
		{"lease_duration_ns = 0", "LeaseDuration is 0"},
		{`holder = E'a\x1b[2J'`, "holder"},
		{`holder = E'a\u0085b'`, "holder"},
		{"holder = repeat('h', 254)", "holder"},
		{"acquired_at = 'infinity'", "acquired_at"},
		{"renewed_at = '-infinity'", "renewed_at"},
	}
	for i, c := range cases {
		for _, keep := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/keep=%v", c.set, keep), func(t *testing.T) {
				name := fmt.Sprintf("bounds-%d-%v", i, keep)
				_, rev := mustSwap(t, st, name, 0, rec("a", 1))
				if keep {
					editKeep(t, pool, st, name, c.set)
					wantCorrupt(t, pool, st, name, c.substr, rev)
				} else {
					edited := handEdit(t, pool, st, name, c.set)
					wantCorrupt(t, pool, st, name, c.substr, rev, edited)
				}
			})
		}
	}
}

// A NULL in any column (a table created by hand without NOT NULL, or
// altered since) is a corrupt record naming the column, not a scan error.
func TestNullColumns(t *testing.T) {
	pool := newPool(t)
	st := newStore(t, pool)
	if err := st.Migrate(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	cols := strings.Split("holder token revision acquired_at renewed_at lease_duration_ns transitions metadata", " ")
	for _, col := range cols {
		exec(t, pool, "ALTER TABLE "+st.Table()+" ALTER COLUMN "+col+" DROP NOT NULL")
	}
	for _, col := range cols {
		t.Run(col, func(t *testing.T) {
			name := "null-" + col
			_, rev := mustSwap(t, st, name, 0, rec("a", 1))
			editKeep(t, pool, st, name, col+" = NULL")
			wantCorrupt(t, pool, st, name, "column "+col+" is NULL", rev)
		})
	}
}

// The observed bug: after a row holding token 2^64-1 (an older version
// accepted it), a new term proposing the wrapped token 0 was stored with
// token 0. Now that row is corrupt; and at lease.MaxToken no new term is
// written, whatever it proposes.
func TestTokenNeverWrapsOrGoesBelow(t *testing.T) {
	pool := newPool(t)
	st := newStore(t, pool)
	ctx := testCtx(t)
	_, rev := mustSwap(t, st, "wrap", 0, rec("a", 1))
	editKeep(t, pool, st, "wrap", "token = 18446744073709551615")
	highest := uint64(1<<64 - 1)
	if _, _, err := st.CompareAndSwap(ctx, "wrap", rev, rec("b", highest+1)); !errors.Is(err, store.ErrCorruptRecord) {
		t.Fatalf("new term over token 2^64-1: %v, want ErrCorruptRecord", err)
	}
	var zeros int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+st.Table()+" WHERE token = 0").Scan(&zeros); err != nil || zeros != 0 {
		t.Fatalf("%d rows with token 0 (%v)", zeros, err)
	}

	top, rev := mustSwap(t, st, "top", 0, rec("a", lease.MaxToken))
	before := snapshot(t, pool, st, "top")
	for _, next := range []lease.Record[storetest.Meta]{rec("b", 0), rec("b", 1), rec("a", 1), rec("b", lease.MaxToken)} {
		if _, _, err := st.CompareAndSwap(ctx, "top", rev, next); !errors.Is(err, store.ErrTokenExhausted) {
			t.Errorf("new term of %s proposing %d over lease.MaxToken: %v, want ErrTokenExhausted", next.Holder, next.Token, err)
		}
	}
	if after := snapshot(t, pool, st, "top"); after != before {
		t.Errorf("a refused new term wrote:\n%s\n->\n%s", before, after)
	}
	if got, _ := mustSwap(t, st, "top", rev, top); got.Token != lease.MaxToken {
		t.Errorf("renewal at lease.MaxToken: token %d", got.Token)
	}
}

// A revision given to a row by hand above the sequence is not undone by
// the next write: revisions of a row only grow. A row at store.MaxRevision
// reads, but cannot be replaced.
func TestRevisionNeverGoesBack(t *testing.T) {
	pool := newPool(t)
	st := newStore(t, pool)
	ctx := testCtx(t)
	held, _ := mustSwap(t, st, "high", 0, rec("a", 1))
	high := editKeep(t, pool, st, "high", fmt.Sprintf("revision = %d", int64(1)<<62))
	if _, rev, err := st.Get(ctx, "high"); err != nil || rev != high {
		t.Fatalf("Get = revision %d, %v; want %d", rev, err, high)
	}
	if _, rev := mustSwap(t, st, "high", high, held); rev != high+1 {
		t.Fatalf("swap from revision 2^62 wrote revision %d, want %d", rev, high+1)
	}

	maxRev := editKeep(t, pool, st, "high", fmt.Sprintf("revision = %d", store.MaxRevision))
	if _, rev, err := st.Get(ctx, "high"); err != nil || rev != store.MaxRevision {
		t.Fatalf("Get = revision %d, %v; want store.MaxRevision", rev, err)
	}
	before := snapshot(t, pool, st, "high")
	if _, rev, err := st.CompareAndSwap(ctx, "high", maxRev, held); !errors.Is(err, store.ErrCorruptRecord) || rev != 0 {
		t.Errorf("swap from store.MaxRevision: %d, %v; want ErrCorruptRecord", rev, err)
	}
	if after := snapshot(t, pool, st, "high"); after != before {
		t.Errorf("the row at store.MaxRevision was overwritten")
	}
}

// Someone rewinds the row: the store reports it as it finds it, a swap from
// the revision before the rewind conflicts and returns the rewound record,
// and a swap from the rewound revision succeeds above it, a new term with a
// token above the stored one.
func TestRewoundRow(t *testing.T) {
	pool := newPool(t)
	st := newStore(t, pool)
	ctx := testCtx(t)
	for _, c := range []struct {
		label, set string
		holder     string // the holder after the rewind
	}{
		{"revision-1000", "revision = revision - 1000", "a"},
		{"revision 1, holder cleared", "revision = 1, holder = ''", ""},
	} {
		for _, newTerm := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/newTerm=%v", c.label, newTerm), func(t *testing.T) {
				name := fmt.Sprintf("rewound-%s-%v", c.label, newTerm)
				held, rev := mustSwap(t, st, name, 0, rec("a", 1))
				held, rev = mustSwap(t, st, name, rev, held)
				old := editKeep(t, pool, st, name, c.set)
				if old >= rev {
					t.Fatalf("the rewind left revision %d, not below %d", old, rev)
				}
				got, gotRev, err := st.Get(ctx, name)
				if err != nil || gotRev != old || got.Holder != c.holder || got.Token != held.Token {
					t.Fatalf("Get after the rewind = %+v at %d, %v; want holder %q, token %d at %d", got, gotRev, err, c.holder, held.Token, old)
				}
				cur, curRev, err := st.CompareAndSwap(ctx, name, rev, held)
				if !errors.Is(err, store.ErrConflict) || curRev != old || cur.Holder != c.holder || cur.Token != held.Token {
					t.Fatalf("swap from the revision before the rewind = %+v at %d, %v; want a conflict with the rewound record at %d", cur, curRev, err, old)
				}
				next := cur
				if newTerm || cur.Holder == "" {
					next = rec("b", cur.Token+1)
				}
				after, afterRev, err := st.CompareAndSwap(ctx, name, old, next)
				if err != nil {
					t.Fatalf("swap from the rewound revision: %v", err)
				}
				if afterRev <= old || afterRev <= rev {
					t.Errorf("revision %d after the rewound %d (and the %d before it)", afterRev, old, rev)
				}
				if next.Holder != cur.Holder && after.Token <= cur.Token {
					t.Errorf("new term token %d, want above the stored %d", after.Token, cur.Token)
				}
				if next.Holder == cur.Holder && after.Token != cur.Token {
					t.Errorf("renewal changed the token from %d to %d", cur.Token, after.Token)
				}
			})
		}
	}
}

// A table t whose sequence name t_revision is taken by an unrelated table:
// Migrate, and every operation, fail with ErrSchema naming the sequence,
// instead of `"t_revision" is not a sequence`.
func TestSequenceNameTaken(t *testing.T) {
	pool := newPool(t)
	ctx := testCtx(t)
	table := freshTable()
	exec(t, pool, "CREATE TABLE "+table+pgstore.SequenceSuffix+" (unrelated int)")
	st, err := pgstore.New[storetest.Meta](pool, pgstore.WithTable(table))
	if err != nil {
		t.Fatal(err)
	}
	want := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, pgstore.ErrSchema) || !strings.Contains(err.Error(), st.Sequence()) || !strings.Contains(err.Error(), "WithTable") {
			t.Errorf("%s: error %v, want ErrSchema naming %s and WithTable", what, err, st.Sequence())
		}
	}
	want("Migrate", st.Migrate(ctx))
	_, _, err = st.CompareAndSwap(ctx, "job", 0, rec("a", 1))
	want("CompareAndSwap", err)

	// With the schema made by hand, the name clash surfaces at the first
	// write.
	manual, err := pgstore.New[storetest.Meta](pool, pgstore.WithTable(table), pgstore.WithAutoMigrate(false))
	if err != nil {
		t.Fatal(err)
	}
	exec(t, pool, manual.SchemaSQL())
	_, _, err = manual.CompareAndSwap(ctx, "job", 0, rec("a", 1))
	want("CompareAndSwap without Migrate", err)
}

// A table of someone else's under the Store's table name, which CREATE
// TABLE IF NOT EXISTS leaves as it is: Migrate and the first use fail with
// ErrSchema naming the table and what it lacks, instead of the server's
// "column t.revision does not exist" at each statement; so do they with
// automatic creation off, and for a table that is missing then.
func TestTableOfAnotherShape(t *testing.T) {
	for _, c := range []struct {
		label, ddl string
		want       []string // in the error
	}{
		{"other columns", "CREATE TABLE %s (name text PRIMARY KEY, owner text, expires timestamptz)",
			[]string{"column holder is missing", "column revision is missing", "column metadata is missing"}},
		{"wrong types", "CREATE TABLE %s (name text PRIMARY KEY, holder text, token text, revision bigint, acquired_at timestamp, " +
			"renewed_at timestamptz, lease_duration_ns bigint, transitions numeric, metadata jsonb)",
			[]string{"column token is text", "column acquired_at is timestamp without time zone", "column metadata is jsonb"}},
		{"no unique name", "CREATE TABLE %s (name text, holder text, token numeric, revision bigint, acquired_at timestamptz, " +
			"renewed_at timestamptz, lease_duration_ns bigint, transitions numeric, metadata bytea)",
			[]string{"column name has no unique index"}},
		{"a view", "CREATE VIEW %s AS SELECT 1 AS one", []string{"it is a view, not a table"}},
	} {
		t.Run(c.label, func(t *testing.T) {
			pool := newPool(t)
			ctx := testCtx(t)
			table := freshTable()
			exec(t, pool, fmt.Sprintf(c.ddl, table))
			want := func(what string, err error) {
				t.Helper()
				if !errors.Is(err, pgstore.ErrSchema) || !strings.Contains(err.Error(), `"`+table+`"`) {
					t.Errorf("%s: error %v, want ErrSchema naming %s", what, err, table)
					return
				}
				for _, w := range c.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("%s: error %v, want it to say %q", what, err, w)
					}
				}
			}
			st, err := pgstore.New[storetest.Meta](pool, pgstore.WithTable(table))
			if err != nil {
				t.Fatal(err)
			}
			want("Migrate", st.Migrate(ctx))
			_, _, err = st.Get(ctx, "job")
			want("Get", err)
			_, _, err = st.CompareAndSwap(ctx, "job", 0, rec("a", 1))
			want("CompareAndSwap", err)

			manual, err := pgstore.New[storetest.Meta](pool, pgstore.WithTable(table), pgstore.WithAutoMigrate(false))
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = manual.CompareAndSwap(ctx, "job", 0, rec("a", 1))
			want("CompareAndSwap without automatic creation", err)
		})
	}
	t.Run("missing without automatic creation", func(t *testing.T) {
		pool := newPool(t)
		st := newStore(t, pool, pgstore.WithAutoMigrate(false))
		_, _, err := st.Get(testCtx(t), "job")
		if !errors.Is(err, pgstore.ErrSchema) || !strings.Contains(err.Error(), st.Table()) || !strings.Contains(err.Error(), "does not exist") {
			t.Errorf("Get: error %v, want ErrSchema saying %s does not exist", err, st.Table())
		}
	})
}

// oldSchema is the table (and sequence) that versions of the Store without
// the claim column made.
const oldSchema = `CREATE SEQUENCE %[1]s_revision AS bigint START WITH 1;
CREATE TABLE %[1]s (
	name              text PRIMARY KEY,
	holder            text NOT NULL,
	token             numeric(20,0) NOT NULL CHECK (token BETWEEN 0 AND 18446744073709551615),
	revision          bigint NOT NULL CHECK (revision > 0),
	acquired_at       timestamptz NOT NULL,
	renewed_at        timestamptz NOT NULL,
	lease_duration_ns bigint NOT NULL CHECK (lease_duration_ns >= 0),
	transitions       numeric(20,0) NOT NULL CHECK (transitions BETWEEN 0 AND 18446744073709551615),
	metadata          bytea NOT NULL
);
INSERT INTO %[1]s VALUES ('old', 'a', 7, 5, now(), now(), 15000000000, 1, '{}');`

// A table made before the claim column existed is the Store's all the
// same: the first use adds the column (a record written before reads back
// with Claim false, and Claim then round trips); with automatic creation
// off, the first use fails with ErrSchema saying what to run, and Migrate
// adds it.
func TestTableWithoutClaimIsMigrated(t *testing.T) {
	for _, auto := range []bool{true, false} {
		t.Run(fmt.Sprintf("auto %v", auto), func(t *testing.T) {
			pool := newPool(t)
			ctx := testCtx(t)
			table := freshTable()
			exec(t, pool, fmt.Sprintf(oldSchema, table))
			st, err := pgstore.New[storetest.Meta](pool, pgstore.WithTable(table), pgstore.WithAutoMigrate(auto))
			if err != nil {
				t.Fatal(err)
			}
			old, rev, err := st.Get(ctx, "old")
			if !auto {
				if !errors.Is(err, pgstore.ErrSchema) || !strings.Contains(err.Error(), "column claim") || !strings.Contains(err.Error(), "ADD COLUMN IF NOT EXISTS claim") {
					t.Fatalf("Get with automatic creation off: error %v; want ErrSchema saying how to add the column claim", err)
				}
				if err := st.Migrate(ctx); err != nil {
					t.Fatalf("Migrate: %v", err)
				}
				old, rev, err = st.Get(ctx, "old")
			}
			if err != nil || old.Holder != "a" || old.Token != 7 || old.Claim || rev != 5 {
				t.Fatalf("Get of the older record = %+v at %d, %v; want it, with no Claim", old, rev, err)
			}
			claim := rec("b", 1)
			claim.Claim = true
			got, _ := mustSwap(t, st, "new", 0, claim)
			if back, _, err := st.Get(ctx, "new"); err != nil || !got.Claim || !back.Claim {
				t.Fatalf("a claim on the migrated table: returned %+v, read back %+v, %v; want Claim", got, back, err)
			}
			if err := st.Migrate(ctx); err != nil {
				t.Fatalf("Migrate again: %v", err)
			}
		})
	}
}
