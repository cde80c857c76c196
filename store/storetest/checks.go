package storetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

func testCreateIfAbsent[M any](e *env[M]) {
	name := e.name("create")
	first, rev := e.swap(name, 0, e.term("holder-a", 1))
	got, gotRev, err := e.st.CompareAndSwap(e.ctx, name, 0, e.term("holder-b", 1))
	e.conflict("a second create", got, gotRev, err, first, rev)
	e.stored(name, first, rev)
}

func testGetMissing[M any](e *env[M]) {
	e.absent(e.name("missing"))
}

func testSwapMissing[M any](e *env[M]) {
	name := e.name("swap-missing")
	got, rev, err := e.st.CompareAndSwap(e.ctx, name, 7, e.term("holder-a", 1))
	e.conflict("a swap expecting revision 7 of a missing name", got, rev, err, lease.Record[M]{}, 0)
	e.absent(name)
}

func testStaleRevision[M any](e *env[M]) {
	name := e.name("stale")
	first, rev1 := e.swap(name, 0, e.term("holder-a", 1))
	renewal := first
	renewal.RenewedAt = time.Now()
	second, rev2 := e.swap(name, rev1, renewal)
	if second.Token != first.Token {
		e.t.Errorf("a renewal changed the Token from %d to %d", first.Token, second.Token)
	}
	got, gotRev, err := e.st.CompareAndSwap(e.ctx, name, rev1, e.term("holder-b", first.Token+1))
	e.conflict("a swap with a stale revision", got, gotRev, err, second, rev2)
	e.stored(name, second, rev2)
}

// racers is how many goroutines race one CompareAndSwap.
const racers = 16

func testConcurrentSwaps[M any](e *env[M]) {
	name := e.name("race")
	held, rev := e.swap(name, 0, e.term("holder-0", 1))
	e.race(name, rev, held.Token+1)
	e.race(e.name("race-create"), 0, 1)
}

// testConcurrentOwnAnswers has racers goroutines each create a name of its
// own and read it back, all at once: every call must get its own answer. A
// store that sends the calls made at the same time together (in a pipeline,
// a batch) must not hand one call's answer to another.
func testConcurrentOwnAnswers[M any](e *env[M]) {
	type result struct {
		wrote, rec, got lease.Record[M]
		rev, grev       lease.Revision
		err, gerr       error
	}
	var (
		names   [racers]string
		results [racers]result
		start   = make(chan struct{})
		wg      sync.WaitGroup
	)
	for i := range racers {
		names[i] = e.name(fmt.Sprintf("own-%d", i))
		wg.Go(func() {
			<-start
			r := &results[i]
			r.wrote = e.term(fmt.Sprintf("owner-%d", i), 1)
			r.rec, r.rev, r.err = e.st.CompareAndSwap(e.ctx, names[i], 0, r.wrote)
			r.got, r.grev, r.gerr = e.st.Get(e.ctx, names[i])
		})
	}
	close(start)
	wg.Wait()
	for i, r := range results {
		if r.err != nil {
			e.t.Fatalf("create of %q, made at the same time as %d others: %v", names[i], racers-1, r.err)
		}
		e.written(fmt.Sprintf("create of %q, made at the same time as others", names[i]), r.rec, r.wrote)
		if r.gerr != nil || r.grev != r.rev || r.got.Holder != r.wrote.Holder {
			e.t.Fatalf("Get(%q) right after its create, with others at the same time: holder %q at revision %d, %v; want %q at %d",
				names[i], r.got.Holder, r.grev, r.gerr, r.wrote.Holder, r.rev)
		}
	}
}

