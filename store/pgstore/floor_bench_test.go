package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/pgstore"
	"github.com/tenure-go/tenure/store/storetest"
)

// BenchmarkHandoverFloor measures the least any library can take for
// BenchmarkHandoverPeerConfig's handover on this server: pgx alone, no
// Tenure. Three clients, each a pool of 4 connections and a connection of
// its own that LISTENs, as the peer benchmark's electors have; a row with
// a holder and a revision. The leader releases in one statement that
// NOTIFYs the new revision; each follower, on that notification, takes
// the row in one statement guarded by the revision and an empty holder,
// which NOTIFYs too (one wins, the other updates nothing). A handover is
// the time from the release's statement to the winner's returning. One op
// is testcluster.Handovers (20 unless TENURE_HANDOVERS says)
// handovers; it reports p50 and p90 and the medians of the two statements.
func BenchmarkHandoverFloor(b *testing.B) {
	for b.Loop() {
		hs := pgHandoverFloor(b, testcluster.Handovers(b))
		testcluster.ReportHandover(b, "pgx alone", hs)
	}
}

// floorWin is a follower's successful acquire: who, when it returned, and
// how long it took.
type floorWin struct {
	id   int
	at   time.Time
	took time.Duration
}

func pgHandoverFloor(b *testing.B, n int) []testcluster.Handover {
	b.Helper()
	f := newPgFloor(b)
	return testcluster.FloorHandovers(n, func() testcluster.Handover { return f.handover(b) })
}

// pgFloor is BenchmarkHandoverFloor's three clients and their row.
type pgFloor struct {
	pools     []*pgxpool.Pool
	release   string
	leader    atomic.Int32 // the stopped leader does not take part
	wins      chan floorWin
	errs      chan error
	followers sync.WaitGroup
	listening []*pgxpool.Conn
}

// newPgFloor makes the floor's table and row, its three pools, and a
// follower on each that LISTENs until b's Cleanup, which ends the
// followers before their listening connections go back to their pools
// (and before the pools close, which waits for them).
func newPgFloor(b *testing.B) *pgFloor {
	b.Helper()
	c, cancel := context.WithCancel(context.Background())
	table := freshTable()
	channel := table + "_ch"
	f := &pgFloor{pools: make([]*pgxpool.Pool, 3), wins: make(chan floorWin, 3), errs: make(chan error, 3)}
	for i := range f.pools {
		f.pools[i] = newPool(b, func(c *pgxpool.Config) { c.MaxConns = 4 })
	}
	b.Cleanup(func() {
		cancel()
		f.followers.Wait()
		for _, conn := range f.listening {
			conn.Release()
		}
	})
	// Each statement NOTIFYs the revision it wrote and whether the row is
	// now free, as one statement commits both.
	f.release = fmt.Sprintf(`WITH u AS (UPDATE %[1]s SET holder = '', rev = rev + 1 WHERE name = 'floor' AND holder = $1 RETURNING rev)
		SELECT rev, pg_notify('%[2]s', 'free:' || rev) FROM u`, table, channel)
	acquire := fmt.Sprintf(`WITH u AS (UPDATE %[1]s SET holder = $1, rev = rev + 1 WHERE name = 'floor' AND rev = $2 AND holder = '' RETURNING rev)
		SELECT rev, pg_notify('%[2]s', 'held:' || rev) FROM u`, table, channel)
	if _, err := f.pools[0].Exec(c, fmt.Sprintf(`CREATE TABLE %s (name text PRIMARY KEY, holder text NOT NULL, rev bigint NOT NULL);
		INSERT INTO %[1]s VALUES ('floor', 'node-0', 1)`, table)); err != nil {
		b.Fatal(err)
	}
	for i, pool := range f.pools {
		conn, err := pool.Acquire(c)
		if err != nil {
			b.Fatal(err)
		}
		f.listening = append(f.listening, conn)
		if _, err := conn.Exec(c, "LISTEN "+channel); err != nil {
			b.Fatal(err)
		}
		f.followers.Go(func() { followPgFloor(c, i, &f.leader, conn.Conn(), pool, acquire, f.wins, f.errs) })
	}
	return f
}

// handover releases the row as its leader and returns when a follower
// took it.
func (f *pgFloor) handover(b *testing.B) testcluster.Handover {
	b.Helper()
	c := b.Context()
	id := f.leader.Load()
	start := time.Now()
	var rev int64
	var sent string
	if err := f.pools[id].QueryRow(c, f.release, fmt.Sprintf("node-%d", id)).Scan(&rev, &sent); err != nil {
		b.Fatalf("release: %v", err)
	}
	releaseTook := time.Since(start)
	win := testcluster.Await(b, f.wins, f.errs, 10*time.Second)
	f.leader.Store(int32(win.id))
	return testcluster.Handover{Total: win.at.Sub(start), Release: releaseTook, Acquire: win.took}
}

// followPgFloor takes the row on every notification that shows it free,
// guarded by that notification's revision, as a listening follower would
// without reading first.
func followPgFloor(c context.Context, id int, leader *atomic.Int32, listen *pgx.Conn, pool *pgxpool.Pool, acquire string, wins chan<- floorWin, errs chan<- error) {
	for {
		nt, err := listen.WaitForNotification(c)
		if err != nil {
			if !errors.Is(err, context.Canceled) {
				errs <- fmt.Errorf("follower %d: listen: %w", id, err)
			}
			return
		}
		revText, free := strings.CutPrefix(nt.Payload, "free:")
		if !free || leader.Load() == int32(id) {
			continue
		}
		rev, err := strconv.ParseInt(revText, 10, 64)
		if err != nil {
			errs <- fmt.Errorf("follower %d: payload %q: %w", id, nt.Payload, err)
			return
		}
		start := time.Now()
		var got int64
		var sent string
		err = pool.QueryRow(c, acquire, fmt.Sprintf("node-%d", id), rev).Scan(&got, &sent)
		switch {
		case err == nil:
			wins <- floorWin{id: id, at: time.Now(), took: time.Since(start)}
		case errors.Is(err, pgx.ErrNoRows), errors.Is(err, context.Canceled):
		default:
			errs <- fmt.Errorf("follower %d: acquire: %w", id, err)
			return
		}
	}
}

