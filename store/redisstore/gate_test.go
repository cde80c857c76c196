package redisstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/internal/testcluster"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

// The create gate against real servers (docs/design.md, "A faster first
// leader"): a create is vouched for on a healthy server once the marker
// has stood the new record's LeaseDuration, and never after the server
// lost its data (a restart without persistence, FLUSHALL, a failover to a
// replica that missed writes), however long the Store had seen the old
// marker. Each Store's clock is a fake one the test moves on, so that
// "the marker has stood a LeaseDuration" takes no waiting.

// gateLease is the LeaseDuration of the records of these tests.
const gateLease = time.Minute

// fakeClock is a clock the test moves on.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// gateStore returns a Store on client under prefix whose gate reads clk.
func gateStore(t *testing.T, client *redis.Client, prefix string, clk *fakeClock) *Store[string] {
	t.Helper()
	st, err := New[string](client, WithPrefix(prefix), WithClock(clk.now))
	if err != nil {
		t.Fatal(err)
	}
	if st.gate == nil {
		t.Fatal("a Store on a *redis.Client that may lose records has no create gate")
	}
	return st
}

func gateRecord(holder string, d time.Duration) lease.Record[string] {
	return lease.Record[string]{Holder: holder, Token: 1, LeaseDuration: d, Metadata: holder}
}

// create creates name for holder with LeaseDuration d and reports whether
// the store vouched for it.
func create(t *testing.T, st *Store[string], name, holder string, d time.Duration) (bool, lease.Revision) {
	t.Helper()
	v := new(store.CreateVouch)
	_, rev, err := st.CompareAndSwap(store.WithCreateVouch(t.Context(), v), name, 0, gateRecord(holder, d))
	if err != nil {
		t.Fatalf("create %q: %v", name, err)
	}
	return v.Vouched(), rev
}

// warm makes the marker stand gateLease for st: a create (which makes the
// marker, and is not vouched for: nobody has seen it yet), the clock moved
// on by gateLease, and a renewal that attests it. It returns the name it
// wrote.
func warm(t *testing.T, st *Store[string], clk *fakeClock) {
	t.Helper()
	if vouched, _ := create(t, st, "warm", "w", gateLease); vouched {
		t.Fatal("the create that made the marker was vouched for")
	}
	clk.advance(gateLease)
	rec, rev, err := st.Get(t.Context(), "warm")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.CompareAndSwap(t.Context(), "warm", rev, rec); err != nil {
		t.Fatalf("renewal: %v", err)
	}
}

func gatePrefix(t *testing.T) string {
	return fmt.Sprintf("gate:%s:%d:", t.Name(), time.Now().UnixNano())
}

// (a) A healthy server: once the marker has stood a LeaseDuration, a
// brand-new name's create is vouched for, by this Store and by a Store
// that has never seen the marker (a process started later). A longer
// lease than the marker has stood, a name whose record was deleted by
// hand, a swap that is not a create, a create that meets a record: none
// is vouched for.
func TestGateHealthy(t *testing.T) {
	srv := testcluster.PackageRedis(t)
	prefix := gatePrefix(t)
	clk := &fakeClock{t: time.Now()}
	st := gateStore(t, srv.Client(t), prefix, clk)
	warm(t, st, clk)

	if vouched, _ := create(t, st, "new", "a", gateLease); !vouched {
		t.Fatal("a brand-new name on a healthy server: the create was not vouched for")
	}
	later := gateStore(t, srv.Client(t), prefix, &fakeClock{t: time.Now()})
	if vouched, _ := create(t, later, "new-2", "b", gateLease); !vouched {
		t.Fatal("a Store that never saw the marker: the create was not vouched for, though another attested it")
	}
	if vouched, _ := create(t, st, "longer", "a", 2*gateLease); vouched {
		t.Fatal("a create with a longer lease than the marker has stood was vouched for")
	}

	// A record deleted by hand: its name is born, so its next create is a
	// claim.
	key, _ := st.Key("new")
	if err := srv.Client(t).Del(t.Context(), key).Err(); err != nil {
		t.Fatal(err)
	}
	if vouched, _ := create(t, st, "new", "c", gateLease); vouched {
		t.Fatal("the create after a DEL of the record was vouched for")
	}

	// Not creates: nothing is vouched for.
	rec, rev, err := st.Get(t.Context(), "new-2")
	if err != nil {
		t.Fatal(err)
	}
	v := new(store.CreateVouch)
	if _, _, err := st.CompareAndSwap(store.WithCreateVouch(t.Context(), v), "new-2", rev, rec); err != nil || v.Vouched() {
		t.Fatalf("a renewal: vouched %v, error %v; want neither", v.Vouched(), err)
	}
	v = new(store.CreateVouch)
	if _, _, err := st.CompareAndSwap(store.WithCreateVouch(t.Context(), v), "new-2", 0, rec); !errors.Is(err, store.ErrConflict) || v.Vouched() {
		t.Fatalf("a create meeting a record: vouched %v, error %v; want a conflict, not vouched", v.Vouched(), err)
	}
}

