package storetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

// writes maps the revisions a check wrote to the records stored at them.
type writes[M any] map[lease.Revision]lease.Record[M]

// watch starts watching name; the watch ends with the check, or earlier when
// the returned function is called. The check is skipped when the store does
// not implement store.Watcher, or, with e.viaFunc, store.FuncWatcher: the
// calls of its WatchFunc then come out of the returned channel, which is
// closed at the call that ends the watch (see recorder).
func (e *env[M]) watch(name string) (<-chan store.Event[M], context.CancelFunc) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(e.ctx)
	e.t.Cleanup(cancel)
	if e.viaFunc {
		r := e.recorder(fmt.Sprintf("WatchFunc(%q)", name))
		if err := e.funcWatcher().WatchFunc(ctx, name, r.call); err != nil {
			e.t.Fatalf("WatchFunc(%q): %v", name, err)
		}
		return r.out, cancel
	}
	ch, err := e.watcher().Watch(ctx, name)
	if err != nil {
		e.t.Fatalf("Watch(%q): %v", name, err)
	}
	return pump(ctx, ch), cancel
}

// watcher returns the store as a store.Watcher, or skips the check.
func (e *env[M]) watcher() store.Watcher[M] {
	e.t.Helper()
	w, ok := e.st.(store.Watcher[M])
	if !ok {
		e.t.Skipf("%T does not implement store.Watcher", e.st)
	}
	return w
}

// funcWatcher returns the store as a store.FuncWatcher, or skips the check.
func (e *env[M]) funcWatcher() store.FuncWatcher[M] {
	e.t.Helper()
	w, ok := e.st.(store.FuncWatcher[M])
	if !ok {
		e.t.Skipf("%T does not implement store.FuncWatcher (store.WatchFunc serves it with Watch)", e.st)
	}
	return w
}

// recorder turns the calls of a WatchFunc callback into the events of a
// channel, out, as a Watch would deliver them: each call with true queues
// its event, and the call with false closes out. It notes every breach of
// the callback's contract, which the check reports when it ends: a call
// while another is running, a call after the one with false, a call with
// false and a non-zero event, more events than out holds (the check reads
// too slowly; it cannot wait in the callback), and any call at all when
// WatchFunc returned an error (see refuse).
type recorder[M any] struct {
	out     chan store.Event[M]
	running atomic.Int32 // calls running now

	mu       sync.Mutex
	calls    int  // calls so far
	ended    bool // the call with false came
	refused  bool // WatchFunc returned an error
	problems []string
}

// recorderRoom is how many events a recorder holds for the check.
const recorderRoom = 1024

// recorder returns a new recorder whose problems the check reports, as
// those of what, when it ends.
func (e *env[M]) recorder(what string) *recorder[M] {
	r := &recorder[M]{out: make(chan store.Event[M], recorderRoom)}
	e.t.Cleanup(func() {
		for _, p := range r.report() {
			e.t.Errorf("%s: %s", what, p)
		}
	})
	return r
}

// call is the callback given to WatchFunc.
func (r *recorder[M]) call(ev store.Event[M], ok bool) {
	if r.running.Add(1) != 1 {
		r.note("the callback was called while another call of it was running")
	}
	defer r.running.Add(-1)
	// Give a call that would overlap this one time to start.
	runtime.Gosched()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	switch {
	case r.ended && ok:
		r.noteLocked(fmt.Sprintf("the callback was called with an event (revision %d) after the call with false", ev.Revision))
	case r.ended:
		r.noteLocked("the callback was called with false twice")
	case !ok:
		if !reflect.ValueOf(ev).IsZero() {
			r.noteLocked(fmt.Sprintf("the call with false carries a non-zero event: %+v", ev))
		}
		r.ended = true
		close(r.out)
	default:
		select {
		case r.out <- ev:
		default:
			r.noteLocked(fmt.Sprintf("more than %d events not yet read by the check", recorderRoom))
		}
	}
}

// refuse records that WatchFunc returned an error: the callback must never
// be called.
func (r *recorder[M]) refuse() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refused = true
}

func (r *recorder[M]) note(p string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.noteLocked(p)
}

func (r *recorder[M]) noteLocked(p string) {
	if len(r.problems) < 10 {
		r.problems = append(r.problems, p)
	}
}

