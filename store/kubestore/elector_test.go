package kubestore_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/tenure-go/tenure/internal/testcluster"
	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
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

// change is a leadership change reported by one elector, with when it was
// received.
type change struct {
	id string
	lead.Change
	at time.Time
}

// cluster is a set of electors of one election (the Lease "job"), each with
// a clientset of its own, as separate processes would have.
type cluster struct {
	t       testing.TB
	k       *testcluster.Kube
	ns      string
	changes chan change

	mu    sync.Mutex
	nodes map[string]*elector
}

type elector struct {
	e      *lead.Elector[meta]
	cancel context.CancelFunc
	done   chan error
}

func newCluster(t testing.TB, k *testcluster.Kube, ns string) *cluster {
	return &cluster{t: t, k: k, ns: ns, changes: make(chan change, 1000), nodes: map[string]*elector{}}
}

// clientset returns a new clientset of the cluster's server.
func (c *cluster) clientset() kubernetes.Interface {
	cs, err := kubernetes.NewForConfig(c.k.Config())
	if err != nil {
		c.t.Fatal(err)
	}
	return cs
}

// start starts an elector with identity id, replacing a stopped one of the
// same identity.
func (c *cluster) start(id string, cfg lease.Config, opts ...lead.Option) *elector {
	t := c.t
	t.Helper()
	st, err := kubestore.New[meta](c.clientset(), c.ns)
	if err != nil {
		t.Fatal(err)
	}
	opts = append([]lead.Option{
		lead.WithIdentity(id),
		lead.WithConfig(cfg),
		lead.WithLookupEnv(nil),
		lead.WithObserver(func(ch lead.Change) { c.changes <- change{id, ch, time.Now()} }),
	}, opts...)
	e, err := lead.New("job", st, opts...)
	if err != nil {
		t.Fatal(err)
	}
	e.SetMetadata(meta{Pod: id})
	ctx, cancel := context.WithCancel(context.Background())
	n := &elector{e: e, cancel: cancel, done: make(chan error, 1)}
	go func() { n.done <- e.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-e.Done() })
	c.mu.Lock()
	c.nodes[id] = n
	c.mu.Unlock()
	return n
}

// stop stops the elector id and waits for its Run to return.
func (c *cluster) stop(id string) {
	c.t.Helper()
	c.mu.Lock()
	n := c.nodes[id]
	c.mu.Unlock()
	n.cancel()
	timer := time.NewTimer(eventTimeout)
	defer timer.Stop()
	select {
	case err := <-n.done:
		if err != nil {
			c.t.Fatalf("%s: Run = %v", id, err)
		}
	case <-timer.C:
		c.t.Fatalf("%s: Run did not return within %v of its context ending", id, eventTimeout)
	}
}

// next returns the next change any elector reports within d.
func (c *cluster) next(d time.Duration) (change, bool) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case ch := <-c.changes:
		return ch, true
	case <-timer.C:
		return change{}, false
	}
}

// started waits for the next Started change, failing on any Stopped one
// unless from is one of allowStopped.
func (c *cluster) started(allowStopped ...string) change {
	c.t.Helper()
	for {
		ch, ok := c.next(eventTimeout)
		if !ok {
			c.t.Fatalf("nobody started leading within %v", eventTimeout)
		}
		if ch.Kind == lead.Started {
			return ch
		}
		if !slices.Contains(allowStopped, ch.id) {
			c.t.Fatalf("%s stopped leading (token %d): %v", ch.id, ch.Term.Token, ch.Reason)
		}
	}
}

// leaders returns the electors that say they lead.
func (c *cluster) leaders() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ids []string
	for id, n := range c.nodes {
		if n.e.IsLeader() {
			ids = append(ids, id)
		}
	}
	return ids
}

func (c *cluster) startThree(cfg lease.Config, opts ...lead.Option) {
	for _, id := range []string{"pod-a", "pod-b", "pod-c"} {
		c.start(id, cfg, opts...)
	}
}

