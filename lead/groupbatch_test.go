package lead_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/memstore"
)

// batchingStore is a memstore that batches swaps (store.Batcher, through
// memstore's) and counts its batches and its single swaps. A swap of a
// name in failing fails with errUnreachable without being written, in a
// batch as alone.
type batchingStore struct {
	*memstore.Store[meta]

	mu      sync.Mutex
	batches int // batches sent
	batched int // swaps in them
	singles int // swaps sent alone
	failing map[string]bool
	// pooled: the store does not say it answers immediately, so the
	// Group sends its batches from its pool, not its loop.
	pooled bool
}

func (s *batchingStore) AnswersImmediately() bool { return !s.pooled }

var errUnreachable = errors.New("test: the store did not answer")

func newBatchingStore() *batchingStore {
	return &batchingStore{Store: memstore.New[meta](), failing: map[string]bool{}}
}

func (s *batchingStore) CompareAndSwap(ctx context.Context, name string, expected lease.Revision, next lease.Record[meta]) (lease.Record[meta], lease.Revision, error) {
	s.mu.Lock()
	s.singles++
	fail := s.failing[name]
	s.mu.Unlock()
	if fail {
		return lease.Record[meta]{}, 0, errUnreachable
	}
	return s.Store.CompareAndSwap(ctx, name, expected, next)
}

func (s *batchingStore) CompareAndSwapBatch(ctx context.Context, swaps []store.Swap[meta]) []store.SwapResult[meta] {
	s.mu.Lock()
	s.batches++
	s.batched += len(swaps)
	var send []store.Swap[meta]
	var at []int
	out := make([]store.SwapResult[meta], len(swaps))
	for i, sw := range swaps {
		if s.failing[sw.Name] {
			out[i].Err = errUnreachable
			continue
		}
		send = append(send, sw)
		at = append(at, i)
	}
	s.mu.Unlock()
	for j, r := range s.Store.CompareAndSwapBatch(ctx, send) {
		out[at[j]] = r
	}
	return out
}

// counts returns the batches, the swaps in them and the single swaps
// since the last call.
func (s *batchingStore) counts() (batches, batched, singles int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	batches, batched, singles = s.batches, s.batched, s.singles
	s.batches, s.batched, s.singles = 0, 0, 0
	return batches, batched, singles
}

// batchRig is one Group on a batchingStore, at the default timings, whose
// names all lead; stops counts each name's terms that ended.
type batchRig struct {
	st    *batchingStore
	els   []*lead.Elector[meta]
	cfg   lease.Config
	mu    sync.Mutex
	stops map[string]int
}

