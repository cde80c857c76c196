package redisstore_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/redisstore"
)

// fields are the fields of a record hash, in checksum order.
var fields = []string{"rev", "op", "holder", "token", "acquired", "renewed", "duration", "transitions", "meta"}

// forge rewrites fields of the hash at key as someone who knows the layout
// would (an older version of Tenure, a restore tool, an operator with a
// script): the checksum is recomputed, so only the bounds can tell.
func forge(t *testing.T, c *redis.Client, key string, edits map[string]string) {
	t.Helper()
	ctx := t.Context()
	vals, err := c.HMGet(ctx, key, fields...).Result()
	if err != nil {
		t.Fatal(err)
	}
	v := make([]string, len(fields))
	for i, f := range fields {
		s, ok := vals[i].(string)
		if !ok {
			t.Fatalf("field %s of %s is missing", f, key)
		}
		if e, ok := edits[f]; ok {
			s = e
		}
		v[i] = s
	}
	sum := sha1.Sum([]byte("tenure/1\x00" + strings.Join(v, "\x00")))
	args := []any{}
	for i, f := range fields {
		args = append(args, f, v[i])
	}
	args = append(args, "sum", hex.EncodeToString(sum[:]))
	if err := c.HSet(ctx, key, args...).Err(); err != nil {
		t.Fatal(err)
	}
}

func dec(n uint64) string { return strconv.FormatUint(n, 10) }

// A record whose checksum is right but whose fields break the bounds of
// store.ValidateStored (written by an older version, or forged) is corrupt:
// Get, CompareAndSwap and Watch report it, and the script never overwrites
// it, whatever revision the swap expects.
func TestOutOfBoundsRecordIsCorrupt(t *testing.T) {
	srv := testcluster.PackageRedis(t)
	ctx := t.Context()
	cases := []struct {
		label string
		edits map[string]string
	}{
		{"token 2^64-1", map[string]string{"token": dec(math.MaxUint64)}},
		{"token lease.MaxToken+1", map[string]string{"token": dec(lease.MaxToken + 1)}},
		{"token with a leading zero", map[string]string{"token": "07"}},
		{"token beyond uint64", map[string]string{"token": "99999999999999999999"}},
		{"transitions 2^64-1", map[string]string{"transitions": dec(math.MaxUint64)}},
		{"duration of 292 years", map[string]string{"duration": dec(math.MaxInt64)}},
		{"duration lease.MaxDuration+1", map[string]string{"duration": dec(uint64(lease.MaxDuration) + 1)}},
		{"duration 0 while held", map[string]string{"duration": "0"}},
		{"negative duration", map[string]string{"duration": "-1"}},
		{"holder with an escape sequence", map[string]string{"holder": "a\x1b[2J"}},
		{"holder with a C1 control", map[string]string{"holder": "a\u0085b"}},
		{"holder not UTF-8", map[string]string{"holder": "a\xffb"}},
		{"holder with a surrogate", map[string]string{"holder": "a\xed\xa0\x80b"}},
		{"holder of 254 bytes", map[string]string{"holder": strings.Repeat("h", store.MaxHolderBytes+1)}},
		{"revision 2^63", map[string]string{"rev": dec(1 << 63)}},
		{"revision 2^64-1", map[string]string{"rev": dec(math.MaxUint64)}},
		{"revision beyond uint64", map[string]string{"rev": "18446744073709551616"}},
		{"revision 0", map[string]string{"rev": "0"}},
	}
	for _, tc := range cases {
		t.Run(tc.label, func(t *testing.T) {
			st, c := newStore(t, srv)
			name := "bounds"
			key := mustKey(t, st, name)
			held, rev := mustSwap(t, st, name, 0, rec("a", 1))
			forge(t, c, key, tc.edits)
			before, _ := c.Dump(ctx, key).Result()

			if got, gotRev, err := st.Get(ctx, name); !errors.Is(err, store.ErrCorruptRecord) || gotRev != 0 {
				t.Errorf("Get = %+v at %d, %v; want ErrCorruptRecord", got, gotRev, err)
			}
			expect := []lease.Revision{rev, 0, rev + 1}
			if r, err := strconv.ParseUint(tc.edits["rev"], 10, 64); err == nil {
				expect = append(expect, lease.Revision(r))
			}
			for _, expected := range expect {
				for _, next := range []lease.Record[meta]{held, rec("b", 0), rec("b", held.Token+1)} {
					got, gotRev, err := st.CompareAndSwap(ctx, name, expected, next)
					if !errors.Is(err, store.ErrCorruptRecord) || gotRev != 0 {
						t.Errorf("CompareAndSwap from %d of %s with token %d = token %d at %d, %v; want ErrCorruptRecord",
							expected, next.Holder, next.Token, got.Token, gotRev, err)
					}
				}
			}
			if after, _ := c.Dump(ctx, key).Result(); after != before {
				t.Error("the out-of-bounds record was overwritten")
			}
			wctx, cancel := context.WithCancel(ctx)
			defer cancel()
			ch, err := st.Watch(wctx, name)
			if err != nil {
				t.Fatal(err)
			}
			if ev := nextEvent(t, ch); !errors.Is(ev.Err, store.ErrCorruptRecord) {
				t.Errorf("first event of a watch = %+v, want an Err wrapping ErrCorruptRecord", ev)
			}
		})
	}
}

