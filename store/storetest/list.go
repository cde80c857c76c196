package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

// WithCorrupt gives the List check a way to plant, under name, a record
// that the store cannot read, as a hand edit or a bug could leave it (a
// field that does not parse, metadata the codec rejects): afterwards st's
// Get of name must fail with store.ErrCorruptRecord. st is the store under
// test, for a store whose data lives in its Store value (memstore's
// PutRaw). Without WithCorrupt the check does not plant one, saying so.
func WithCorrupt[M any](plant func(t *testing.T, st store.Store[M], name string)) Option[M] {
	return func(md *metadata[M]) { md.corrupt = plant }
}

// WithoutList skips the List check of a store that implements
// store.Lister, for a run where it cannot list: under credentials that
// grant an elector's rights and not the right to list, say.
func WithoutList[M any]() Option[M] {
	return func(md *metadata[M]) { md.noList = true }
}

// WithStamps says the store keeps lease.Record.Stamp (returns it from
// swaps, Get and List as written): the check of the fields then writes
// stamps and wants them back. A store without it may return 0 for every
// stamp, which the suite then accepts.
func WithStamps[M any]() Option[M] {
	return func(md *metadata[M]) { md.stamps = true }
}

// listMeta are the characters that mean something in a LIKE pattern or a
// glob (SCAN's MATCH), and the braces and percent of Redis keys: a listing
// by a prefix holding one must match the character itself.
var listMeta = []string{"%", "_", "*", "?", "[", "]", `\`, "^", "{", "}"}

// testList checks store.Lister, for a store that implements it: names
// listed sorted, under their prefix only, whatever characters the prefix
// holds; each record listed as Get returns it, a released one included; a
// record the store cannot read listed with Err (WithCorrupt); an ended
// context refused.
func testList[M any](e *env[M]) {
	l := store.ListerOf(e.st)
	switch {
	case l == nil:
		e.t.Skipf("%T does not implement store.Lister", e.st)
	case e.md.noList:
		e.t.Skip("storetest.WithoutList given: List is not checked")
	}
	p := e.name("list") + "-"
	names := []string{p + "c", p + "a", p + "b", p + "released"}
	for i, n := range names {
		got, rev := e.swap(n, 0, e.term(fmt.Sprintf("holder-%d", i), 1))
		if strings.HasSuffix(n, "released") {
			got.Holder = ""
			e.swap(n, rev, got)
		}
	}
	slices.Sort(names)
	e.listed("List(prefix)", l, p, names)
	e.listed("List(prefix of one)", l, p+"b", []string{p + "b"})
	e.listed("List(prefix of none)", l, p+"none", nil)
	all := e.list("List(\"\")", l, "")
	var ours []string
	for _, x := range all {
		if strings.HasPrefix(x.Name, p) {
			ours = append(ours, x.Name)
		}
	}
	if !slices.Equal(ours, names) {
		e.t.Errorf("List(\"\") listed %q under %q, want %q", ours, p, names)
	}

	// A prefix with a metacharacter matches that character only: "x%"
	// lists "x%y", never "xay".
	m := e.name("list-meta") + "-"
	var made []string
	for _, c := range append([]string{"a"}, listMeta...) {
		n := m + "x" + c + "y"
		_, _, err := e.st.CompareAndSwap(e.ctx, n, 0, e.term("holder-a", 1))
		switch {
		case errors.Is(err, store.ErrInvalidName):
			continue // a store with stricter names (Lease names)
		case err != nil:
			e.t.Fatalf("CompareAndSwap(%q, 0): %v", n, err)
		}
		made = append(made, n)
	}
	slices.Sort(made)
	e.listed("List(prefix of the metacharacter names)", l, m, made)
	for _, c := range listMeta {
		q := m + "x" + c
		var want []string
		for _, n := range made {
			if strings.HasPrefix(n, q) {
				want = append(want, n)
			}
		}
		e.listed(fmt.Sprintf("List(prefix ending in %q)", c), l, q, want)
	}

	for _, c := range e.endedContexts() {
		got, err := l.List(c.ctx, p)
		if !errors.Is(err, c.want) {
			e.t.Errorf("List with a context %s = %d records, error %v; want an error wrapping %v", c.label, len(got), err, c.want)
		}
	}

	if e.md.corrupt == nil {
		e.t.Log("storetest.WithCorrupt not given: a corrupt record's listing is not checked")
		return
	}
	k := e.name("list-corrupt") + "-"
	e.swap(k+"a", 0, e.term("holder-a", 1))
	e.md.corrupt(e.t, e.st, k+"b")
	e.swap(k+"c", 0, e.term("holder-c", 1))
	if _, _, err := e.st.Get(e.ctx, k+"b"); !errors.Is(err, store.ErrCorruptRecord) {
		e.t.Fatalf("Get(%q) of the record WithCorrupt planted: error %v, want one wrapping store.ErrCorruptRecord", k+"b", err)
	}
	e.listed("List(prefix with a corrupt record)", l, k, []string{k + "a", k + "b", k + "c"})
}

// list calls List, which must succeed and return names sorted, without
// repeats, each under prefix.
func (e *env[M]) list(what string, l store.Lister[M], prefix string) []store.Listed[M] {
	e.t.Helper()
	got, err := l.List(e.ctx, prefix)
	if err != nil {
		e.t.Fatalf("%s: %v", what, err)
	}
	for i, x := range got {
		if !strings.HasPrefix(x.Name, prefix) {
			e.t.Errorf("%s listed %q, which does not start with %q", what, x.Name, prefix)
		}
		if i > 0 && got[i-1].Name >= x.Name {
			e.t.Errorf("%s listed %q after %q: want names sorted, each once", what, x.Name, got[i-1].Name)
		}
	}
	return got
}

// listed checks that List(prefix) lists exactly want, in order, each as
// Get returns it: the same record and revision, or, for a record Get
// cannot read, Err wrapping store.ErrCorruptRecord.
func (e *env[M]) listed(what string, l store.Lister[M], prefix string, want []string) {
	e.t.Helper()
	got := e.list(what, l, prefix)
	var names []string
	for _, x := range got {
		names = append(names, x.Name)
	}
	if !slices.Equal(names, want) {
		e.t.Errorf("%s listed %q, want %q", what, names, want)
		return
	}
	for _, x := range got {
		rec, rev, err := e.st.Get(e.ctx, x.Name)
		switch {
		case errors.Is(err, store.ErrCorruptRecord):
			if !errors.Is(x.Err, store.ErrCorruptRecord) {
				e.t.Errorf("%s: %q, which Get cannot read, listed with Err %v; want one wrapping store.ErrCorruptRecord", what, x.Name, x.Err)
			}
			e.same(fmt.Sprintf("%s: %q, listed with Err (want a zero Record)", what, x.Name), x.Record, lease.Record[M]{})
		case err != nil:
			e.t.Fatalf("Get(%q): %v", x.Name, err)
		case x.Err != nil:
			e.t.Errorf("%s: %q listed with Err %v, but Get reads it", what, x.Name, x.Err)
		default:
			if x.Revision != rev {
				e.t.Errorf("%s: %q listed at revision %d, Get returns %d", what, x.Name, x.Revision, rev)
			}
			e.same(fmt.Sprintf("%s: %q", what, x.Name), x.Record, rec)
		}
	}
}
