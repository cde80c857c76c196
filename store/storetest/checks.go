package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

func testCreateIfAbsent(e *env) {
	name := e.name("create")
	first, rev := e.swap(name, 0, term("holder-a", 1))
	got, gotRev, err := e.st.CompareAndSwap(e.ctx, name, 0, term("holder-b", 1))
	e.conflict("a second create", got, gotRev, err, first, rev)
	e.stored(name, first, rev)
}

func testGetMissing(e *env) {
	e.absent(e.name("missing"))
}

func testSwapMissing(e *env) {
	name := e.name("swap-missing")
	got, rev, err := e.st.CompareAndSwap(e.ctx, name, 7, term("holder-a", 1))
	e.conflict("a swap expecting revision 7 of a missing name", got, rev, err, lease.Record[Meta]{}, 0)
	e.absent(name)
}

func testStaleRevision(e *env) {
	name := e.name("stale")
	first, rev1 := e.swap(name, 0, term("holder-a", 1))
	renewal := first
	renewal.RenewedAt = time.Now()
	second, rev2 := e.swap(name, rev1, renewal)
	if second.Token != first.Token {
		e.t.Errorf("a renewal changed the Token from %d to %d", first.Token, second.Token)
	}
	got, gotRev, err := e.st.CompareAndSwap(e.ctx, name, rev1, term("holder-b", first.Token+1))
	e.conflict("a swap with a stale revision", got, gotRev, err, second, rev2)
	e.stored(name, second, rev2)
}

// racers is how many goroutines race one CompareAndSwap.
const racers = 16

func testConcurrentSwaps(e *env) {
	name := e.name("race")
	held, rev := e.swap(name, 0, term("holder-0", 1))
	e.race(name, rev, held.Token+1)
	e.race(e.name("race-create"), 0, 1)
}

