package storetest

import (
	"context"
	"fmt"
	"time"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

// writes maps the revisions a check wrote to the records stored at them.
type writes[M any] map[lease.Revision]lease.Record[M]

// watch starts watching name; the watch ends with the check, or earlier when
// the returned function is called. The check is skipped when the store does
// not implement store.Watcher.
func (e *env[M]) watch(name string) (<-chan store.Event[M], context.CancelFunc) {
	e.t.Helper()
	w, ok := e.st.(store.Watcher[M])
	if !ok {
		e.t.Skipf("%T does not implement store.Watcher", e.st)
	}
	ctx, cancel := context.WithCancel(e.ctx)
	e.t.Cleanup(cancel)
	ch, err := w.Watch(ctx, name)
	if err != nil {
		e.t.Fatalf("Watch(%q): %v", name, err)
	}
	return pump(ctx, ch), cancel
}

// pump receives from ch as soon as the store sends, so that the store has
// every chance to deliver an event it should not (of another name, out of
// order), and queues the events for the check. The returned channel is
// closed when ch is.
func pump[M any](ctx context.Context, ch <-chan store.Event[M]) <-chan store.Event[M] {
	out := make(chan store.Event[M], 1024)
	go func() {
		defer close(out)
		for ev := range ch {
			select {
			case out <- ev:
			case <-ctx.Done(): // the check is over: drain ch until it closes
			}
		}
	}()
	return out
}

// next returns the next event of ch, which must come within WatchTimeout
// and must not carry an error.
func (e *env[M]) next(ch <-chan store.Event[M]) store.Event[M] {
	e.t.Helper()
	timer := time.NewTimer(WatchTimeout)
	defer timer.Stop()
	select {
	case ev, ok := <-ch:
		if !ok {
			e.t.Fatal("the watch channel was closed while the watch was on")
		}
		if ev.Err != nil {
			e.t.Fatalf("event of revision %d carries an error: %v", ev.Revision, ev.Err)
		}
		return ev
	case <-timer.C:
		e.t.Fatalf("no event within %v", WatchTimeout)
	}
	return store.Event[M]{} // not reached: Fatal ends the test's goroutine
}

// first checks that the first event of ch is the state of name: absent when
// rev is 0, else want at revision rev.
func (e *env[M]) first(ch <-chan store.Event[M], want lease.Record[M], rev lease.Revision) {
	e.t.Helper()
	ev := e.next(ch)
	if ev.Absent != (rev == 0) || ev.Revision != rev {
		e.t.Fatalf("first event: Absent %v, revision %d; want Absent %v, revision %d", ev.Absent, ev.Revision, rev == 0, rev)
	}
	e.same("first event", ev.Record, want)
}

// until reads events from ch up to revision last, checking that revisions
// strictly increase from after and that each event carries the record
// written at its revision.
func (e *env[M]) until(ch <-chan store.Event[M], after, last lease.Revision, w writes[M]) {
	e.t.Helper()
	for prev := after; prev != last; {
		ev := e.next(ch)
		if ev.Absent {
			e.t.Fatalf("Absent event after revision %d, want revisions up to %d", prev, last)
		}
		if ev.Revision <= prev {
			e.t.Fatalf("event of revision %d after revision %d", ev.Revision, prev)
		}
		want, ok := w[ev.Revision]
		if !ok {
			e.t.Fatalf("event of revision %d, which no write to this name returned (want revisions up to %d)", ev.Revision, last)
		}
		e.same(fmt.Sprintf("event of revision %d", ev.Revision), ev.Record, want)
		prev = ev.Revision
	}
}

func testWatchAbsentFirst[M any](e *env[M]) {
	name := e.name("watch-absent")
	ch, _ := e.watch(name)
	e.first(ch, lease.Record[M]{}, 0)
	rec, rev := e.swap(name, 0, e.term("holder-a", 1))
	e.until(ch, 0, rev, writes[M]{rev: rec})
}

func testWatchCurrentFirst[M any](e *env[M]) {
	name := e.name("watch-current")
	rec, rev := e.swap(name, 0, e.term("holder-a", 1))
	rec.RenewedAt = time.Now()
	rec, rev = e.swap(name, rev, rec)
	ch, _ := e.watch(name)
	e.first(ch, rec, rev)
}

func testWatchOrder[M any](e *env[M]) {
	name := e.name("watch-order")
	ch, _ := e.watch(name)
	e.first(ch, lease.Record[M]{}, 0)
	w := writes[M]{}
	var (
		rec lease.Record[M]
		rev lease.Revision
	)
	for i := range 20 {
		next := e.term(fmt.Sprintf("holder-%d", i%3), uint64(i/3+1))
		rec, rev = e.swap(name, rev, next)
		w[rev] = rec
	}
	e.until(ch, 0, rev, w)
}

func testWatchOtherName[M any](e *env[M]) {
	name, other := e.name("watch-this"), e.name("watch-other")
	ch, _ := e.watch(name)
	e.first(ch, lease.Record[M]{}, 0)
	// Each write to other is seen by a watcher of other before the next,
	// which gives a store time to misdeliver it to the watcher of name too.
	otherCh, _ := e.watch(other)
	e.first(otherCh, lease.Record[M]{}, 0)
	var (
		rec lease.Record[M]
		rev lease.Revision
	)
	for i := range 3 {
		prev := rev
		rec, rev = e.swap(other, rev, e.term("holder-other", uint64(i+1)))
		e.until(otherCh, prev, rev, writes[M]{rev: rec})
	}
	rec, rev = e.swap(name, 0, e.term("holder-this", 1))
	e.until(ch, 0, rev, writes[M]{rev: rec})
}

func testWatchTwoWatchers[M any](e *env[M]) {
	name := e.name("watch-two")
	ch1, _ := e.watch(name)
	ch2, _ := e.watch(name)
	e.first(ch1, lease.Record[M]{}, 0)
	e.first(ch2, lease.Record[M]{}, 0)
	rec, rev := e.swap(name, 0, e.term("holder-a", 1))
	e.until(ch1, 0, rev, writes[M]{rev: rec})
	e.until(ch2, 0, rev, writes[M]{rev: rec})
}

func testWatchCancel[M any](e *env[M]) {
	name := e.name("watch-cancel")
	rec, rev := e.swap(name, 0, e.term("holder-a", 1))
	ch, cancel := e.watch(name)
	e.first(ch, rec, rev)
	cancel()
	timer := time.NewTimer(WatchTimeout)
	defer timer.Stop()
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-timer.C:
			e.t.Fatalf("the watch channel is still open %v after its context was cancelled", WatchTimeout)
		}
	}
}
