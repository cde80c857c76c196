package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/pgstore"
	"github.com/tenure-go/tenure/store/storetest"
)

// newElectors returns the electors of an election of a fresh name, all on
// st.
func newElectors(t *testing.T, st store.Store[storetest.Meta]) *testcluster.Electors[storetest.Meta] {
	return testcluster.NewElectors(t, freshTable(), 10*time.Second, func(testing.TB) store.Store[storetest.Meta] { return st })
}

// leaderAndFollower starts a, waits until it leads, then starts b and waits
// until b follows a.
func leaderAndFollower(t *testing.T, c *testcluster.Electors[storetest.Meta], st *pgstore.Store[storetest.Meta], cfg lease.Config, aOpts ...lead.Option) (aTerm lead.Term) {
	t.Helper()
	c.Start("a", cfg, aOpts...)
	aTerm = c.WaitStarted(10*time.Second, "a").Term
	b := c.Start("b", cfg)
	waitSees(t, st, c.Name(), b, "a")
	return aTerm
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
	c := newElectors(t, st)
	aTerm := leaderAndFollower(t, c, st, cfg)

	released := time.Now()
	c.Stop("a")
	if c.Elector("a").IsLeader() {
		t.Fatal("a still reports leading after Run returned")
	}
	bTerm := c.WaitStarted(cfg.LeaseDuration/2, "b").Term
	d := time.Since(released)
	if d >= cfg.LeaseDuration/2 {
		t.Fatalf("handover took %v: the release was not used", d)
	}
	t.Logf("handover after release: %v (RetryInterval %v)", d, cfg.RetryInterval)
	if bTerm.Token <= aTerm.Token {
		t.Fatalf("b's token %d is not above a's %d", bTerm.Token, aTerm.Token)
	}
	rec, _, err := st.Get(t.Context(), c.Name())
	if err != nil || rec.Holder != "b" || rec.Token != uint64(bTerm.Token) || rec.Transitions < 1 {
		t.Fatalf("record %+v, %v; want b with token %d after a transition", rec, err, bTerm.Token)
	}
	c.CheckTokens()
}

func TestElectorCrashFailover(t *testing.T) {
	pool := newPool(t)
	st := newStore(t, pool)
	cfg := testcluster.FastConfig()
	c := newElectors(t, st)
	aTerm := leaderAndFollower(t, c, st, cfg, lead.WithReleaseOnStop(false))

	crashed := time.Now()
	c.Stop("a") // no release: to b, a crashed
	started := c.WaitStarted(10*cfg.LeaseDuration, "b")
	bTerm := started.Term
	took := started.At.Sub(crashed)
	t.Logf("failover after crash: %v (lease %v)", took, cfg.LeaseDuration)
	// b may take over only once the lease has expired by its own clock,
	// counted from when it first saw a's last revision (before the crash).
	if took < cfg.LeaseDuration-cfg.RetryInterval*2 {
		t.Fatalf("b took over %v after the crash, before the %v lease could expire", took, cfg.LeaseDuration)
	}
	if bTerm.Token <= aTerm.Token {
		t.Fatalf("b's token %d is not above a's %d", bTerm.Token, aTerm.Token)
	}
	c.CheckTokens()
}

// outageWhileLeading breaks the server under a leader: the leader must stop
// believing it leads within RenewDeadline of the moment the server became
// unreachable; once the server is back, someone leads again with a larger
// token.
func TestElectorServerDownWhileLeading(t *testing.T) {
	pg := testcluster.PackagePostgres(t)
	pool := newPool(t, func(c *pgxpool.Config) { c.MaxConns = 8 })
	st := newStore(t, pool)
	cfg := testcluster.FastConfig()
	c := newElectors(t, st)
	aTerm := leaderAndFollower(t, c, st, cfg)

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
	time.AfterFunc(cfg.RenewDeadline, func() { checked <- c.Elector("a").IsLeader() })
	stopped := c.WaitStopped(10*cfg.RenewDeadline, "a")
	if still := <-checked; still {
		t.Fatalf("a still believed it led %v after the server went down", cfg.RenewDeadline)
	}
	t.Logf("a stepped down %v after the server went down: %v", time.Since(down), stopped.Reason)

	if err := pg.Start(); err != nil {
		t.Fatal(err)
	}
	restarted = true
	term := c.WaitStarted(10*cfg.LeaseDuration+10*time.Second, "a", "b").Term
	if term.Token <= aTerm.Token {
		t.Fatalf("the term after the outage has token %d, not above %d", term.Token, aTerm.Token)
	}
	c.CheckTokens()
}

// TestElectorTerminatedSessions ends every session of the database, the
// store's pool and its listener included, while a leads. The store repeats
// statements that provably did not run, so the leader normally keeps
// leading; if it does step down, the next term has a larger token. Either
// way renewals go on.
func TestElectorTerminatedSessions(t *testing.T) {
	pool := newPool(t, func(c *pgxpool.Config) { c.MaxConns = 8 })
	st := newStore(t, pool)
	cfg := testcluster.FastConfig()
	c := newElectors(t, st)
	aTerm := leaderAndFollower(t, c, st, cfg)

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	w, err := st.Watch(ctx, c.Name())
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
	c.CheckTokens()
}

// TestElectorAfterDropTable drops the table (and, in one case, the
// sequence) under a leader: the Store creates them again at its next use,
// the electors take the vanished row as a rollback (the leader steps down,
// nobody leads before a full lease has passed), and a leader is elected
// again, with a token above the dropped term's.
func TestElectorAfterDropTable(t *testing.T) {
	for _, c := range []struct {
		label string
		drop  func(st *pgstore.Store[storetest.Meta]) string
	}{
		{"table", func(st *pgstore.Store[storetest.Meta]) string { return "DROP TABLE " + st.Table() }},
		{"table and sequence", func(st *pgstore.Store[storetest.Meta]) string {
			return "DROP TABLE " + st.Table() + "; DROP SEQUENCE " + st.Sequence()
		}},
	} {
		t.Run(c.label, func(t *testing.T) {
			pool := newPool(t)
			st := newStore(t, pool)
			cfg := testcluster.FastConfig()
			els := newElectors(t, st)
			aTerm := leaderAndFollower(t, els, st, cfg)

			dropped := time.Now()
			exec(t, pool, c.drop(st))
			stopped := els.WaitStopped(10*cfg.LeaseDuration, "a")
			t.Logf("a stepped down %v after the drop: %v", time.Since(dropped), stopped.Reason)
			term := els.WaitStarted(10*cfg.LeaseDuration+10*time.Second, "a", "b")
			d := time.Since(dropped)
			t.Logf("%s leads again %v after the drop, token %d", term.ID, d, term.Term.Token)
			if d < cfg.LeaseDuration-cfg.RetryInterval*2 {
				t.Errorf("%s led again %v after the drop, before the dropped %v lease could expire", term.ID, d, cfg.LeaseDuration)
			}
			if term.Term.Token <= aTerm.Token {
				t.Errorf("the term after the drop has token %d, not above the dropped term's %d", term.Term.Token, aTerm.Token)
			}
			rec, _, err := st.Get(testCtx(t), els.Name())
			if err != nil || rec.Holder != term.ID {
				t.Errorf("record after the drop %+v, %v; want %s holding", rec, err, term.ID)
			}
			els.CheckTokens()
		})
	}
}
