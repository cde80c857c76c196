package lead

import (
	"errors"

	"github.com/tenure-go/tenure/fsm"
	"github.com/tenure-go/tenure/store"
)

// opWatch names the watch in logs (it is not measured by Instruments).
const opWatch = "watch"

// watchStart is the outcome of one call to Watch, made off Run's loop (it
// may wait for the server): the channel to receive from, or the error.
type watchStart[M any] struct {
	ch  <-chan store.Event[M]
	err error
}

// startWatch calls Watch off Run's loop (it may wait for the server); the
// loop gets the outcome on watchStarted and from then on receives the
// events itself, so a watch costs no goroutine of the elector's own.
func (r *runner[M]) startWatch() {
	if r.opCtx.Err() != nil {
		return
	}
	name := r.e.name
	r.ops.Go(func() {
		ch, err := r.watcher.Watch(r.opCtx, name)
		r.watchStarted <- watchStart[M]{ch: ch, err: err}
	})
}

// watchBegan takes the outcome of a Watch call.
func (r *runner[M]) watchBegan(ws watchStart[M]) {
	switch {
	case r.opCtx.Err() != nil:
		// Run is ending: the store closes the channel when opCtx ends.
	case errors.Is(ws.err, errors.ErrUnsupported):
		// A wrapper forwarded Watch to a store that cannot watch
		// (store.Watch): poll only.
		r.e.log.Info("the store cannot watch; followers poll", "error", ws.err)
		r.watcher = nil
	case ws.err != nil:
		r.watchFailed(ws.err)
	default:
		r.watchCh = ws.ch
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
	r.step(fsm.Event{Kind: fsm.WatchLost})
	r.logError(opWatch, err)
	if r.watchTimer != nil {
		r.watchTimer.Stop()
	}
	r.watchTimer = r.e.clock.AfterFunc(r.cfg.RetryInterval, func() {
		select {
		case r.watchRetry <- struct{}{}:
		default:
		}
	})
}

// handleWatch passes a watch event to the machine as a hint: it may make the
// machine read the record, and the read's answer is what counts (on a store
// whose events are authentic, a follower may take a release in as an
// answer: fsm.Options.AuthenticWatch). Record() is left to reads and swaps:
// anyone who can publish on the store's channel can forge an event.
func (r *runner[M]) handleWatch(ev store.Event[M]) {
	w := fsm.Event{Kind: fsm.Watched, Absent: ev.Absent, Revision: ev.Revision}
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
			w.Lease = leaseOf(ev.Record)
		}
	}
	r.step(w)
}