// A record at store.MaxRevision reads, but no later revision exists: a swap
// from it is ErrCorruptRecord and writes nothing (the arithmetic does not
// wrap to a small revision).
func TestRecordAtMaxRevision(t *testing.T) {
	srv := testcluster.PackageRedis(t)
	st, c := newStore(t, srv)
	ctx := t.Context()
	name := "max-revision"
	key := mustKey(t, st, name)
	held, _ := mustSwap(t, st, name, 0, rec("a", 1))
	forge(t, c, key, map[string]string{"rev": dec(uint64(store.MaxRevision))})
	got, rev, err := st.Get(ctx, name)
	if err != nil || rev != store.MaxRevision || got.Token != held.Token {
		t.Fatalf("Get = %+v at %d, %v; want the record at store.MaxRevision", got, rev, err)
	}
	before, _ := c.Dump(ctx, key).Result()
	for _, next := range []lease.Record[meta]{held, rec("b", held.Token+1)} {
		if _, r, err := st.CompareAndSwap(ctx, name, rev, next); !errors.Is(err, store.ErrCorruptRecord) || r != 0 {
			t.Errorf("CompareAndSwap from store.MaxRevision = %d, %v; want ErrCorruptRecord", r, err)
		}
	}
	if after, _ := c.Dump(ctx, key).Result(); after != before {
		t.Error("the record at store.MaxRevision was overwritten")
	}
}

// The observed bug: after a record holding token 2^64-1 (an older version
// accepted it), a new term was issued a token below it. Now the record is
// corrupt and nothing is issued; at lease.MaxToken a new term, whatever
// token it proposes, is ErrTokenExhausted.
func TestTokenNeverWrapsOrGoesBelow(t *testing.T) {
	srv := testcluster.PackageRedis(t)
	st, c := newStore(t, srv)
	ctx := t.Context()
	name := "wrap"
	key := mustKey(t, st, name)
	_, rev := mustSwap(t, st, name, 0, rec("a", 1))
	forge(t, c, key, map[string]string{"token": dec(math.MaxUint64)})
	highest := uint64(math.MaxUint64)
	if _, _, err := st.CompareAndSwap(ctx, name, rev, rec("b", highest+1)); !errors.Is(err, store.ErrCorruptRecord) {
		t.Fatalf("new term over token 2^64-1: %v, want ErrCorruptRecord", err)
	}

	// A record at lease.MaxToken, written by the store itself.
	if err := c.Del(ctx, key).Err(); err != nil {
		t.Fatal(err)
	}
	top, rev := mustSwap(t, st, name, 0, rec("a", lease.MaxToken))
	if top.Token != lease.MaxToken {
		t.Fatalf("token %d, want lease.MaxToken", top.Token)
	}
	before, _ := c.Dump(ctx, key).Result()
	for _, next := range []lease.Record[meta]{rec("b", 0), rec("b", 1), rec("a", 1), rec("b", lease.MaxToken)} {
		_, _, err := st.CompareAndSwap(ctx, name, rev, next)
		if !errors.Is(err, store.ErrTokenExhausted) {
			t.Errorf("new term of %s proposing %d over lease.MaxToken: %v, want ErrTokenExhausted", next.Holder, next.Token, err)
		}
	}
	if after, _ := c.Dump(ctx, key).Result(); after != before {
		t.Error("a refused new term wrote")
	}
}

