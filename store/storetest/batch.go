package storetest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

// outcome names what a swap's error says: "ok", or the first sentinel of
// package store (or of package context) it wraps.
func outcome(err error) string {
	if err == nil {
		return "ok"
	}
	for _, s := range []struct {
		name string
		err  error
	}{
		{"ErrConflict", store.ErrConflict},
		{"ErrInvalidName", store.ErrInvalidName},
		{"ErrInvalidRecord", store.ErrInvalidRecord},
		{"ErrTokenExhausted", store.ErrTokenExhausted},
		{"ErrMetadataTooLarge", store.ErrMetadataTooLarge},
		{"ErrCorruptRecord", store.ErrCorruptRecord},
		{"context.Canceled", context.Canceled},
		{"context.DeadlineExceeded", context.DeadlineExceeded},
	} {
		if errors.Is(err, s.err) {
			return s.name
		}
	}
	return "another error: " + err.Error()
}

// batchCase is one swap of the mixed batch: its name's label, how the
// name is prepared, the swap, and the outcome it must have.
type batchCase struct {
	label string
	want  string
}

// batchSetup prepares a fresh set of names for the mixed batch and
// returns its swaps. Two calls give two sets in the same states, so that
// the batch's results can be compared with single swaps'.
func (e *env[M]) batchSetup() ([]store.Swap[M], []batchCase) {
	e.t.Helper()
	held := e.name("batch-held")
	h, hRev := e.swap(held, 0, e.term("holder-a", 1))
	stale := e.name("batch-stale")
	s, sRev := e.swap(stale, 0, e.term("holder-a", 1))
	e.swap(stale, sRev, s) // sRev is stale now
	absent := e.name("batch-absent")
	fresh := e.name("batch-fresh")
	taken := e.name("batch-taken")
	e.swap(taken, 0, e.term("holder-c", 1))
	badRec := e.name("batch-badrecord")
	b, bRev := e.swap(badRec, 0, e.term("holder-a", 1))
	exhausted := e.name("batch-exhausted")
	_, xRev := e.swap(exhausted, 0, e.term("holder-a", 1))
	twice := e.name("batch-twice")
	w, wRev := e.swap(twice, 0, e.term("holder-a", 1))
	naming := e.name("batch-naming")
	nm, nmRev := e.swap(naming, 0, e.term("holder-a", 1))
	named := e.name("batch-named")
	nd, ndRev := e.swap(named, 0, e.term("holder-a", 1))
	nd.Holder, nd.Successor = "", "holder-b"
	_, ndRev = e.swap(named, ndRev, nd)

	renew := func(r lease.Record[M]) lease.Record[M] {
		r.RenewedAt = time.Now()
		return r
	}
	neg := renew(b)
	neg.LeaseDuration = -time.Second
	over := e.term("holder-b", lease.MaxToken+1)
	swaps := []store.Swap[M]{
		{Name: held, Expected: hRev, Next: renew(h)},
		{Name: stale, Expected: sRev, Next: renew(s)},
		{Name: absent, Expected: 5, Next: e.term("holder-a", 1)},
		{Name: fresh, Expected: 0, Next: e.term("holder-a", 1)},
		{Name: "", Expected: 0, Next: e.term("holder-a", 1)},
		{Name: badRec, Expected: bRev, Next: neg},
		{Name: taken, Expected: 0, Next: e.term("holder-b", 1)},
		{Name: exhausted, Expected: xRev, Next: over},
		{Name: twice, Expected: wRev, Next: renew(w)},
		{Name: twice, Expected: wRev, Next: renew(w)},
		{Name: naming, Expected: nmRev, Next: func() lease.Record[M] { r := nm; r.Holder, r.Successor = "", "holder-b"; return r }()},
		{Name: named, Expected: ndRev, Next: e.term("holder-b", nd.Token+1)},
	}
	cases := []batchCase{
		{"a renewal at the stored revision", "ok"},
		{"a renewal at a stale revision", "ErrConflict"},
		{"a swap of an absent name from revision 5", "ErrConflict"},
		{"a create of a fresh name", "ok"},
		{"an invalid name", "ErrInvalidName"},
		{"an invalid record", "ErrInvalidRecord"},
		{"a create over a record", "ErrConflict"},
		{"a token above lease.MaxToken", "ErrTokenExhausted"},
		{"the first of two swaps of one name", "ok"},
		{"the second of two swaps of one name, from the same revision", "ErrConflict"},
		{"a release naming a successor", "ok"},
		{"a takeover of a release that named the taker", "ok"},
	}
	return swaps, cases
}