// lossCase is one way a server loses its data, applied after the marker
// stood and a leader ("job", holder "a") created its record with the
// store's vouch. It returns the Store the next create goes through (on the
// server that now serves) and that server's admin client.
type lossCase func(t *testing.T, st *Store[string], clk *fakeClock) (*Store[string], *redis.Client)

// checkLoss runs a loss and checks that the gate keeps the claim wait:
// the next create of "job" (by holder "b", while "a" may still believe it
// leads: its record was created a moment ago) is not vouched for, though
// the Store had seen the old marker for ten leases; and that the fast path
// comes back once the new marker has stood a LeaseDuration.
func checkLoss(t *testing.T, srv *testcluster.Redis, loss lossCase) {
	prefix := gatePrefix(t)
	clk := &fakeClock{t: time.Now()}
	st := gateStore(t, srv.Client(t), prefix, clk)
	warm(t, st, clk)
	if vouched, _ := create(t, st, "job", "a", gateLease); !vouched {
		t.Fatal("before the loss: the create was not vouched for")
	}
	next, admin := loss(t, st, clk)
	if _, _, err := next.Get(t.Context(), "job"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after the loss: Get error %v, want ErrNotFound (the record is lost)", err)
	}
	clk.advance(10 * gateLease)
	if vouched, _ := create(t, next, "job", "b", gateLease); vouched {
		t.Fatal("after the loss: the create was vouched for, while the lost record's holder may still lead")
	}
	if vouched, _ := create(t, next, "other", "b", gateLease); vouched {
		t.Fatal("after the loss: a brand-new name was vouched for before the new marker stood a lease")
	}
	clk.advance(gateLease)
	if vouched, _ := create(t, next, "fresh", "b", gateLease); !vouched {
		t.Fatal("a lease after the loss: a brand-new name's create was not vouched for")
	}
	// The marker is the only key besides the records.
	mk := next.markerKey()
	if n, err := admin.HLen(t.Context(), mk).Result(); err != nil || n < 3 {
		t.Fatalf("marker %q: %d fields, %v", mk, n, err)
	}
}

// (b) redis-server restarted without persistence.
func TestGateRestart(t *testing.T) {
	srv := testcluster.NewRedis(t)
	checkLoss(t, srv, func(t *testing.T, st *Store[string], _ *fakeClock) (*Store[string], *redis.Client) {
		if err := srv.Restart(); err != nil {
			t.Fatal(err)
		}
		return st, srv.Client(t)
	})
}

// (c) FLUSHALL.
func TestGateFlushAll(t *testing.T) {
	srv := testcluster.NewRedis(t)
	checkLoss(t, srv, func(t *testing.T, st *Store[string], _ *fakeClock) (*Store[string], *redis.Client) {
		if err := srv.Client(t).FlushAll(t.Context()).Err(); err != nil {
			t.Fatal(err)
		}
		return st, srv.Client(t)
	})
}

