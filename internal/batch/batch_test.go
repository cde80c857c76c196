package batch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// recorder is a run function that records its batches and answers each
// question q with q*10; while gate is set, a batch waits for it to close.
type recorder struct {
	mu        sync.Mutex
	batches   [][]int
	deadlines []time.Time
	inFlight  int
	maxFlight int
	gate      chan struct{}
}

func (r *recorder) run(ctx context.Context, qs []int) []Answer[int] {
	r.mu.Lock()
	r.batches = append(r.batches, slices.Clone(qs))
	d, _ := ctx.Deadline()
	r.deadlines = append(r.deadlines, d)
	r.inFlight++
	r.maxFlight = max(r.maxFlight, r.inFlight)
	gate := r.gate
	r.mu.Unlock()
	if gate != nil {
		<-gate
	}
	r.mu.Lock()
	r.inFlight--
	r.mu.Unlock()
	out := make([]Answer[int], len(qs))
	for i, q := range qs {
		out[i] = Answer[int]{V: q * 10}
		if q < 0 {
			out[i] = Answer[int]{Err: fmt.Errorf("question %d refused", q)}
		}
	}
	return out
}

func TestRunnerBatchesCallsMadeWhileBusy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{gate: make(chan struct{})}
		r := New(1, rec.run)
		got := make([]int, 8)
		errs := make([]error, 8)
		var wg sync.WaitGroup
		wg.Go(func() { got[0], errs[0] = r.Do(context.Background(), 0) })
		synctest.Wait() // the first batch is out, and waits
		for i := 1; i < 8; i++ {
			q := i
			if i == 5 {
				q = -5
			}
			wg.Go(func() { got[i], errs[i] = r.Do(context.Background(), q) })
		}
		synctest.Wait()
		close(rec.gate)
		wg.Wait()
		if len(rec.batches) != 2 || len(rec.batches[0]) != 1 || len(rec.batches[1]) != 7 {
			t.Fatalf("batches %v, want one of 1 question, then one of the 7 asked meanwhile", rec.batches)
		}
		for i := range 8 {
			if i == 5 {
				if errs[i] == nil {
					t.Errorf("call 5: no error, want its own")
				}
				continue
			}
			if errs[i] != nil || got[i] != i*10 {
				t.Errorf("call %d: %d, %v; want %d, nil", i, got[i], errs[i], i*10)
			}
		}
	})
}

func TestRunnerCapsItsBatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{gate: make(chan struct{})}
		r := New(1, rec.run).Cap(3)
		got := make([]int, 8)
		errs := make([]error, 8)
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() { got[i], errs[i] = r.Do(context.Background(), i) })
			synctest.Wait() // in the order asked
		}
		close(rec.gate)
		wg.Wait()
		want := [][]int{{0}, {1, 2, 3}, {4, 5, 6}, {7}}
		if !slices.EqualFunc(rec.batches, want, slices.Equal) {
			t.Fatalf("batches %v, want %v: at most 3 a batch, in the order asked", rec.batches, want)
		}
		for i := range 8 {
			if errs[i] != nil || got[i] != i*10 {
				t.Errorf("call %d: %d, %v; want %d, nil", i, got[i], errs[i], i*10)
			}
		}
	})
}

func TestRunnerKeepsToItsLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{gate: make(chan struct{})}
		r := New(3, rec.run)
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				if v, err := r.Do(context.Background(), i); err != nil || v != i*10 {
					t.Errorf("call %d: %d, %v", i, v, err)
				}
			})
			synctest.Wait()
		}
		if rec.inFlight != 3 {
			t.Errorf("%d batches in flight, want the limit, 3", rec.inFlight)
		}
		close(rec.gate)
		wg.Wait()
		if rec.maxFlight != 3 {
			t.Errorf("at most %d batches in flight, want 3", rec.maxFlight)
		}
		n := 0
		for _, b := range rec.batches {
			n += len(b)
		}
		if n != 20 || len(rec.batches) != 4 {
			t.Errorf("batches %v: want the 20 questions in 4 (3 alone, then the 17 that waited)", rec.batches)
		}
	})
}

func TestRunnerIdleCallGoesOutAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		r := New(2, rec.run)
		for i := range 3 {
			if v, err := r.Do(context.Background(), i); err != nil || v != i*10 {
				t.Fatalf("call %d: %d, %v", i, v, err)
			}
		}
		if len(rec.batches) != 3 {
			t.Fatalf("batches %v, want each call alone", rec.batches)
		}
		synctest.Wait()
		if r.running != 0 {
			t.Errorf("%d goroutines still serve an idle Runner", r.running)
		}
	})
}

func TestRunnerCallerContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{gate: make(chan struct{})}
		r := New(1, rec.run)
		var wg sync.WaitGroup
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			r.Do(ctx, 1)
		})
		synctest.Wait()

		// A call whose context ends while it waits returns at once, and
		// is not sent.
		ctx, cancel := context.WithCancel(context.Background())
		var err error
		wg.Go(func() { _, err = r.Do(ctx, 2) })
		synctest.Wait()
		cancel()
		synctest.Wait()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled call: %v, want context.Canceled at once", err)
		}
		// Two that wait with deadlines go out with the later one.
		start := time.Now()
		for _, d := range []time.Duration{time.Hour, 2 * time.Hour} {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), d)
				defer cancel()
				if v, err := r.Do(ctx, 3); err != nil || v != 30 {
					t.Errorf("call with a deadline: %d, %v", v, err)
				}
			})
		}
		synctest.Wait()
		close(rec.gate)
		wg.Wait()
		if len(rec.batches) != 2 || !slices.Equal(rec.batches[1], []int{3, 3}) {
			t.Fatalf("batches %v, want [1] then [3 3] (the cancelled call not sent)", rec.batches)
		}
		if want := start.Add(2 * time.Hour); !rec.deadlines[1].Equal(want) {
			t.Errorf("second batch's deadline %v, want the later of its calls', %v", rec.deadlines[1], want)
		}
		if want := start.Add(time.Minute); !rec.deadlines[0].Equal(want) {
			t.Errorf("first batch's deadline %v, want its call's, %v", rec.deadlines[0], want)
		}

		// A batch with a call without deadline has none.
		rec.gate = nil
		if _, err := r.Do(context.Background(), 4); err != nil {
			t.Fatal(err)
		}
		if d := rec.deadlines[2]; !d.IsZero() {
			t.Errorf("batch of a call without deadline has deadline %v", d)
		}
	})
}

func TestRunnerShortAnswer(t *testing.T) {
	r := New(1, func(ctx context.Context, qs []int) []Answer[int] { return nil })
	if _, err := r.Do(context.Background(), 1); err == nil {
		t.Fatal("a batch that answered nothing gave no error")
	}
}

type ctxKey struct{}

// An inline Runner runs a call that finds it idle on the caller's context;
// calls that come meanwhile wait and go out together once it is done.
func TestInlineRunnerRunsAnIdleCallOnItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var batches [][]int
		cancelled := make(chan bool, 10)
		gate := make(chan struct{})
		r := NewInline(1, func(ctx context.Context, qs []int) []Answer[int] {
			mu.Lock()
			batches = append(batches, slices.Clone(qs))
			mu.Unlock()
			if qs[0] == 0 {
				// The caller's own context: its value, and its end.
				if ctx.Value(ctxKey{}) != "first" {
					t.Errorf("the idle call ran without its caller's context")
				}
				<-gate
				<-ctx.Done()
				cancelled <- true
			}
			out := make([]Answer[int], len(qs))
			for i, q := range qs {
				out[i].V = q * 10
			}
			return out
		})
		ctx, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "first"))
		var wg sync.WaitGroup
		wg.Go(func() { r.Do(ctx, 0) })
		synctest.Wait()
		for i := 1; i < 4; i++ {
			wg.Go(func() {
				if v, err := r.Do(context.Background(), i); err != nil || v != i*10 {
					t.Errorf("call %d: %d, %v", i, v, err)
				}
			})
		}
		synctest.Wait()
		close(gate)
		cancel()
		wg.Wait()
		if !<-cancelled {
			t.Fatal("the idle call did not see its context end")
		}
		if len(batches) != 2 || !slices.Equal(batches[0], []int{0}) || len(batches[1]) != 3 {
			t.Fatalf("batches %v, want [0] alone, then the 3 that waited", batches)
		}
		synctest.Wait()
		if r.running != 0 {
			t.Errorf("%d batches still counted as in flight", r.running)
		}
	})
}

// A batch whose callers have all gone is cancelled: one whose reply never
// comes does not hold its slot for good.
func TestRunnerCancelsABatchNobodyWaitsFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := New(1, func(ctx context.Context, qs []int) []Answer[int] {
			<-ctx.Done() // the reply never comes
			return make([]Answer[int], len(qs))
		})
		var wg sync.WaitGroup
		ctx1, cancel1 := context.WithCancel(context.Background())
		ctx2, cancel2 := context.WithCancel(context.Background())
		wg.Go(func() { r.Do(ctx1, 1) })
		synctest.Wait()
		wg.Go(func() { r.Do(ctx2, 2) })
		synctest.Wait()
		cancel1() // the first batch has nobody left
		synctest.Wait()
		r.mu.Lock()
		running := r.running
		r.mu.Unlock()
		if running != 1 {
			t.Fatalf("%d batches in flight after the first's caller left, want 1 (the second's)", running)
		}
		cancel2()
		wg.Wait()
		synctest.Wait()
		if r.running != 0 {
			t.Fatalf("%d batches in flight after every caller left", r.running)
		}
	})
}
