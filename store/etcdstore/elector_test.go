package etcdstore_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/etcdstore"
	"github.com/tenure-go/tenure/store/storetest"
)

// newCluster returns the electors of one election, "job", each with a
// client of its own, as separate processes would have.
func newCluster(t *testing.T, e *testcluster.Etcd) cluster {
	prefix := uniquePrefix(t)
	return cluster{testcluster.NewElectors(t, "job", eventTimeout, func(tb testing.TB) store.Store[storetest.Meta] {
		st, err := etcdstore.New[storetest.Meta](newClient(tb, e), etcdstore.WithPrefix(prefix))
		if err != nil {
			tb.Fatal(err)
		}
		return st
	}), prefix}
}

// cluster is the electors of one election and the key prefix of their
// stores.
type cluster struct {
	*testcluster.Electors[storetest.Meta]
	Prefix string
}

var three = []string{"a", "b", "c"}

// After a release the successor leads at once, not after the lease expires.
func TestElectorReleaseHandover(t *testing.T) {
	cfg := testcluster.FastConfig()
	c := newCluster(t, testcluster.PackageEtcd(t))
	c.StartEach(three, cfg)
	c.ReleaseHandover(cfg.LeaseDuration / 2)
}

// A leader that stops without releasing (a crash) is succeeded once its
// lease has run out.
func TestElectorCrashFailover(t *testing.T) {
	cfg := testcluster.FastConfig()
	c := newCluster(t, testcluster.PackageEtcd(t))
	c.StartEach(three, cfg, lead.WithReleaseOnStop(false))
	c.CrashFailover(cfg)
}

// etcd is killed while a leader holds the lease: the leader steps down
// within RenewDeadline and nobody leads while etcd is gone. etcd comes back
// with its data: the record is still there, so the next leader takes it
// with a larger token.
func TestElectorServerKilled(t *testing.T) {
	cfg := testcluster.FastConfig()
	e := testcluster.NewEtcd(t)
	c := newCluster(t, e)
	c.StartEach(three, cfg)
	first := c.LeaderOutage(cfg, "etcd", e.Kill)

	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	// The record survived: a fresh Store finds one at once (the old
	// leader's, or its successor's if it was quicker).
	st, err := etcdstore.New[storetest.Meta](newClient(t, e), etcdstore.WithPrefix(c.Prefix))
	if err != nil {
		t.Fatal(err)
	}
	if r, _, err := st.Get(t.Context(), c.Name()); err != nil || r.Token < uint64(first.Term.Token) {
		t.Fatalf("after the restart: %+v, %v; want a record with token at least %d", r, err, first.Term.Token)
	}
	second := c.NextLeader()
	t.Logf("leader again %v after the restart, token %d (was %d)", second.At.Sub(restarted), second.Term.Token, first.Term.Token)
	if second.Term.Token <= first.Term.Token {
		t.Fatalf("token after the restart %d, not above %d", second.Term.Token, first.Term.Token)
	}
}

// Stopping elector n while the others keep running leaves exactly one
// leader at a time, with strictly increasing tokens.
func TestElectorTokensIncrease(t *testing.T) {
	cfg := testcluster.FastConfig()
	c := newCluster(t, testcluster.PackageEtcd(t))
	var last lead.Change
	for round := range 4 {
		for _, id := range []string{"a", "b"} {
			c.Start(fmt.Sprintf("%s%d", id, round), cfg)
		}
		ch := c.NextLeader(c.IDs()...)
		if ch.Term.Token <= last.Term.Token {
			t.Fatalf("round %d: token %d after %d", round, ch.Term.Token, last.Term.Token)
		}
		if ids := c.Leaders(); len(ids) > 1 {
			t.Fatalf("round %d: %v lead at once", round, ids)
		}
		last = ch.Change
		c.Stop(ch.ID)
	}
}
