package lead_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/store/memstore"
)

// everyRun is one run of an Every body: when it started and in which term.
type everyRun struct {
	at    time.Time
	token uint64
}

// runLog records the runs of an Every body.
type runLog struct {
	mu   sync.Mutex
	runs []everyRun
}

func (l *runLog) add(t lead.Term) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runs = append(l.runs, everyRun{at: time.Now(), token: uint64(t.Token)})
}

func (l *runLog) get() []everyRun {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]everyRun(nil), l.runs...)
}

// offsets returns when each run started, after from.
func (l *runLog) offsets(from time.Time) []time.Duration {
	var out []time.Duration
	for _, r := range l.get() {
		out = append(out, r.at.Sub(from))
	}
	return out
}

func sameDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// everyGo calls Every on a goroutine of its own and returns where its
// result goes.
func everyGo(ctx context.Context, e *lead.Elector[meta], interval time.Duration, fn func(context.Context, lead.Term) error, opts ...lead.EveryOption) <-chan error {
	done := make(chan error, 1)
	go func() { done <- e.Every(ctx, interval, fn, opts...) }()
	return done
}

// Every called before the elector leads runs fn at the start of the term,
// not one interval after the call, then every interval.
func TestEveryFirstRunAtTermStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, err := lead.New("job", memstore.New[meta](), lead.WithIdentity("a"), lead.WithConfig(fastConfig()), lead.WithLookupEnv(nil))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var log runLog
		done := everyGo(ctx, e, 10*time.Second, func(_ context.Context, term lead.Term) error { log.add(term); return nil })
		time.Sleep(7 * time.Second) // no Run yet: no run
		synctest.Wait()
		if runs := log.get(); len(runs) != 0 {
			t.Fatalf("Every ran %d times before Run", len(runs))
		}
		go e.Run(ctx)
		synctest.Wait()
		term, ok := e.Term()
		if !ok {
			t.Fatal("the elector does not lead")
		}
		time.Sleep(25 * time.Second)
		synctest.Wait()
		want := []time.Duration{0, 10 * time.Second, 20 * time.Second}
		if got := log.offsets(term.Start); !sameDurations(got, want) {
			t.Errorf("runs started at %v after the term's start, want %v", got, want)
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Every = %v, want context.Canceled", err)
		}
	})
}

// Called while the elector leads already, Every runs fn at once.
func TestEveryCalledWhileLeadingRunsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := start(t, memstore.New[meta](), "a")
		firstLeader(t, a)
		time.Sleep(3 * time.Second)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		called := time.Now()
		var log runLog
		everyGo(ctx, a.e, time.Hour, func(_ context.Context, term lead.Term) error { log.add(term); return nil })
		synctest.Wait()
		if got := log.offsets(called); !sameDurations(got, []time.Duration{0}) {
			t.Errorf("runs started at %v after the call, want one at once", got)
		}
	})
}

// AtTermStart(false) keeps the ticks of the call: the first run one
// interval after it, the next ones aligned to it.
func TestEveryAtTermStartFalseTicksFromTheCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := start(t, memstore.New[meta](), "a")
		firstLeader(t, a)
		time.Sleep(1500 * time.Millisecond)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		called := time.Now()
		var log runLog
		everyGo(ctx, a.e, 3*time.Second, func(_ context.Context, term lead.Term) error { log.add(term); return nil }, lead.AtTermStart(false))
		time.Sleep(10 * time.Second)
		synctest.Wait()
		want := []time.Duration{3 * time.Second, 6 * time.Second, 9 * time.Second}
		if got := log.offsets(called); !sameDurations(got, want) {
			t.Errorf("runs started at %v after the call, want %v", got, want)
		}
	})
}

// A run that lasts longer than the interval skips the ticks it overlaps:
// the next run starts at the first tick of the schedule after it returned.
func TestEverySkipsTicksWhileARunRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := start(t, memstore.New[meta](), "a")
		firstLeader(t, a)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		called := time.Now()
		var log runLog
		var mu sync.Mutex
		running := false
		everyGo(ctx, a.e, time.Second, func(_ context.Context, term lead.Term) error {
			mu.Lock()
			if running {
				t.Error("two runs at once")
			}
			running = true
			first := len(log.get()) == 0
			mu.Unlock()
			log.add(term)
			if first {
				time.Sleep(2500 * time.Millisecond)
			}
			mu.Lock()
			running = false
			mu.Unlock()
			return nil
		})
		time.Sleep(4500 * time.Millisecond)
		synctest.Wait()
		want := []time.Duration{0, 3 * time.Second, 4 * time.Second}
		if got := log.offsets(called); !sameDurations(got, want) {
			t.Errorf("runs started at %v after the call, want %v", got, want)
		}
	})
}

