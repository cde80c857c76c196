package lead

import (
	"sync"

	"github.com/tenure-go/tenure/store"
)

// loop is the goroutine that steps the machines of runners: Run's own for
// one elector, a Group's for many. Whatever happens to an elector (its
// timer, the answer to a store operation, a watch event, the end of its
// ctx, a Reconfigure) is posted to the loop as a message, from any
// goroutine and without blocking; the loop hands the messages to their
// runners one at a time, in the order posted. So one goroutine serves any
// number of electors, and an idle elector holds none: its timers, its
// watch (store.WatchFunc) and its store operations post when they fire.
//
// A runner has at most one wake, one watch event, one Reconfigure, one
// watch retry and one metadata read retry waiting in the queue (flags in
// the runner, under mu): a later one is merged into the waiting one (for a watch event, the newer
// event replaces the older, which a watch may skip anyway), so the queue
// stays bounded by the operations in flight.
type loop[M any] struct {
	mu    sync.Mutex
	queue []msg[M]
	spare []msg[M]
	ready chan struct{} // capacity 1: signalled when the queue stops being empty
}

// newLoop returns an empty loop.
func newLoop[M any]() *loop[M] {
	return &loop[M]{ready: make(chan struct{}, 1)}
}

// msgKind says what a message brings a runner.
type msgKind uint8

const (
	msgBegin        msgKind = iota + 1 // start the runner: its watch and first step
	msgDone                            // the elector's ctx ended
	msgWake                            // the machine's NextWake came
	msgReconf                          // Reconfigure left a new Config
	msgResult                          // the answer to a store operation (res)
	msgWatch                           // a watch event: the runner's pendingEv, taken when the loop takes the message
	msgWatchEnd                        // the watch of generation gen ended
	msgWatchStarted                    // WatchFunc of generation gen returned err
	msgWatchRetry                      // time to watch again after a failure
	msgDrained                         // the ended term's last body returned, or its deadline came
	msgResign                          // Resign asked the elector to step down (Elector.resignReq)
	msgMetaRead                        // the answer to a read for MetadataChanges (res; metafeed.go)
	msgMetaRetry                       // time for the next read for MetadataChanges
)

// Flags of the messages that are merged while one waits (runner.queued).
const (
	queuedWake uint8 = 1 << iota
	queuedReconf
	queuedWatch
	queuedRetry
	queuedMetaRetry
)

// msg is one message for runner r.
type msg[M any] struct {
	r    *runner[M]
	kind msgKind
	gen  uint32 // the watch's generation (msgWatch, msgWatchEnd, msgWatchStarted)
	err  error  // msgWatchStarted
	res  result[M]
	ev   store.Event[M]
}

// postLocked appends m to the queue. l.mu must be held.
func (l *loop[M]) postLocked(m msg[M]) {
	l.queue = append(l.queue, m)
	if len(l.queue) == 1 {
		l.signal()
	}
}

// signal wakes the loop.
func (l *loop[M]) signal() {
	select {
	case l.ready <- struct{}{}:
	default:
	}
}

// post sends r a message of kind (one without payload); a wake, Reconfigure,
// watch retry or metadata read retry already waiting for r absorbs it.
func (l *loop[M]) post(r *runner[M], kind msgKind) {
	var flag uint8
	switch kind {
	case msgWake:
		flag = queuedWake
	case msgReconf:
		flag = queuedReconf
	case msgWatchRetry:
		flag = queuedRetry
	case msgMetaRetry:
		flag = queuedMetaRetry
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if flag != 0 {
		if r.queued&flag != 0 {
			return
		}
		r.queued |= flag
	}
	l.postLocked(msg[M]{r: r, kind: kind})
}

// postResult sends r the answer to a store operation.
func (l *loop[M]) postResult(r *runner[M], res result[M]) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.postLocked(msg[M]{r: r, kind: msgResult, res: res})
}

// postMetaRead sends r the answer to a read for MetadataChanges.
func (l *loop[M]) postMetaRead(r *runner[M], res result[M]) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.postLocked(msg[M]{r: r, kind: msgMetaRead, res: res})
}

// postWatch sends r an event of its watch of generation gen, or (ok false)
// the end of that watch. A newer event replaces one still waiting. A
// record at the revision the machine holds as the store's
// (runner.accepted) is dropped: a hint at that revision changes nothing
// the machine or the MetadataChanges channels hold, and most are a
// leader's own renewals heard back, a third of what a Group hears when
// its leaders are spread over three processes.
func (l *loop[M]) postWatch(r *runner[M], gen uint32, ev store.Event[M], ok bool) {
	if ok && ev.Err == nil && !ev.Absent && ev.Revision != 0 && uint64(ev.Revision) == r.accepted.Load() {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !ok {
		l.postLocked(msg[M]{r: r, kind: msgWatchEnd, gen: gen})
		return
	}
	if r.queued&queuedWatch != 0 && r.pendingGen == gen {
		r.pendingEv = ev
		return
	}
	r.queued |= queuedWatch
	r.pendingEv, r.pendingGen = ev, gen
	l.postLocked(msg[M]{r: r, kind: msgWatch, gen: gen})
}

// postWatchStarted sends r the outcome of WatchFunc for generation gen.
func (l *loop[M]) postWatchStarted(r *runner[M], gen uint32, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.postLocked(msg[M]{r: r, kind: msgWatchStarted, gen: gen, err: err})
}

// take returns the messages waiting, oldest first, and clears the merge
// flags of those it returns; the slice is the loop's until the next take.
func (l *loop[M]) take() []msg[M] {
	l.mu.Lock()
	defer l.mu.Unlock()
	batch := l.queue
	l.queue, l.spare = l.spare[:0], nil
	for i := range batch {
		m := &batch[i]
		switch m.kind {
		case msgWake:
			m.r.queued &^= queuedWake
		case msgReconf:
			m.r.queued &^= queuedReconf
		case msgWatchRetry:
			m.r.queued &^= queuedRetry
		case msgMetaRetry:
			m.r.queued &^= queuedMetaRetry
		case msgWatch:
			if m.r.queued&queuedWatch == 0 || m.r.pendingGen != m.gen {
				// An event of an older watch, whose place a newer
				// watch's event took: nothing to hand over.
				m.kind = 0
				continue
			}
			m.ev = m.r.pendingEv
			m.r.queued &^= queuedWatch
			m.r.pendingEv = store.Event[M]{}
		}
	}
	return batch
}

// recycle gives back the slice take returned, once handled.
func (l *loop[M]) recycle(batch []msg[M]) {
	clear(batch) // drop references to runners, records and errors
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.spare == nil && cap(batch) <= 1024 {
		l.spare = batch[:0]
	}
}

// dispatch hands each message of batch to its runner, and reports whether
// a runner stopped.
func (l *loop[M]) dispatch(batch []msg[M]) (stopped bool) {
	for i := range batch {
		m := &batch[i]
		if m.kind == 0 || m.r.done {
			continue // a late answer, or an event of a watch that ended
		}
		m.r.handle(m)
		if m.r.over() {
			m.r.finish()
			stopped = true
		}
	}
	return stopped
}
