package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/lead"
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
	_, rev, vouched, err := st.CreateVouched(t.Context(), name, gateRecord(holder, d))
	if err != nil {
		t.Fatalf("create %q: %v", name, err)
	}
	return vouched, rev
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
	var v bool
	if _, _, err := st.compareAndSwap(t.Context(), "CompareAndSwap", "new-2", rev, nil, rec, &v); err != nil || v {
		t.Fatalf("a renewal asking for a vouch: vouched %v, error %v; want neither", v, err)
	}
	if _, _, v, err := st.CreateVouched(t.Context(), "new-2", rec); !errors.Is(err, store.ErrConflict) || v {
		t.Fatalf("a create meeting a record: vouched %v, error %v; want a conflict, not vouched", v, err)
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
	checkMove(t, srv, moveCase{loss: loss, back: true})
}

// moveCase is a change of the dataset applied by checkMove.
type moveCase struct {
	// prepare, if not nil, runs once the marker has stood a lease, before
	// "job" is created; old is the marker as it stood then.
	prepare func(t *testing.T, admin *redis.Client, old oldMarker)
	// move, if not nil, changes the dataset of the Store's server once
	// "job" is created; else loss does, and returns the Store to go on with.
	move func(t *testing.T, admin *redis.Client, st *Store[string], old oldMarker)
	loss lossCase
	// back: the fast path comes back a lease after the loss (not after
	// CONFIG RESETSTAT, which turns the gate off until the server
	// restarts).
	back bool
}

// oldMarker is the marker as it stood a lease after it was made, before
// "job" was created: its fields, and its DUMP. A copy of the dataset taken
// then holds it.
type oldMarker struct {
	key    string
	fields map[string]string
	dump   string
}

// checkMove is checkLoss with a snapshot of the marker taken before the
// create, which the loss may bring back.
func checkMove(t *testing.T, srv *testcluster.Redis, c moveCase) {
	t.Helper()
	prefix := gatePrefix(t)
	clk := &fakeClock{t: time.Now()}
	st := gateStore(t, srv.Client(t), prefix, clk)
	warm(t, st, clk)
	admin := srv.Client(t)
	mk := st.markerKey()
	old := oldMarker{key: mk}
	var err error
	if old.fields, err = admin.HGetAll(t.Context(), mk).Result(); err != nil {
		t.Fatal(err)
	}
	if old.dump, err = admin.Dump(t.Context(), mk).Result(); err != nil {
		t.Fatal(err)
	}
	if c.prepare != nil {
		c.prepare(t, admin, old)
	}
	if vouched, _ := create(t, st, "job", "a", gateLease); !vouched {
		t.Fatal("before the loss: the create was not vouched for")
	}
	next := st
	if c.move != nil {
		c.move(t, admin, st, old)
	} else {
		next, admin = c.loss(t, st, clk)
	}
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
	if vouched, _ := create(t, next, "fresh", "b", gateLease); vouched != c.back {
		t.Fatalf("a lease after the loss: a brand-new name's create vouched for: %v, want %v", vouched, c.back)
	}
	// The marker is the only key besides the records.
	mk = next.markerKey()
	if n, err := admin.HLen(t.Context(), mk).Result(); err != nil || n < 3 {
		t.Fatalf("marker %q: %d fields, %v", mk, n, err)
	}
}

// do runs a command on c and fails the test on an error.
func do(t *testing.T, c *redis.Client, args ...any) {
	t.Helper()
	if err := c.Do(t.Context(), args...).Err(); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
}

