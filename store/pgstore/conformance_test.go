package pgstore_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/pgstore"
	"github.com/tenure-go/tenure/store/storetest"
)

// The suite, and its token floor across a reopen: each reopened store has
// a pool of its own on one table, and a record deleted by hand (DELETE
// FROM) gets a new term's token above every token issued before.
func TestConformance(t *testing.T) {
	table := freshTable()
	reopen := func(t *testing.T) store.Store[storetest.Meta] {
		st, err := pgstore.New[storetest.Meta](newPool(t), pgstore.WithTable(table))
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	del := func(t *testing.T, name string) {
		sql := "DELETE FROM " + pgx.Identifier{table}.Sanitize() + " WHERE name = $1"
		if _, err := newPool(t).Exec(context.Background(), sql, name); err != nil {
			t.Fatal(err)
		}
	}
	// A corrupt record: a row whose metadata is not JSON.
	corrupt := func(t *testing.T, st store.Store[storetest.Meta], name string) {
		sql := "INSERT INTO " + st.(*pgstore.Store[storetest.Meta]).Table() +
			` (name, holder, token, revision, acquired_at, renewed_at, lease_duration_ns, transitions, metadata)
			VALUES ($1, 'h', 1, 1, now(), now(), 1000000000, 0, '{'::bytea)`
		if _, err := newPool(t).Exec(context.Background(), sql, name); err != nil {
			t.Fatal(err)
		}
	}
	storetest.Run(t, func(t *testing.T) store.Store[storetest.Meta] {
		return newStore(t, newPool(t))
	}, storetest.WithReopen(reopen), storetest.WithDelete[storetest.Meta](del), storetest.WithCorrupt(corrupt),
		storetest.WithStamps[storetest.Meta]())
}

// TestConformanceSharedTable runs the suite with every store on the default
// table of one pool, as an application would.
func TestConformanceSharedTable(t *testing.T) {
	pool := newPool(t)
	storetest.Run(t, func(t *testing.T) store.Store[storetest.Meta] {
		st, err := pgstore.New[storetest.Meta](pool)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}, storetest.WithStamps[storetest.Meta]())
}
