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
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/memstore"
)

// demoMeta is the metadata each worker sets on the lease while it leads:
// where it serves, for the others to find it.
type demoMeta struct {
	Addr string `json:"addr"`
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
		fmt.Fprintln(stderr, "\nRuns N workers in one process on the in-memory store. A leader stops")
		fmt.Fprintln(stderr, "gracefully (its successor leads at once) and a late write from its ended")
		fmt.Fprintln(stderr, "term is refused by the fence; later a leader crashes, silently, and its")
		fmt.Fprintln(stderr, "successor tells of it once the lease has expired. Each leader sets its")
		fmt.Fprintln(stderr, "address as metadata; the last worker follows who leads through")
		fmt.Fprintln(stderr, "Elector.Leaders. The demo ends by itself.")
		fmt.Fprintf(stderr, "\nExample:\n  %s -workers 5\n", prog)
		fmt.Fprintln(stderr, "\nFlags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%d unexpected arguments: the demo takes only flags", fs.NArg())
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
	id        string
	e         *lead.Elector[demoMeta]
	cancel    context.CancelFunc
	done      chan struct{} // closed when Run has returned
	jobEnd    chan struct{} // closed when the job (Lead) has returned
	watchEnd  chan struct{} // closed when its Leaders loop has returned
	lastToken fence.Token   // the token of its term when the script stopped it
	stopped   bool          // the script stopped it (the script's goroutine only)
}

// demo runs the scripted demo and prints one line per event, then a last
// line that sums it up. Every worker has stopped when it returns, also
// when ctx ended first: none prints after.
func demo(ctx context.Context, out io.Writer, n int, step time.Duration) error {
	ctx, cancelAll := context.WithCancel(ctx)
	c := newCast(out)
	defer c.stopAll(cancelAll)
	c.printHeader(n)
	if err := c.watchStore(ctx); err != nil {
		return err
	}
	if err := c.startWorkers(ctx, n); err != nil {
		return err
	}
	sum, err := handOver(ctx, c, n, step)
	if err != nil {
		return err
	}
	c.finish(cancelAll)
	refused := "stale writes refused"
	if sum.stale == 1 {
		refused = "stale write refused"
	}
	fmt.Fprintf(c.out, "\ndemo done: %d handovers (%d after a release, %d after a crash), %d %s; the fence accepted writes up to token=%d\n",
		sum.graceful+sum.crashed, sum.graceful, sum.crashed, sum.stale, refused, c.guard.Highest())
	return nil
}

// stage is what the script directs: who leads next, stopping a worker,
// and a late write from a worker whose term ended. *cast is the real one.
type stage interface {
	// nextLeader returns the index of the next worker to start leading,
	// once it has written through the fence with its term's token.
	nextLeader(ctx context.Context) (int, error)
	// stop stops worker i, gracefully (it releases the lease) or as a
	// crash (it keeps it).
	stop(i int, graceful bool)
	// lateWrite writes through the fence with the token of worker i's
	// ended term, and reports whether the fence refused it.
	lateWrite(i int) bool
}

// summary counts what the script showed.
type summary struct {
	graceful, crashed, stale int
}