// report returns the problems noted so far.
func (r *recorder[M]) report() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	ps := slices.Clone(r.problems)
	if r.refused && r.calls > 0 {
		ps = append(ps, fmt.Sprintf("WatchFunc returned an error, yet the callback was called %d times", r.calls))
	}
	return ps
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
	e.closes(ch, "after its context was cancelled")
	if !e.viaFunc {
		return
	}
	// No call after the call with false: a write that another watcher
	// sees has been handed to every watcher the store still has, as far
	// as a check can tell without waiting for silence (the recorder
	// reports a call that came meanwhile when the check ends).
	other, _ := e.watch(name)
	e.first(other, rec, rev)
	next := rec
	next.RenewedAt = time.Now()
	next, nextRev := e.swap(name, rev, next)
	e.until(other, rev, nextRev, writes[M]{nextRev: next})
}

// closes waits until ch is closed (events may come first), for at most
// WatchTimeout; when says when it should be.
func (e *env[M]) closes(ch <-chan store.Event[M], when string) {
	e.t.Helper()
	timer := time.NewTimer(WatchTimeout)
	defer timer.Stop()
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-timer.C:
			e.t.Fatalf("the watch is still on %v %s", WatchTimeout, when)
		}
	}
}

// A watch with an ended context fails, or ends at once: Watch returns an
// error or a channel that is closed; WatchFunc returns an error (and never
// calls its callback) or calls it with false.
func testWatchEndedContext[M any](e *env[M]) {
	name := e.name("watch-ended")
	e.swap(name, 0, e.term("holder-a", 1))
	for _, c := range e.endedContexts() {
		if e.viaFunc {
			r := e.recorder(fmt.Sprintf("WatchFunc(%q) with a context %s", name, c.label))
			if err := e.funcWatcher().WatchFunc(c.ctx, name, r.call); err != nil {
				r.refuse()
				continue
			}
			e.closes(r.out, "(no call with false) though its context had ended before WatchFunc")
			continue
		}
		ch, err := e.watcher().Watch(c.ctx, name)
		switch {
		case err != nil:
		case ch == nil:
			e.t.Errorf("Watch(%q) with a context %s returned a nil channel and no error", name, c.label)
		default:
			e.closes(ch, "though its context had ended before Watch")
		}
	}
}

// Calls of one WatchFunc's callback never overlap, however the store's
// goroutines race: watches start and end while several goroutines write.
// Each watch still sees revisions in order, up to the last write.
func testWatchFuncOneCallAtATime[M any](e *env[M]) {
	fw := e.funcWatcher()
	name := e.name("watch-serial")
	rec, rev := e.swap(name, 0, e.term("holder-a", 1))
	var (
		mu   sync.Mutex
		w    = writes[M]{rev: rec}
		errs []error
		wg   sync.WaitGroup
	)
	const writers, rounds = 4, 8
	for range writers {
		wg.Go(func() {
			for range rounds {
				cur, curRev, err := e.st.Get(e.ctx, name)
				if err == nil {
					cur.RenewedAt = time.Now()
					var got lease.Record[M]
					if got, curRev, err = e.st.CompareAndSwap(e.ctx, name, curRev, cur); err == nil {
						mu.Lock()
						w[curRev] = got
						mu.Unlock()
					}
				}
				if err != nil && !errors.Is(err, store.ErrConflict) {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
			}
		})
	}
	// Watches start while the writers run; every other one ends at once.
	var kept []<-chan store.Event[M]
	for i := range 2 * writers {
		ctx, cancel := context.WithCancel(e.ctx)
		e.t.Cleanup(cancel)
		r := e.recorder(fmt.Sprintf("WatchFunc(%q) #%d", name, i))
		if err := fw.WatchFunc(ctx, name, r.call); err != nil {
			e.t.Fatalf("WatchFunc(%q): %v", name, err)
		}
		if i%2 == 1 {
			cancel()
			defer e.closes(r.out, "after its context was cancelled")
			continue
		}
		kept = append(kept, r.out)
	}
	wg.Wait()
	if len(errs) > 0 {
		e.t.Fatalf("CompareAndSwap(%q) while watched: %v", name, errors.Join(errs...))
	}
	last := slices.Max(slices.Collect(maps.Keys(w)))
	for _, ch := range kept {
		e.until(ch, 0, last, w)
	}
}

func testWatchFuncInvalidNames[M any](e *env[M]) {
	fw := e.funcWatcher()
	for _, name := range badNames {
		ctx, cancel := context.WithCancel(e.ctx)
		r := e.recorder(fmt.Sprintf("WatchFunc(%q)", name))
		err := fw.WatchFunc(ctx, name, r.call)
		if err != nil {
			r.refuse()
		}
		cancel()
		e.wantErr(fmt.Sprintf("WatchFunc(%q)", name), err, store.ErrInvalidName)
	}
}
