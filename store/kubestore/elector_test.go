package kubestore_test

import (
	"testing"
	"time"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/kubestore"
)

// electorConfig is short enough for tests, in the whole seconds a Lease
// counts in: a 2s lease, a 1.5s renew deadline, 200ms retries, 1s backend
// timeout.
func electorConfig() lease.Config {
	return lease.Config{
		LeaseDuration:  2 * time.Second,
		RenewDeadline:  1500 * time.Millisecond,
		RetryInterval:  200 * time.Millisecond,
		RetryJitter:    0.1,
		BackendTimeout: time.Second,
		ErrorInterval:  time.Second,
	}
}

// newCluster returns the electors of one election (the Lease "job" in
// namespace ns), each with a coordination/v1 client of its own (no
// clientset, as storeurl makes it), as separate processes would have, and
// its identity as its metadata.
func newCluster(t testing.TB, k *testcluster.Kube, ns string) *testcluster.Electors[meta] {
	c := testcluster.NewElectors(t, "job", eventTimeout, func(t testing.TB) store.Store[meta] {
		st, err := kubestore.New[meta](k.Leases(t), ns)
		if err != nil {
			t.Fatal(err)
		}
		return st
	})
	c.BeforeRun = func(e *lead.Elector[meta]) { e.SetMetadata(meta{Pod: e.Identity()}) }
	return c
}

var pods = []string{"pod-a", "pod-b", "pod-c"}

// After a release the successor leads at once, told by the watch, not
// after the lease expires.
func TestElectorReleaseHandover(t *testing.T) {
	cfg := electorConfig()
	e := newEnv(t, "handover")
	c := newCluster(t, e.k, e.ns)
	c.StartEach(pods, cfg)
	// Polling alone would take a retry interval or more; the watch tells
	// the followers of the release at once.
	second := c.ReleaseHandover(cfg.RetryInterval)
	if rec, _ := c.Elector(second.ID).Record(); rec.Metadata.Pod != second.ID {
		t.Fatalf("record after handover: %+v", rec)
	}
}

// A leader that stops without releasing (a crash) is succeeded once its
// lease has run out.
func TestElectorCrashFailover(t *testing.T) {
	cfg := electorConfig()
	e := newEnv(t, "crash")
	c := newCluster(t, e.k, e.ns)
	c.StartEach(pods, cfg, lead.WithReleaseOnStop(false))
	c.CrashFailover(cfg)
}

// The API server dies (SIGKILL) while a leader holds the Lease: the leader
// steps down within RenewDeadline, nobody leads while the server is gone,
// and once it is back (with its data, in etcd) leadership resumes with a
// larger token.
func TestElectorAPIServerRestart(t *testing.T) {
	cfg := electorConfig()
	k := testcluster.NewKube(t, testcluster.KubeOptions{})
	c := newCluster(t, k, k.Namespace(t, "restart"))
	c.StartEach(pods, cfg)
	first := c.LeaderOutage(cfg, "API server", k.Kill)

	starting := time.Now()
	if err := k.Start(); err != nil {
		t.Fatal(err)
	}
	ready := time.Now()
	second := c.NextLeader()
	t.Logf("the API server took %v to be ready again; leader again %v after that, token %d (was %d)",
		ready.Sub(starting), second.At.Sub(ready), second.Term.Token, first.Term.Token)
	if second.Term.Token <= first.Term.Token {
		t.Fatalf("token after the restart %d, not above %d", second.Term.Token, first.Term.Token)
	}
	if ids := c.Leaders(); len(ids) > 1 {
		t.Fatalf("%v lead at once", ids)
	}
}
