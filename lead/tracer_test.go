package lead_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/memstore"
)

// traceLog is a lead.Tracer that keeps what it is told, as lines.
type traceLog struct {
	mu    sync.Mutex
	ops   []lead.Operation
	claim []string
	watch []bool
}

func (l *traceLog) LeaseOp(o lead.Operation) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ops = append(l.ops, o)
}

func (l *traceLog) HandOver(o lead.Operation) { l.LeaseOp(o) }

func (l *traceLog) Claim(name string, token uint64, waiting bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := "stopped"
	if waiting {
		w = "waiting"
	}
	l.claim = append(l.claim, name+" "+w+" "+time.Duration(token).String())
}

func (l *traceLog) Watch(_ string, up bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.watch = append(l.watch, up)
}

func (l *traceLog) snapshot() ([]lead.Operation, []string, []bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]lead.Operation(nil), l.ops...), append([]string(nil), l.claim...), append([]bool(nil), l.watch...)
}

// opKinds lists each operation as "op token outcome".
func opKinds(ops []lead.Operation) []string {
	var out []string
	for _, o := range ops {
		out = append(out, o.Op+" "+time.Duration(o.Token).String()+" "+o.Outcome)
	}
	return out
}

// The Tracer is told of the acquire, each renewal and the release on
// stopping, with the term's token, the outcome and when each began and
// ended; and that the watch came up.
func TestTracerIsToldOfEachLeaseOperation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &traceLog{}
		began := time.Now()
		a := start(t, memstore.New[meta](), "a", lead.WithTracer(tr))
		if c := a.next(t); c.Kind != lead.Started {
			t.Fatalf("change %+v", c)
		}
		time.Sleep(fastConfig().RenewDeadline / 2) // one renewal
		synctest.Wait()
		a.cancel()
		<-a.e.Done()
		ops, claims, watch := tr.snapshot()
		want := []string{"acquire 1ns ok", "renew 1ns ok", "release 1ns ok"}
		if got := opKinds(ops); len(got) < len(want) || got[0] != want[0] || got[len(got)-1] != want[2] {
			t.Fatalf("operations = %v; want %v (renewals between)", got, want)
		}
		for _, o := range ops[1 : len(ops)-1] {
			if o.Op != lead.OpRenew || o.Outcome != lead.OutcomeOK || o.Token != 1 {
				t.Fatalf("between the acquire and the release: %+v; want renewals", o)
			}
		}
		for _, o := range ops {
			if o.Name != "job" || o.Start.Before(began) || o.End.Before(o.Start) || o.Err != nil || o.LeaseDuration != fastConfig().LeaseDuration {
				t.Fatalf("operation %+v; want name job, Start after %v, End after Start, no error, the LeaseDuration", o, began)
			}
		}
		if len(claims) != 0 {
			t.Fatalf("claims told on a store that loses nothing: %v", claims)
		}
		if len(watch) != 1 || !watch[0] {
			t.Fatalf("watch told %v; want [true]", watch)
		}
	})
}

// conflictOnce answers the first swap with a conflict, as if another
// elector had written first.
type conflictOnce struct {
	*memstore.Store[meta]
	done atomic.Bool
}

func (c *conflictOnce) CompareAndSwap(ctx context.Context, name string, exp lease.Revision, next lease.Record[meta]) (lease.Record[meta], lease.Revision, error) {
	if c.done.CompareAndSwap(false, true) {
		return lease.Record[meta]{}, 0, store.ErrConflict
	}
	return c.Store.CompareAndSwap(ctx, name, exp, next)
}

// A swap the store refuses is told as a conflict, with its error.
func TestTracerIsToldOfAConflict(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &traceLog{}
		a := start(t, &conflictOnce{Store: memstore.New[meta]()}, "a", lead.WithTracer(tr))
		if c := a.next(t); c.Kind != lead.Started {
			t.Fatalf("change %+v", c)
		}
		ops, _, _ := tr.snapshot()
		if len(ops) < 2 || ops[0].Outcome != lead.OutcomeConflict || !errors.Is(ops[0].Err, store.ErrConflict) || ops[1].Op != lead.OpAcquire || ops[1].Outcome != lead.OutcomeOK {
			t.Fatalf("operations = %+v; want a conflict, then an acquire", ops)
		}
	})
}

