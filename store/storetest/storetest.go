package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

// Meta is the metadata type the suite stores: it has a field of every kind a
// codec must carry. Blob is used to build metadata of a chosen size.
type Meta struct {
	// Name is a string, often with unicode.
	Name string
	// Labels is a map, nil, empty or with an empty key.
	Labels map[string]string
	// Tags is a slice, nil, empty or with empty strings.
	Tags []string
	// Detail is a nested struct.
	Detail Detail
	// Owner is a pointer, nil or to a Detail.
	Owner *Detail
	// Blob pads the metadata to a chosen size.
	Blob string
}

// Detail is the struct nested in Meta.
type Detail struct {
	// Note is a string.
	Note string
	// Count is an integer, negative or beyond float64 precision.
	Count int64
	// Items is a slice in a nested struct.
	Items []string
}

// WatchTimeout is how long the suite waits for an event, or for a channel to
// close, before it fails.
const WatchTimeout = 10 * time.Second

// opTimeout bounds each subtest, so that a hung backend fails the suite
// rather than stalling it.
const opTimeout = time.Minute

// timeSlack is how far a time read back may lie from the one written.
const timeSlack = time.Second

// Run runs the conformance suite against the stores newStore returns: each
// check is a subtest of t with a fresh store. newStore may call t.Fatal or
// t.Skip (when a server is unavailable, say) and t.Cleanup. A nil newStore,
// or a nil store from it, fails t with an error wrapping
// store.ErrNilArgument; t itself must not be nil.
//
// Run is generic over the metadata type M, so that a store tied to one
// metadata type can be tested. For M = Meta the suite brings its own
// values; for any other M the caller passes them with WithSamples (at
// least one), and may pass WithOversized and WithShared for the checks that
// need them (they are skipped, saying so, without). Without samples for an
// M other than Meta, Run fails t. A store whose data outlives its Store
// value (a server, a table, a file) passes WithReopen, and WithDelete if
// its records can be deleted behind its back, for the check of its token
// floor across a reopen.
func Run[M any](t *testing.T, newStore func(t *testing.T) store.Store[M], opts ...Option[M]) {
	t.Helper()
	if newStore == nil {
		t.Fatalf("storetest.Run: %v: newStore is nil", store.ErrNilArgument)
	}
	md, err := metadataOf(opts)
	if err != nil {
		t.Fatalf("storetest.Run: %v", err)
	}
	n := &namer{prefix: fmt.Sprintf("storetest-%010x-", rand.Uint64()>>24)}
	run(t, checks[M](), newStore, n, md)
}

// check is one subtest of the suite: a check of its own (fn) or a group of
// them (sub).
type check[M any] struct {
	name string
	fn   func(e *env[M])
	sub  []check[M]
}

// run runs each of cs as a subtest of t with a fresh store.
func run[M any](t *testing.T, cs []check[M], newStore func(t *testing.T) store.Store[M], n *namer, md *metadata[M]) {
	for _, c := range cs {
		t.Run(c.name, func(t *testing.T) {
			if c.sub != nil {
				run(t, c.sub, newStore, n, md)
				return
			}
			ctx, cancel := context.WithTimeout(t.Context(), opTimeout)
			defer cancel()
			st := newStore(t)
			if err := store.Validate(st); err != nil {
				t.Fatalf("storetest.Run: the store newStore returned: %v", err)
			}
			c.fn(&env[M]{t: t, ctx: ctx, st: st, names: n, md: md})
		})
	}
}

