package etcdstore_test

import (
	"testing"

	"github.com/tenure-go/tenure/internal/testcluster"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/etcdstore"
	"github.com/tenure-go/tenure/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store[storetest.Meta] {
		st, err := etcdstore.New[storetest.Meta](newClient(t, testcluster.PackageEtcd(t)), etcdstore.WithPrefix("conformance/"))
		if err != nil {
			t.Fatal(err)
		}
		return st
	})
}
