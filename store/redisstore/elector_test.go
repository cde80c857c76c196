package redisstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tenure-go/tenure/internal/testcluster"
	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store/redisstore"
)

// electorConfig is short enough for tests and valid: 1s lease, 600ms renew
// deadline, 100ms retries, 200ms backend timeout.
func electorConfig() lease.Config {
	return lease.Config{
		LeaseDuration:  time.Second,
		RenewDeadline:  600 * time.Millisecond,
		RetryInterval:  100 * time.Millisecond,
		RetryJitter:    0.1,
		BackendTimeout: 200 * time.Millisecond,
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

// cluster is a set of electors of one election, each with a client of its
// own, as separate processes would have.
type cluster struct {
	t       *testing.T
	srv     *testcluster.Redis
	prefix  string
	changes chan change
	nodes   map[string]*elector
}

type elector struct {
	e      *lead.Elector[meta]
	cancel context.CancelFunc
	done   chan error
}

func newCluster(t *testing.T, srv *testcluster.Redis) *cluster {
	return &cluster{t: t, srv: srv, prefix: uniquePrefix(t), changes: make(chan change, 1000), nodes: map[string]*elector{}}
}

// start starts an elector with identity id.
func (c *cluster) start(id string, cfg lease.Config, opts ...lead.Option) *elector {
	t := c.t
	t.Helper()
	client := c.srv.Client(t)
	st, err := redisstore.New[meta](client, redisstore.WithPrefix(c.prefix))
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
	ctx, cancel := context.WithCancel(context.Background())
	n := &elector{e: e, cancel: cancel, done: make(chan error, 1)}
	go func() { n.done <- e.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-e.Done() })
	c.nodes[id] = n
	return n
}

// stop stops the elector id and waits for its Run to return.
func (c *cluster) stop(id string) {
	c.t.Helper()
	n := c.nodes[id]
	n.cancel()
	select {
	case err := <-n.done:
		if err != nil {
			c.t.Fatalf("%s: Run = %v", id, err)
		}
	case <-time.After(eventTimeout):
		c.t.Fatalf("%s: Run did not return within %v of its context ending", id, eventTimeout)
	}
}

// handover stops the leader id and returns the next Started change, with
// the time from the stop to it.
func (c *cluster) handover(id string) (change, time.Duration) {
	c.t.Helper()
	stopping := time.Now()
	c.stop(id)
	next := c.started(id)
	return next, next.at.Sub(stopping)
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
		allowed := false
		for _, id := range allowStopped {
			allowed = allowed || id == ch.id
		}
		if !allowed {
			c.t.Fatalf("%s stopped leading (token %d): %v", ch.id, ch.Term.Token, ch.Reason)
		}
	}
}

// leaders returns the electors that say they lead.
func (c *cluster) leaders() []string {
	var ids []string
	for id, n := range c.nodes {
		if n.e.IsLeader() {
			ids = append(ids, id)
		}
	}
	return ids
}

func (c *cluster) startThree(cfg lease.Config, opts ...lead.Option) {
	for _, id := range []string{"a", "b", "c"} {
		c.start(id, cfg, opts...)
	}
}

// After a release the successor leads at once, not after the lease expires.
func TestElectorReleaseHandover(t *testing.T) {
	cfg := electorConfig()
	c := newCluster(t, testcluster.PackageRedis(t))
	c.startThree(cfg)
	first := c.started()
	second, took := c.handover(first.id)
	t.Logf("handover from stop to successor leading: %v", took)
	if second.id == first.id {
		t.Fatalf("%s led again after it stopped", first.id)
	}
	if second.Term.Token <= first.Term.Token {
		t.Fatalf("token went from %d to %d", first.Term.Token, second.Term.Token)
	}
	if took >= cfg.LeaseDuration/2 {
		t.Fatalf("handover took %v: the successor waited for expiry instead of the release", took)
	}
	rec, _ := c.nodes[second.id].e.Record()
	if rec.Holder != second.id || rec.Transitions == 0 {
		t.Fatalf("record after handover: %+v", rec)
	}
}

