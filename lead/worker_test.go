package lead

import (
	"bytes"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
)

// goroutineID returns the number of the calling goroutine, from its stack
// trace's first line ("goroutine 12 [running]:").
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	f := bytes.Fields(buf)
	if len(f) < 2 {
		return ""
	}
	return string(f[1])
}

// A Group's workers wait for the next operation rather than end, so that
// the next one runs on a goroutine whose stack has grown already; at most
// idleWorkers wait, and stopWorkers ends them all (synctest fails a test
// whose goroutines outlive it).
func TestGroupWorkersWaitForTheNextOperation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLoop[struct{}](idleWorkers*2, true)
		var first, second string
		l.spawn(func() { first = goroutineID() }, false)
		synctest.Wait()
		l.opsMu.Lock()
		if len(l.idle) != 1 || l.running != 0 {
			t.Errorf("after one operation: %d idle, %d running; want 1, 0", len(l.idle), l.running)
		}
		l.opsMu.Unlock()
		l.spawn(func() { second = goroutineID() }, true)
		synctest.Wait()
		if first == "" || first != second {
			t.Errorf("the second operation ran on goroutine %q, the first on %q: want the same", second, first)
		}

		// More at once than may wait: the extra ones end.
		release := make(chan struct{})
		var started sync.WaitGroup
		n := idleWorkers + 8
		started.Add(n)
		for range n {
			l.spawn(func() { started.Done(); <-release }, false)
		}
		started.Wait()
		close(release)
		synctest.Wait()
		l.opsMu.Lock()
		if len(l.idle) != idleWorkers || l.running != 0 {
			t.Errorf("after %d operations at once: %d idle, %d running; want %d, 0", n, len(l.idle), l.running, idleWorkers)
		}
		l.opsMu.Unlock()

		l.stopWorkers()
		l.spawn(func() {}, false) // after the stop: runs, and its goroutine ends
		synctest.Wait()
		l.opsMu.Lock()
		if len(l.idle) != 0 {
			t.Errorf("after stopWorkers: %d idle, want 0", len(l.idle))
		}
		l.opsMu.Unlock()
	})
}

// A Run's loop (no bound on its operations) keeps no worker: an elector
// alone has an operation or two in flight.
func TestRunLoopKeepsNoWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLoop[struct{}](0, false)
		l.spawn(func() {}, false)
		synctest.Wait()
		if len(l.idle) != 0 {
			t.Errorf("%d idle workers, want 0", len(l.idle))
		}
	})
}
