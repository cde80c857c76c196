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
	done   chan struct{} // closed when Run has returned
	jobEnd chan struct{} // closed when the job (lead.Every) has returned
}

// demo runs the scripted demo and prints one line per event. Every worker
// has stopped when it returns, also when ctx ended first: none prints
// after.
func demo(ctx context.Context, out io.Writer, n int, step time.Duration) error {
	ctx, cancelAll := context.WithCancel(ctx)
	c := newCast(out)
	defer c.stopAll(cancelAll)
	c.printHeader(n)
	if err := c.startWorkers(ctx, n, step); err != nil {
		return err
	}
	if err := handOver(ctx, c, n, step); err != nil {
		return err
	}
	c.printf("fenced resource accepted writes up to token=%d", c.guard.Highest())
	c.printf("stopping every worker")
	return nil
}

// stage is what the script directs: who leads next, and stopping a
// worker. *cast is the real one.
type stage interface {
	// nextLeader returns the index of the next worker to start leading.
	nextLeader(ctx context.Context) (int, error)
	// stop stops worker i, gracefully (it releases the lease) or as a
	// crash (it keeps it).
	stop(i int, graceful bool)
}

// handOver runs the scripted handovers: whatever worker leads is stopped,
// gracefully when it releases on stop, as a crash when it does not.
// Workers alternate, so the demo usually shows both; it stops leaders until
// it has, or until one worker is left (with 3 workers, the two that release
// may lead first). The last leader then leads for half a step: the script
// never waits for a leader that cannot come.
func handOver(ctx context.Context, st stage, n int, step time.Duration) error {
	var graceful, crashed int
	for {
		i, err := st.nextLeader(ctx)
		if err != nil {
			return err
		}
		if graceful > 0 && crashed > 0 || graceful+crashed == n-1 {
			return pause(ctx, step/2)
		}
		if err := pause(ctx, step); err != nil {
			return err
		}
		st.stop(i, i%2 == 0)
		if i%2 == 0 {
			graceful++
		} else {
			crashed++
		}
	}
}

// pause waits d, or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// cast is the demo's workers and what they share: the output, the fenced
// resource their job writes to, and what the script has done.
type cast struct {
	out     io.Writer
	cfg     lease.Config
	start   time.Time
	st      *memstore.Store[demoMeta]
	guard   fence.Register // refuses writes from ended terms
	leaders chan string    // workers as they start leading
	workers []*demoWorker

	mu      sync.Mutex      // guards out once workers run, mark and stopped
	mark    time.Time       // when the last scripted stop happened
	stopped map[string]bool // workers the script stopped, who print their own stop
}

func newCast(out io.Writer) *cast {
	return &cast{
		out:     out,
		cfg:     demoConfig(),
		start:   time.Now(),
		st:      memstore.New[demoMeta](),
		leaders: make(chan string, 16),
		stopped: map[string]bool{},
	}
}

// printHeader prints what the demo runs, before any worker runs.
func (c *cast) printHeader(n int) {
	fmt.Fprintf(c.out, "tenure demo: %d workers electing a leader for %q on the in-memory store\n", n, "nightly-job")
	fmt.Fprintf(c.out, "lease %v, renew deadline %v, retry every %v\n\n", c.cfg.LeaseDuration, c.cfg.RenewDeadline, c.cfg.RetryInterval)
}

// printf prints one event, after the time since the demo started.
func (c *cast) printf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fmt.Fprintf(c.out, "%6.2fs  "+format+"\n", append([]any{time.Since(c.start).Seconds()}, args...)...)
}

// startWorkers starts n workers, each running its elector and the job.
func (c *cast) startWorkers(ctx context.Context, n int, step time.Duration) error {
	c.workers = make([]*demoWorker, n)
	for i := range c.workers {
		w, err := c.startWorker(ctx, i, step)
		if err != nil {
			return err
		}
		c.workers[i] = w
	}
	return nil
}

