package storetest

import (
	"fmt"
	"time"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

// testReleaseGuard checks CompareReleasedAndSwap (store.ReleaseGuard): it
// writes over a released record that shows exactly what the guard says,
// and over nothing else. Each refusal is a conflict that reports the record
// found and leaves it as it was; so is a guarded swap from revision 0,
// which never creates a record.
func testReleaseGuard[M any](e *env[M]) {
	g := store.ReleaseGuardOf(e.st)
	if g == nil {
		e.t.Skipf("%T does not implement store.ReleaseGuard", e.st)
	}
	name := e.name("guard")
	acquire := e.term("holder-a", 5)
	acquire.Transitions = 3
	held, heldRev := e.swap(name, 0, acquire)
	was := store.Released{Token: held.Token, Transitions: held.Transitions, LeaseDuration: held.LeaseDuration}
	next := e.term("holder-b", held.Token+1)
	next.Transitions = held.Transitions + 1

	// A live lease at the expected revision, with the token and every
	// field the guard names: a forged "released at heldRev" must fail.
	refuse := func(what string, rev lease.Revision, was store.Released, want lease.Record[M], wantRev lease.Revision) {
		e.t.Helper()
		what = fmt.Sprintf("CompareReleasedAndSwap(%q, %d, %+v) %s", name, rev, was, what)
		got, gotRev, err := g.CompareReleasedAndSwap(e.ctx, name, rev, was, next)
		e.conflict(what, got, gotRev, err, want, wantRev)
		e.stored(name, want, wantRev)
	}
	refuse("over a held record", heldRev, was, held, heldRev)

	release := held
	release.Holder = ""
	release.RenewedAt = time.Now()
	released, relRev := e.swap(name, heldRev, release)
	was = store.Released{Token: released.Token, Transitions: released.Transitions, LeaseDuration: released.LeaseDuration}

	refuse("from the revision before the release", heldRev, was, released, relRev)
	refuse("from revision 0", 0, was, released, relRev)
	for _, c := range []struct {
		what   string
		change func(w *store.Released)
	}{
		{"with another token", func(w *store.Released) { w.Token++ }},
		{"with a lower token", func(w *store.Released) { w.Token-- }},
		{"with other transitions", func(w *store.Released) { w.Transitions++ }},
		{"with another lease duration", func(w *store.Released) { w.LeaseDuration += time.Nanosecond }},
		{"naming a successor the release does not name", func(w *store.Released) { w.Successor = "holder-b" }},
	} {
		w := was
		c.change(&w)
		refuse(c.what, relRev, w, released, relRev)
	}

	// The guard holds: the write goes through, as a CompareAndSwap would.
	got, rev, err := g.CompareReleasedAndSwap(e.ctx, name, relRev, was, next)
	if err != nil {
		e.t.Fatalf("CompareReleasedAndSwap(%q, %d, %+v) over the released record: %v", name, relRev, was, err)
	}
	if rev <= relRev || rev > store.MaxRevision {
		e.t.Errorf("CompareReleasedAndSwap returned revision %d, want one above %d and at most store.MaxRevision", rev, relRev)
	}
	if got.Token <= released.Token {
		e.t.Errorf("CompareReleasedAndSwap stored Token %d, not above the released record's %d", got.Token, released.Token)
	}
	e.written("CompareReleasedAndSwap", got, next)
	e.stored(name, got, rev)

	// A release naming a successor: the guard must name the same one.
	named := e.name("guard-named")
	held, heldRev = e.swap(named, 0, acquire)
	release = held
	release.Holder, release.Successor = "", "holder-c"
	released, relRev = e.swap(named, heldRev, release)
	was = store.Released{Token: released.Token, Transitions: released.Transitions, LeaseDuration: released.LeaseDuration}
	for _, succ := range []string{"", "holder-b"} {
		w := was
		w.Successor = succ
		what := fmt.Sprintf("CompareReleasedAndSwap(%q, %d, %+v) over a release naming %q", named, relRev, w, release.Successor)
		got, gotRev, err := g.CompareReleasedAndSwap(e.ctx, named, relRev, w, next)
		e.conflict(what, got, gotRev, err, released, relRev)
		e.stored(named, released, relRev)
	}
	was.Successor = release.Successor
	if _, _, err := g.CompareReleasedAndSwap(e.ctx, named, relRev, was, next); err != nil {
		e.t.Errorf("CompareReleasedAndSwap(%q, %d, %+v) over the release naming %q: %v", named, relRev, was, release.Successor, err)
	}

	// Nothing stored under a name: a guarded swap creates nothing.
	empty := e.name("guard-absent")
	if got, gotRev, err := g.CompareReleasedAndSwap(e.ctx, empty, 0, store.Released{}, next); err == nil {
		e.t.Errorf("CompareReleasedAndSwap(%q, 0) with no record stored %+v at revision %d; want an error wrapping store.ErrConflict", empty, got, gotRev)
	} else {
		e.wantErr(fmt.Sprintf("CompareReleasedAndSwap(%q, 0) with no record", empty), err, store.ErrConflict)
	}
	e.absent(empty)
}