// newBatchRig returns a batchRig of names names; pooled: the store does
// not answer immediately; hidden: the Group gets the store behind a
// wrapper that hides its Batcher.
func newBatchRig(t *testing.T, names int, pooled, hidden bool) *batchRig {
	t.Helper()
	rig := &batchRig{st: newBatchingStore(), cfg: lease.DefaultConfig(), stops: map[string]int{}}
	rig.st.pooled = pooled
	var st store.Store[meta] = rig.st
	if hidden {
		st = struct{ store.Store[meta] }{rig.st}
	}
	grp, err := lead.NewGroup[meta](st, lead.WithConfig(rig.cfg), lead.WithLookupEnv(nil), lead.WithIdentity("p0"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range names {
		name := fmt.Sprintf("job-%d", i)
		e, err := grp.Add(name, lead.WithObserver(func(c lead.Change) {
			if c.Kind == lead.Stopped {
				rig.mu.Lock()
				rig.stops[name]++
				rig.mu.Unlock()
			}
		}))
		if err != nil {
			t.Fatal(err)
		}
		if err := e.SetMetadata(meta{Addr: name}); err != nil {
			t.Fatal(err)
		}
		rig.els = append(rig.els, e)
	}
	stop := runGroup(t, grp)
	t.Cleanup(stop)
	awaitAllLead(t, rig.els, rig.cfg.RetryInterval)
	rig.st.counts()
	return rig
}

// stopped returns how many terms of name ended.
func (rig *batchRig) stopped(name string) int {
	rig.mu.Lock()
	defer rig.mu.Unlock()
	return rig.stops[name]
}

// A Group on a store that batches sends the renewals its leaders owe at
// the same instant of its wake grid together: 200 leaders renew in
// batches, never alone, at well under a round trip per renewal, and each
// keeps its term, its record in the store being the one it last wrote.
func TestGroupSendsRenewalsDueTogetherInOneBatch(t *testing.T) {
	for _, pooled := range []bool{false, true} {
		t.Run(fmt.Sprintf("pooled=%v", pooled), func(t *testing.T) { sendsRenewalsInBatches(t, pooled) })
	}
}

func sendsRenewalsInBatches(t *testing.T, pooled bool) {
	synctest.Test(t, func(t *testing.T) {
		rig := newBatchRig(t, 200, pooled, false)
		time.Sleep(10 * rig.cfg.RetryInterval)
		synctest.Wait()
		batches, batched, singles := rig.st.counts()
		if singles != 0 {
			t.Errorf("%d renewals sent alone, want every one in a batch", singles)
		}
		// Each renews 8 times at least in 10 RetryIntervals.
		if batched < 200*8 {
			t.Fatalf("%d renewals in batches, want 8 of each of 200 leaders at least", batched)
		}
		if perRenewal := float64(batches) / float64(batched); perRenewal > 0.25 {
			t.Errorf("%d batches for %d renewals: %.2f round trips per renewal, want the renewals due together in one", batches, batched, perRenewal)
		}
		for i, e := range rig.els {
			name := fmt.Sprintf("job-%d", i)
			if !e.IsLeader() || rig.stopped(name) != 0 {
				t.Fatalf("%s: leader %v, terms ended %d: a renewal in a batch lost it", name, e.IsLeader(), rig.stopped(name))
			}
			mine, ok := e.Record()
			got, _, err := rig.st.Get(context.Background(), name)
			if err != nil || !ok || got.Metadata != (meta{Addr: name}) || mine.Metadata != got.Metadata ||
				mine.Token != got.Token || !mine.RenewedAt.Equal(got.RenewedAt) {
				t.Fatalf("%s: the elector's record %+v, the store's %+v (%v): want its own, the one it wrote last", name, mine, got, err)
			}
		}
		t.Logf("%d renewals in %d batches", batched, batches)
	})
}

// Each swap of a batch is answered on its own: a renewal whose name
// another holder took conflicts and its leader steps down at once; one
// the store does not answer fails and its leader steps down at its
// deadline; the other leaders of the same batches keep their terms.
func TestGroupBatchAnswersEachRenewalOnItsOwn(t *testing.T) {
	for _, pooled := range []bool{false, true} {
		t.Run(fmt.Sprintf("pooled=%v", pooled), func(t *testing.T) { answersEachRenewal(t, pooled) })
	}
}

func answersEachRenewal(t *testing.T, pooled bool) {
	synctest.Test(t, func(t *testing.T) {
		rig := newBatchRig(t, 50, pooled, false)
		ctx := context.Background()
		cur, rev, err := rig.st.Get(ctx, "job-5")
		if err != nil {
			t.Fatal(err)
		}
		cur.Holder, cur.Token = "thief", cur.Token+1
		if _, _, err := rig.st.Store.CompareAndSwap(ctx, "job-5", rev, cur); err != nil {
			t.Fatal(err)
		}
		rig.st.mu.Lock()
		rig.st.failing["job-3"] = true
		rig.st.mu.Unlock()

		time.Sleep(rig.cfg.RetryInterval + rig.cfg.RetryInterval/2)
		synctest.Wait()
		if rig.els[5].IsLeader() {
			t.Fatal("job-5 still leads after its renewal met another holder's record")
		}
		time.Sleep(rig.cfg.RenewDeadline)
		synctest.Wait()
		if rig.els[3].IsLeader() {
			t.Fatal("job-3 still leads past its deadline with no renewal answered")
		}
		batches, _, _ := rig.st.counts()
		if batches == 0 {
			t.Fatal("no batch sent")
		}
		for i, e := range rig.els {
			name := fmt.Sprintf("job-%d", i)
			if i == 3 || i == 5 {
				if rig.stopped(name) != 1 {
					t.Errorf("%s: %d terms ended, want 1", name, rig.stopped(name))
				}
				continue
			}
			if !e.IsLeader() || rig.stopped(name) != 0 {
				t.Errorf("%s: leader %v, terms ended %d: another name's failure in its batch cost it its term", name, e.IsLeader(), rig.stopped(name))
			}
		}
	})
}

// A wrapper that hides the store's Batcher costs only the batching: the
// renewals go out one swap each, and every leader keeps its term.
func TestGroupRenewsAloneWhenAWrapperHidesTheBatcher(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rig := newBatchRig(t, 20, true, true)
		time.Sleep(5 * rig.cfg.RetryInterval)
		synctest.Wait()
		batches, _, singles := rig.st.counts()
		if batches != 0 || singles < 20*4 {
			t.Errorf("%d batches, %d single swaps: want the renewals one swap each", batches, singles)
		}
		if !allLead(rig.els) {
			t.Error("a leader lost its term renewing alone")
		}
	})
}