// race makes racers goroutines swap name from revision expected at once, each
// as its own holder, and checks that exactly one wins and that every loser
// learns the winner.
func (e *env[M]) race(name string, expected lease.Revision, token uint64) (lease.Record[M], lease.Revision) {
	e.t.Helper()
	type result struct {
		wrote lease.Record[M]
		rec   lease.Record[M]
		rev   lease.Revision
		err   error
	}
	var (
		results [racers]result
		start   = make(chan struct{})
		wg      sync.WaitGroup
	)
	for i := range racers {
		wg.Go(func() {
			<-start
			wrote := e.term(fmt.Sprintf("racer-%d", i), token)
			rec, rev, err := e.st.CompareAndSwap(e.ctx, name, expected, wrote)
			results[i] = result{wrote, rec, rev, err}
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
	e.written(fmt.Sprintf("the winning racer %d", winner), won.rec, won.wrote)
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
// many connections, say. A nil ctx or st fails t with an error wrapping
// store.ErrNilArgument; t itself must not be nil. Like Run it is generic
// over the metadata type: for an M other than Meta, opts must give samples
// (WithSamples); the racers' records carry them.
func Race[M any](t *testing.T, ctx context.Context, st store.Store[M], name string, expected lease.Revision, token uint64, opts ...Option[M]) (lease.Record[M], lease.Revision) {
	t.Helper()
	md, err := metadataOf(opts)
	if err != nil {
		t.Fatalf("storetest.Race: %v", err)
	}
	if ctx == nil {
		t.Fatalf("storetest.Race: %v: ctx is nil", store.ErrNilArgument)
	}
	if err := store.Validate(st); err != nil {
		t.Fatalf("storetest.Race: st: %v", err)
	}
	return (&env[M]{t: t, ctx: ctx, st: st, md: md}).race(name, expected, token)
}

func testRevisionsIncrease[M any](e *env[M]) {
	name := e.name("revisions")
	rec, rev := e.swap(name, 0, e.term("holder-0", 1))
	for i := 1; i <= 40; i++ {
		next := rec
		next.RenewedAt = time.Now()
		newTerm := i%4 == 0
		if newTerm {
			next = e.term(fmt.Sprintf("holder-%d", i), rec.Token+1)
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

func testRelease[M any](e *env[M]) {
	name := e.name("release")
	acquire := e.term("holder-a", 5)
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
	again := e.term("holder-a", released.Token+1)
	again.Transitions = released.Transitions
	if next, _ := e.swap(name, rev, again); next.Token <= held.Token {
		e.t.Errorf("acquiring after a release got Token %d, not above the %d before", next.Token, held.Token)
	}
}

func testMetadataRoundTrip[M any](e *env[M]) {
	for i, m := range e.md.samples {
		name := e.name("metadata-" + e.md.label(i))
		r := e.term("holder-a", 1)
		r.Metadata = m
		got, rev := e.swap(name, 0, r)
		e.stored(name, got, rev)
	}
}

// metaSample is one of the suite's own metadata values.
type metaSample struct {
	label string
	m     Meta
}

// metaSamples returns the metadata values the suite writes when M is Meta.
func metaSamples() []metaSample {
	return []metaSample{
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

func testCallerOwnsMetadata[M any](e *env[M]) {
	if e.md.fresh == nil {
		e.t.Skip("storetest.WithShared not given: whether the store keeps references to the caller's metadata is not checked")
	}
	name := e.name("owns")
	wrote := e.term("holder-a", 1)
	wrote.Metadata = e.md.fresh()
	got, rev := e.swap(name, 0, wrote)
	e.md.mutate(&wrote.Metadata)
	e.md.mutate(&got.Metadata)
	want := got
	want.Metadata = e.md.fresh()
	read, _ := e.get(name)
	e.same("Get after the caller mutated the metadata it wrote and the one returned", read, want)
	e.md.mutate(&read.Metadata)
	e.stored(name, want, rev)
}

func testFieldsRoundTrip[M any](e *env[M]) {
	zone := time.FixedZone("UTC+05:30", 5*3600+30*60)
	cases := []struct {
		label  string
		change func(r *lease.Record[M])
	}{
		{"large", func(r *lease.Record[M]) {
			r.Token, r.Transitions, r.LeaseDuration = lease.MaxToken, lease.MaxToken, lease.MaxDuration
		}},
		{"small", func(r *lease.Record[M]) {
			// Token 0 is never issued: the store raises it.
			r.Holder, r.Token, r.Transitions, r.LeaseDuration = "", 0, 0, 0
		}},
		{"milliseconds", func(r *lease.Record[M]) {
			r.Token, r.Transitions, r.LeaseDuration = 1<<52+3, 1<<32+1, 1500*time.Millisecond
		}},
		{"zone", func(r *lease.Record[M]) {
			r.AcquiredAt, r.RenewedAt = r.AcquiredAt.In(zone), r.RenewedAt.In(zone)
		}},
		{"zero-times", func(r *lease.Record[M]) {
			r.AcquiredAt, r.RenewedAt = time.Time{}, time.Time{}
		}},
	}
	for _, c := range cases {
		name := e.name("fields-" + c.label)
		r := e.term("holder-a", 1)
		c.change(&r)
		got, rev := e.swap(name, 0, r)
		e.stored(name, got, rev)
	}
	// Claim round trips: a create marked Claim, then the new term that
	// takes it over, which is not, then a claim again over a released
	// record.
	name := e.name("fields-claim")
	r := e.term("holder-a", 1)
	r.Claim = true
	got, rev := e.swap(name, 0, r)
	e.stored(name, got, rev)
	r = e.term("holder-a", got.Token+1)
	got, rev = e.swap(name, rev, r)
	e.stored(name, got, rev)
	r = got
	r.Holder = ""
	got, rev = e.swap(name, rev, r)
	e.stored(name, got, rev)
	r = e.term("holder-b", got.Token+1)
	r.Claim = true
	got, rev = e.swap(name, rev, r)
	e.stored(name, got, rev)
	// Successor round trips: a release naming a successor (the longest
	// holder name allowed), the same release naming nobody, and the
	// successor's term, which names none.
	name = e.name("fields-successor")
	got, rev = e.swap(name, 0, e.term("holder-a", 1))
	for _, succ := range []string{"holder-b", strings.Repeat("s", store.MaxHolderBytes), ""} {
		r = got
		r.Holder, r.Claim, r.Successor = "", false, succ
		got, rev = e.swap(name, rev, r)
		e.stored(name, got, rev)
	}
	r = got
	r.Successor = "holder-b"
	got, rev = e.swap(name, rev, r)
	got, rev = e.swap(name, rev, e.term("holder-b", got.Token+1))
	e.stored(name, got, rev)
	if !e.md.stamps {
		return
	}
	// Stamp round trips (WithStamps): every bit, on a create and on
	// swaps, and 0 (none) after one.
	name = e.name("fields-stamp")
	r = e.term("holder-a", 1)
	r.Stamp = 0xfedcba9876543210
	got, rev = e.swap(name, 0, r)
	e.stored(name, got, rev)
	for _, stamp := range []uint64{1<<64 - 1, 0, 1, 1 << 63} {
		r = got
		r.Stamp = stamp
		got, rev = e.swap(name, rev, r)
		e.stored(name, got, rev)
	}
}

// endedContext is a context that has ended, and the error it ends with.
type endedContext struct {
	label string // "cancelled", "past its deadline"
	ctx   context.Context
	want  error
}

// endedContexts returns a context cancelled and one past its deadline.
func (e *env[M]) endedContexts() []endedContext {
	cancelled, cancel := context.WithCancel(e.ctx)
	cancel()
	expired, cancel := context.WithDeadline(e.ctx, time.Now().Add(-time.Second))
	e.t.Cleanup(cancel)
	return []endedContext{
		{"cancelled", cancelled, context.Canceled},
		{"past its deadline", expired, context.DeadlineExceeded},
	}
}

func testContext[M any](e *env[M]) {
	name := e.name("context")
	held, rev := e.swap(name, 0, e.term("holder-a", 1))
	fresh := e.name("context-fresh")
	for _, c := range e.endedContexts() {
		_, _, err := e.st.Get(c.ctx, name)
		e.wantErr("Get with a context "+c.label, err, c.want)
		_, _, err = e.st.CompareAndSwap(c.ctx, name, rev, e.term("holder-b", held.Token+1))
		e.wantErr("CompareAndSwap with a context "+c.label, err, c.want)
		_, _, err = e.st.CompareAndSwap(c.ctx, fresh, 0, e.term("holder-b", 1))
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

func testInvalidNames[M any](e *env[M]) {
	w, watcher := e.st.(store.Watcher[M])
	for _, name := range badNames {
		_, _, err := e.st.Get(e.ctx, name)
		e.wantErr(fmt.Sprintf("Get(%q)", name), err, store.ErrInvalidName)
		for _, expected := range []lease.Revision{0, 1} {
			_, _, err = e.st.CompareAndSwap(e.ctx, name, expected, e.term("holder-a", 1))
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

func testOversizedMetadata[M any](e *env[M]) {
	if e.md.oversized == nil {
		e.t.Skip("storetest.WithOversized not given: the refusal of oversized metadata is not checked")
	}
	e.refused("oversized metadata", store.ErrMetadataTooLarge, func(r *lease.Record[M]) {
		r.Metadata = e.md.oversized()
	})
}

func testInvalidRecord[M any](e *env[M]) {
	for _, c := range []struct {
		label  string
		change func(r *lease.Record[M])
	}{
		{"a negative LeaseDuration", func(r *lease.Record[M]) { r.LeaseDuration = -time.Second }},
		{"a holder of 254 bytes", func(r *lease.Record[M]) { r.Holder = strings.Repeat("h", store.MaxHolderBytes+1) }},
		{"a holder with a NUL", func(r *lease.Record[M]) { r.Holder = "a\x00b" }},
		{"a holder not UTF-8", func(r *lease.Record[M]) { r.Holder = "\xff" }},
		{"a holder and a zero LeaseDuration", func(r *lease.Record[M]) { r.LeaseDuration = 0 }},
		{"a LeaseDuration above lease.MaxDuration", func(r *lease.Record[M]) { r.LeaseDuration = lease.MaxDuration + time.Second }},
		{"Transitions above lease.MaxToken", func(r *lease.Record[M]) { r.Transitions = lease.MaxToken + 1 }},
		{"Transitions of 2^64-1", func(r *lease.Record[M]) { r.Transitions = math.MaxUint64 }},
	} {
		e.refused(c.label, store.ErrInvalidRecord, c.change)
	}
}

func testTokenAboveMax[M any](e *env[M]) {
	for _, c := range []struct {
		label string
		token uint64
	}{
		{"lease.MaxToken+1", lease.MaxToken + 1},
		{"2^63+5", 1<<63 + 5},
		{"2^64-1", math.MaxUint64},
	} {
		e.refused("a Token of "+c.label, store.ErrTokenExhausted, func(r *lease.Record[M]) {
			r.Token = c.token
		})
	}
}

// exhausted checks that a swap of next from rev fails with
// ErrTokenExhausted and leaves want stored at rev.
func (e *env[M]) exhausted(what, name string, rev lease.Revision, next lease.Record[M], want lease.Record[M]) {
	e.t.Helper()
	got, gotRev, err := e.st.CompareAndSwap(e.ctx, name, rev, next)
	if !errors.Is(err, store.ErrTokenExhausted) {
		e.t.Errorf("%s: CompareAndSwap = token %d, revision %d, error %v; want an error wrapping store.ErrTokenExhausted", what, got.Token, gotRev, err)
	}
	e.stored(name, want, rev)
}

func testTokenExhausted[M any](e *env[M]) {
	name := e.name("exhausted")
	held, rev := e.swap(name, 0, e.term("holder-a", lease.MaxToken))
	if held.Token != lease.MaxToken {
		e.t.Fatalf("created with Token lease.MaxToken, got %d", held.Token)
	}
	// A next token computed with uint64 arithmetic from 2^64-1 wraps to 0.
	highest := uint64(math.MaxUint64)
	wrapped := e.term("holder-b", highest+1)
	e.exhausted("a new term whose token wrapped around to 0", name, rev, wrapped, held)
	e.exhausted("a new term with token 1", name, rev, e.term("holder-b", 1), held)
	e.exhausted("a new term of another holder with the stored token", name, rev, e.term("holder-b", lease.MaxToken), held)
	e.exhausted("a new term of the same holder with a lower token", name, rev, e.term("holder-a", 5), held)
	e.exhausted("a new term with lease.MaxToken+1", name, rev, e.term("holder-b", lease.MaxToken+1), held)

	// The term itself goes on: renewals and the release keep the token.
	renewal := held
	renewal.RenewedAt = time.Now()
	renewed, rev := e.swap(name, rev, renewal)
	release := renewed
	release.Holder = ""
	released, rev := e.swap(name, rev, release)
	if renewed.Token != lease.MaxToken || released.Token != lease.MaxToken {
		e.t.Errorf("a renewal and a release changed the token to %d and %d, want lease.MaxToken", renewed.Token, released.Token)
	}
	e.exhausted("acquiring the released record with its token", name, rev, e.term("holder-b", lease.MaxToken), released)
}

func testNewTermTokens[M any](e *env[M]) {
	name := e.name("new-term")
	held, rev := e.swap(name, 0, e.term("holder-a", 10))
	for _, c := range []struct {
		label string
		next  lease.Record[M]
	}{
		{"a lower token", e.term("holder-b", 3)},
		{"token 0", e.term("holder-b", 0)},
		{"the stored token, by another holder", e.term("holder-b", held.Token)},
		{"a lower token, by the same holder", e.term("holder-a", 1)},
	} {
		prev := held
		held, rev = e.swap(name, rev, c.next) // checks Token >= the one written
		if held.Token <= prev.Token || held.Token > lease.MaxToken {
			e.t.Errorf("a new term with %s got Token %d; want one above the %d stored before, at most lease.MaxToken", c.label, held.Token, prev.Token)
		}
		e.stored(name, held, rev)
		// The record as written is a renewal of that term, token kept.
		renewal := held
		renewal.RenewedAt = time.Now()
		renewed, r := e.swap(name, rev, renewal)
		if renewed.Token != held.Token {
			e.t.Errorf("a renewal after a new term with %s changed the token from %d to %d", c.label, held.Token, renewed.Token)
		}
		held, rev = renewed, r
	}
	// A released record keeps its token, and the next acquire, even with
	// that very token, gets a larger one.
	release := held
	release.Holder = ""
	released, rev := e.swap(name, rev, release)
	again, _ := e.swap(name, rev, e.term("holder-c", released.Token))
	if again.Token <= released.Token {
		e.t.Errorf("acquiring a released record with its token %d got Token %d; want a larger one", released.Token, again.Token)
	}
	// A create never gets token 0.
	if created, _ := e.swap(e.name("new-term-zero"), 0, e.term("holder-a", 0)); created.Token == 0 {
		e.t.Error("a create with Token 0 was stored with Token 0, which is never issued")
	}
}

// refused checks that a record changed by change is refused with an error
// wrapping want, both as an update and as a create, and that nothing stored
// is lost.
func (e *env[M]) refused(label string, want error, change func(r *lease.Record[M])) {
	e.t.Helper()
	name := e.name("refused")
	held, rev := e.swap(name, 0, e.term("holder-a", 1))
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
