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
// idleWorkers wait, and stop ends them all (synctest fails a test
// whose goroutines outlive it).
func TestGroupWorkersWaitForTheNextOperation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &opPool{max: idleWorkers * 2}
		var first, second string
		p.spawn(func() { first = goroutineID() }, false)
		synctest.Wait()
		p.mu.Lock()
		if len(p.idle) != 1 || p.running != 0 {
			t.Errorf("after one operation: %d idle, %d running; want 1, 0", len(p.idle), p.running)
		}
		p.mu.Unlock()
		p.spawn(func() { second = goroutineID() }, true)
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
			p.spawn(func() { started.Done(); <-release }, false)
		}
		started.Wait()
		close(release)
		synctest.Wait()
		p.mu.Lock()
		if len(p.idle) != idleWorkers || p.running != 0 {
			t.Errorf("after %d operations at once: %d idle, %d running; want %d, 0", n, len(p.idle), p.running, idleWorkers)
		}
		p.mu.Unlock()

		p.stop()
		p.spawn(func() {}, false) // after the stop: runs, and its goroutine ends
		synctest.Wait()
		p.mu.Lock()
		if len(p.idle) != 0 {
			t.Errorf("after stop: %d idle, want 0", len(p.idle))
		}
		p.mu.Unlock()
	})
}

// Run's host keeps no worker: each store operation runs on a goroutine
// that ends with it (synctest fails a test whose goroutines outlive it).
func TestRunOperationGoroutinesEndWithTheOperation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ran := make(chan struct{})
		soloHost[struct{}]{}.spawn(func() { close(ran) }, false)
		soloHost[struct{}]{}.spawnWatch(func() {})
		<-ran
		synctest.Wait()
	})
}
