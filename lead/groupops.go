package lead

import "sync"

// groupMaxOps is how many store operations of a Group run at once unless
// WithMaxStoreOps says otherwise; more wait their turn. Past a store
// client's pool, more at once only wait in the client instead, each on a
// goroutine the runtime keeps (a goroutine's descriptor is never freed,
// so a burst of 30,000 operations at the start of 10,000 elections left
// 16 MB behind for good).
const groupMaxOps = 256

// idleWorkers is how many of a Group's workers wait for the next
// operation instead of ending. A new goroutine starts with a small stack
// and grows it on every operation (copying it: encoding a record's
// metadata alone outgrows it), which was a twentieth of a 10,000-name
// Group's CPU; one that waits keeps its stack for the next (until a
// garbage collection shrinks it).
const idleWorkers = 32

// opPool runs a Group's store operations: at most max at once, each on a
// goroutine; the others wait in urgent or ops, oldest first, for a
// running one to end, whose goroutine then runs the next. Waiting here is
// to the machine what a slow network on the way to the store is: it
// counts its leases from when it asked, not from when the store got the
// request. An urgent op (a leader's renewal or release) waits only for
// the urgent ones before it: when the store cannot keep up (thousands of
// names starting at once), the terms that exist are kept, and freed,
// before followers read and candidates claim; in the order asked, a
// renewal queued behind a start's reads missed its deadline, and every
// lost term brought more operations.
type opPool struct {
	max int

	mu      sync.Mutex
	running int
	urgent  opQueue // a leader's renewals and releases: run before ops
	ops     opQueue
	// Workers that found nothing to run wait in idle (at most
	// idleWorkers) for the next operation, until stop (closed).
	idle   []chan func()
	closed bool
}

// spawn runs op on a worker: an idle one when one waits, else a new
// goroutine; when max are running, op waits its turn (urgent: before the
// others).
func (p *opPool) spawn(op func(), urgent bool) {
	p.spawnAs(op, urgent, true)
}

// spawnWatch runs op (the start of a watch) as spawn does, among the same
// bounded operations, but a goroutine started for it ends when no
// operation waits instead of staying as an idle worker: on a store whose
// reads and swaps run on the loop (store.Immediate), watch starts are the
// only operations that take a goroutine, and a worker kept for the next
// would wait for good.
func (p *opPool) spawnWatch(op func()) {
	p.spawnAs(op, false, false)
}

// spawnAs is spawn; a goroutine it starts stays idle afterwards (work)
// only when park is set.
func (p *opPool) spawnAs(op func(), urgent, park bool) {
	p.mu.Lock()
	if p.running >= p.max {
		if urgent {
			p.urgent.push(op)
		} else {
			p.ops.push(op)
		}
		p.mu.Unlock()
		return
	}
	p.running++
	if n := len(p.idle); n > 0 {
		w := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		w <- op // buffered: the worker may not be waiting yet
		return
	}
	p.mu.Unlock()
	go p.work(op, park)
}

// work runs op, then the operations waiting, until none is left; then,
// when park is set, it waits for the next one as one of the idle workers,
// if there are fewer than idleWorkers.
func (p *opPool) work(op func(), park bool) {
	var next chan func()
	for op != nil {
		op()
		p.mu.Lock()
		if op = p.urgent.pop(); op == nil {
			op = p.ops.pop()
		}
		if op != nil {
			p.mu.Unlock()
			continue
		}
		p.running--
		if !park || p.closed || len(p.idle) >= idleWorkers {
			p.mu.Unlock()
			return
		}
		if next == nil {
			next = make(chan func(), 1)
		}
		p.idle = append(p.idle, next)
		p.mu.Unlock()
		op = <-next // nil once closed by stop
	}
}

// stop ends the workers waiting for an operation (Group.Run returns, every
// operation has ended); none waits after it.
func (p *opPool) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, w := range p.idle {
		close(w)
	}
	p.idle = nil
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