// On a store that may lose records, the Tracer is told the claim is
// waited on, then that the wait ended when the claimer took it over with a
// new token.
func TestTracerIsToldOfAClaim(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &traceLog{}
		a := start(t, lossyMem{memstore.New[meta]()}, "a", lead.WithTracer(tr))
		synctest.Wait()
		if _, claims, _ := tr.snapshot(); len(claims) != 1 || claims[0] != "job waiting 1ns" {
			t.Fatalf("claims = %v; want job waiting on token 1", claims)
		}
		if c := a.next(t); c.Kind != lead.Started || c.Term.Token != 2 {
			t.Fatalf("change %+v; want the term of token 2", c)
		}
		synctest.Wait()
		ops, claims, _ := tr.snapshot()
		if len(claims) != 2 || claims[1] != "job stopped 1ns" {
			t.Fatalf("claims = %v; want the wait on token 1 to end", claims)
		}
		if got := opKinds(ops); len(got) < 2 || got[0] != "acquire 1ns ok" || got[1] != "acquire 2ns ok" {
			t.Fatalf("operations = %v; want the claim's create, then the take-over", got)
		}
	})
}

// failFirstWatch fails the first watch, as a store that is unreachable
// for a moment.
type failFirstWatch struct {
	*memstore.Store[meta]
	failed atomic.Bool
}

func (f *failFirstWatch) WatchFunc(ctx context.Context, name string, fn func(store.Event[meta], bool)) error {
	if f.failed.CompareAndSwap(false, true) {
		return errors.New("unreachable")
	}
	return f.Store.WatchFunc(ctx, name, fn)
}

// A watch that fails to start is told as down, and the next, a
// RetryInterval later, as up.
func TestTracerIsToldOfTheWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &traceLog{}
		start(t, &failFirstWatch{Store: memstore.New[meta]()}, "a", lead.WithTracer(tr))
		synctest.Wait()
		if _, _, watch := tr.snapshot(); len(watch) != 1 || watch[0] {
			t.Fatalf("watch told %v; want [false]", watch)
		}
		time.Sleep(fastConfig().RetryInterval)
		synctest.Wait()
		if _, _, watch := tr.snapshot(); len(watch) != 2 || !watch[1] {
			t.Fatalf("watch told %v; want [false true]", watch)
		}
	})
}

// A Group's electors all tell the Tracer given to NewGroup.
func TestGroupElectorsTellTheGroupsTracer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &traceLog{}
		g, err := lead.NewGroup(memstore.New[meta](), lead.WithIdentity("a"), lead.WithConfig(fastConfig()), lead.WithLookupEnv(nil), lead.WithTracer(tr))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = g.Run(ctx) }()
		for _, n := range []string{"x", "y"} {
			if _, err := g.Add(n); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		cancel()
		<-done
		names := map[string]int{}
		ops, _, _ := tr.snapshot()
		for _, o := range ops {
			if o.Op == lead.OpAcquire && o.Outcome == lead.OutcomeOK {
				names[o.Name]++
			}
		}
		if names["x"] != 1 || names["y"] != 1 {
			t.Fatalf("acquires told per name: %v; want one each for x and y", names)
		}
	})
}

// A HandOver is told to the Tracer once it ends, with the handed term's
// token and its outcome: ok when the successor took the lease, an error
// when it fell back to a plain release.
func TestTracerIsToldOfEachHandOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New[meta]()
		tr := &traceLog{}
		a := start(t, st, "a", lead.WithTracer(tr))
		first := a.next(t)
		b := start(t, st, "b")
		synctest.Wait()
		if err := a.e.HandOver(context.Background(), "b"); err != nil {
			t.Fatalf("HandOver = %v", err)
		}
		second := b.next(t)
		synctest.Wait()
		ops, _, _ := tr.snapshot()
		var handed []lead.Operation
		for _, o := range ops {
			if o.Op == lead.OpHandOver {
				handed = append(handed, o)
			}
		}
		if len(handed) != 1 || handed[0].Token != uint64(first.Term.Token) || handed[0].Outcome != lead.OutcomeOK || handed[0].End.Before(handed[0].Start) {
			t.Fatalf("handovers told %+v, want one of token %d, ok", handed, first.Term.Token)
		}
		// Now b hands over to nobody who is there: a's tracer is not
		// b's, so hand back to a first, then from a to a ghost.
		if err := b.e.HandOver(context.Background(), "a"); err != nil {
			t.Fatalf("HandOver back = %v", err)
		}
		third := a.next(t)
		for third.Kind != lead.Started {
			third = a.next(t)
		}
		if err := a.e.HandOver(context.Background(), "ghost"); !errors.Is(err, lead.ErrHandOverFailed) {
			t.Fatalf("HandOver to a ghost = %v, want ErrHandOverFailed", err)
		}
		ops, _, _ = tr.snapshot()
		var last lead.Operation
		for _, o := range ops {
			if o.Op == lead.OpHandOver {
				last = o
			}
		}
		if last.Token != uint64(third.Term.Token) || last.Outcome != lead.OutcomeError || !errors.Is(last.Err, lead.ErrHandOverFailed) {
			t.Fatalf("last handover told %+v, want token %d (above %d), error", last, third.Term.Token, second.Term.Token)
		}
	})
}