// handOver runs the scripted handovers: whatever worker leads is stopped,
// gracefully when it releases on stop, as a crash when it does not. Once
// the successor of the first graceful stop has written, a late write of
// the stopped worker's ended term is tried. Workers alternate, so the demo
// usually shows both kinds of stop; it stops leaders until it has, or
// until one worker is left (with 3 workers, the two that release may lead
// first). The last leader then leads for half a step: the script never
// waits for a leader that cannot come.
func handOver(ctx context.Context, st stage, n int, step time.Duration) (summary, error) {
	var sum summary
	late, lateTried := -1, false // the worker whose late write is tried, once
	for {
		i, err := st.nextLeader(ctx)
		if err != nil {
			return sum, err
		}
		if late >= 0 && !lateTried {
			if st.lateWrite(late) {
				sum.stale++
			}
			lateTried = true
		}
		if sum.graceful > 0 && sum.crashed > 0 || sum.graceful+sum.crashed == n-1 {
			return sum, pause(ctx, step/2)
		}
		if err := pause(ctx, step); err != nil {
			return sum, err
		}
		graceful := i%2 == 0
		st.stop(i, graceful)
		if graceful {
			sum.graceful++
			if late < 0 {
				late = i
			}
		} else {
			sum.crashed++
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

// cast is the demo's workers and what they share: the output, the store,
// the fenced resource their job writes to, and what the script has done.
type cast struct {
	out     io.Writer
	cfg     lease.Config
	start   time.Time
	st      *memstore.Store[demoMeta]
	guard   fence.Register // refuses writes from ended terms
	leaders chan started   // workers as they start leading and have written
	seen    chan sighting  // leaders as followers see them through Leaders
	workers []*demoWorker

	mu      sync.Mutex      // guards out once workers run, and stopped
	stopped map[string]bool // workers the script stopped: their observer is silent

	hmu       sync.Mutex // guards what the store watch saw (never held while calling the store)
	last      store.Event[demoMeta]
	lastAt    time.Time // when last was written
	lastHeld  string    // the last holder seen
	haveLast  bool      // last is set
	takeovers map[fence.Token]takeover
}

// started is a worker that started leading and has written with its
// term's token.
type started struct {
	i     int
	token fence.Token
}

// sighting is a leader as a follower saw it through Elector.Leaders.
type sighting struct {
	by     string
	leader lead.Leader[demoMeta]
}

// takeover is how a term began, as the store showed it: the record its
// first write replaced.
type takeover struct {
	from     string        // the holder before ("" when there was none)
	released bool          // from had released the lease
	quiet    time.Duration // time between the last write before and the term's first
}

func newCast(out io.Writer) *cast {
	return &cast{
		out:       out,
		cfg:       demoConfig(),
		start:     time.Now(),
		st:        memstore.New[demoMeta](),
		leaders:   make(chan started, 16),
		seen:      make(chan sighting, 64),
		stopped:   map[string]bool{},
		takeovers: map[fence.Token]takeover{},
	}
}

// electionName is the name of the demo's election.
const electionName = "nightly-job"

// printHeader prints what the demo runs, before any worker runs.
func (c *cast) printHeader(n int) {
	fmt.Fprintf(c.out, "tenure demo: %d workers elect a leader for %q on the in-memory store\n", n, electionName)
	fmt.Fprintf(c.out, "lease %v, renew deadline %v, retry every %v. A leader sets its address as\n", c.cfg.LeaseDuration, c.cfg.RenewDeadline, c.cfg.RetryInterval)
	fmt.Fprintf(c.out, "metadata and writes through a fence that refuses tokens below the highest\n")
	fmt.Fprintf(c.out, "it accepted; the followers see who leads through Elector.Leaders.\n\n")
}

// printf prints one event, after the time since the demo started.
func (c *cast) printf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fmt.Fprintf(c.out, "%6.2fs  "+format+"\n", append([]any{time.Since(c.start).Seconds()}, args...)...)
}

// narrate prints what the script does, as opposed to what a worker says.
func (c *cast) narrate(format string, args ...any) {
	c.printf("--- "+format, args...)
}

// watchStore records, from every write to the election's record, how
// each term began: the store, not the previous leader, tells a successor
// that it took over a lease that expired. memstore calls the function for
// every write, under its lock.
func (c *cast) watchStore(ctx context.Context) error {
	return c.st.WatchFunc(ctx, electionName, func(ev store.Event[demoMeta], ok bool) {
		if !ok {
			return
		}
		now := time.Now()
		c.hmu.Lock()
		defer c.hmu.Unlock()
		r := ev.Record
		held := ev.Err == nil && !ev.Absent && r.Holder != ""
		if held && (!c.haveLast || c.last.Absent || c.last.Record.Holder != r.Holder || c.last.Record.Token != r.Token) {
			t := takeover{}
			if c.haveLast && !c.last.Absent {
				t = takeover{from: c.lastHeld, released: c.last.Record.Holder == "", quiet: now.Sub(c.lastAt)}
			}
			c.takeovers[fence.Token(r.Token)] = t
		}
		if held {
			c.lastHeld = r.Holder
		}
		c.last, c.lastAt, c.haveLast = ev, now, true
	})
}

// howTaken says how the term of token began, as the store showed it.
func (c *cast) howTaken(token fence.Token) string {
	c.hmu.Lock()
	t, ok := c.takeovers[token]
	c.hmu.Unlock()
	switch {
	case !ok:
		return ""
	case t.from == "":
		return "  (took the lease: no record yet)"
	case t.released:
		return fmt.Sprintf("  (took over at once: %s released the lease %.1fms earlier)", t.from, t.quiet.Seconds()*1000)
	default:
		return fmt.Sprintf("  (took over after %s's lease expired: it crashed or stalled, no renewal for %v, lease %v)",
			t.from, t.quiet.Round(10*time.Millisecond), c.cfg.LeaseDuration)
	}
}

// startWorkers starts n workers, each running its elector, the job, and a
// loop that follows who leads through Elector.Leaders.
func (c *cast) startWorkers(ctx context.Context, n int) error {
	c.workers = make([]*demoWorker, n)
	for i := range c.workers {
		w, err := c.startWorker(ctx, i)
		if err != nil {
			return err
		}
		c.workers[i] = w
	}
	return nil
}

// workerID is the identity of worker i.
func workerID(i int) string { return fmt.Sprintf("worker-%d", i+1) }

// startWorker starts worker i. Even workers release the lease when they
// stop; odd ones "crash": they never release.
func (c *cast) startWorker(ctx context.Context, i int) (*demoWorker, error) {
	id := workerID(i)
	e, err := lead.New(electionName, c.st,
		lead.WithIdentity(id),
		lead.WithConfig(c.cfg),
		lead.WithLookupEnv(nil),
		lead.WithObserver(c.observer(id)),
		lead.WithReleaseOnStop(i%2 == 0),
	)
	if err != nil {
		return nil, err
	}
	if err := e.SetMetadata(demoMeta{Addr: fmt.Sprintf("10.0.0.%d:8080", i+1)}); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	w := &demoWorker{id: id, e: e, cancel: cancel, done: make(chan struct{}), jobEnd: make(chan struct{}), watchEnd: make(chan struct{})}
	leaders, err := e.Leaders(wctx)
	if err != nil {
		cancel()
		return nil, err
	}
	go func() {
		defer close(w.watchEnd)
		c.follow(id, leaders)
	}()
	go func() {
		defer close(w.done)
		_ = e.Run(wctx)
	}()
	// The job: in each term, a write through the fenced resource with the
	// term's token, then the script is told who leads.
	go func() {
		defer close(w.jobEnd)
		_ = e.Lead(wctx, func(ctx context.Context, t lead.Term) error {
			if err := c.guard.DoContext(ctx, func() error { return nil }); err != nil {
				c.printf("%-9s write with token=%d refused: %v", id, t.Token, err)
				return nil
			}
			select {
			case c.leaders <- started{i, t.Token}:
			case <-ctx.Done():
			}
			<-ctx.Done()
			return nil
		}, lead.Repeat())
	}()
	return w, nil
}

// follow tells the script of each leader worker id sees through
// Elector.Leaders, but for itself and an empty lease.
func (c *cast) follow(id string, leaders <-chan lead.Leader[demoMeta]) {
	for l := range leaders {
		if l.Self || l.Holder == "" {
			continue
		}
		select {
		case c.seen <- sighting{by: id, leader: l}:
		default: // the script looks only for the newest leader
		}
	}
}

// observer prints the end of worker id's terms that the script did not
// cause. A worker the script stopped is silent: a graceful stop is printed
// by the script, and a crashed worker says nothing. The start of a term is
// printed by the script once the job wrote (nextLeader), so that it comes
// before what follows from it.
func (c *cast) observer(id string) func(lead.Change) {
	return func(ch lead.Change) {
		if ch.Kind == lead.Started {
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

// nextLeader returns the index of the next worker that starts leading,
// once its job has written, and prints its start, with how the store
// showed the term begin, then how a follower sees it, with its metadata.
func (c *cast) nextLeader(ctx context.Context) (int, error) {
	var s started
	select {
	case <-ctx.Done():
		return 0, ctx.Err()
	case s = <-c.leaders:
	}
	c.printf("%-9s started leading  token=%d%s", c.workers[s.i].id, s.token, c.howTaken(s.token))
	return s.i, c.printSighting(ctx, s.i)
}

// printSighting prints how the first follower to see worker i lead saw it
// through Elector.Leaders, with the leader's metadata. When no follower
// is left it prints nothing; when none sees it within half a lease, it
// says so.
func (c *cast) printSighting(ctx context.Context, i int) error {
	followers := 0
	for j, w := range c.workers {
		if j != i && !w.stopped {
			followers++
		}
	}
	if followers == 0 {
		return nil
	}
	id := c.workers[i].id
	timeout := time.NewTimer(c.cfg.LeaseDuration / 2)
	defer timeout.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timeout.C:
			c.printf("no follower saw %s lead within %v", id, c.cfg.LeaseDuration/2)
			return nil
		case s := <-c.seen:
			if s.leader.Holder != id {
				continue
			}
			c.printf("%-9s sees %s lead  token=%d  addr=%s  (through Elector.Leaders, with the leader's metadata)",
				s.by, s.leader.Holder, s.leader.Token, s.leader.Record.Metadata.Addr)
			return nil
		}
	}
}

// stop stops worker i and waits until it has. A graceful stop is printed
// as the worker's own line; a crash only by the script: the worker says
// nothing, and its successor tells of it once the lease has expired.
func (c *cast) stop(i int, graceful bool) {
	w := c.workers[i]
	t, leads := w.e.Term()
	w.lastToken = t.Token
	if graceful {
		c.narrate("stopping %s gracefully: it releases the lease", w.id)
		// Observers are told on goroutines of their own, so the
		// successor's start could be printed before this worker's
		// observer prints its stop; the script prints it, before
		// stopping the worker.
		if leads {
			c.printf("%-9s stopped leading  token=%d: released the lease", w.id, t.Token)
		}
	} else {
		c.narrate("killing %s: from now on it neither renews nor says anything", w.id)
	}
	c.mu.Lock()
	c.stopped[w.id] = true
	c.mu.Unlock()
	w.stopped = true
	w.cancel()
	<-w.done
}

// lateWrite tries a write with the token of worker i's ended term, as a
// write sent before the end that arrives late would be.
func (c *cast) lateWrite(i int) bool {
	w := c.workers[i]
	err := c.guard.Do(w.lastToken, func() error { return nil })
	if errors.Is(err, fence.ErrStaleToken) {
		c.printf("%-9s late write with its old token=%d: refused by the fence, which has accepted token=%d", w.id, w.lastToken, c.guard.Highest())
		return true
	}
	c.printf("%-9s late write with its old token=%d: accepted (%v)", w.id, w.lastToken, err)
	return false
}

// finish stops every worker, the script printing the leader's stop.
func (c *cast) finish(cancel context.CancelFunc) {
	c.narrate("stopping every worker")
	c.mu.Lock()
	for _, w := range c.workers {
		c.stopped[w.id] = true
	}
	c.mu.Unlock()
	for _, w := range c.workers {
		if t, ok := w.e.Term(); ok {
			c.printf("%-9s stopped leading  token=%d", w.id, t.Token)
		}
	}
	c.stopAll(cancel)
}

// stopAll stops every worker still running (cancel ends the context they
// run in) and waits until each one's elector, job and Leaders loop have
// returned. It may be called more than once.
func (c *cast) stopAll(cancel context.CancelFunc) {
	cancel()
	for _, w := range c.workers {
		if w != nil {
			<-w.done
			<-w.jobEnd
			<-w.watchEnd
		}
	}
}
