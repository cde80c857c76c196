package redisstore_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/redisstore"
)

// newCluster returns the electors of one election, "job", each with a
// client of its own, as separate processes would have.
func newCluster(t *testing.T, srv *testcluster.Redis) *testcluster.Electors[meta] {
	prefix := uniquePrefix(t)
	return testcluster.NewElectors(t, "job", eventTimeout, func(t testing.TB) store.Store[meta] {
		st, err := redisstore.New[meta](srv.Client(t), redisstore.WithPrefix(prefix))
		if err != nil {
			t.Fatal(err)
		}
		return st
	})
}

var three = []string{"a", "b", "c"}

// After a release the successor leads at once, not after the lease expires.
func TestElectorReleaseHandover(t *testing.T) {
	cfg := testcluster.FastConfig()
	c := newCluster(t, testcluster.PackageRedis(t))
	c.StartEach(three, cfg)
	// Well under the lease: the successor did not wait for expiry.
	c.ReleaseHandover(cfg.LeaseDuration / 2)
}

// A leader that stops without releasing (a crash) is succeeded once its
// lease has run out.
func TestElectorCrashFailover(t *testing.T) {
	cfg := testcluster.FastConfig()
	c := newCluster(t, testcluster.PackageRedis(t))
	c.StartEach(three, cfg, lead.WithReleaseOnStop(false))
	c.CrashFailover(cfg)
}

// The server dies while a leader holds the lease: the leader steps down
// within RenewDeadline, nobody leads while the server is gone, and once it
// is back (empty) leadership resumes with a larger token.
func TestElectorServerKilled(t *testing.T) {
	cfg := testcluster.FastConfig()
	srv := testcluster.NewRedis(t)
	c := newCluster(t, srv)
	c.StartEach(three, cfg)
	first := c.LeaderOutage(cfg, "server", srv.Kill)

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	second := c.NextLeader()
	t.Logf("leader again %v after the restart, token %d (was %d)", second.At.Sub(restarted), second.Term.Token, first.Term.Token)
	if second.Term.Token <= first.Term.Token {
		t.Fatalf("token after the restart %d, not above %d", second.Term.Token, first.Term.Token)
	}
	// The store may lose records, so an absent record is waited out for a
	// lease duration: a leader that missed the restart has stepped down
	// by then.
	if waited := second.At.Sub(restarted); waited < cfg.LeaseDuration-cfg.MaxRetryInterval() {
		t.Fatalf("led %v after the restart; an absent record must be waited out for LeaseDuration", waited)
	}
}

// Connections cut with CLIENT KILL (commands and Pub/Sub) do not cost the
// leader its term, and followers still hear of a release at once.
func TestElectorClientKill(t *testing.T) {
	cfg := testcluster.FastConfig()
	srv := testcluster.PackageRedis(t)
	c := newCluster(t, srv)
	c.StartEach(three, cfg)
	first := c.NextLeader()
	admin := srv.Client(t)
	ctx := t.Context()
	tick := time.NewTicker(2 * cfg.RetryInterval)
	defer tick.Stop()
	for i := range 5 {
		<-tick.C
		for _, typ := range []string{"normal", "pubsub"} {
			if err := admin.ClientKillByFilter(ctx, "TYPE", typ, "SKIPME", "yes").Err(); err != nil {
				t.Fatalf("round %d: CLIENT KILL TYPE %s: %v", i, typ, err)
			}
		}
	}
	// Renewals after the kills.
	<-tick.C
	<-tick.C
	if ch, ok := c.Next(0); ok {
		t.Fatalf("after the kills: %+v", ch)
	}
	if term, ok := c.Elector(first.ID).Term(); !ok || term.Token != first.Term.Token {
		t.Fatalf("%s: Term() = %+v, %v; want token %d", first.ID, term, ok, first.Term.Token)
	}
	_, took := c.Handover(first.ID)
	if took >= cfg.LeaseDuration/2 {
		t.Fatalf("handover took %v after the connections were cut: the followers' watches did not recover", took)
	}
}

// Stopping elector n while the others keep running leaves exactly one
// leader at a time, with strictly increasing tokens.
func TestElectorTokensIncrease(t *testing.T) {
	cfg := testcluster.FastConfig()
	c := newCluster(t, testcluster.PackageRedis(t))
	var last lead.Change
	for round := range 4 {
		for _, id := range []string{"a", "b"} {
			id := fmt.Sprintf("%s%d", id, round)
			c.Start(id, cfg)
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
