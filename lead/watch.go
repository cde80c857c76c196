package lead

import (
	"errors"

	"github.com/tenure-go/tenure/fsm"
	"github.com/tenure-go/tenure/store"
)

// opWatch names the watch in logs (it is not measured by Instruments).
const opWatch = "watch"

// startWatch starts a watch of a new generation off the loop (WatchFunc
// may wait for the server). Its events are posted to the loop by the
// store itself (store.WatchFunc: no goroutine per watch when the store
// implements store.FuncWatcher), and so is the outcome of the call. The
// call is a store operation like a read (most stores read the record
// before WatchFunc returns): in a Group it waits its turn among the
// Group's operations (opPool.spawnWatch), so 10,000 names starting at once do not
// start 10,000 watches, and their reads, at once.
func (r *runner[M]) startWatch() {
	if r.opCtx.Err() != nil || !r.watches {
		return
	}
	r.watchGen++
	gen, l, name := r.watchGen, r.loop, r.e.name
	fn := func(ev store.Event[M], ok bool) { l.postWatch(r, gen, ev, ok) }
	r.ops.Add(1)
	r.host.spawnWatch(func() {
		defer r.ops.Done()
		l.postWatchStarted(r, gen, store.WatchFunc(r.opCtx, r.e.st, name, fn))
	})
}

// watchBegan takes the outcome of a WatchFunc call; its events may have
// come before it.
func (r *runner[M]) watchBegan(err error) {
	switch {
	case r.opCtx.Err() != nil:
		// The runner is ending: the store ends the watch when opCtx ends.
	case errors.Is(err, errors.ErrUnsupported):
		// A wrapper forwarded Watch to a store that cannot watch
		// (store.Watch): poll only.
		r.e.log.Info("the store cannot watch; followers poll", "error", err)
		r.watches = false
		r.watchGen++
	case err != nil:
		r.watchFailed(err)
	default:
		r.traceWatch(true)
	}
}

// watchFailed handles a watch that could not start or that ended: changes
// may be missed until the next watch is up, so the machine polls meanwhile,
// and a new watch starts after a retry interval. The failure is logged and
// kept for Err like that of any store operation.
func (r *runner[M]) watchFailed(err error) {
	if r.opCtx.Err() != nil {
		return
	}
	// Whatever the ended watch still posts is dropped.
	r.watchGen++
	r.traceWatch(false)
	r.step(fsm.Event{Kind: fsm.WatchLost})
	r.logError(opWatch, err)
	if r.watchTimer != nil {
		r.watchTimer.Stop()
	}
	r.watchTimer = r.e.clock.AfterFunc(r.cfg.RetryInterval, func() { r.loop.post(r, msgWatchRetry) })
}

// handleWatch passes a watch event to the machine as a hint: it may make the
// machine read the record, and the read's answer is what counts (on a store
// whose events are authentic, a follower may take a release in as an
// answer: fsm.Options.AuthenticWatch). Record() is left to reads and swaps:
// anyone who can publish on the store's channel can forge an event. A
// valid record goes on to the MetadataChanges channels (watchedMetadata).
func (r *runner[M]) handleWatch(ev store.Event[M]) {
	w := fsm.Event{Kind: fsm.Watched, Absent: ev.Absent, Revision: ev.Revision}
	valid := false
	switch {
	case ev.Err != nil && errors.Is(ev.Err, store.ErrCorruptRecord):
		// The record may have changed into something unreadable: a read
		// tells, and reports it.
		w.Corrupt = true
	case ev.Err != nil:
		r.logError(opWatch, ev.Err)
		return
	case !ev.Absent:
		if checkStored(ev.Record, ev.Revision) != nil {
			w.Corrupt = true
		} else {
			w.Lease, w.Stamp, valid = leaseOf(ev.Record), ev.Record.Stamp, true
		}
	}
	r.step(w)
	if valid {
		r.watchedMetadata(ev)
	}
}
