package testcluster

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/memstore"
)

func TestStoreModelAcceptsOnlyLinearizableHistories(t *testing.T) {
	a1 := RecView{Holder: "a", Token: 1, LeaseDuration: time.Second}
	b2 := RecView{Holder: "b", Token: 2, Transitions: 1, LeaseDuration: time.Second}
	get := func(call, ret int64, out OpOutput) porcupine.Operation {
		return porcupine.Operation{Input: OpInput{Kind: OpGet}, Output: out, Call: call, Return: ret}
	}
	cas := func(call, ret int64, exp lease.Revision, next RecView, out OpOutput) porcupine.Operation {
		if out.Outcome == OutUnknown {
			ret = math.MaxInt64
		}
		return porcupine.Operation{ClientId: 1, Input: OpInput{Kind: OpCAS, Expected: exp, Next: next}, Output: out, Call: call, Return: ret}
	}
	guarded := func(call, ret int64, exp lease.Revision, was, next RecView, out OpOutput) porcupine.Operation {
		op := cas(call, ret, exp, next, out)
		in := op.Input.(OpInput)
		in.Guarded, in.Was = true, was
		op.Input = in
		return op
	}
	rel1 := RecView{Token: 1, LeaseDuration: time.Second}
	lose := func(call, ret int64) porcupine.Operation {
		return porcupine.Operation{Input: OpInput{Kind: OpLose}, Output: OpOutput{Outcome: OutOK}, Call: call, Return: ret}
	}
	notFound := OpOutput{Outcome: OutNotFound}
	unknown := OpOutput{Outcome: OutUnknown}
	ok := func(r RecView, rev lease.Revision) OpOutput { return OpOutput{Outcome: OutOK, Rec: r, Rev: rev} }
	conflict := func(r RecView, rev lease.Revision) OpOutput { return OpOutput{Outcome: OutConflict, Rec: r, Rev: rev} }
	tests := []struct {
		name string
		ops  []porcupine.Operation
		want bool
	}{
		{"create then read", []porcupine.Operation{get(0, 1, notFound), cas(2, 3, 0, a1, ok(a1, 10)), get(4, 5, ok(a1, 10))}, true},
		{"stale read after a write", []porcupine.Operation{cas(0, 1, 0, a1, ok(a1, 10)), cas(2, 3, 10, b2, ok(b2, 11)), get(4, 5, ok(a1, 10))}, false},
		{"read of a concurrent write, either way", []porcupine.Operation{cas(0, 1, 0, a1, ok(a1, 10)), cas(2, 6, 10, b2, ok(b2, 11)), get(3, 4, ok(a1, 10)), get(4, 5, ok(b2, 11))}, true},
		{"read that goes back", []porcupine.Operation{cas(0, 1, 0, a1, ok(a1, 10)), cas(2, 9, 10, b2, ok(b2, 11)), get(3, 4, ok(b2, 11)), get(5, 6, ok(a1, 10))}, false},
		{"two creates both succeed", []porcupine.Operation{cas(0, 5, 0, a1, ok(a1, 10)), cas(0, 5, 0, b2, ok(b2, 11))}, false},
		{"a revision that does not grow", []porcupine.Operation{cas(0, 1, 0, a1, ok(a1, 10)), cas(2, 3, 10, b2, ok(b2, 10))}, false},
		{"a conflict returns the current record", []porcupine.Operation{cas(0, 1, 0, a1, ok(a1, 10)), cas(2, 3, 9, b2, conflict(a1, 10))}, true},
		{"a conflict that returns a wrong record", []porcupine.Operation{cas(0, 1, 0, a1, ok(a1, 10)), cas(2, 3, 9, b2, conflict(b2, 10))}, false},
		{"a conflict on an absent record", []porcupine.Operation{cas(0, 1, 5, a1, conflict(RecView{}, 0))}, true},
		{"a conflict with the expected revision", []porcupine.Operation{cas(0, 1, 0, a1, ok(a1, 10)), cas(2, 3, 10, b2, conflict(a1, 10))}, false},
		{"an unknown swap that landed", []porcupine.Operation{cas(0, 1, 0, a1, unknown), get(2, 3, ok(RecView{Holder: "a", Token: 3, LeaseDuration: time.Second}, 7))}, true},
		{"an unknown swap that did not land", []porcupine.Operation{cas(0, 1, 0, a1, unknown), get(2, 3, notFound)}, true},
		{"an unknown swap that landed and then vanished", []porcupine.Operation{cas(0, 1, 0, a1, unknown), get(2, 3, ok(a1, 7)), get(4, 5, notFound)}, false},
		{"a token below the proposed one", []porcupine.Operation{cas(0, 1, 0, b2, ok(a1, 10))}, false},
		{"a loss empties the store", []porcupine.Operation{cas(0, 1, 0, a1, ok(a1, 10)), lose(2, 3), get(4, 5, notFound), cas(6, 7, 0, b2, ok(b2, 11))}, true},
		{"a revision reused after a loss", []porcupine.Operation{cas(0, 1, 0, a1, ok(a1, 10)), lose(2, 3), cas(6, 7, 0, b2, ok(b2, 10))}, false},
		{"a guarded swap over the released record", []porcupine.Operation{cas(0, 1, 0, a1, ok(a1, 10)), cas(2, 3, 10, rel1, ok(rel1, 11)), guarded(4, 5, 11, rel1, b2, ok(b2, 12))}, true},
		{"a guarded swap over a held record", []porcupine.Operation{cas(0, 1, 0, a1, ok(a1, 10)), guarded(2, 3, 10, rel1, b2, ok(b2, 11))}, false},
		{"a guarded swap refused at the expected revision", []porcupine.Operation{cas(0, 1, 0, a1, ok(a1, 10)), guarded(2, 3, 10, rel1, b2, conflict(a1, 10))}, true},
		{"a guarded swap refused over the record it names", []porcupine.Operation{cas(0, 1, 0, a1, ok(a1, 10)), cas(2, 3, 10, rel1, ok(rel1, 11)), guarded(4, 5, 11, rel1, b2, conflict(rel1, 11))}, false},
		{"a guarded swap from revision 0 creates nothing", []porcupine.Operation{guarded(0, 1, 0, RecView{}, b2, ok(b2, 11))}, false},
		{"a guarded swap from revision 0 conflicts", []porcupine.Operation{guarded(0, 1, 0, RecView{}, b2, conflict(RecView{}, 0)), get(2, 3, notFound)}, true},
		{"an unknown guarded swap over a held record did not land", []porcupine.Operation{cas(0, 1, 0, a1, ok(a1, 10)), guarded(2, 3, 10, rel1, b2, unknown), get(4, 5, ok(RecView{Holder: "b", Token: 2, Transitions: 1, LeaseDuration: time.Second}, 11))}, false},
		{"a record that vanishes without a loss", []porcupine.Operation{cas(0, 1, 0, a1, ok(a1, 10)), get(4, 5, notFound)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := porcupine.CheckOperations(StoreModel, tt.ops); got != tt.want {
				t.Fatalf("linearizable = %v, want %v", got, tt.want)
			}
		})
	}
}