// A leader that stops without releasing (a crash) is succeeded once its
// lease has run out.
func TestElectorCrashFailover(t *testing.T) {
	cfg := electorConfig()
	c := newCluster(t, testcluster.PackageRedis(t))
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

// The server dies while a leader holds the lease: the leader steps down
// within RenewDeadline, nobody leads while the server is gone, and once it
// is back (empty) leadership resumes with a larger token.
func TestElectorServerKilled(t *testing.T) {
	cfg := electorConfig()
	srv := testcluster.NewRedis(t)
	c := newCluster(t, srv)
	c.startThree(cfg)
	first := c.started()
	// Let a few renewals pass.
	renewals := time.NewTimer(3 * cfg.RetryInterval)
	<-renewals.C
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()

	ch, ok := c.next(cfg.RenewDeadline + time.Second)
	if !ok || ch.Kind != lead.Stopped || ch.id != first.id {
		t.Fatalf("after the kill: %+v, %v; want %s to stop leading", ch, ok, first.id)
	}
	took := ch.at.Sub(killed)
	t.Logf("leader stepped down %v after the server was killed", took)
	// The leader's belief ends RenewDeadline after its last successful
	// renewal was sent, which was before the kill; the observer may add a
	// little scheduling delay.
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

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	second := c.started()
	t.Logf("leader again %v after the restart, token %d (was %d)", second.at.Sub(restarted), second.Term.Token, first.Term.Token)
	if second.Term.Token <= first.Term.Token {
		t.Fatalf("token after the restart %d, not above %d", second.Term.Token, first.Term.Token)
	}
	// The store may lose records, so an absent record is waited out for a
	// lease duration: a leader that missed the restart has stepped down
	// by then.
	if waited := second.at.Sub(restarted); waited < cfg.LeaseDuration-cfg.MaxRetryInterval() {
		t.Fatalf("led %v after the restart; an absent record must be waited out for LeaseDuration", waited)
	}
}

// Connections cut with CLIENT KILL (commands and Pub/Sub) do not cost the
// leader its term, and followers still hear of a release at once.
func TestElectorClientKill(t *testing.T) {
	cfg := electorConfig()
	srv := testcluster.PackageRedis(t)
	c := newCluster(t, srv)
	c.startThree(cfg)
	first := c.started()
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
	select {
	case ch := <-c.changes:
		t.Fatalf("after the kills: %+v", ch)
	default:
	}
	if term, ok := c.nodes[first.id].e.Term(); !ok || term.Token != first.Term.Token {
		t.Fatalf("%s: Term() = %+v, %v; want token %d", first.id, term, ok, first.Term.Token)
	}
	_, took := c.handover(first.id)
	if took >= cfg.LeaseDuration/2 {
		t.Fatalf("handover took %v after the connections were cut: the followers' watches did not recover", took)
	}
}

// Stopping elector n while the others keep running leaves exactly one
// leader at a time, with strictly increasing tokens.
func TestElectorTokensIncrease(t *testing.T) {
	cfg := electorConfig()
	c := newCluster(t, testcluster.PackageRedis(t))
	var last lead.Change
	for round := range 4 {
		for _, id := range []string{"a", "b"} {
			id := fmt.Sprintf("%s%d", id, round)
			c.start(id, cfg)
		}
		ch := c.started(stoppedIDs(c)...)
		if ch.Term.Token <= last.Term.Token {
			t.Fatalf("round %d: token %d after %d", round, ch.Term.Token, last.Term.Token)
		}
		if ids := c.leaders(); len(ids) > 1 {
			t.Fatalf("round %d: %v lead at once", round, ids)
		}
		last = ch.Change
		c.stop(ch.id)
	}
}

// stoppedIDs lists every elector id, all of which may report stopping.
func stoppedIDs(c *cluster) []string {
	var ids []string
	for id := range c.nodes {
		ids = append(ids, id)
	}
	return ids
}
