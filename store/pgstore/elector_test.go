package pgstore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/internal/testcluster"
	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/pgstore"
	"github.com/tenure-go/tenure/store/storetest"
)

// fastConfig is the short timing the elector tests run with.
func fastConfig() lease.Config {
	return lease.Config{
		LeaseDuration:  time.Second,
		RenewDeadline:  600 * time.Millisecond,
		RetryInterval:  100 * time.Millisecond,
		RetryJitter:    0.1,
		BackendTimeout: 200 * time.Millisecond,
		ErrorInterval:  time.Second,
	}
}

// node is one elector of a test, with the changes it reported.
type node struct {
	e       *lead.Elector[storetest.Meta]
	changes chan lead.Change
	cancel  context.CancelFunc
}

// electors keeps every term started in a test, to check that tokens only
// grow.
type electors struct {
	t      *testing.T
	st     store.Store[storetest.Meta]
	cfg    lease.Config
	name   string
	mu     sync.Mutex
	tokens []fence.Token
}

func newElectors(t *testing.T, st store.Store[storetest.Meta], cfg lease.Config) *electors {
	return &electors{t: t, st: st, cfg: cfg, name: freshTable()}
}

// start runs a new elector until the test ends or stop is called.
func (c *electors) start(id string, opts ...lead.Option) *node {
	c.t.Helper()
	n := &node{changes: make(chan lead.Change, 64)}
	opts = append([]lead.Option{
		lead.WithIdentity(id), lead.WithConfig(c.cfg),
		lead.WithObserver(func(ch lead.Change) {
			if ch.Kind == lead.Started {
				c.mu.Lock()
				c.tokens = append(c.tokens, ch.Term.Token)
				c.mu.Unlock()
			}
			n.changes <- ch
		}),
	}, opts...)
	e, err := lead.New(c.name, c.st, opts...)
	if err != nil {
		c.t.Fatal(err)
	}
	n.e = e
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	go func() { _ = e.Run(ctx) }()
	c.t.Cleanup(func() { cancel(); <-e.Done() })
	return n
}

// stop ends the elector's Run and waits for it.
func (n *node) stop() {
	n.cancel()
	<-n.e.Done()
}

// next waits for the elector's next change of kind.
func (n *node) next(t *testing.T, kind lead.ChangeKind, within time.Duration) lead.Change {
	t.Helper()
	timeout := time.After(within)
	for {
		select {
		case ch := <-n.changes:
			if ch.Kind == kind {
				return ch
			}
		case <-timeout:
			t.Fatalf("%s: no %v change within %v", n.e.Identity(), kind, within)
		}
	}
}

// first waits until one of nodes starts leading and returns it.
func first(t *testing.T, within time.Duration, nodes ...*node) (*node, lead.Term) {
	t.Helper()
	type won struct {
		n    *node
		term lead.Term
	}
	winner := make(chan won, len(nodes))
	stop := make(chan struct{})
	defer close(stop)
	for _, n := range nodes {
		go func() {
			for {
				select {
				case ch := <-n.changes:
					if ch.Kind == lead.Started {
						winner <- won{n, ch.Term}
						return
					}
				case <-stop:
					return
				}
			}
		}()
	}
	select {
	case w := <-winner:
		return w.n, w.term
	case <-time.After(within):
		t.Fatalf("nobody led within %v", within)
	}
	panic("unreachable")
}

// leaderAndFollower starts a, waits until it leads, then starts b and waits
// until b follows a.
func (c *electors) leaderAndFollower(aOpts ...lead.Option) (a *node, aTerm lead.Term, b *node) {
	c.t.Helper()
	a = c.start("a", aOpts...)
	aTerm = a.next(c.t, lead.Started, 10*time.Second).Term
	b = c.start("b")
	waitSees(c.t, c.st.(*pgstore.Store[storetest.Meta]), c.name, b.e, "a")
	return a, aTerm, b
}

// checkTokens checks that the tokens of successive terms strictly grew.
func (c *electors) checkTokens() {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := 1; i < len(c.tokens); i++ {
		if c.tokens[i] <= c.tokens[i-1] {
			c.t.Errorf("term %d has token %d, not above the %d of the term before (all: %v)", i, c.tokens[i], c.tokens[i-1], c.tokens)
		}
	}
}

// waitSees waits until e is ready and has seen leader hold the lease.
func waitSees(tb testing.TB, st *pgstore.Store[storetest.Meta], name string, e *lead.Elector[storetest.Meta], leader string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w, err := st.Watch(ctx, name)
	if err != nil {
		tb.Fatal(err)
	}
	select {
	case <-e.Ready(): // its first read is done
	case <-ctx.Done():
		tb.Fatalf("%s never got ready", e.Identity())
	}
	for {
		if rec, ok := e.Record(); ok && rec.Holder == leader {
			return
		}
		select {
		case <-w: // something changed; look again
		case <-ctx.Done():
			tb.Fatalf("%s never saw %s lead", e.Identity(), leader)
		}
	}
}