// everyCounter counts failed Every runs, as package metrics does.
type everyCounter struct {
	mu     sync.Mutex
	failed map[string]int
}

func (c *everyCounter) StoreOp(string, string, time.Duration, error) {}
func (c *everyCounter) EveryFailed(name string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failed == nil {
		c.failed = map[string]int{}
	}
	c.failed[name]++
}

func (c *everyCounter) count(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.failed[name]
}

// attrLog keeps every record with the attributes of its logger (WithAttrs)
// too.
type attrLog struct {
	mu      *sync.Mutex // shared by the handlers WithAttrs makes
	records *[]logRecord
	attrs   []slog.Attr
}

func newAttrLog() *attrLog { return &attrLog{mu: new(sync.Mutex), records: new([]logRecord)} }

func (h *attrLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *attrLog) Handle(_ context.Context, rec slog.Record) error {
	lr := logRecord{level: rec.Level, msg: rec.Message, attrs: map[string]string{}}
	for _, a := range h.attrs {
		lr.attrs[a.Key] = a.Value.String()
	}
	rec.Attrs(func(a slog.Attr) bool { lr.attrs[a.Key] = a.Value.String(); return true })
	h.mu.Lock()
	*h.records = append(*h.records, lr)
	h.mu.Unlock()
	return nil
}
func (h *attrLog) WithAttrs(as []slog.Attr) slog.Handler {
	return &attrLog{mu: h.mu, records: h.records, attrs: append(append([]slog.Attr(nil), h.attrs...), as...)}
}
func (h *attrLog) WithGroup(string) slog.Handler { return h }

// all returns every record.
func (h *attrLog) all() []logRecord {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]logRecord(nil), *h.records...)
}

// find returns the records at level with message msg.
func (h *attrLog) find(level slog.Level, msg string) []logRecord {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []logRecord
	for _, r := range *h.records {
		if r.level == level && r.msg == msg {
			out = append(out, r)
		}
	}
	return out
}

const everyFailedMsg = "Every: a run failed; the schedule goes on"

// A failed run does not end the schedule: it is counted, and logged at
// Warn with the election's name and the term's token, one line per
// ErrorInterval at most.
func TestEveryFailedRunKeepsTheSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := newAttrLog()
		counter := &everyCounter{}
		a := start(t, memstore.New[meta](), "a", lead.WithLogger(slog.New(logs)), lead.WithInstruments(counter))
		_, started := firstLeader(t, a)
		ctx, cancel := context.WithCancel(context.Background())
		var log runLog
		boom := errors.New("boom")
		done := everyGo(ctx, a.e, time.Second, func(_ context.Context, term lead.Term) error {
			log.add(term)
			return boom
		})
		// ErrorInterval is 10s: runs at 0..12s fail, 13 of them, logged
		// at 0s and at 10s.
		time.Sleep(12500 * time.Millisecond)
		synctest.Wait()
		if n := len(log.get()); n != 13 {
			t.Errorf("%d runs in 12.5s at 1s intervals, each failing; want 13", n)
		}
		if n := counter.count("job"); n != 13 {
			t.Errorf("EveryFailed counted %d failed runs, want 13", n)
		}
		lines := logs.find(slog.LevelWarn, everyFailedMsg)
		if len(lines) != 2 {
			t.Fatalf("%d Warn lines for 13 failed runs in 12.5s with a 10s ErrorInterval, want 2: %v", len(lines), lines)
		}
		for i, want := range []string{"1", "10"} {
			l := lines[i]
			if l.attrs["name"] != "job" || l.attrs["token"] != "1" || l.attrs["error"] != "boom" || l.attrs["failed_runs"] != want {
				t.Errorf("line %d: %v; want name job, token %d, error boom, failed_runs %s", i, l.attrs, started.Term.Token, want)
			}
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Every = %v, want context.Canceled", err)
		}
	})
}

