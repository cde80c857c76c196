package lead

import (
	"sync"
	"time"

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
// watch retry and one metadata read retry waiting in the queue (flags in the runner, under mu): a
// later one is merged into the waiting one (for a watch event, the newer
// event replaces the older, which a watch may skip anyway), so the queue
// stays bounded by the operations in flight.
type loop[M any] struct {
	mu    sync.Mutex
	queue []msg[M]
	spare []msg[M]
	ready chan struct{} // capacity 1: signalled when the queue stops being empty

	// Store operations (spawn): at most maxOps run at once (0: no
	// limit), each on a goroutine; the others wait in urgent or ops,
	// oldest first, for a running one to end, whose goroutine then runs
	// the next. opsMu guards running, urgent and ops.
	maxOps  int
	opsMu   sync.Mutex
	running int
	urgent  opQueue // a leader's renewals and releases: run before ops
	ops     opQueue
	// A Group's workers that found nothing to run wait in idle (at most
	// idleWorkers) for the next operation, until stopWorkers (closed).
	idle   []chan func()
	closed bool

	// Shared wakes (a Group's loop, see wakeAt), under mu: the clock of
	// the electors that share them and the instant slots count from, and
	// the slots armed, by number.
	grouped   bool
	wakeClock Clock
	wakeBase  time.Time
	slots     map[int64]*wakeSlot[M]
}

// wakeGrain is the finest grid a Group's shared wakes are rounded up to,
// and maxWakeGrain the coarsest (see runner.wakeGrains).
const (
	wakeGrain    = 10 * time.Millisecond
	maxWakeGrain = 100 * time.Millisecond
)

// wakeSlot is one instant of the grid: a timer, and the runners to wake
// then (those that re-armed elsewhere since are skipped).
type wakeSlot[M any] struct {
	timer Timer
	rs    []*runner[M]
}

// wakeAt wakes r (msgWake) at the first instant at or after t that is a
// multiple of grains instants of the grid (grains >= 1), on clock c (the
// Group's, which every runner that calls this shares), now being c's time
// now. One timer serves every runner due at that instant: with thousands
// of electors, a timer each (and the goroutine each starts when it fires)
// was the largest part of an idle Group's CPU, and the coarser the grid,
// the more electors each wake of the loop serves and the more calls go to
// the store together. A wake comes at most grains*wakeGrain late, which
// the machine takes as any slow step: it reads the clock when it steps,
// and a term's watchdog has a timer of its own.
func (l *loop[M]) wakeAt(r *runner[M], c Clock, now, t time.Time, grains int64) {
	l.mu.Lock()
	if l.wakeClock == nil {
		l.wakeClock, l.wakeBase = c, now
	}
	d := t.Sub(l.wakeBase)
	k := max(grains, 1)
	n := ceilDiv(ceilDiv(int64(d), int64(wakeGrain)), k) * k
	if r.slotted && r.slot == n {
		l.mu.Unlock()
		return
	}
	r.slot, r.slotted = n, true
	s := l.slots[n]
	fresh := s == nil
	if fresh {
		if l.slots == nil {
			l.slots = make(map[int64]*wakeSlot[M])
		}
		s = &wakeSlot[M]{}
		l.slots[n] = s
	}
	s.rs = append(s.rs, r)
	at := l.wakeBase.Add(time.Duration(n) * wakeGrain)
	l.mu.Unlock()
	if !fresh {
		return
	}
	// Outside mu: a clock may run f before AfterFunc returns.
	timer := c.AfterFunc(max(at.Sub(now), 0), func() { l.fireSlot(n) })
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.slots[n] == s {
		s.timer = timer
	} else if timer != nil {
		timer.Stop() // it fired already, or stopWakes came first
	}
}

// ceilDiv is a/b rounded up, for b > 0 and any a.
func ceilDiv(a, b int64) int64 {
	q := a / b // rounded towards zero: up for a < 0
	if a%b > 0 {
		q++
	}
	return q
}

// unwake cancels r's shared wake, if it has one.
func (l *loop[M]) unwake(r *runner[M]) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r.slotted = false
}

// fireSlot wakes the runners due at slot n.
func (l *loop[M]) fireSlot(n int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.slots[n]
	if s == nil {
		return
	}
	delete(l.slots, n)
	for _, r := range s.rs {
		if !r.slotted || r.slot != n {
			continue
		}
		r.slotted = false
		if r.queued&queuedWake == 0 {
			r.queued |= queuedWake
			l.postLocked(msg[M]{r: r, kind: msgWake})
		}
	}
}

// stopWakes stops the timers of the shared wakes (Group.Run returns).
func (l *loop[M]) stopWakes() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.slots {
		if s.timer != nil { // nil: a clock's, or not set yet (wakeAt stops it)
			s.timer.Stop()
		}
	}
	l.slots = nil
}

// opQueue is a queue of store operations waiting to run, oldest first.
type opQueue struct {
	ops  []func()
	head int // ops[:head] have been taken
}

