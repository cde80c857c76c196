package lead

import (
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// Every job runs; a burst starts a worker per job running at once; the
// workers the steady state does not need end after workerIdle, while the
// one kept busy stays; stop ends the rest.
func TestWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		before := runtime.NumGoroutine()
		w := newWorkers()
		var ran sync.WaitGroup
		release := make(chan struct{})
		for range 50 {
			ran.Add(1)
			w.run(func() { <-release; ran.Done() })
		}
		synctest.Wait()
		if n := runtime.NumGoroutine() - before; n != 50 {
			t.Fatalf("%d goroutines for 50 blocked jobs, want 50", n)
		}
		close(release)
		ran.Wait()
		synctest.Wait()
		// One job every second for longer than workerIdle: the worker idle
		// the shortest takes each, and the other 49 end.
		for range 3 * int(workerIdle/time.Second) {
			ran.Add(1)
			w.run(ran.Done)
			time.Sleep(time.Second)
		}
		ran.Wait()
		synctest.Wait()
		if n := runtime.NumGoroutine() - before; n != 1 {
			t.Fatalf("%d goroutines after the burst, want 1 (the worker kept busy)", n)
		}
		w.stop()
		synctest.Wait()
		if n := runtime.NumGoroutine() - before; n != 0 {
			t.Fatalf("%d goroutines after stop, want 0", n)
		}
		ran.Add(1)
		w.run(ran.Done) // after stop: still runs
		ran.Wait()
	})
}