// testBatch checks CompareAndSwapBatch (store.Batcher): in a batch that
// mixes successes, conflicts, absent and invalid names, an invalid record,
// a token above the bound and one name twice, each swap is applied or
// refused on its own, and reports what a single CompareAndSwap reports
// (the same outcome, the record written, or found with its revision);
// names whose swap failed keep their record. A batch of one and an empty
// batch work; a batch with an ended context writes nothing.
func testBatch[M any](e *env[M]) {
	b := store.BatcherOf(e.st)
	if b == nil {
		e.t.Skipf("%T does not implement store.Batcher", e.st)
	}
	swaps, cases := e.batchSetup()
	before := make([]struct {
		rec    lease.Record[M]
		rev    lease.Revision
		absent bool
	}, len(swaps))
	for i, sw := range swaps {
		rec, rev, err := e.st.Get(e.ctx, sw.Name)
		before[i].rec, before[i].rev, before[i].absent = rec, rev, err != nil
	}
	got := b.CompareAndSwapBatch(e.ctx, swaps)
	if len(got) != len(swaps) {
		e.t.Fatalf("CompareAndSwapBatch of %d swaps returned %d results", len(swaps), len(got))
	}
	for i, c := range cases {
		sw, r := swaps[i], got[i]
		what := fmt.Sprintf("CompareAndSwapBatch: swap %d, %s (%q from revision %d)", i, c.label, sw.Name, sw.Expected)
		if o := outcome(r.Err); o != c.want {
			e.t.Errorf("%s: %s (%v), want %s", what, o, r.Err, c.want)
			continue
		}
		switch {
		case r.Err == nil:
			if r.Revision == 0 || r.Revision <= sw.Expected || r.Revision > store.MaxRevision {
				e.t.Errorf("%s: revision %d, want one above %d", what, r.Revision, sw.Expected)
			}
			e.written(what, r.Record, sw.Next)
			if i+1 < len(swaps) && swaps[i+1].Name == sw.Name {
				// The second swap of the name conflicts with this one.
				before[i+1].rec, before[i+1].rev = r.Record, r.Revision
				continue
			}
			e.stored(sw.Name, r.Record, r.Revision)
		case errors.Is(r.Err, store.ErrConflict):
			if before[i].absent {
				if r.Revision != 0 {
					e.t.Errorf("%s: a conflict with no record reported revision %d, want 0", what, r.Revision)
				}
				continue
			}
			e.conflict(what, r.Record, r.Revision, r.Err, before[i].rec, before[i].rev)
			if i > 0 && swaps[i-1].Name == sw.Name {
				continue // stored: checked after the first
			}
			e.stored(sw.Name, before[i].rec, before[i].rev)
		default:
			if sw.Name == "" {
				continue
			}
			e.stored(sw.Name, before[i].rec, before[i].rev)
		}
	}
	e.absent(swaps[2].Name)

	// The same swaps one at a time, on names in the same states: the same
	// outcome for each.
	singles, _ := e.batchSetup()
	for i, sw := range singles {
		_, _, err := e.st.CompareAndSwap(e.ctx, sw.Name, sw.Expected, sw.Next)
		if o, want := outcome(got[i].Err), outcome(err); o != want {
			e.t.Errorf("swap %d, %s: %s in a batch, %s alone", i, cases[i].label, o, want)
		}
	}

	// A batch of one, and an empty batch.
	one := e.name("batch-one")
	r := b.CompareAndSwapBatch(e.ctx, []store.Swap[M]{{Name: one, Next: e.term("holder-a", 1)}})
	if len(r) != 1 || r[0].Err != nil {
		e.t.Fatalf("CompareAndSwapBatch of one create: %+v", r)
	}
	e.written("CompareAndSwapBatch of one create", r[0].Record, e.term("holder-a", 1))
	e.stored(one, r[0].Record, r[0].Revision)
	if r := b.CompareAndSwapBatch(e.ctx, nil); len(r) != 0 {
		e.t.Errorf("CompareAndSwapBatch of no swap returned %d results", len(r))
	}

	// An ended context: nothing is written, each swap reports it.
	held, heldRev := r[0].Record, r[0].Revision
	for _, c := range e.endedContexts() {
		fresh := e.name("batch-ended")
		res := b.CompareAndSwapBatch(c.ctx, []store.Swap[M]{
			{Name: one, Expected: heldRev, Next: e.term("holder-b", held.Token+1)},
			{Name: fresh, Next: e.term("holder-b", 1)},
		})
		if len(res) != 2 {
			e.t.Fatalf("CompareAndSwapBatch with a context %s: %d results for 2 swaps", c.label, len(res))
		}
		for i, r := range res {
			e.wantErr(fmt.Sprintf("CompareAndSwapBatch with a context %s, swap %d", c.label, i), r.Err, c.want)
		}
		e.stored(one, held, heldRev)
		e.absent(fresh)
	}
}
