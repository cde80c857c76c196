package pgstore_test

import (
	"testing"

	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/pgstore"
	"github.com/tenure-go/tenure/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store[storetest.Meta] {
		return newStore(t, newPool(t))
	})
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
	})
}