// race makes racers goroutines swap name from revision expected at once, each
// as its own holder, and checks that exactly one wins and that every loser
// learns the winner.
func (e *env) race(name string, expected lease.Revision, token uint64) (lease.Record[Meta], lease.Revision) {
	e.t.Helper()
	type result struct {
		rec lease.Record[Meta]
		rev lease.Revision
		err error
	}
	var (
		results [racers]result
		start   = make(chan struct{})
		wg      sync.WaitGroup
	)
	for i := range racers {
		wg.Go(func() {
			<-start
			rec, rev, err := e.st.CompareAndSwap(e.ctx, name, expected, term(fmt.Sprintf("racer-%d", i), token))
			results[i] = result{rec, rev, err}
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, r := range results {
		switch {
		case r.err == nil && winner >= 0:
			e.t.Fatalf("racers %d and %d both won the swap of %q from revision %d", winner, i, name, expected)
		case r.err == nil:
			winner = i
		case !errors.Is(r.err, store.ErrConflict):
			e.t.Fatalf("racer %d: error = %v, want nil or one wrapping store.ErrConflict", i, r.err)
		}
	}
	if winner < 0 {
		e.t.Fatalf("none of %d racers won the swap of %q from revision %d", racers, name, expected)
	}
	won := results[winner]
	e.written(fmt.Sprintf("the winning racer %d", winner), won.rec, term(fmt.Sprintf("racer-%d", winner), token))
	for i, r := range results {
		if i != winner {
			e.conflict(fmt.Sprintf("losing racer %d", i), r.rec, r.rev, r.err, won.rec, won.rev)
		}
	}
	e.stored(name, won.rec, won.rev)
	return won.rec, won.rev
}

// Race has 16 goroutines swap name from expected at once, each as its
// own holder with token, and checks what the ConcurrentSwaps check of Run
// checks: exactly one wins, every loser gets ErrConflict with the winner's
// record and revision, and the store holds the winner's write. It returns
// that record and revision. A store uses it to stress its own races, on
// many connections, say.
func Race(t *testing.T, ctx context.Context, st store.Store[Meta], name string, expected lease.Revision, token uint64) (lease.Record[Meta], lease.Revision) {
	t.Helper()
	return (&env{t: t, ctx: ctx, st: st}).race(name, expected, token)
}

func testRevisionsIncrease(e *env) {
	name := e.name("revisions")
	rec, rev := e.swap(name, 0, term("holder-0", 1))
	for i := 1; i <= 40; i++ {
		next := rec
		next.RenewedAt = time.Now()
		newTerm := i%4 == 0
		if newTerm {
			next = term(fmt.Sprintf("holder-%d", i), rec.Token+1)
		}
		prev := rec
		rec, rev = e.swap(name, rev, next) // checks that rev grew
		switch {
		case newTerm && rec.Token <= prev.Token:
			e.t.Errorf("write %d: a new term got Token %d, not above the %d before", i, rec.Token, prev.Token)
		case !newTerm && rec.Token != prev.Token:
			e.t.Errorf("write %d: a renewal changed the Token from %d to %d", i, prev.Token, rec.Token)
		}
		e.stored(name, rec, rev)
	}
}

func testRelease(e *env) {
	name := e.name("release")
	acquire := term("holder-a", 5)
	acquire.Transitions = 3
	held, rev := e.swap(name, 0, acquire)
	release := held
	release.Holder = ""
	release.RenewedAt = time.Now()
	released, rev := e.swap(name, rev, release)
	if released.Holder != "" || released.Token != held.Token || released.Transitions != held.Transitions {
		e.t.Errorf("release stored holder %q, Token %d, Transitions %d; want holder \"\", Token %d, Transitions %d",
			released.Holder, released.Token, released.Transitions, held.Token, held.Transitions)
	}
	e.stored(name, released, rev)
	again := term("holder-a", released.Token+1)
	again.Transitions = released.Transitions
	if next, _ := e.swap(name, rev, again); next.Token <= held.Token {
		e.t.Errorf("acquiring after a release got Token %d, not above the %d before", next.Token, held.Token)
	}
}

func testMetadataRoundTrip(e *env) {
	cases := []struct {
		label string
		m     Meta
	}{
		{"zero", Meta{}},
		{"empty", Meta{Labels: map[string]string{}, Tags: []string{}, Owner: &Detail{Items: []string{}}}},
		{"nested", Meta{
			Name:   "billing-cron",
			Labels: map[string]string{"region": "eu-west-1", "zone": "b", "": "empty key"},
			Tags:   []string{"a", "", "c"},
			Detail: Detail{Note: "primary", Count: 1<<53 + 1, Items: []string{"x", "y"}},
			Owner:  &Detail{Note: "owner", Count: -42, Items: []string{"z"}},
		}},
		{"unicode", Meta{
			Name:   "héllo wörld ✓ 日本語 한국어 العربية",
			Labels: map[string]string{"ключ": "значение", "emoji 🎉": "👩‍💻🏳️‍🌈 𝄞"},
			Tags:   []string{"\u2028\u2029", "\"quoted\" \\back\\slash\n\t\r", "<b>&amp;</b>", "\ufffd"},
			Detail: Detail{Note: "ñ", Items: []string{"€", "ß"}},
		}},
		{"blob", Meta{Blob: strings.Repeat("0123456789abcdef", store.MaxMetadataBytes/32)}},
	}
	for _, c := range cases {
		name := e.name("metadata-" + c.label)
		r := term("holder-a", 1)
		r.Metadata = c.m
		got, rev := e.swap(name, 0, r)
		e.stored(name, got, rev)
	}
}

// sharedMeta returns metadata whose map, slice and pointer a caller could
// share with a store that keeps references.
func sharedMeta() Meta {
	return Meta{
		Labels: map[string]string{"k": "before"},
		Tags:   []string{"before"},
		Owner:  &Detail{Note: "before", Items: []string{"before"}},
	}
}

// mutate changes everything that sharedMeta shares.
func mutate(m *Meta) {
	m.Labels["k"] = "after"
	m.Labels["added"] = "after"
	m.Tags[0] = "after"
	m.Owner.Note = "after"
	m.Owner.Items[0] = "after"
}

func testCallerOwnsMetadata(e *env) {
	name := e.name("owns")
	wrote := term("holder-a", 1)
	wrote.Metadata = sharedMeta()
	got, rev := e.swap(name, 0, wrote)
	mutate(&wrote.Metadata)
	mutate(&got.Metadata)
	want := got
	want.Metadata = sharedMeta()
	read, _ := e.get(name)
	e.same("Get after the caller mutated the metadata it wrote and the one returned", read, want)
	mutate(&read.Metadata)
	e.stored(name, want, rev)
}

func testFieldsRoundTrip(e *env) {
	zone := time.FixedZone("UTC+05:30", 5*3600+30*60)
	cases := []struct {
		label  string
		change func(r *lease.Record[Meta])
	}{
		{"large", func(r *lease.Record[Meta]) {
			r.Token, r.Transitions, r.LeaseDuration = lease.MaxToken, lease.MaxToken, lease.MaxDuration
		}},
		{"small", func(r *lease.Record[Meta]) {
			r.Holder, r.Token, r.Transitions, r.LeaseDuration = "", 0, 0, 0
		}},
		{"milliseconds", func(r *lease.Record[Meta]) {
			r.Token, r.Transitions, r.LeaseDuration = 1<<52+3, 1<<32+1, 1500*time.Millisecond
		}},
		{"zone", func(r *lease.Record[Meta]) {
			r.AcquiredAt, r.RenewedAt = r.AcquiredAt.In(zone), r.RenewedAt.In(zone)
		}},
		{"zero-times", func(r *lease.Record[Meta]) {
			r.AcquiredAt, r.RenewedAt = time.Time{}, time.Time{}
		}},
	}
	for _, c := range cases {
		name := e.name("fields-" + c.label)
		r := term("holder-a", 1)
		c.change(&r)
		got, rev := e.swap(name, 0, r)
		e.stored(name, got, rev)
	}
}

func testContext(e *env) {
	name := e.name("context")
	held, rev := e.swap(name, 0, term("holder-a", 1))
	fresh := e.name("context-fresh")
	cancelled, cancel := context.WithCancel(e.ctx)
	cancel()
	expired, cancel := context.WithDeadline(e.ctx, time.Now().Add(-time.Second))
	defer cancel()
	for _, c := range []struct {
		label string
		ctx   context.Context
		want  error
	}{
		{"cancelled", cancelled, context.Canceled},
		{"past its deadline", expired, context.DeadlineExceeded},
	} {
		_, _, err := e.st.Get(c.ctx, name)
		e.wantErr("Get with a context "+c.label, err, c.want)
		_, _, err = e.st.CompareAndSwap(c.ctx, name, rev, term("holder-b", held.Token+1))
		e.wantErr("CompareAndSwap with a context "+c.label, err, c.want)
		_, _, err = e.st.CompareAndSwap(c.ctx, fresh, 0, term("holder-b", 1))
		e.wantErr("CompareAndSwap creating with a context "+c.label, err, c.want)
	}
	e.stored(name, held, rev)
	e.absent(fresh)
}

// badNames breaks each rule of store.ValidateName.
var badNames = []string{
	"",
	strings.Repeat("a", store.MaxNameBytes+1),
	"\x00",
	"nul\x00inside",
	"tab\there",
	"\xff\xfe",
	"cut\xc3",
}

func testInvalidNames(e *env) {
	w, watcher := e.st.(store.Watcher[Meta])
	for _, name := range badNames {
		_, _, err := e.st.Get(e.ctx, name)
		e.wantErr(fmt.Sprintf("Get(%q)", name), err, store.ErrInvalidName)
		for _, expected := range []lease.Revision{0, 1} {
			_, _, err = e.st.CompareAndSwap(e.ctx, name, expected, term("holder-a", 1))
			e.wantErr(fmt.Sprintf("CompareAndSwap(%q, %d)", name, expected), err, store.ErrInvalidName)
		}
		if watcher {
			ctx, cancel := context.WithCancel(e.ctx)
			_, err = w.Watch(ctx, name)
			cancel()
			e.wantErr(fmt.Sprintf("Watch(%q)", name), err, store.ErrInvalidName)
		}
	}
}

func testOversizedMetadata(e *env) {
	e.refused("oversized metadata", store.ErrMetadataTooLarge, func(r *lease.Record[Meta]) {
		r.Metadata.Blob = strings.Repeat("x", store.MaxMetadataBytes+1)
	})
}

func testInvalidRecord(e *env) {
	for _, c := range []struct {
		label  string
		change func(r *lease.Record[Meta])
	}{
		{"a negative LeaseDuration", func(r *lease.Record[Meta]) { r.LeaseDuration = -time.Second }},
		{"a holder of 254 bytes", func(r *lease.Record[Meta]) { r.Holder = strings.Repeat("h", store.MaxHolderBytes+1) }},
		{"a holder with a NUL", func(r *lease.Record[Meta]) { r.Holder = "a\x00b" }},
		{"a holder not UTF-8", func(r *lease.Record[Meta]) { r.Holder = "\xff" }},
	} {
		e.refused(c.label, store.ErrInvalidRecord, c.change)
	}
}

// refused checks that a record changed by change is refused with an error
// wrapping want, both as an update and as a create, and that nothing stored
// is lost.
func (e *env) refused(label string, want error, change func(r *lease.Record[Meta])) {
	e.t.Helper()
	name := e.name("refused")
	held, rev := e.swap(name, 0, term("holder-a", 1))
	bad := held
	change(&bad)
	_, _, err := e.st.CompareAndSwap(e.ctx, name, rev, bad)
	e.wantErr("CompareAndSwap of a record with "+label, err, want)
	fresh := e.name("refused-fresh")
	_, _, err = e.st.CompareAndSwap(e.ctx, fresh, 0, bad)
	e.wantErr("CompareAndSwap creating a record with "+label, err, want)
	e.stored(name, held, rev)
	e.absent(fresh)
}
