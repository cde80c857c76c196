package lead_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/memstore"
)

// A candidate of higher priority that joins takes the lease over through
// a handover: the leader's term ends as handed over, not lost.
func TestHigherPriorityCandidateTakesOverByHandover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New[meta]()
		a := start(t, st, "a", lead.WithPriority(1))
		if ch := a.next(t); ch.Kind != lead.Started {
			t.Fatalf("a: %v, want Started", ch.Kind)
		}
		joined := time.Now()
		b := start(t, st, "b", lead.WithPriority(5))
		ch := b.next(t)
		if ch.Kind != lead.Started {
			t.Fatalf("b: %v, want Started", ch.Kind)
		}
		if took, l := ch.Term.Start.Sub(joined), fastConfig().LeaseDuration; took > l+fastConfig().RenewDeadline {
			t.Errorf("b led %v after joining; want within half a lease or so, well below %v", took, l+fastConfig().RenewDeadline)
		}
		if ch := a.next(t); ch.Kind != lead.Stopped || !strings.Contains(ch.Reason.Error(), "handed over") {
			t.Fatalf("a: %v (%v), want Stopped for handed over", ch.Kind, ch.Reason)
		}
		// b keeps it: a's lower priority never takes it back.
		time.Sleep(5 * fastConfig().LeaseDuration)
		if !b.e.IsLeader() {
			t.Fatal("b no longer leads five leases later")
		}
	})
}

// A candidate of lower or equal priority does not take over.
func TestLowerPriorityCandidateDoesNotTakeOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New[meta]()
		a := start(t, st, "a", lead.WithPriority(5))
		a.next(t)
		start(t, st, "b", lead.WithPriority(5))
		start(t, st, "c", lead.WithPriority(1))
		time.Sleep(5 * fastConfig().LeaseDuration)
		if !a.e.IsLeader() {
			t.Fatal("a no longer leads: a candidate of no higher priority took over")
		}
	})
}

// countByName counts the requests made on each name.
type countByName struct {
	store.Store[meta]
	priority atomic.Int64
}

func (c *countByName) count(name string) {
	if strings.HasSuffix(name, ".priority") {
		c.priority.Add(1)
	}
}

func (c *countByName) Get(ctx context.Context, name string) (lease.Record[meta], lease.Revision, error) {
	c.count(name)
	return c.Store.Get(ctx, name)
}

func (c *countByName) CompareAndSwap(ctx context.Context, name string, expected lease.Revision, next lease.Record[meta]) (lease.Record[meta], lease.Revision, error) {
	c.count(name)
	return c.Store.CompareAndSwap(ctx, name, expected, next)
}

func (c *countByName) MayLoseRecords() bool { return false }

// Without WithPriority nobody touches the priority record: the preference
// costs nothing when it is off.
func TestPriorityOffTouchesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &countByName{Store: memstore.New[meta]()}
		a := start(t, st, "a")
		a.next(t)
		start(t, st, "b")
		time.Sleep(5 * fastConfig().LeaseDuration)
		if n := st.priority.Load(); n != 0 {
			t.Fatalf("%d requests on the priority record with WithPriority off, want 0", n)
		}
	})
}

// A priority above lease.MaxToken is refused.
func TestWithPriorityRefusesAnOutOfRangePriority(t *testing.T) {
	_, err := lead.New("job", memstore.New[meta](), lead.WithIdentity("a"), lead.WithPriority(lease.MaxToken+1), lead.WithLookupEnv(nil))
	if !errors.Is(err, lead.ErrInvalidOption) {
		t.Fatalf("New = %v, want ErrInvalidOption", err)
	}
}
