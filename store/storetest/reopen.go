package storetest

import (
	"testing"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

// WithReopen gives the TokenFloorAcrossReopen check a way to open the store
// again: each call of reopen returns a new Store value over the same data
// as every store it returned before (the same server and key prefix, table
// or file; a new client where the store keeps one), as a process that
// restarts would open it. The check writes terms through one store and
// starts new ones through another, so that a token floor kept only in the
// memory of a Store value fails it. Without WithReopen that check is
// skipped, saying so. A store whose data lives in its Store value
// (memstore) has nothing to reopen.
func WithReopen[M any](reopen func(t *testing.T) store.Store[M]) Option[M] {
	return func(md *metadata[M]) { md.reopen = reopen }
}

// WithDelete gives the TokenFloorAcrossReopen check a way to delete the
// record of a name behind the store's back, as an operator or a data loss
// could (DEL in Redis, DELETE FROM in PostgreSQL, kubectl delete lease):
// del removes everything the store keeps under name in the data that
// WithReopen's stores share. The check then creates the name again through
// a reopened store, and its token must still be above every token issued
// before, and its revision one the name never had. Without WithDelete (or
// without WithReopen) that part of the check is skipped, saying so.
func WithDelete[M any](del func(t *testing.T, name string)) Option[M] {
	return func(md *metadata[M]) { md.del = del }
}

// testTokenFloorAcrossReopen checks that a name's token floor is kept with
// the store's data, not in a Store value: terms written through one store,
// then new terms through another opened on the same data (over a held
// record, over a released one, and, with WithDelete, after the record was
// deleted) get tokens above every token issued before, and revisions the
// name never had (above the last one, except for a create after the
// deletion: a store may draw a new record's revision from a counter its
// updates have overtaken, as pgstore does, and an elector that saw the
// higher one takes it for a rollback and waits a LeaseDuration).
func testTokenFloorAcrossReopen[M any](e *env[M]) {
	if e.md.reopen == nil {
		e.t.Skip("no storetest.WithReopen: the token floor across a reopen of the store is not checked")
	}
	name := e.name("reopen")
	var highest uint64
	var lastRev lease.Revision
	revs := map[lease.Revision]bool{}
	through := func(what string) *env[M] {
		e.t.Helper()
		st := e.md.reopen(e.t)
		if st == nil {
			e.t.Fatalf("storetest.WithReopen: the function returned a nil store (%s)", what)
		}
		c := *e
		c.st = st
		return &c
	}
	// newTerm starts a new term of holder through x, proposing token 1,
	// and checks that its token is above every token issued before.
	newTerm := func(x *env[M], what, holder string, expected lease.Revision) (lease.Record[M], lease.Revision) {
		e.t.Helper()
		got, rev := x.swap(name, expected, e.term(holder, 1))
		if got.Token <= highest {
			e.t.Errorf("%s: a new term got Token %d, not above %d issued before: the store's token floor did not survive", what, got.Token, highest)
		}
		switch {
		case revs[rev]:
			e.t.Errorf("%s: revision %d, which the name had before", what, rev)
		case expected != 0 && rev <= lastRev:
			e.t.Errorf("%s: revision %d, not above %d returned before", what, rev, lastRev)
		}
		revs[rev] = true
		highest, lastRev = max(highest, got.Token), max(lastRev, rev)
		return got, rev
	}

	a := through("the first store")
	_, rev := newTerm(a, "creating the record", "holder-a", 0)
	held, rev := newTerm(a, "a second term", "holder-b", rev)

	b := through("opened again over a held record")
	got, gotRev := b.get(name)
	if gotRev != rev {
		e.t.Errorf("Get(%q) through a store opened again: revision %d, want %d", name, gotRev, rev)
	}
	b.same("Get through a store opened again", got, held)
	taken, rev := newTerm(b, "taking over a held record through a store opened again", "holder-c", rev)
	release := taken
	release.Holder = ""
	_, rev = b.swap(name, rev, release)
	revs[rev], lastRev = true, max(lastRev, rev)

	c := through("opened again over a released record")
	newTerm(c, "acquiring a released record through a store opened again", "holder-d", rev)

	if e.md.del == nil {
		e.t.Log("no storetest.WithDelete: the token floor after the record is deleted is not checked")
		return
	}
	e.md.del(e.t, name)
	d := through("opened again after the record was deleted")
	d.absent(name)
	newTerm(d, "creating a deleted record again through a store opened again", "holder-e", 0)
}
