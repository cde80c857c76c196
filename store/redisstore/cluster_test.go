package redisstore_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/redisstore"
	"github.com/tenure-go/tenure/store/storetest"
)

// The store on a *redis.ClusterClient against a real (one-node) Redis
// Cluster: the conformance suite passes, each record's key and channel share
// one hash slot chosen by the name alone, and braces in a name do not pick
// another name's slot.
func TestClusterClientKeepsTheContract(t *testing.T) {
	srv := testcluster.NewRedisCluster(t)
	t.Run("Conformance", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) store.Store[storetest.Meta] {
			st, err := redisstore.New[storetest.Meta](srv.ClusterClient(t), redisstore.WithPrefix("conformance:"))
			if err != nil {
				t.Fatal(err)
			}
			return st
		})
	})
	t.Run("Slots", func(t *testing.T) {
		admin := srv.Client(t)
		ctx := t.Context()
		st, err := redisstore.New[meta](srv.ClusterClient(t), redisstore.WithPrefix("app:"))
		if err != nil {
			t.Fatal(err)
		}
		slot := func(key string) int64 {
			t.Helper()
			n, err := admin.ClusterKeySlot(ctx, key).Result()
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		for _, name := range []string{"billing", "a:b", "{x}", "{x}y", "x}", "%7Bx%7D", "ünï cødé"} {
			key := mustKey(t, st, name)
			ch, _ := st.Channel(name)
			if slot(key) != slot(ch) {
				t.Errorf("name %q: key %q in slot %d, channel %q in slot %d", name, key, slot(key), ch, slot(ch))
			}
		}
		// Without escaping, "{x}" and "{x}y" would both hash by "x". With
		// it, each name is its own hash tag.
		if slot(mustKey(t, st, "{x}")) == slot(mustKey(t, st, "{x}y")) && slot(mustKey(t, st, "{x}")) == slot("x") {
			t.Error(`names "{x}" and "{x}y" both hash by "x"`)
		}
		// A write and a watch through the cluster client.
		ch, err := st.Watch(ctx, "{x}y")
		if err != nil {
			t.Fatal(err)
		}
		if ev := nextEvent(t, ch); !ev.Absent {
			t.Fatalf("first event %+v, want Absent", ev)
		}
		for i := range 3 {
			mustSwap(t, st, fmt.Sprint("other-", i), 0, rec("a", 1))
		}
		_, rev := mustSwap(t, st, "{x}y", 0, rec("a", 1))
		waitRevision(t, ch, rev)
	})
	t.Run("ServerRestart", func(t *testing.T) {
		st, err := redisstore.New[meta](srv.ClusterClient(t), redisstore.WithPrefix("restart:"),
			redisstore.WithWatchBackoff(10*time.Millisecond, 100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		ctx := t.Context()
		r, rev := mustSwap(t, st, "job", 0, rec("a", 1))
		ch, err := st.Watch(ctx, "job")
		if err != nil {
			t.Fatal(err)
		}
		waitRevision(t, ch, rev)
		if err := srv.Restart(); err != nil {
			t.Fatal(err)
		}
		if ev := nextEvent(t, ch); !ev.Absent {
			t.Fatalf("after the restart: %+v, want Absent", ev)
		}
		again, rev2 := mustSwap(t, st, "job", 0, rec("b", 1))
		if again.Token <= r.Token || rev2 <= rev {
			t.Fatalf("after the restart: token %d, revision %d; want above %d, %d", again.Token, rev2, r.Token, rev)
		}
		waitRevision(t, ch, rev2)
	})
}