// push adds op at the end.
func (q *opQueue) push(op func()) {
	if q.head > 0 && len(q.ops) == cap(q.ops) {
		// Full: move the waiting ones to the front before growing.
		n := copy(q.ops, q.ops[q.head:])
		clear(q.ops[n:])
		q.ops, q.head = q.ops[:n], 0
	}
	q.ops = append(q.ops, op)
}

// pop takes the oldest operation, or returns nil when none waits.
func (q *opQueue) pop() func() {
	if q.head == len(q.ops) {
		return nil
	}
	op := q.ops[q.head]
	q.ops[q.head] = nil
	q.head++
	if q.head == len(q.ops) {
		// Empty: start over at the front of the same array.
		q.ops, q.head = q.ops[:0], 0
	}
	return op
}

// groupMaxOps is how many store operations of a Group run at once unless
// WithMaxStoreOps says otherwise; more wait their turn. Past a store
// client's pool, more at once only wait in the client instead, each on a
// goroutine the runtime keeps (a goroutine's descriptor is never freed,
// so a burst of 30,000 operations at the start of 10,000 elections left
// 16 MB behind for good).
const groupMaxOps = 256

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

// newLoop returns a loop that runs at most maxOps store operations at
// once (0: no limit); a Group's (grouped) shares its electors' wakes.
func newLoop[M any](maxOps int, grouped bool) *loop[M] {
	return &loop[M]{ready: make(chan struct{}, 1), maxOps: maxOps, grouped: grouped}
}

// spawn runs op on a goroutine of its own (in a Group, an idle worker's
// when one waits), or, when maxOps are running, queues it: the goroutine
// of the next one to end runs it. Waiting here
// is to the machine what a slow network on the way to the store is: it
// counts its leases from when it asked, not from when the store got the
// request. An urgent op (a leader's renewal or release) waits only for the
// urgent ones before it: when the store cannot keep up (thousands of
// names starting at once), the terms that exist are kept, and freed, before
// followers read and candidates claim; in the order asked, a renewal
// queued behind a start's reads missed its deadline, and every lost term
// brought more operations.
func (l *loop[M]) spawn(op func(), urgent bool) {
	l.spawnAs(op, urgent, true)
}

// spawnWatch runs op (the start of a watch) as spawn does, among the same
// bounded operations, but a goroutine started for it ends when no
// operation waits instead of staying as an idle worker: on a store whose
// reads and swaps run on the loop (store.Immediate), watch starts are the
// only operations that take a goroutine, and a worker kept for the next
// would wait for good.
func (l *loop[M]) spawnWatch(op func()) {
	l.spawnAs(op, false, false)
}

// spawnAs is spawn; a goroutine it starts stays idle afterwards (work)
// only when park is set.
func (l *loop[M]) spawnAs(op func(), urgent, park bool) {
	if l.maxOps == 0 {
		go op() // Run's loop: nothing to count
		return
	}
	l.opsMu.Lock()
	if l.running >= l.maxOps {
		if urgent {
			l.urgent.push(op)
		} else {
			l.ops.push(op)
		}
		l.opsMu.Unlock()
		return
	}
	l.running++
	if n := len(l.idle); n > 0 {
		w := l.idle[n-1]
		l.idle[n-1] = nil
		l.idle = l.idle[:n-1]
		l.opsMu.Unlock()
		w <- op // buffered: the worker may not be waiting yet
		return
	}
	l.opsMu.Unlock()
	go l.work(op, park)
}

// idleWorkers is how many of a Group's workers wait for the next
// operation instead of ending. A new goroutine starts with a small stack
// and grows it on every operation (copying it: encoding a record's
// metadata alone outgrows it), which was a twentieth of a 10,000-name
// Group's CPU; one that waits keeps its stack for the next (until a
// garbage collection shrinks it).
const idleWorkers = 32

// work runs op, then the operations waiting, until none is left; then, in
// a Group and when park is set, it waits for the next one as one of the
// idle workers, if there are fewer than idleWorkers.
func (l *loop[M]) work(op func(), park bool) {
	var next chan func()
	for op != nil {
		op()
		l.opsMu.Lock()
		if op = l.urgent.pop(); op == nil {
			op = l.ops.pop()
		}
		if op != nil {
			l.opsMu.Unlock()
			continue
		}
		l.running--
		if !park || l.closed || len(l.idle) >= idleWorkers {
			l.opsMu.Unlock()
			return
		}
		if next == nil {
			next = make(chan func(), 1)
		}
		l.idle = append(l.idle, next)
		l.opsMu.Unlock()
		op = <-next // nil once closed by stopWorkers
	}
}

// stopWorkers ends the workers waiting for an operation (Group.Run
// returns, every operation has ended); none waits after it.
func (l *loop[M]) stopWorkers() {
	l.opsMu.Lock()
	defer l.opsMu.Unlock()
	l.closed = true
	for _, w := range l.idle {
		close(w)
	}
	l.idle = nil
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
// the end of that watch. A newer event replaces one still waiting.
func (l *loop[M]) postWatch(r *runner[M], gen uint32, ev store.Event[M], ok bool) {
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
