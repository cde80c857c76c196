package lead

import "sync"

// observerQueue delivers changes to observers one at a time, in order, on a
// goroutine of its own, so that observers never delay Run's loop. The
// goroutine runs only while changes are queued: an elector whose leadership
// does not change holds none.
type observerQueue struct {
	fns     []func(Change)
	mu      sync.Mutex
	queue   []Change
	running bool          // a delivering goroutine is running
	idle    chan struct{} // closed when the delivering goroutine ends; nil when none ran
}

func newObserverQueue(fns []func(Change)) *observerQueue {
	return &observerQueue{fns: fns}
}

func (q *observerQueue) push(c Change) {
	if len(q.fns) == 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.queue = append(q.queue, c)
	if q.running {
		return
	}
	q.running = true
	q.idle = make(chan struct{})
	go q.deliver(q.idle)
}

// close waits until everything queued has been delivered. Nothing is pushed
// after close.
func (q *observerQueue) close() {
	q.mu.Lock()
	idle := q.idle
	q.mu.Unlock()
	if idle != nil {
		<-idle
	}
}

// deliver calls the observers with each queued change until the queue is
// empty, then ends (closing idle).
func (q *observerQueue) deliver(idle chan struct{}) {
	defer close(idle)
	for {
		q.mu.Lock()
		if len(q.queue) == 0 {
			q.running = false
			q.queue = nil
			q.mu.Unlock()
			return
		}
		c := q.queue[0]
		q.queue = q.queue[1:]
		q.mu.Unlock()
		for _, f := range q.fns {
			f(c)
		}
	}
}