// startWorker starts worker i. Even workers release the lease when they
// stop; odd ones "crash": they never release.
func (c *cast) startWorker(ctx context.Context, i int, step time.Duration) (*demoWorker, error) {
	id := fmt.Sprintf("worker-%d", i+1)
	e, err := lead.New("nightly-job", c.st,
		lead.WithIdentity(id),
		lead.WithConfig(c.cfg),
		lead.WithLookupEnv(nil),
		lead.WithObserver(c.observer(ctx, id)),
		lead.WithReleaseOnStop(i%2 == 0),
	)
	if err != nil {
		return nil, err
	}
	e.SetMetadata(demoMeta{Worker: id})
	wctx, cancel := context.WithCancel(ctx)
	w := &demoWorker{e: e, cancel: cancel, done: make(chan struct{}), jobEnd: make(chan struct{})}
	go func() {
		defer close(w.done)
		_ = e.Run(wctx)
	}()
	// The job itself: runs every step/3 on the leader only, writing
	// through the fenced resource.
	go func() {
		defer close(w.jobEnd)
		_ = e.Every(wctx, step/3, func(ctx context.Context, t lead.Term) error {
			return c.guard.DoContext(ctx, func() error { return nil })
		})
	}()
	return w, nil
}

// observer prints the changes of worker id's leadership, and tells the
// script who leads (until ctx ends: then nobody listens).
func (c *cast) observer(ctx context.Context, id string) func(lead.Change) {
	return func(ch lead.Change) {
		if ch.Kind == lead.Started {
			c.printf("%-9s started leading  token=%d%s", id, ch.Term.Token, c.sinceMark())
			select {
			case c.leaders <- id:
			case <-ctx.Done():
			}
			return
		}
		c.mu.Lock()
		scripted := c.stopped[id]
		c.mu.Unlock()
		if !scripted {
			c.printf("%-9s stopped leading  token=%d: %v", id, ch.Term.Token, ch.Reason)
		}
	}
}

// sinceMark says how long ago the last scripted stop was, if there was one.
func (c *cast) sinceMark() string {
	c.mu.Lock()
	since := c.mark
	c.mu.Unlock()
	if since.IsZero() {
		return ""
	}
	return fmt.Sprintf("  (%v after the previous leader stopped)", time.Since(since).Round(time.Microsecond))
}

// nextLeader returns the index of the next worker that starts leading.
func (c *cast) nextLeader(ctx context.Context) (int, error) {
	select {
	case <-ctx.Done():
		return 0, ctx.Err()
	case id := <-c.leaders:
		return workerIndex(id), nil
	}
}

// stop stops worker i and waits until it has.
func (c *cast) stop(i int, graceful bool) {
	how := "crashes: stops renewing, keeps the lease"
	if graceful {
		how = "stops gracefully: releases the lease"
	}
	w := c.workers[i]
	rec, _ := w.e.Record()
	id := w.e.Identity()
	c.printf("%-9s %s  (record: holder=%s token=%d transitions=%d)", id, how, rec.Holder, rec.Token, rec.Transitions)
	// Observers are told on goroutines of their own, so the successor's
	// start could be printed before this worker's observer prints its
	// stop; the script prints the stop itself, before stopping it.
	if t, ok := w.e.Term(); ok {
		c.printf("%-9s stopped leading  token=%d", id, t.Token)
	}
	c.mu.Lock()
	c.mark = time.Now()
	c.stopped[id] = true
	c.mu.Unlock()
	w.cancel()
	<-w.done
}

// stopAll stops every worker still running (cancel ends the context they
// run in) and waits until each one's elector and job have returned.
func (c *cast) stopAll(cancel context.CancelFunc) {
	cancel()
	for _, w := range c.workers {
		if w != nil {
			<-w.done
			<-w.jobEnd
		}
	}
}

// workerIndex returns i for the identity "worker-<i+1>".
func workerIndex(id string) int {
	var i int
	fmt.Sscanf(id, "worker-%d", &i)
	return i - 1
}
