package pgstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/pgstore"
	"github.com/tenure-go/tenure/store/storetest"
)

// A record's Stamp comes back from the swap, from Get, from List and on
// the watch (in the notification's record, not a read), so that a
// follower can match a renewal it heard with the write a read shows; a
// record written without one shows none.
func TestStampIsKeptAndPublished(t *testing.T) {
	pool := newPool(t)
	st := newStore(t, pool)
	ctx := testCtx(t)
	w, err := st.Watch(ctx, "stamped")
	if err != nil {
		t.Fatal(err)
	}
	nextEvent(t, w) // the current state: absent
	var rev lease.Revision
	for _, stamp := range []uint64{0xfedcba9876543210, 0, 1<<64 - 1, 1} {
		r := rec("a", 1)
		r.Stamp = stamp
		got, newRev, err := st.CompareAndSwap(ctx, "stamped", rev, r)
		if err != nil {
			t.Fatal(err)
		}
		rev = newRev
		if got.Stamp != stamp {
			t.Errorf("swap: Stamp %x, want %x", got.Stamp, stamp)
		}
		if got, _, err := st.Get(ctx, "stamped"); err != nil || got.Stamp != stamp {
			t.Errorf("Get: Stamp %x (%v), want %x", got.Stamp, err, stamp)
		}
		if l, err := st.List(ctx, "stamped"); err != nil || len(l) != 1 || l[0].Record.Stamp != stamp {
			t.Errorf("List: %+v (%v), want Stamp %x", l, err, stamp)
		}
		if ev := eventAt(t, w, rev); ev.Record.Stamp != stamp {
			t.Errorf("watch: revision %d Stamp %x, want %x", ev.Revision, ev.Record.Stamp, stamp)
		}
	}
}

// previousSchema is the table versions of the Store without the stamp
// column made.
const previousSchema = `CREATE SEQUENCE %[1]s_revision AS bigint START WITH 1;
CREATE TABLE %[1]s (
	name              text PRIMARY KEY,
	holder            text NOT NULL,
	token             numeric(20,0) NOT NULL CHECK (token BETWEEN 0 AND 18446744073709551615),
	revision          bigint NOT NULL CHECK (revision > 0),
	acquired_at       timestamptz NOT NULL,
	renewed_at        timestamptz NOT NULL,
	lease_duration_ns bigint NOT NULL CHECK (lease_duration_ns >= 0),
	transitions       numeric(20,0) NOT NULL CHECK (transitions BETWEEN 0 AND 18446744073709551615),
	metadata          bytea NOT NULL,
	claim             boolean NOT NULL DEFAULT false,
	successor         text NOT NULL DEFAULT ''
);
INSERT INTO %[1]s VALUES ('old', 'a', 7, 5, now(), now(), 15000000000, 1, '{}', false, '');`

// A table made before the stamp column existed is migrated as one without
// the claim column is: its rows read with Stamp 0 (none: a follower counts
// from its read), and stamps round trip afterwards, batched swaps
// included; with automatic creation off the first use fails with
// ErrSchema saying what to run.
func TestTableWithoutStampIsMigrated(t *testing.T) {
	for _, auto := range []bool{true, false} {
		t.Run(fmt.Sprintf("auto %v", auto), func(t *testing.T) {
			pool := newPool(t)
			ctx := testCtx(t)
			table := freshTable()
			exec(t, pool, fmt.Sprintf(previousSchema, table))
			st, err := pgstore.New[storetest.Meta](pool, pgstore.WithTable(table), pgstore.WithAutoMigrate(auto))
			if err != nil {
				t.Fatal(err)
			}
			old, rev, err := st.Get(ctx, "old")
			if !auto {
				if !errors.Is(err, pgstore.ErrSchema) || !strings.Contains(err.Error(), "stamp") || !strings.Contains(err.Error(), "ADD COLUMN IF NOT EXISTS stamp") {
					t.Fatalf("Get with automatic creation off: error %v; want ErrSchema saying how to add the column stamp", err)
				}
				if err := st.Migrate(ctx); err != nil {
					t.Fatalf("Migrate: %v", err)
				}
				old, rev, err = st.Get(ctx, "old")
			}
			if err != nil || old.Holder != "a" || old.Token != 7 || old.Stamp != 0 || rev != 5 {
				t.Fatalf("Get of the older record = %+v at %d, %v; want it, with Stamp 0", old, rev, err)
			}
			next := old
			next.Stamp = 0x0123456789abcdef
			got, rev, err := st.CompareAndSwap(ctx, "old", rev, next)
			if err != nil || got.Stamp != next.Stamp {
				t.Fatalf("a stamped swap on the migrated table: %+v, %v; want Stamp %x", got, err, next.Stamp)
			}
			next = got
			next.Stamp = 1<<64 - 2
			res := st.CompareAndSwapBatch(ctx, []store.Swap[storetest.Meta]{{Name: "old", Expected: rev, Next: next}})
			if res[0].Err != nil || res[0].Record.Stamp != next.Stamp {
				t.Fatalf("a stamped batch swap: %+v; want Stamp %x", res[0], next.Stamp)
			}
			if back, _, err := st.Get(ctx, "old"); err != nil || back.Stamp != next.Stamp {
				t.Fatalf("read back %+v, %v; want Stamp %x", back, err, next.Stamp)
			}
		})
	}
}