// dbClient returns a client of srv on database db.
func dbClient(t *testing.T, srv *testcluster.Redis, db int) *redis.Client {
	o := srv.Options()
	o.DB = db
	c := redis.NewClient(o)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// writeMarker writes old's fields to key with HSET (no command of
// ident's MOVES), as a copy of the dataset taken when the marker had stood
// a lease would hold them.
func writeMarker(t *testing.T, c *redis.Client, key string, old oldMarker) {
	t.Helper()
	if err := c.HSet(t.Context(), key, old.fields).Err(); err != nil {
		t.Fatal(err)
	}
}

// Everything a client can do to bring an older copy of the dataset back,
// each on a server of its own: the copy holds the marker as it stood a
// lease after it was made (the Store has seen that nonce ever since) and
// neither the record of "job", created since, nor its born field. The
// server's run_id and master_replid stay; the identity's count of the
// commands that move data does not, so the next create makes the marker
// anew and is a claim. CONFIG RESETSTAT after the move sets that count
// back: the gate then vouches for nothing until the server restarts.
// FLUSHDB deletes the marker with the rest.
func TestGateDatasetMoves(t *testing.T) {
	key := func(t *testing.T, st *Store[string], name string) string {
		k, err := st.Key(name)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	swapdb := func(t *testing.T, admin *redis.Client, srv *testcluster.Redis, old oldMarker) {
		writeMarker(t, dbClient(t, srv, 1), old.key, old)
		do(t, admin, "SWAPDB", 0, 1)
	}
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, admin *redis.Client, old oldMarker)
		move    func(t *testing.T, srv *testcluster.Redis, admin *redis.Client, st *Store[string], old oldMarker)
		back    bool
	}{
		{name: "SWAPDB with a database holding the copy", back: true,
			move: func(t *testing.T, srv *testcluster.Redis, admin *redis.Client, _ *Store[string], old oldMarker) {
				swapdb(t, admin, srv, old)
			}},
		{name: "SWAPDB, then CONFIG RESETSTAT",
			move: func(t *testing.T, srv *testcluster.Redis, admin *redis.Client, _ *Store[string], old oldMarker) {
				swapdb(t, admin, srv, old)
				do(t, admin, "CONFIG", "RESETSTAT")
			}},
		{name: "SWAPDB from a script", back: true,
			move: func(t *testing.T, srv *testcluster.Redis, admin *redis.Client, _ *Store[string], old oldMarker) {
				writeMarker(t, dbClient(t, srv, 1), old.key, old)
				do(t, admin, "EVAL", "return redis.call('SWAPDB', 0, 1)", 0)
			}},
		{name: "COPY of a copy of the marker", back: true,
			move: func(t *testing.T, _ *testcluster.Redis, admin *redis.Client, st *Store[string], old oldMarker) {
				writeMarker(t, admin, old.key+":copy", old)
				do(t, admin, "DEL", key(t, st, "job"))
				do(t, admin, "COPY", old.key+":copy", old.key, "REPLACE")
			}},
		{name: "MOVE from another database", back: true,
			move: func(t *testing.T, srv *testcluster.Redis, admin *redis.Client, st *Store[string], old oldMarker) {
				db1 := dbClient(t, srv, 1)
				writeMarker(t, db1, old.key, old)
				do(t, admin, "DEL", key(t, st, "job"), old.key)
				do(t, db1, "MOVE", old.key, 0)
			}},
		{name: "RENAME", back: true,
			move: func(t *testing.T, _ *testcluster.Redis, admin *redis.Client, st *Store[string], old oldMarker) {
				writeMarker(t, admin, old.key+":copy", old)
				do(t, admin, "DEL", key(t, st, "job"))
				do(t, admin, "RENAME", old.key+":copy", old.key)
			}},
		{name: "RENAMENX", back: true,
			move: func(t *testing.T, _ *testcluster.Redis, admin *redis.Client, st *Store[string], old oldMarker) {
				writeMarker(t, admin, old.key+":copy", old)
				do(t, admin, "DEL", key(t, st, "job"), old.key)
				do(t, admin, "RENAMENX", old.key+":copy", old.key)
			}},
		{name: "RESTORE of a DUMP", back: true,
			move: func(t *testing.T, _ *testcluster.Redis, admin *redis.Client, st *Store[string], old oldMarker) {
				do(t, admin, "DEL", key(t, st, "job"))
				do(t, admin, "RESTORE", old.key, 0, old.dump, "REPLACE")
			}},
		{name: "DEBUG RELOAD of an older file", back: true,
			prepare: func(t *testing.T, admin *redis.Client, _ oldMarker) {
				do(t, admin, "SAVE")
			},
			move: func(t *testing.T, _ *testcluster.Redis, admin *redis.Client, _ *Store[string], _ oldMarker) {
				do(t, admin, "DEBUG", "RELOAD", "NOSAVE")
			}},
		{name: "FLUSHDB", back: true,
			move: func(t *testing.T, _ *testcluster.Redis, admin *redis.Client, _ *Store[string], _ oldMarker) {
				do(t, admin, "FLUSHDB")
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := testcluster.NewRedis(t)
			checkMove(t, srv, moveCase{prepare: tc.prepare, back: tc.back,
				move: func(t *testing.T, admin *redis.Client, st *Store[string], old oldMarker) {
					tc.move(t, srv, admin, st, old)
				}})
		})
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

// gateConfig is the timings of the electors of these tests: the records'
// LeaseDuration, renewals every retry.
func gateConfig(retry time.Duration) lease.Config {
	return lease.Config{LeaseDuration: gateLease, RenewDeadline: 40 * time.Second, RetryInterval: retry,
		RetryJitter: 0.1, BackendTimeout: time.Second, ErrorInterval: time.Second}
}

// gateElectors returns electors of name, each on a Store of its own on srv
// under prefix, with the real clock.
func gateElectors(t *testing.T, srv *testcluster.Redis, prefix, name string) *testcluster.Electors[string] {
	return testcluster.NewElectors(t, name, 10*time.Second, func(t testing.TB) store.Store[string] {
		st, err := New[string](srv.Client(t), WithPrefix(prefix))
		if err != nil {
			t.Fatal(err)
		}
		return st
	})
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

	cfg := gateConfig(time.Second)
	c := gateElectors(t, srv, prefix, "brand-new")
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

// An eviction under any maxmemory-policy makes the marker anew at the next
// create: the policy can be changed at run time (CONFIG SET), so evictions
// made under an allkeys-* policy, which may take records, would otherwise
// go unseen by a marker made under a volatile-* one. Here a volatile-lru
// server evicts a key of someone else's with a TTL (the only key it may
// evict): the next brand-new name is a claim, and the one a lease later is
// vouched for again.
func TestGateEvictionMakesTheMarkerAnew(t *testing.T) {
	srv := testcluster.NewRedis(t)
	admin := srv.Client(t)
	ctx := t.Context()
	do(t, admin, "CONFIG", "SET", "maxmemory-policy", "volatile-lru")
	prefix := gatePrefix(t)
	clk := &fakeClock{t: time.Now()}
	st := gateStore(t, srv.Client(t), prefix, clk)
	warm(t, st, clk)
	if vouched, _ := create(t, st, "before", "a", gateLease); !vouched {
		t.Fatal("before the eviction: the create was not vouched for")
	}
	const filler = 1 << 20
	if err := admin.Set(ctx, "someone-else:cache", strings.Repeat("x", filler), time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	used := func() int64 {
		t.Helper()
		info, err := admin.Info(ctx, "memory").Result()
		if err != nil {
			t.Fatal(err)
		}
		_, v, _ := strings.Cut(info, "used_memory:")
		v, _, _ = strings.Cut(v, "\r\n")
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("used_memory %q: %v", v, err)
		}
		return n
	}
	do(t, admin, "CONFIG", "SET", "maxmemory", used()-filler/2)
	do(t, admin, "PING") // any command runs the eviction first
	do(t, admin, "CONFIG", "SET", "maxmemory", 0)
	if n, err := admin.Exists(ctx, "someone-else:cache").Result(); err != nil || n != 0 {
		t.Fatalf("the key with a TTL is still there (%d, %v): nothing was evicted", n, err)
	}
	if vouched, _ := create(t, st, "after", "a", gateLease); vouched {
		t.Fatal("after an eviction: a brand-new name was vouched for before the new marker stood a lease")
	}
	clk.advance(gateLease)
	if vouched, _ := create(t, st, "later", "a", gateLease); !vouched {
		t.Fatal("a lease after the eviction: a brand-new name's create was not vouched for")
	}
}

// Real electors through a SWAPDB: "a" leads a brand-new name at once on a
// marker that has stood a lease; database 1 holds a copy of the dataset
// taken before that create (the marker as it stood, no record), and SWAPDB
// 0 1 makes it current. "b" starts then and finds no record: its create
// must be a claim, so that "a" (whose next renewal finds the record gone)
// stops leading before anyone else leads. A gate that vouched for b's
// create would make b lead at once beside a.
func TestGateElectorsThroughSwapDB(t *testing.T) {
	srv := testcluster.NewRedis(t)
	admin := srv.Client(t)
	prefix := gatePrefix(t)
	clk := &fakeClock{t: time.Now()}
	st := gateStore(t, srv.Client(t), prefix, clk)
	warm(t, st, clk)
	old, err := admin.HGetAll(t.Context(), st.markerKey()).Result()
	if err != nil {
		t.Fatal(err)
	}
	writeMarker(t, dbClient(t, srv, 1), st.markerKey(), oldMarker{fields: old})

	cfg := gateConfig(200 * time.Millisecond)
	c := gateElectors(t, srv, prefix, "job")
	c.Start("a", cfg)
	if ch := c.NextLeader(); ch.ID != "a" {
		t.Fatalf("%s leads, want a", ch.ID)
	}
	do(t, admin, "SWAPDB", 0, 1)
	c.Start("b", cfg)
	ch, ok := c.Next(10 * time.Second)
	if !ok {
		t.Fatal("a did not stop leading within 10s of the SWAPDB")
	}
	if ch.ID != "a" || ch.Kind != lead.Stopped {
		t.Fatalf("after the SWAPDB, %s %v while a leads", ch.ID, ch.Kind)
	}
	// b's create is a claim: nobody leads within the next renewals.
	if ch, ok := c.Next(4 * cfg.RetryInterval); ok {
		t.Fatalf("%s %v a moment after a stopped: b's create was vouched for", ch.ID, ch.Kind)
	}
}

// WithCreateGate(false) turns the gate off: on a healthy server whose
// marker has stood a lease, a brand-new name's create is not vouched for
// by a Store without it, while one with it vouches.
func TestGateOff(t *testing.T) {
	srv := testcluster.PackageRedis(t)
	prefix := gatePrefix(t)
	clk := &fakeClock{t: time.Now()}
	st := gateStore(t, srv.Client(t), prefix, clk)
	warm(t, st, clk)
	off, err := New[string](srv.Client(t), WithPrefix(prefix), WithClock(clk.now), WithCreateGate(false))
	if err != nil {
		t.Fatal(err)
	}
	if vouched, _ := create(t, off, "new", "a", gateLease); vouched {
		t.Fatal("a Store with the gate off vouched for a create")
	}
	if vouched, _ := create(t, st, "new-2", "a", gateLease); !vouched {
		t.Fatal("the Store with the gate on did not vouch for a brand-new name's create")
	}
}
