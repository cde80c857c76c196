package lead

import (
	"slices"
	"sync"
	"time"
)

// workers runs a Group's store operations on goroutines it keeps for a
// while, instead of a new goroutine each: a goroutine that has run a store
// operation once has the stack it needs, and the next operation does not
// grow a new one. An operation never waits for a worker: when none is
// idle, a new one starts, so a slow store operation delays no other. The
// worker idle the shortest takes the next operation (a stack), so that
// after a burst (a Group's start: every name reads and watches at once)
// the workers beyond what the steady state needs stay idle, and end after
// workerIdle. stop ends every idle worker at once.
type workers struct {
	mu      sync.Mutex
	idle    []*worker // the last went idle last
	stopped bool
	quit    chan struct{}
}

// worker is one goroutine of workers; job brings it its next operation.
type worker struct {
	job chan func() // capacity 1: sent to under workers.mu, once popped from idle
}

// workerIdle is how long a worker waits for its next operation.
const workerIdle = 10 * time.Second

func newWorkers() *workers { return &workers{quit: make(chan struct{})} }

// run runs job on the worker idle the shortest, or on a new one.
func (w *workers) run(job func()) {
	w.mu.Lock()
	if n := len(w.idle); n > 0 {
		wk := w.idle[n-1]
		w.idle[n-1] = nil
		w.idle = w.idle[:n-1]
		wk.job <- job // never blocks: a popped worker's channel is empty
		w.mu.Unlock()
		return
	}
	w.mu.Unlock()
	go w.work(&worker{job: make(chan func(), 1)}, job)
}

// work runs job, then the jobs it is given, until it has been idle for
// workerIdle or stop was called.
func (w *workers) work(wk *worker, job func()) {
	var idle *time.Timer
	for {
		job()
		w.mu.Lock()
		if w.stopped {
			w.mu.Unlock()
			return
		}
		w.idle = append(w.idle, wk)
		w.mu.Unlock()
		if idle == nil {
			idle = time.NewTimer(workerIdle)
		} else {
			idle.Reset(workerIdle)
		}
		var ok bool
		select {
		case job = <-wk.job:
			continue
		case <-idle.C:
		case <-w.quit:
			idle.Stop()
		}
		if job, ok = w.leave(wk); !ok {
			return
		}
	}
}

// leave takes wk out of the idle workers, and reports false; or, when run
// popped it meanwhile, returns the job run sent it (already in its channel:
// run sends under w.mu).
func (w *workers) leave(wk *worker) (func(), bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if i := slices.Index(w.idle, wk); i >= 0 {
		w.idle = slices.Delete(w.idle, i, i+1)
		return nil, false
	}
	return <-wk.job, true
}

// stop ends the idle workers, and each busy one once its job is done.
func (w *workers) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stopped {
		w.stopped = true
		close(w.quit)
	}
}