// Electors-like clients hammering memstore through RecordStore give a
// linearizable history; a store that serves stale reads does not.
func TestRecordStoreMemstore(t *testing.T) {
	h := runClients(t, func() store.Store[struct{}] { return memstore.New[struct{}]() })
	if res, why := h.Check(time.Minute); res != porcupine.Ok {
		t.Fatalf("memstore history: %v\n%s", res, why)
	}
}

func TestRecordStoreCatchesStaleReads(t *testing.T) {
	h := runClients(t, func() store.Store[struct{}] { return &staleStore{Store: memstore.New[struct{}]()} })
	if res, _ := h.Check(time.Minute); res != porcupine.Illegal {
		t.Fatalf("a store with stale reads: %v, want Illegal", res)
	}
}

// staleStore answers every other Get with the record it read the time
// before.
type staleStore struct {
	*memstore.Store[struct{}]
	mu   sync.Mutex
	n    int
	last lease.Record[struct{}]
	rev  lease.Revision
	err  error
}

func (s *staleStore) Get(ctx context.Context, name string) (lease.Record[struct{}], lease.Revision, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	if s.n%2 == 0 && s.rev != 0 {
		return s.last, s.rev, s.err
	}
	s.last, s.rev, s.err = s.Store.Get(ctx, name)
	return s.last, s.rev, s.err
}

