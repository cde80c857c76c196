package etcdstore_test

import (
	"context"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/etcdstore"
	"github.com/tenure-go/tenure/store/storetest"
)

// The suite, and its token floor across a reopen: each reopened store has
// a client of its own on one server, and a name whose record and token
// key were both deleted by hand gets a new term's token above every token
// issued before, from the clock.
func TestConformance(t *testing.T) {
	open := func(t *testing.T) *etcdstore.Store[storetest.Meta] {
		st, err := etcdstore.New[storetest.Meta](newClient(t, testcluster.PackageEtcd(t)), etcdstore.WithPrefix("conformance/"))
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	del := func(t *testing.T, name string) {
		st := open(t)
		key, err := st.Key(name)
		if err != nil {
			t.Fatal(err)
		}
		tokenKey, err := st.TokenKey(name)
		if err != nil {
			t.Fatal(err)
		}
		cli := newClient(t, testcluster.PackageEtcd(t))
		if _, err := cli.Txn(context.Background()).Then(clientv3.OpDelete(key), clientv3.OpDelete(tokenKey)).Commit(); err != nil {
			t.Fatal(err)
		}
	}
	// A corrupt record: a value that is not a record.
	corrupt := func(t *testing.T, _ store.Store[storetest.Meta], name string) {
		key, err := open(t).Key(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := newClient(t, testcluster.PackageEtcd(t)).Put(context.Background(), key, "{not json"); err != nil {
			t.Fatal(err)
		}
	}
	storetest.Run(t, func(t *testing.T) store.Store[storetest.Meta] { return open(t) },
		storetest.WithReopen(func(t *testing.T) store.Store[storetest.Meta] { return open(t) }),
		storetest.WithDelete[storetest.Meta](del), storetest.WithCorrupt(corrupt))
}