func TestElectorReleaseHandover(t *testing.T) {
	pool := newPool(t)
	st := newStore(t, pool)
	// A long lease: the successor must take over well before it expires.
	cfg := lease.DefaultConfig()
	c := newElectors(t, st, cfg)
	a, aTerm, b := c.leaderAndFollower()

	released := time.Now()
	a.stop()
	if a.e.IsLeader() {
		t.Fatal("a still reports leading after Run returned")
	}
	bTerm := b.next(t, lead.Started, cfg.LeaseDuration/2).Term
	d := time.Since(released)
	if d >= cfg.LeaseDuration/2 {
		t.Fatalf("handover took %v: the release was not used", d)
	}
	t.Logf("handover after release: %v (RetryInterval %v)", d, cfg.RetryInterval)
	if bTerm.Token <= aTerm.Token {
		t.Fatalf("b's token %d is not above a's %d", bTerm.Token, aTerm.Token)
	}
	rec, _, err := st.Get(t.Context(), c.name)
	if err != nil || rec.Holder != "b" || rec.Token != uint64(bTerm.Token) || rec.Transitions < 1 {
		t.Fatalf("record %+v, %v; want b with token %d after a transition", rec, err, bTerm.Token)
	}
	c.checkTokens()
}

func TestElectorCrashFailover(t *testing.T) {
	pool := newPool(t)
	st := newStore(t, pool)
	cfg := fastConfig()
	c := newElectors(t, st, cfg)
	a, aTerm, b := c.leaderAndFollower(lead.WithReleaseOnStop(false))

	crashed := time.Now()
	a.stop() // no release: to b, a crashed
	bTerm := b.next(t, lead.Started, 10*cfg.LeaseDuration).Term
	// b may take over only once the lease has expired by its own clock,
	// counted from when it first saw a's last revision (before the crash).
	if d := time.Since(crashed); d < cfg.LeaseDuration-cfg.RetryInterval*2 {
		t.Fatalf("b took over %v after the crash, before the %v lease could expire", d, cfg.LeaseDuration)
	}
	if bTerm.Token <= aTerm.Token {
		t.Fatalf("b's token %d is not above a's %d", bTerm.Token, aTerm.Token)
	}
	c.checkTokens()
}

// outageWhileLeading breaks the server under a leader: the leader must stop
// believing it leads within RenewDeadline of the moment the server became
// unreachable; once the server is back, someone leads again with a larger
// token.
func TestElectorServerDownWhileLeading(t *testing.T) {
	pg := testcluster.PackagePostgres(t)
	pool := newPool(t, func(c *pgxpool.Config) { c.MaxConns = 8 })
	st := newStore(t, pool)
	cfg := fastConfig()
	c := newElectors(t, st, cfg)
	a, aTerm, b := c.leaderAndFollower()

	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	restarted := false
	defer func() {
		if !restarted {
			_ = pg.Start()
		}
	}()
	// No renewal sent from now on can succeed, so a's belief ends by
	// down+RenewDeadline at the latest.
	down := time.Now()
	checked := make(chan bool, 1)
	time.AfterFunc(cfg.RenewDeadline, func() { checked <- a.e.IsLeader() })
	stopped := a.next(t, lead.Stopped, 10*cfg.RenewDeadline)
	if still := <-checked; still {
		t.Fatalf("a still believed it led %v after the server went down", cfg.RenewDeadline)
	}
	t.Logf("a stepped down %v after the server went down: %v", time.Since(down), stopped.Reason)

	if err := pg.Start(); err != nil {
		t.Fatal(err)
	}
	restarted = true
	_, term := first(t, 10*cfg.LeaseDuration+10*time.Second, a, b)
	if term.Token <= aTerm.Token {
		t.Fatalf("the term after the outage has token %d, not above %d", term.Token, aTerm.Token)
	}
	c.checkTokens()
}

// TestElectorTerminatedSessions ends every session of the database, the
// store's pool and its listener included, while a leads. The store repeats
// statements that provably did not run, so the leader normally keeps
// leading; if it does step down, the next term has a larger token. Either
// way renewals go on.
func TestElectorTerminatedSessions(t *testing.T) {
	pool := newPool(t, func(c *pgxpool.Config) { c.MaxConns = 8 })
	st := newStore(t, pool)
	cfg := fastConfig()
	c := newElectors(t, st, cfg)
	_, aTerm, _ := c.leaderAndFollower()

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	w, err := st.Watch(ctx, c.name)
	if err != nil {
		t.Fatal(err)
	}
	last := <-w
	for round := range 3 {
		if n := terminate(t, "%"); n == 0 {
			t.Fatalf("round %d: no session terminated", round)
		}
		// Wait for two writes after the termination: renewals (or a
		// new term) go on, and the watch (whose session was ended too)
		// delivers them.
		before := last.Revision
		for seen := 0; seen < 2; {
			select {
			case ev, ok := <-w:
				if !ok {
					t.Fatal("watch closed")
				}
				if ev.Revision > before {
					seen++
					last = ev
				}
			case <-ctx.Done():
				t.Fatalf("round %d: no renewal after the sessions were terminated", round)
			}
		}
		if last.Record.Holder != "a" && last.Record.Token <= uint64(aTerm.Token) {
			t.Fatalf("after the termination %s holds with token %d, not above a's %d", last.Record.Holder, last.Record.Token, aTerm.Token)
		}
	}
	c.checkTokens()
}