func checks[M any]() []check[M] {
	return []check[M]{
		{name: "CreateIfAbsent", fn: testCreateIfAbsent[M]},
		{name: "GetMissing", fn: testGetMissing[M]},
		{name: "SwapMissing", fn: testSwapMissing[M]},
		{name: "StaleRevision", fn: testStaleRevision[M]},
		{name: "ConcurrentSwaps", fn: testConcurrentSwaps[M]},
		{name: "ConcurrentOwnAnswers", fn: testConcurrentOwnAnswers[M]},
		{name: "RevisionsIncrease", fn: testRevisionsIncrease[M]},
		{name: "ReleaseKeepsTokenAndTransitions", fn: testRelease[M]},
		{name: "MetadataRoundTrip", fn: testMetadataRoundTrip[M]},
		{name: "CallerOwnsMetadata", fn: testCallerOwnsMetadata[M]},
		{name: "FieldsRoundTrip", fn: testFieldsRoundTrip[M]},
		{name: "Context", fn: testContext[M]},
		{name: "InvalidNames", fn: testInvalidNames[M]},
		{name: "OversizedMetadata", fn: testOversizedMetadata[M]},
		{name: "InvalidRecord", fn: testInvalidRecord[M]},
		{name: "TokenAboveMax", fn: testTokenAboveMax[M]},
		{name: "TokenExhausted", fn: testTokenExhausted[M]},
		{name: "NewTermTokens", fn: testNewTermTokens[M]},
		{name: "ReleaseGuard", fn: testReleaseGuard[M]},
		{name: "CreateVoucher", fn: testCreateVoucher[M]},
		{name: "Batch", fn: testBatch[M]},
		{name: "TokenFloorAcrossReopen", fn: testTokenFloorAcrossReopen[M]},
		{name: "List", fn: testList[M]},
		{name: "Watch", sub: watchChecks[M](false)},
		{name: "WatchFunc", sub: append(watchChecks[M](true),
			check[M]{name: "OneCallAtATime", fn: testWatchFuncOneCallAtATime[M]},
			check[M]{name: "InvalidNames", fn: testWatchFuncInvalidNames[M]},
		)},
	}
}

// watchChecks are the checks of Watch, or (viaFunc) the same checks of
// WatchFunc, whose calls are then turned into a channel's events.
func watchChecks[M any](viaFunc bool) []check[M] {
	cs := []check[M]{
		{name: "AbsentFirst", fn: testWatchAbsentFirst[M]},
		{name: "CurrentFirst", fn: testWatchCurrentFirst[M]},
		{name: "Order", fn: testWatchOrder[M]},
		{name: "OtherName", fn: testWatchOtherName[M]},
		{name: "TwoWatchers", fn: testWatchTwoWatchers[M]},
		{name: "Cancel", fn: testWatchCancel[M]},
		{name: "EndedContext", fn: testWatchEndedContext[M]},
	}
	if viaFunc {
		for i, c := range cs {
			cs[i].fn = func(e *env[M]) {
				e.viaFunc = true
				c.fn(e)
			}
		}
	}
	return cs
}

// namer hands out names that no other Run, and no other check, uses.
type namer struct {
	prefix string
	n      atomic.Uint64
}

// env is what a check runs with.
type env[M any] struct {
	t     *testing.T
	ctx   context.Context
	st    store.Store[M]
	names *namer
	md    *metadata[M]
	// viaFunc: watch with the store's WatchFunc (see env.watch).
	viaFunc bool
}

// name returns a new unique name; label says what it is for.
func (e *env[M]) name(label string) string {
	return fmt.Sprintf("%s%d-%s", e.names.prefix, e.names.n.Add(1), label)
}

// term returns a record held by holder with token, timed now, with a
// sample metadata value.
func (e *env[M]) term(holder string, token uint64) lease.Record[M] {
	now := time.Now()
	return lease.Record[M]{
		Holder:        holder,
		Token:         token,
		AcquiredAt:    now,
		RenewedAt:     now,
		LeaseDuration: 15 * time.Second,
		Transitions:   token,
		Metadata:      e.md.forHolder(holder),
	}
}

// swap calls CompareAndSwap, which must succeed, and checks the record and
// revision it returns against what was written.
func (e *env[M]) swap(name string, expected lease.Revision, next lease.Record[M]) (lease.Record[M], lease.Revision) {
	e.t.Helper()
	got, rev, err := e.st.CompareAndSwap(e.ctx, name, expected, next)
	if err != nil {
		e.t.Fatalf("CompareAndSwap(%q, %d): %v", name, expected, err)
	}
	if rev == 0 || rev <= expected || rev > store.MaxRevision {
		e.t.Fatalf("CompareAndSwap(%q, %d) returned revision %d, want one above %d and at most store.MaxRevision", name, expected, rev, expected)
	}
	if got.Token == 0 || got.Token > lease.MaxToken {
		e.t.Errorf("CompareAndSwap(%q, %d) stored Token %d; tokens are never 0 nor above lease.MaxToken", name, expected, got.Token)
	}
	e.written(fmt.Sprintf("CompareAndSwap(%q, %d)", name, expected), got, next)
	return got, rev
}

