package redisstore_test

import (
	"context"
	"testing"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/redisstore"
	"github.com/tenure-go/tenure/store/storetest"
)

// The suite, and its token floor across a reopen: each reopened store has
// a client of its own on one server, and a record deleted by hand (DEL)
// gets a new term's token above every token issued before, from the
// server's clock.
func TestConformance(t *testing.T) {
	open := func(t *testing.T) *redisstore.Store[storetest.Meta] {
		st, err := redisstore.New[storetest.Meta](testcluster.PackageRedis(t).Client(t), redisstore.WithPrefix("conformance:"))
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	del := func(t *testing.T, name string) {
		key, err := open(t).Key(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := testcluster.PackageRedis(t).Client(t).Del(context.Background(), key).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// A corrupt record: a hash whose fields do not parse.
	corrupt := func(t *testing.T, _ store.Store[storetest.Meta], name string) {
		key, err := open(t).Key(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := testcluster.PackageRedis(t).Client(t).HSet(context.Background(), key, "rev", "x", "holder", "h").Err(); err != nil {
			t.Fatal(err)
		}
	}
	storetest.Run(t, func(t *testing.T) store.Store[storetest.Meta] { return open(t) },
		storetest.WithReopen(func(t *testing.T) store.Store[storetest.Meta] { return open(t) }),
		storetest.WithDelete[storetest.Meta](del), storetest.WithCorrupt(corrupt), storetest.WithStamps[storetest.Meta]())
}
