package demo

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/internal/nilarg"
	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store/memstore"
)

// demoMeta is the metadata each worker attaches to the lease.
type demoMeta struct {
	Worker string `json:"worker"`
}

// Run parses the demo's flags from args and runs the demo, printing one line
// per event to stdout; flag errors and usage go to stderr. prog is how the
// usage text names the command ("tenure demo", "tenure-demo"). Run returns
// nil when the demo ends by itself, [flag.ErrHelp] for -h, an error for a
// bad flag, and one wrapping ctx.Err() when ctx ends first. A nil ctx, stdout
// or stderr is an error.
func Run(ctx context.Context, prog string, args []string, stdout, stderr io.Writer) error {
	switch {
	case nilarg.IsNil(ctx):
		return errors.New("demo: ctx is nil")
	case nilarg.IsNil(stdout):
		return errors.New("demo: stdout is nil")
	case nilarg.IsNil(stderr):
		return errors.New("demo: stderr is nil")
	}
	fs := flag.NewFlagSet(prog, flag.ContinueOnError)
	fs.SetOutput(stderr)
	workers := fs.Int("workers", 4, "number of workers (at least 3)")
	step := fs.Duration("step", 3*time.Second, "time between scripted events")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: %s [-workers N] [-step D]\n", prog)
		fmt.Fprintln(stderr, "\nRuns N workers in one process on the in-memory store. The leader stops")
		fmt.Fprintln(stderr, "gracefully (its successor leads at once), later a leader crashes (its")
		fmt.Fprintln(stderr, "successor waits out the lease), and the demo ends by itself.")
		fmt.Fprintf(stderr, "\nExample:\n  %s -workers 5\n", prog)
		fmt.Fprintln(stderr, "\nFlags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *workers < 3 {
		return fmt.Errorf("-workers is %d, must be at least 3", *workers)
	}
	if *step <= 0 {
		return fmt.Errorf("-step is %v, must be > 0", *step)
	}
	return demo(ctx, stdout, *workers, *step)
}

// demoConfig is a short lease, so that the crash failover shows in seconds.
func demoConfig() lease.Config {
	return lease.Config{
		LeaseDuration:  2 * time.Second,
		RenewDeadline:  1500 * time.Millisecond,
		RetryInterval:  250 * time.Millisecond,
		RetryJitter:    0.2,
		BackendTimeout: 500 * time.Millisecond,
		ErrorInterval:  10 * time.Second,
	}
}

// demoWorker is one worker of the demo.
type demoWorker struct {
	e      *lead.Elector[demoMeta]
	cancel context.CancelFunc
	done   chan struct{}
}

// demo runs the scripted demo and prints one line per event.
func demo(ctx context.Context, out io.Writer, n int, step time.Duration) error {
	ctx, cancelAll := context.WithCancel(ctx)
	defer cancelAll()
	st := memstore.New[demoMeta]()
	cfg := demoConfig()
	start := time.Now()
	var mu sync.Mutex
	var mark time.Time           // when the last scripted stop happened
	stopped := map[string]bool{} // workers the script stopped, who print their own stop
	printf := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, "%6.2fs  "+format+"\n", append([]any{time.Since(start).Seconds()}, args...)...)
	}
	fmt.Fprintf(out, "tenure demo: %d workers electing a leader for %q on the in-memory store\n", n, "nightly-job")
	fmt.Fprintf(out, "lease %v, renew deadline %v, retry every %v\n\n", cfg.LeaseDuration, cfg.RenewDeadline, cfg.RetryInterval)

	// The resource the job writes to refuses writes from ended terms.
	var guard fence.Register
	leaders := make(chan string, 16)
	workers := make([]*demoWorker, n)
	for i := range workers {
		id := fmt.Sprintf("worker-%d", i+1)
		observe := func(c lead.Change) {
			if c.Kind == lead.Started {
				mu.Lock()
				since := mark
				mu.Unlock()
				after := ""
				if !since.IsZero() {
					after = fmt.Sprintf("  (%v after the previous leader stopped)", time.Since(since).Round(time.Microsecond))
				}
				printf("%-9s started leading  token=%d%s", id, c.Term.Token, after)
				leaders <- id
				return
			}
			mu.Lock()
			scripted := stopped[id]
			mu.Unlock()
			if !scripted {
				printf("%-9s stopped leading  token=%d: %v", id, c.Term.Token, c.Reason)
			}
		}
		e, err := lead.New("nightly-job", st,
			lead.WithIdentity(id),
			lead.WithConfig(cfg),
			lead.WithLookupEnv(nil),
			lead.WithObserver(observe),
			lead.WithReleaseOnStop(i%2 == 0), // odd workers "crash": they never release
		)
		if err != nil {
			return err
		}
		e.SetMetadata(demoMeta{Worker: id})
		wctx, cancel := context.WithCancel(ctx)
		w := &demoWorker{e: e, cancel: cancel, done: make(chan struct{})}
		workers[i] = w
		go func() {
			defer close(w.done)
			_ = e.Run(wctx)
		}()
		// The job itself: runs every step/3 on the leader only, writing
		// through the fenced resource.
		go func() {
			_ = e.Every(wctx, step/3, func(ctx context.Context, t lead.Term) error {
				return guard.DoContext(ctx, func() error { return nil })
			})
		}()
	}
	wait := func(d time.Duration) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
			return nil
		}
	}
	nextLeader := func() (string, error) {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case id := <-leaders:
			return id, nil
		}
	}
	stopWorker := func(w *demoWorker, how string) {
		rec, _ := w.e.Record()
		id := w.e.Identity()
		printf("%-9s %s  (record: holder=%s token=%d transitions=%d)", id, how, rec.Holder, rec.Token, rec.Transitions)
		// Observers are told on goroutines of their own, so the successor's
		// start could be printed before this worker's observer prints its
		// stop; the script prints the stop itself, before stopping it.
		if t, ok := w.e.Term(); ok {
			printf("%-9s stopped leading  token=%d", id, t.Token)
		}
		mu.Lock()
		mark = time.Now()
		stopped[id] = true
		mu.Unlock()
		w.cancel()
		<-w.done
	}

	// Three scripted handovers: whatever worker leads is stopped, gracefully
	// when it releases on stop, as a crash when it does not. Workers
	// alternate, so the demo shows both.
	var graceful, crashed int
	for graceful == 0 || crashed == 0 {
		id, err := nextLeader()
		if err != nil {
			return err
		}
		if err := wait(step); err != nil {
			return err
		}
		if graceful+crashed == n-1 {
			break // keep one worker
		}
		if i := workerIndex(id); i%2 == 0 {
			stopWorker(workers[i], "stops gracefully: releases the lease")
			graceful++
		} else {
			stopWorker(workers[i], "crashes: stops renewing, keeps the lease")
			crashed++
		}
	}
	if _, err := nextLeader(); err != nil {
		return err
	}
	if err := wait(step / 2); err != nil {
		return err
	}
	printf("fenced resource accepted writes up to token=%d", guard.Highest())
	printf("stopping every worker")
	cancelAll()
	for _, w := range workers {
		<-w.done
	}
	return nil
}

// workerIndex returns i for the identity "worker-<i+1>".
func workerIndex(id string) int {
	var i int
	fmt.Sscanf(id, "worker-%d", &i)
	return i - 1
}
