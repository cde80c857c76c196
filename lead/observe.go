package lead

import "sync"

// observerQueue delivers changes to observers one at a time, in order, on a
// goroutine of its own, so that observers never delay Run's loop.
type observerQueue struct {
	fns     []func(Change)
	mu      sync.Mutex
	queue   []Change
	wake    chan struct{}
	closed  bool
	drained chan struct{}
}

func newObserverQueue(fns []func(Change)) *observerQueue {
	q := &observerQueue{fns: fns, wake: make(chan struct{}, 1), drained: make(chan struct{})}
	if len(fns) == 0 {
		close(q.drained)
		return q
	}
	go q.loop()
	return q
}

func (q *observerQueue) push(c Change) {
	if len(q.fns) == 0 {
		return
	}
	q.mu.Lock()
	q.queue = append(q.queue, c)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// close delivers what is queued, then stops the goroutine and waits for it.
func (q *observerQueue) close() {
	if len(q.fns) == 0 {
		return
	}
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	<-q.drained
}

func (q *observerQueue) loop() {
	defer close(q.drained)
	for range q.wake {
		for {
			q.mu.Lock()
			if len(q.queue) == 0 {
				closed := q.closed
				q.mu.Unlock()
				if closed {
					return
				}
				break
			}
			c := q.queue[0]
			q.queue = q.queue[1:]
			q.mu.Unlock()
			for _, f := range q.fns {
				f(c)
			}
		}
	}
}