// get calls Get, which must succeed.
func (e *env[M]) get(name string) (lease.Record[M], lease.Revision) {
	e.t.Helper()
	got, rev, err := e.st.Get(e.ctx, name)
	if err != nil {
		e.t.Fatalf("Get(%q): %v", name, err)
	}
	return got, rev
}

// stored checks that name holds want at revision rev, exactly.
func (e *env[M]) stored(name string, want lease.Record[M], rev lease.Revision) {
	e.t.Helper()
	got, gotRev := e.get(name)
	if gotRev != rev {
		e.t.Errorf("Get(%q) revision = %d, want %d", name, gotRev, rev)
	}
	e.same(fmt.Sprintf("Get(%q)", name), got, want)
}

// absent checks that name has no record.
func (e *env[M]) absent(name string) {
	e.t.Helper()
	got, rev, err := e.st.Get(e.ctx, name)
	if !errors.Is(err, store.ErrNotFound) {
		e.t.Errorf("Get(%q) = %+v, revision %d, error %v; want an error wrapping store.ErrNotFound", name, got, rev, err)
	}
}

// same reports a difference between two records that the store returned for
// one revision: they must be equal.
func (e *env[M]) same(what string, got, want lease.Record[M]) {
	e.t.Helper()
	if d := cmp.Diff(want, got, cmpopts.EquateEmpty()); d != "" {
		e.t.Errorf("%s returned a different record (-want +got):\n%s", what, d)
	}
}

// written reports a difference between a record read back and the one
// written, with the latitude the contract gives stores: a raised Token, and
// times set by the store's clock within timeSlack.
func (e *env[M]) written(what string, got, wrote lease.Record[M]) {
	e.t.Helper()
	if got.Token < wrote.Token {
		e.t.Errorf("%s: Token = %d, below the %d written", what, got.Token, wrote.Token)
	}
	got.Token = wrote.Token
	e.near(what+": AcquiredAt", got.AcquiredAt, wrote.AcquiredAt)
	e.near(what+": RenewedAt", got.RenewedAt, wrote.RenewedAt)
	got.AcquiredAt, got.RenewedAt = wrote.AcquiredAt, wrote.RenewedAt
	if d := cmp.Diff(wrote, got, cmpopts.EquateEmpty()); d != "" {
		e.t.Errorf("%s: the record read back differs from the one written (-wrote +got):\n%s", what, d)
	}
}

// near checks a time read back against the one written: unless that was
// zero, it must be non-zero and within timeSlack.
func (e *env[M]) near(what string, got, wrote time.Time) {
	e.t.Helper()
	switch {
	case wrote.IsZero():
	case got.IsZero():
		e.t.Errorf("%s is zero, want about %v", what, wrote)
	case got.Sub(wrote).Abs() > timeSlack:
		e.t.Errorf("%s = %v, more than %v away from the %v written", what, got, timeSlack, wrote)
	}
}

// wantErr checks that err wraps target.
func (e *env[M]) wantErr(what string, err, target error) {
	e.t.Helper()
	if !errors.Is(err, target) {
		e.t.Errorf("%s: error = %v, want one wrapping %v", what, err, target)
	}
}

// conflict checks the result of a CompareAndSwap that must fail with
// ErrConflict and report want at revision rev.
func (e *env[M]) conflict(what string, got lease.Record[M], gotRev lease.Revision, err error, want lease.Record[M], rev lease.Revision) {
	e.t.Helper()
	if !errors.Is(err, store.ErrConflict) {
		e.t.Fatalf("%s: error = %v, want one wrapping store.ErrConflict", what, err)
	}
	if gotRev != rev {
		e.t.Errorf("%s: conflict reported revision %d, want %d", what, gotRev, rev)
	}
	e.same(what+" (the record reported with the conflict)", got, want)
}
