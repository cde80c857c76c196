package redisstore_test

import (
	"testing"

	"github.com/tenure-go/tenure/internal/testcluster"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/redisstore"
	"github.com/tenure-go/tenure/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store[storetest.Meta] {
		srv := testcluster.PackageRedis(t)
		st, err := redisstore.New[storetest.Meta](srv.Client(t), redisstore.WithPrefix("conformance:"))
		if err != nil {
			t.Fatal(err)
		}
		return st
	})
}