// (d) A failover to a replica that missed the latest writes. The test
// servers listen on Unix sockets only, which REPLICAOF cannot reach, so
// the replica is built as replication would have left it: a second server
// holding a copy of the marker (DUMP and RESTORE, taken after the marker
// stood a lease: the replica was in sync then) but not the record created
// afterwards. The Store then talks to it (as a failover client would,
// keeping what it saw: the old nonce, seen for ten leases). The marker it
// finds is the one it attested, aged past the lease; only the server's
// identity (another run_id and master_replid) tells that it is another
// dataset.
func TestGateFailoverToStaleReplica(t *testing.T) {
	primary, replica := testcluster.NewRedis(t), testcluster.NewRedis(t)
	var copied []byte
	prefix := gatePrefix(t)
	clk := &fakeClock{t: time.Now()}
	st := gateStore(t, primary.Client(t), prefix, clk)
	warm(t, st, clk)
	mk := st.markerKey()
	dump, err := primary.Client(t).Dump(t.Context(), mk).Result()
	if err != nil {
		t.Fatal(err)
	}
	copied = []byte(dump)
	rc := replica.Client(t)
	if err := rc.Restore(t.Context(), mk, 0, string(copied)).Err(); err != nil {
		t.Fatal(err)
	}
	if vouched, _ := create(t, st, "job", "a", gateLease); !vouched {
		t.Fatal("before the failover: the create was not vouched for")
	}
	// The Store fails over: same gate, the replica's client.
	next, err := New[string](rc, WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	next.gate = st.gate
	clk.advance(10 * gateLease)
	m, err := rc.HGetAll(t.Context(), mk).Result()
	if err != nil {
		t.Fatal(err)
	}
	nonce, _ := next.gate.attest()
	if m["nonce"] != nonce || m["age"] != fmt.Sprint(int64(gateLease)) {
		t.Fatalf("the replica's marker %v, want the nonce the Store saw (%s) aged %v: the test would not show the identity check", m, nonce, gateLease)
	}
	if _, _, err := next.Get(t.Context(), "job"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the replica has the record the primary created after it: %v", err)
	}
	if vouched, _ := create(t, next, "job", "b", gateLease); vouched {
		t.Fatal("after the failover: the create was vouched for, while the primary's leader may still lead")
	}
	clk.advance(gateLease)
	if vouched, _ := create(t, next, "fresh", "b", gateLease); !vouched {
		t.Fatal("a lease after the failover: a brand-new name's create was not vouched for")
	}
}

// A brand-new name's first leader, with real electors, on a healthy server
// whose marker has stood a lease: it leads on its first create (a read, a
// create), never through the claim wait, which with LeaseDuration 1 minute
// would take longer than the test waits. The time from Run to leading is
// logged (docs/benchmarks.md).
func TestGateFirstLeaderAtOnce(t *testing.T) {
	srv := testcluster.PackageRedis(t)
	prefix := gatePrefix(t)
	clk := &fakeClock{t: time.Now()}
	warm(t, gateStore(t, srv.Client(t), prefix, clk), clk)

	cfg := lease.Config{LeaseDuration: gateLease, RenewDeadline: 40 * time.Second, RetryInterval: time.Second,
		RetryJitter: 0.1, BackendTimeout: time.Second, ErrorInterval: time.Second}
	c := testcluster.NewElectors(t, "brand-new", 10*time.Second, func(t testing.TB) store.Store[string] {
		st, err := New[string](srv.Client(t), WithPrefix(prefix))
		if err != nil {
			t.Fatal(err)
		}
		return st
	})
	start := time.Now()
	c.Start("a", cfg)
	ch := c.NextLeader()
	t.Logf("first leader of a brand-new name %v after Run (LeaseDuration %v)", ch.At.Sub(start).Round(10*time.Microsecond), cfg.LeaseDuration)
	// One write: the create it leads on (a claim taken over would be a
	// second, with a new token).
	st, _ := New[string](srv.Client(t), WithPrefix(prefix))
	rec, _, err := st.Get(context.Background(), "brand-new")
	if err != nil || rec.Holder != "a" || fence.Token(rec.Token) != ch.Term.Token {
		t.Fatalf("record %+v, %v; want a's first term (token %d)", rec, err, ch.Term.Token)
	}
}

// Renewals attest the marker's age, but write it only when it grows by a
// second or a sixteenth at least: a renewal every few milliseconds leaves
// the marker as it is, the next one a second later raises it.
func TestGateRenewalsRarelyWriteTheMarker(t *testing.T) {
	srv := testcluster.PackageRedis(t)
	prefix := gatePrefix(t)
	clk := &fakeClock{t: time.Now()}
	st := gateStore(t, srv.Client(t), prefix, clk)
	warm(t, st, clk)
	age := func() string {
		t.Helper()
		v, err := srv.Client(t).HGet(t.Context(), st.markerKey(), "age").Result()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	renew := func() {
		t.Helper()
		rec, rev, err := st.Get(t.Context(), "warm")
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.CompareAndSwap(t.Context(), "warm", rev, rec); err != nil {
			t.Fatalf("renewal: %v", err)
		}
	}
	before := age()
	for range 10 {
		clk.advance(10 * time.Millisecond)
		renew()
	}
	if got := age(); got != before {
		t.Fatalf("the marker's age went from %s to %s over renewals 100ms apart in all", before, got)
	}
	clk.advance(gateLease / 8)
	renew()
	if got := age(); got == before {
		t.Fatalf("the marker's age stayed %s after the clock moved on by %v", got, gateLease/8)
	}
}