// runClients runs 3 clients that read and swap one name on one store for
// a while: each reads, and swaps from what it read.
func runClients(t *testing.T, newStore func() store.Store[struct{}]) *History {
	t.Helper()
	h := NewHistory()
	st := newStore()
	ctx := context.Background()
	var wg sync.WaitGroup
	for c := range 3 {
		rs := RecordStore(st, h, c)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				rec, rev, err := rs.Get(ctx, "n")
				if err != nil && !errors.Is(err, store.ErrNotFound) {
					t.Error(err)
					return
				}
				next := lease.Record[struct{}]{Holder: fmt.Sprint("c", c), Token: rec.Token + 1, LeaseDuration: time.Second, Transitions: uint64(i)}
				_, _, err = rs.CompareAndSwap(ctx, "n", rev, next)
				if err != nil && !errors.Is(err, store.ErrConflict) {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if h.Len() != 600 {
		t.Fatalf("recorded %d operations, want 600", h.Len())
	}
	return h
}

// Watches through RecordStore are recorded; CheckWatches finds nothing
// wrong with memstore's, and catches a revision going back and a record
// nobody wrote.
func TestCheckWatchesCatchesRegressionsAndForgeries(t *testing.T) {
	h := NewHistory()
	st := RecordStore[struct{}](memstore.New[struct{}](), h, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := store.Watch(ctx, st, "n")
	if err != nil {
		t.Fatal(err)
	}
	rec, rev, err := st.CompareAndSwap(ctx, "n", 0, lease.Record[struct{}]{Holder: "a", Token: 1, LeaseDuration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for {
		ev := NextEvent(t, ch, 5*time.Second)
		if ev.Revision == rev {
			break
		}
	}
	if r := h.CheckWatches(); r.Watches != 1 || r.Events < 1 || len(r.Backwards)+len(r.Phantoms) != 0 {
		t.Fatalf("memstore's watch: %+v", r)
	}
	w := h.newWatch(1)
	w.deliver(h, false, false, viewOf(rec), rev)
	w.deliver(h, false, false, RecView{Holder: "z", Token: 7}, rev+5)
	w.deliver(h, false, false, viewOf(rec), rev)
	if r := h.CheckWatches(); len(r.Backwards) != 1 || len(r.Phantoms) != 1 {
		t.Fatalf("a bad watch: %+v", r)
	}
}

// An unknown swap is closed once a revision above the one it expected is
// seen, and the history still checks both ways.
func TestUnknownSwapClosesAtAHigherRevision(t *testing.T) {
	a1 := RecView{Holder: "a", Token: 1, LeaseDuration: time.Second}
	b2 := RecView{Holder: "b", Token: 2, LeaseDuration: time.Second}
	h := NewHistory()
	h.add(0, OpInput{Kind: OpCAS, Next: a1}, OpOutput{Outcome: OutOK, Rec: a1, Rev: 10}, 0, 1)
	h.add(1, OpInput{Kind: OpCAS, Expected: 10, Next: b2}, OpOutput{Outcome: OutUnknown}, 2, 3)
	h.add(0, OpInput{Kind: OpGet}, OpOutput{Outcome: OutOK, Rec: a1, Rev: 10}, 4, 5)
	h.add(0, OpInput{Kind: OpCAS, Expected: 10, Next: a1}, OpOutput{Outcome: OutOK, Rec: a1, Rev: 12}, 6, 7)
	if res, why := h.Check(time.Minute); res != porcupine.Ok {
		t.Fatalf("the unknown swap did not land: %v\n%s", res, why)
	}
	ops := append([]porcupine.Operation(nil), h.ops...)
	boundUnknown(ops)
	if ops[1].Return != 7 {
		t.Fatalf("the unknown swap's return: %d, want 7 (when revision 12 was seen)", ops[1].Return)
	}
	// Had it landed (rev 11), reading rev 10 after it would be illegal;
	// here it may have landed between 2 and 4 and been read at 8.
	h2 := NewHistory()
	h2.add(0, OpInput{Kind: OpCAS, Next: a1}, OpOutput{Outcome: OutOK, Rec: a1, Rev: 10}, 0, 1)
	h2.add(1, OpInput{Kind: OpCAS, Expected: 10, Next: b2}, OpOutput{Outcome: OutUnknown}, 2, 3)
	h2.add(0, OpInput{Kind: OpGet}, OpOutput{Outcome: OutOK, Rec: b2, Rev: 11}, 8, 9)
	h2.add(0, OpInput{Kind: OpGet}, OpOutput{Outcome: OutOK, Rec: a1, Rev: 10}, 10, 11)
	if res, _ := h2.Check(time.Minute); res != porcupine.Illegal {
		t.Fatalf("a read going back after an unknown swap landed: %v, want Illegal", res)
	}
}

// TestFirstAnswerAfterAHealSkipsFailures: the first answer after a heal is the first operation
// that returned after it with a record, none or a conflict; failed reads
// (not recorded) and swaps of unknown outcome are no answer.
func TestFirstAnswerAfterAHealSkipsFailures(t *testing.T) {
	h := NewHistory()
	ms := func(n int) int64 { return int64(time.Duration(n) * time.Millisecond) }
	heal := h.start.Add(100 * time.Millisecond)
	if _, ok := h.FirstAnswer(heal); ok {
		t.Fatal("an empty history has an answer")
	}
	h.add(0, OpInput{Kind: OpGet}, OpOutput{Outcome: OutOK, Rev: 1}, ms(10), ms(90))            // before the heal
	h.add(1, OpInput{Kind: OpCAS, Expected: 1}, OpOutput{Outcome: OutUnknown}, ms(95), ms(300)) // no answer
	if _, ok := h.FirstAnswer(heal); ok {
		t.Fatal("an unknown outcome counted as an answer")
	}
	h.add(2, OpInput{Kind: OpCAS, Expected: 1}, OpOutput{Outcome: OutConflict, Rev: 2}, ms(200), ms(260))
	h.add(0, OpInput{Kind: OpGet}, OpOutput{Outcome: OutNotFound}, ms(80), ms(230)) // sent before, answered after
	at, ok := h.FirstAnswer(heal)
	if want := h.start.Add(230 * time.Millisecond); !ok || !at.Equal(want) {
		t.Fatalf("FirstAnswer = %v, %v; want %v", at.Sub(h.start), ok, want.Sub(h.start))
	}
}

// RecordStore forwards a store's release guard, and records the guarded
// swaps it makes as guarded.
func TestRecordStoreForwardsTheGuard(t *testing.T) {
	h := NewHistory()
	st := RecordStore[struct{}](memstore.New[struct{}](), h, 0)
	g := store.ReleaseGuardOf(st)
	if g == nil {
		t.Fatal("RecordStore hides memstore's release guard")
	}
	ctx := t.Context()
	held, rev, err := st.CompareAndSwap(ctx, "n", 0, lease.Record[struct{}]{Holder: "a", Token: 1, LeaseDuration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	was := store.Released{Token: held.Token, Transitions: held.Transitions, LeaseDuration: held.LeaseDuration}
	if _, _, err := g.CompareReleasedAndSwap(ctx, "n", rev, was, lease.Record[struct{}]{Holder: "b", Token: 2, LeaseDuration: time.Second}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("guarded swap over a held record: %v, want a conflict", err)
	}
	h.mu.Lock()
	last := h.ops[len(h.ops)-1]
	h.mu.Unlock()
	if in := last.Input.(OpInput); !in.Guarded || in.Was.Token != held.Token || last.Output.(OpOutput).Outcome != OutConflict {
		t.Fatalf("recorded %s, want the guarded swap and its conflict", describeOp(last))
	}
	if res, why := h.Check(time.Minute); res != porcupine.Ok {
		t.Fatalf("history: %v\n%s", res, why)
	}
}