// With StopOnError, Every returns the first error of a run whose term was
// still going, and counts nothing.
func TestEveryStopOnErrorReturnsTheError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		counter := &everyCounter{}
		a := start(t, memstore.New[meta](), "a", lead.WithInstruments(counter))
		firstLeader(t, a)
		boom := errors.New("boom")
		runs := 0
		err := a.e.Every(context.Background(), time.Second, func(context.Context, lead.Term) error {
			runs++
			if runs == 3 {
				return boom
			}
			return nil
		}, lead.StopOnError())
		if !errors.Is(err, boom) || runs != 3 {
			t.Errorf("Every = %v after %d runs, want boom after 3", err, runs)
		}
		if n := counter.count("job"); n != 0 {
			t.Errorf("EveryFailed counted %d with StopOnError, want 0", n)
		}
	})
}

// A new term of the same elector starts a new schedule, with a run at its
// start in the new term.
func TestEveryNewTermRestartsTheSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &flaky{Store: memstore.New[meta]()}
		a := start(t, f, "a")
		firstLeader(t, a)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var log runLog
		everyGo(ctx, a.e, 10*time.Second, func(_ context.Context, term lead.Term) error { log.add(term); return nil })
		synctest.Wait()
		f.down.Store(true) // the term ends within RenewDeadline
		if c := a.next(t); c.Kind != lead.Stopped {
			t.Fatalf("change %v, want Stopped", c.Kind)
		}
		time.Sleep(1100 * time.Millisecond) // off the first term's grid
		f.down.Store(false)
		c := a.next(t)
		if c.Kind != lead.Started || c.Term.Token != 2 {
			t.Fatalf("change %v in term %d, want Started in term 2", c.Kind, c.Term.Token)
		}
		synctest.Wait()
		runs := log.get()
		if len(runs) != 2 || runs[0].token != 1 || runs[1].token != 2 {
			t.Fatalf("runs %+v, want one in term 1 and one in term 2", runs)
		}
		if !runs[1].at.Equal(c.Term.Start) {
			t.Errorf("the run of term 2 started %v after the term, want at its start", runs[1].at.Sub(c.Term.Start))
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		runs = log.get()
		if len(runs) != 3 || runs[2].at.Sub(c.Term.Start) != 10*time.Second {
			t.Errorf("runs %+v, want the third 10s after term 2 started", runs)
		}
	})
}

// A nil EveryOption is refused.
func TestEveryRefusesANilOption(t *testing.T) {
	a, err := lead.New("job", memstore.New[meta](), lead.WithLookupEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	err = a.Every(context.Background(), time.Second, func(context.Context, lead.Term) error { return nil }, nil)
	if !errors.Is(err, lead.ErrNilArgument) {
		t.Errorf("Every with a nil option = %v, want ErrNilArgument", err)
	}
}

// An error from a run cut short by the end of its term is dropped, even
// with StopOnError, and not counted: Every goes on to the next term.
func TestEveryDropsTheErrorOfARunItsTermCutShort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		counter := &everyCounter{}
		f := &flaky{Store: memstore.New[meta]()}
		a := start(t, f, "a", lead.WithInstruments(counter))
		firstLeader(t, a)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var log runLog
		done := everyGo(ctx, a.e, 10*time.Second, func(ctx context.Context, term lead.Term) error {
			log.add(term)
			if term.Token == 1 {
				f.down.Store(true) // the term ends within RenewDeadline
				<-ctx.Done()
				return errors.New("cut short")
			}
			return nil
		}, lead.StopOnError())
		if c := a.next(t); c.Kind != lead.Stopped {
			t.Fatalf("change %v, want Stopped", c.Kind)
		}
		f.down.Store(false)
		if c := a.next(t); c.Kind != lead.Started || c.Term.Token != 2 {
			t.Fatalf("change %v in term %d, want Started in term 2", c.Kind, c.Term.Token)
		}
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("Every = %v after a run its term cut short; want it to go on", err)
		default:
		}
		if runs := log.get(); len(runs) != 2 || runs[1].token != 2 {
			t.Errorf("runs %+v, want one in term 1 and one in term 2", runs)
		}
		if n := counter.count("job"); n != 0 {
			t.Errorf("EveryFailed counted %d, want 0", n)
		}
	})
}