// Someone rewinds the record (a restore, a script): the same holder and
// token at a revision 1000 lower. The store reports it as it is; a swap from
// the revision before the rewind conflicts and returns the rewound record;
// a swap from the rewound revision succeeds above it, and a new term gets a
// token above the stored one.
func TestRewoundRecord(t *testing.T) {
	srv := testcluster.PackageRedis(t)
	ctx := t.Context()
	for _, newTerm := range []bool{false, true} {
		t.Run(fmt.Sprintf("newTerm=%v", newTerm), func(t *testing.T) {
			st, c := newStore(t, srv)
			name := "rewound"
			key := mustKey(t, st, name)
			held, rev := mustSwap(t, st, name, 0, rec("a", 1))
			held, rev = mustSwap(t, st, name, rev, held)
			old := rev - 1000
			forge(t, c, key, map[string]string{"rev": dec(uint64(old))})

			got, gotRev, err := st.Get(ctx, name)
			if err != nil || gotRev != old || got.Holder != held.Holder || got.Token != held.Token {
				t.Fatalf("Get after the rewind = %+v at %d, %v; want %s's token %d at %d", got, gotRev, err, held.Holder, held.Token, old)
			}
			cur, curRev, err := st.CompareAndSwap(ctx, name, rev, held)
			if !errors.Is(err, store.ErrConflict) || curRev != old || cur.Token != held.Token || cur.Holder != held.Holder {
				t.Fatalf("swap from the revision before the rewind = %+v at %d, %v; want a conflict with the rewound record at %d", cur, curRev, err, old)
			}
			next := cur
			if newTerm {
				next = rec("b", cur.Token+1)
			}
			after, afterRev, err := st.CompareAndSwap(ctx, name, old, next)
			if err != nil {
				t.Fatalf("swap from the rewound revision: %v", err)
			}
			if afterRev <= old {
				t.Errorf("revision %d after the rewound %d", afterRev, old)
			}
			switch {
			case newTerm && after.Token <= cur.Token:
				t.Errorf("new term token %d, want above the stored %d", after.Token, cur.Token)
			case !newTerm && after.Token != cur.Token:
				t.Errorf("renewal changed the token from %d to %d", cur.Token, after.Token)
			}
			if got, r, err := st.Get(ctx, name); err != nil || r != afterRev || got.Holder != next.Holder {
				t.Errorf("Get = %+v at %d, %v; want %s at %d", got, r, err, next.Holder, afterRev)
			}
		})
	}
}

func TestNewRefusesPrefixWithBraces(t *testing.T) {
	c := testcluster.PackageRedis(t).Client(t)
	for _, p := range []string{"{app}:", "app}", "a{", "{}"} {
		_, err := redisstore.New[meta](c, redisstore.WithPrefix(p))
		if !errors.Is(err, redisstore.ErrInvalidOption) || !strings.Contains(err.Error(), "WithPrefix") {
			t.Errorf("New(WithPrefix(%q)) error = %v, want ErrInvalidOption naming WithPrefix", p, err)
		}
	}
	if _, err := redisstore.New[meta](c, redisstore.WithPrefix("app:tenure:")); err != nil {
		t.Errorf("New(WithPrefix(\"app:tenure:\")): %v", err)
	}
	if _, err := redisstore.New[meta](nil); !errors.Is(err, store.ErrNilArgument) {
		t.Errorf("New(nil) error = %v, want store.ErrNilArgument", err)
	}
}

// Revisions above 2^53, where doubles lose precision, are counted exactly:
// the script adds one to the decimal text.
func TestRevisionsAboveTwoToThe53(t *testing.T) {
	srv := testcluster.PackageRedis(t)
	st, c := newStore(t, srv)
	ctx := t.Context()
	name := "precise"
	key := mustKey(t, st, name)
	held, _ := mustSwap(t, st, name, 0, rec("a", 1))
	for _, from := range []uint64{1<<53 + 1, 1<<62 + 1, uint64(store.MaxRevision) - 1} {
		forge(t, c, key, map[string]string{"rev": dec(from)})
		if _, rev, err := st.Get(ctx, name); err != nil || uint64(rev) != from {
			t.Fatalf("Get = revision %d, %v; want %d", rev, err, from)
		}
		got, rev, err := st.CompareAndSwap(ctx, name, lease.Revision(from), held)
		if err != nil || uint64(rev) != from+1 {
			t.Fatalf("swap from %d = revision %d, %v; want %d", from, rev, err, from+1)
		}
		held = got
	}
}