// After a release the successor leads at once, told by the watch, not
// after the lease expires.
func TestElectorReleaseHandover(t *testing.T) {
	cfg := electorConfig()
	e := newEnv(t, "handover")
	c := newCluster(t, e.k, e.ns)
	c.startThree(cfg)
	first := c.started()
	stopping := time.Now()
	c.stop(first.id)
	second := c.started(first.id)
	took := second.at.Sub(stopping)
	t.Logf("handover from stop to successor leading: %v", took)
	if second.id == first.id {
		t.Fatalf("%s led again after it stopped", first.id)
	}
	if second.Term.Token <= first.Term.Token {
		t.Fatalf("token went from %d to %d", first.Term.Token, second.Term.Token)
	}
	// Polling alone would take a retry interval or more; the watch tells
	// the followers of the release at once.
	if took >= cfg.RetryInterval {
		t.Fatalf("handover took %v, not less than the retry interval %v: the successor did not learn of the release through the watch", took, cfg.RetryInterval)
	}
	rec, _ := c.nodes[second.id].e.Record()
	if rec.Holder != second.id || rec.Transitions == 0 || rec.Metadata.Pod != second.id {
		t.Fatalf("record after handover: %+v", rec)
	}
}

// A leader that stops without releasing (a crash) is succeeded once its
// lease has run out.
func TestElectorCrashFailover(t *testing.T) {
	cfg := electorConfig()
	e := newEnv(t, "crash")
	c := newCluster(t, e.k, e.ns)
	c.startThree(cfg, lead.WithReleaseOnStop(false))
	first := c.started()
	crashed := time.Now()
	c.stop(first.id)
	second := c.started(first.id)
	took := second.at.Sub(crashed)
	t.Logf("failover after crash: %v (lease %v)", took, cfg.LeaseDuration)
	if second.Term.Token <= first.Term.Token {
		t.Fatalf("token went from %d to %d", first.Term.Token, second.Term.Token)
	}
	// Followers saw the last renewal at most one retry interval before the
	// crash and wait one LeaseDuration from then.
	if lo := cfg.LeaseDuration - cfg.MaxRetryInterval(); took < lo {
		t.Fatalf("failover after %v, before the lease could have expired (%v)", took, lo)
	}
	if hi := cfg.LeaseDuration + 3*time.Second; took > hi {
		t.Fatalf("failover took %v, more than %v", took, hi)
	}
}

// The API server dies (SIGKILL) while a leader holds the Lease: the leader
// steps down within RenewDeadline, nobody leads while the server is gone,
// and once it is back (with its data, in etcd) leadership resumes with a
// larger token.
func TestElectorAPIServerRestart(t *testing.T) {
	cfg := electorConfig()
	k := testcluster.NewKube(t, testcluster.KubeOptions{})
	c := newCluster(t, k, k.Namespace(t, "restart"))
	c.startThree(cfg)
	first := c.started()
	// Let a few renewals pass.
	renewals := time.NewTimer(3 * cfg.RetryInterval)
	<-renewals.C
	if err := k.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()

	// The leader's belief ends RenewDeadline after its last successful
	// renewal was sent, which was before the kill; the observer may add a
	// little scheduling delay.
	ch, ok := c.next(cfg.RenewDeadline + time.Second)
	if !ok || ch.Kind != lead.Stopped || ch.id != first.id {
		t.Fatalf("after the kill: %+v, %v; want %s to stop leading", ch, ok, first.id)
	}
	took := ch.at.Sub(killed)
	t.Logf("leader stepped down %v after the API server was killed", took)
	if took > cfg.RenewDeadline+100*time.Millisecond {
		t.Fatalf("the leader stepped down %v after the kill, later than RenewDeadline (%v)", took, cfg.RenewDeadline)
	}
	if ids := c.leaders(); len(ids) != 0 {
		t.Fatalf("%v lead with the server gone", ids)
	}

	// The outage: two lease durations without a server. Nobody may start.
	if ch, ok := c.next(2 * cfg.LeaseDuration); ok {
		t.Fatalf("with the server gone: %+v", ch)
	}
	if ids := c.leaders(); len(ids) != 0 {
		t.Fatalf("%v lead with the server gone", ids)
	}

	starting := time.Now()
	if err := k.Start(); err != nil {
		t.Fatal(err)
	}
	ready := time.Now()
	second := c.started()
	t.Logf("the API server took %v to be ready again; leader again %v after that, token %d (was %d)",
		ready.Sub(starting), second.at.Sub(ready), second.Term.Token, first.Term.Token)
	if second.Term.Token <= first.Term.Token {
		t.Fatalf("token after the restart %d, not above %d", second.Term.Token, first.Term.Token)
	}
	if ids := c.leaders(); len(ids) > 1 {
		t.Fatalf("%v lead at once", ids)
	}
}
