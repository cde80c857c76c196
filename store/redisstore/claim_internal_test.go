package redisstore

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/lease"
)

// Claim is kept in a field of its own holding the revision it marks:
// stored and read back, published to watchers, cleared by the next write
// that is no claim; a hash without the field (written before the field
// existed) or whose field marks another revision (left by a write that did
// not know it) reads as no claim.
func TestClaimField(t *testing.T) {
	st, c := internalStore(t)
	ctx := t.Context()
	key := st.key("n")
	events, err := st.Watch(ctx, "n")
	if err != nil {
		t.Fatal(err)
	}
	if ev := <-events; !ev.Absent {
		t.Fatalf("first event = %+v; want Absent", ev)
	}

	claim := lease.Record[string]{Holder: "a", Token: 1, LeaseDuration: time.Minute, Claim: true, Metadata: "m"}
	got, rev, err := st.CompareAndSwap(ctx, "n", 0, claim)
	if err != nil || !got.Claim {
		t.Fatalf("create of a claim = %+v, %v; want Claim", got, err)
	}
	if rec, _, err := st.Get(ctx, "n"); err != nil || !rec.Claim {
		t.Fatalf("Get of a claim = %+v, %v; want Claim", rec, err)
	}
	if f := c.HGet(ctx, key, fClaim).Val(); f != revText(rev) {
		t.Fatalf("field %s = %q; want the claim's revision %d", fClaim, f, rev)
	}
	if ev := <-events; ev.Revision != rev || !ev.Record.Claim {
		t.Fatalf("watch event of the claim = %+v; want Claim at revision %d", ev, rev)
	}

	// A field that marks another revision reads as no claim; so does a
	// hash without it.
	if err := c.HSet(ctx, key, fClaim, "123").Err(); err != nil {
		t.Fatal(err)
	}
	if rec, _, err := st.Get(ctx, "n"); err != nil || rec.Claim {
		t.Fatalf("Get with the field of another revision = %+v, %v; want no Claim", rec, err)
	}
	if err := c.HDel(ctx, key, fClaim).Err(); err != nil {
		t.Fatal(err)
	}
	if rec, gotRev, err := st.Get(ctx, "n"); err != nil || rec.Claim || gotRev != rev || rec.Holder != "a" {
		t.Fatalf("Get of a hash without the field = %+v at %d, %v; want the record, no Claim", rec, gotRev, err)
	}

	// The takeover: no claim, and the field is gone.
	if err := c.HSet(ctx, key, fClaim, revText(rev)).Err(); err != nil {
		t.Fatal(err)
	}
	term := got
	term.Token++
	term.Claim = false
	got, rev, err = st.CompareAndSwap(ctx, "n", rev, term)
	if err != nil || got.Claim {
		t.Fatalf("takeover = %+v, %v; want no Claim", got, err)
	}
	if n := c.HExists(ctx, key, fClaim).Val(); n {
		t.Fatalf("field %s still there after a write that is no claim", fClaim)
	}
	for ev := range events {
		if ev.Revision == rev {
			if ev.Record.Claim {
				t.Fatalf("watch event of the term = %+v; want no Claim", ev)
			}
			break
		}
	}

	// A conflict returns the stored record with its Claim.
	claim2 := lease.Record[string]{Holder: "b", Token: 1, LeaseDuration: time.Minute, Claim: true, Metadata: "m"}
	got2, rev2, err := st.CompareAndSwap(ctx, "n2", 0, claim2)
	if err != nil {
		t.Fatal(err)
	}
	cur, curRev, err := st.CompareAndSwap(ctx, "n2", 0, claim2)
	if err == nil || curRev != rev2 || !cur.Claim || cur.Token != got2.Token {
		t.Fatalf("conflict = %+v at %d, %v; want the stored claim at %d", cur, curRev, err, rev2)
	}
}

func revText(r lease.Revision) string { return strconv.FormatUint(uint64(r), 10) }

// A create the gate vouches for, asked by its creator, is led on at once:
// it is stored with Claim false. The same create not vouched for (a lease
// longer than the marker has stood), or made without asking for a vouch,
// is stored as given.
func TestGateVouchedCreateIsNoClaim(t *testing.T) {
	srv := testcluster.PackageRedis(t)
	clk := &fakeClock{t: time.Now()}
	st := gateStore(t, srv.Client(t), gatePrefix(t), clk)
	warm(t, st, clk)
	claimOf := func(name string, d time.Duration, ask bool) (vouched, claim, stored bool) {
		t.Helper()
		rec := gateRecord("a", d)
		rec.Claim = true
		var got lease.Record[string]
		var err error
		if ask {
			got, _, vouched, err = st.CreateVouched(t.Context(), name, rec)
		} else {
			got, _, err = st.CompareAndSwap(t.Context(), name, 0, rec)
		}
		if err != nil {
			t.Fatalf("create %q: %v", name, err)
		}
		back, _, err := st.Get(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		return vouched, got.Claim, back.Claim
	}
	if v, c, s := claimOf("vouched", gateLease, true); !v || c || s {
		t.Fatalf("vouched create: vouched %v, returned Claim %v, stored Claim %v; want vouched, no Claim", v, c, s)
	}
	if v, c, s := claimOf("longer", 2*gateLease, true); v || !c || !s {
		t.Fatalf("create not vouched for: vouched %v, returned Claim %v, stored Claim %v; want a claim", v, c, s)
	}
	if v, c, s := claimOf("unasked", gateLease, false); v || !c || !s {
		t.Fatalf("create without a vouch asked: vouched %v, returned Claim %v, stored Claim %v; want a claim", v, c, s)
	}
}