// BenchmarkHandoverStoreAlone is BenchmarkHandoverFloor on three Stores
// (pgstore alone, no elector): the release is a CompareAndSwap, each
// follower's acquire a CompareReleasedAndSwap on the Watch event of the
// release.
func BenchmarkHandoverStoreAlone(b *testing.B) {
	for b.Loop() {
		hs := storeHandoverFloor(b, 20, nil)
		testcluster.ReportHandover(b, "pgstore alone", hs)
	}
}

// BenchmarkHandoverStoreAloneIdlePools is BenchmarkHandoverStoreAlone on
// pools that close a connection idle for 100ms (MaxConnIdleTime, checked
// every 25ms), so that a follower's pool has closed its idle connections
// by the time of the release (200ms after the last handover), as pgxpool's
// defaults do to a follower that stayed quiet for 30 minutes; the leader
// reads just before it releases, as its renewals would keep a connection
// open. minconns=1 keeps one connection open in every pool (MinConns).
func BenchmarkHandoverStoreAloneIdlePools(b *testing.B) {
	for _, minConns := range []int32{0, 1} {
		b.Run(fmt.Sprintf("minconns=%d", minConns), func(b *testing.B) {
			for b.Loop() {
				hs := storeHandoverFloor(b, 20, func(c *pgxpool.Config) {
					c.MaxConnIdleTime, c.HealthCheckPeriod, c.MinConns = 100*time.Millisecond, 25*time.Millisecond, minConns
				})
				testcluster.ReportHandover(b, fmt.Sprintf("pgstore alone, idle pools, MinConns %d", minConns), hs)
			}
		})
	}
}

// storeHandoverFloor runs n handovers among three Stores, each on a pool of
// 4 connections that idle (if not nil) configures further; with idle, the
// leader reads just before each release.
func storeHandoverFloor(b *testing.B, n int, idle func(*pgxpool.Config)) []testcluster.Handover {
	b.Helper()
	c, cancel := context.WithCancel(context.Background())
	defer cancel()
	table := freshTable()
	stores := make([]*pgstore.Store[storetest.Meta], 3)
	for i := range stores {
		pool := newPool(b, func(c *pgxpool.Config) {
			c.MaxConns = 4
			if idle != nil {
				idle(c)
			}
		})
		st, err := pgstore.New[storetest.Meta](pool, pgstore.WithTable(table))
		if err != nil {
			b.Fatal(err)
		}
		stores[i] = st
	}
	const name = "floor"
	now := time.Now()
	cur, rev, err := stores[0].CompareAndSwap(c, name, 0, lease.Record[storetest.Meta]{Holder: "node-0", Token: 1, AcquiredAt: now, RenewedAt: now, LeaseDuration: 3 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	var leader atomic.Int32
	type win struct {
		floorWin
		rec lease.Record[storetest.Meta]
		rev lease.Revision
	}
	wins := make(chan win, 3)
	errs := make(chan error, 3)
	var followers sync.WaitGroup
	defer func() {
		cancel() // the watches end, and with them the followers
		followers.Wait()
	}()
	for i, st := range stores {
		evs, err := st.Watch(c, name)
		if err != nil {
			b.Fatal(err)
		}
		followers.Go(func() {
			for ev := range evs {
				if ev.Err != nil || ev.Absent || ev.Record.Holder != "" || leader.Load() == int32(i) {
					continue
				}
				t := time.Now()
				next := ev.Record
				next.Holder = fmt.Sprintf("node-%d", i)
				next.Token++
				next.Transitions++
				next.AcquiredAt, next.RenewedAt = t, t
				was := store.Released{Token: ev.Record.Token, Transitions: ev.Record.Transitions, LeaseDuration: ev.Record.LeaseDuration}
				got, grev, err := store.CompareReleasedAndSwap[storetest.Meta](c, st, name, ev.Revision, was, next)
				switch {
				case err == nil:
					wins <- win{floorWin{id: i, at: time.Now(), took: time.Since(t)}, got, grev}
				case c.Err() != nil:
					return
				case !errors.Is(err, store.ErrConflict): // a conflict: the other follower won
					errs <- fmt.Errorf("follower %d: acquire: %w", i, err)
					return
				}
			}
		})
	}
	out := make([]testcluster.Handover, 0, n)
	for range n {
		settle := time.NewTimer(200 * time.Millisecond)
		<-settle.C
		id := leader.Load()
		if idle != nil {
			if _, _, err := stores[id].Get(c, name); err != nil {
				b.Fatal(err)
			}
		}
		released := cur
		released.Holder = ""
		start := time.Now()
		if _, _, err := stores[id].CompareAndSwap(c, name, rev, released); err != nil {
			b.Fatalf("release: %v", err)
		}
		releaseTook := time.Since(start)
		w := testcluster.Await(b, wins, errs, 10*time.Second)
		out = append(out, testcluster.Handover{Total: w.at.Sub(start), Release: releaseTook, Acquire: w.took})
		leader.Store(int32(w.id))
		cur, rev = w.rec, w.rev
	}
	return out
}