// pingCounter counts, on the wire, the pings pgxpool sends: the simple
// query "-- ping" (pgconn's Ping) in what a connection writes.
type pingCounter struct{ n atomic.Int64 }

type countingConn struct {
	net.Conn
	c *pingCounter
}

func (c countingConn) Write(p []byte) (int, error) {
	c.c.n.Add(int64(bytes.Count(p, []byte("-- ping"))))
	return c.Conn.Write(p)
}

// pingingPool returns a pool whose connections each count as idle for an
// hour when acquired (so pgxpool's own rule would ping on every acquire),
// deciding through shouldPing, and the counter of the pings it sends.
func pingingPool(t *testing.T, shouldPing func(context.Context, pgxpool.ShouldPingParams) bool) (*pgxpool.Pool, *pingCounter) {
	c := &pingCounter{}
	pool := newPool(t, func(cfg *pgxpool.Config) {
		dial := cfg.ConnConfig.DialFunc
		cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return countingConn{conn, c}, nil
		}
		cfg.MaxConns = 1
		cfg.ShouldPing = func(ctx context.Context, p pgxpool.ShouldPingParams) bool {
			p.IdleDuration = time.Hour
			return shouldPing(ctx, p)
		}
	})
	return pool, c
}

// With pgstore.ShouldPing a follower's reads (Get, List) send no ping
// on a connection pgxpool's own rule would ping, while swaps still do;
// without it, each read brings one.
func TestFollowerReadSendsNoPing(t *testing.T) {
	ctx := testCtx(t)
	pool, pings := pingingPool(t, pgstore.ShouldPing(nil))
	st := newStore(t, pool)
	_, rev := mustSwap(t, st, "job", 0, rec("a", 1))
	before := pings.n.Load()
	for range 3 {
		if _, _, err := st.Get(ctx, "job"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.List(ctx, "job"); err != nil {
		t.Fatal(err)
	}
	if n := pings.n.Load() - before; n != 0 {
		t.Errorf("3 Gets and a List sent %d pings, want none", n)
	}
	before = pings.n.Load()
	mustSwap(t, st, "job", rev, rec("a", 1))
	if n := pings.n.Load() - before; n != 1 {
		t.Errorf("a swap sent %d pings, want 1 (pgxpool's rule applies to writes)", n)
	}

	// pgxpool's own rule pings before every read.
	plain, plainPings := pingingPool(t, func(_ context.Context, p pgxpool.ShouldPingParams) bool { return p.IdleDuration > time.Second })
	st = newStore(t, plain)
	mustSwap(t, st, "job", 0, rec("a", 1))
	before = plainPings.n.Load()
	if _, _, err := st.Get(ctx, "job"); err != nil {
		t.Fatal(err)
	}
	if n := plainPings.n.Load() - before; n != 1 {
		t.Errorf("without pgstore.ShouldPing a Get sent %d pings, want 1", n)
	}
}
