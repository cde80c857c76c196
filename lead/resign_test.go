package lead_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/store/memstore"
)

// Resign hands the lease to the other candidate at once and stays in the
// election: once the other goes away, the resigned elector leads again.
func TestResignHandsOverAndStaysInTheElection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New[meta]()
		a := start(t, st, "a")
		if c := a.next(t); c.Kind != lead.Started {
			t.Fatalf("a: %v, want Started", c.Kind)
		}
		b := start(t, st, "b")
		synctest.Wait()
		resigned := time.Now()
		if err := a.e.Resign(context.Background()); err != nil {
			t.Fatalf("Resign = %v", err)
		}
		assertNotLeading(t, a.e, "after Resign returned")
		c := a.next(t)
		if c.Kind != lead.Stopped || !errors.Is(c.Reason, lead.ErrLeadershipLost) || !strings.Contains(c.Reason.Error(), "resigned") {
			t.Fatalf("a: %v (%v), want Stopped for resigned", c.Kind, c.Reason)
		}
		c = b.next(t)
		if c.Kind != lead.Started || c.Term.Start.Sub(resigned) > 100*time.Millisecond {
			t.Fatalf("b: %v at %v after Resign; want Started at once", c.Kind, c.Term.Start.Sub(resigned))
		}
		b.stop(t)
		stopped := time.Now()
		c = a.next(t)
		if c.Kind != lead.Started || c.Term.Start.Sub(stopped) > 100*time.Millisecond {
			t.Fatalf("a: %v at %v after b stopped; want Started at once", c.Kind, c.Term.Start.Sub(stopped))
		}
	})
}

// Alone in the election, a resigned elector does not take the lease it
// released straight back: it leads again one LeaseDuration later.
func TestResignAloneLeadsAgainAfterALease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := start(t, memstore.New[meta](), "a")
		first := a.next(t)
		synctest.Wait()
		resigned := time.Now()
		if err := a.e.Resign(context.Background()); err != nil {
			t.Fatalf("Resign = %v", err)
		}
		if c := a.next(t); c.Kind != lead.Stopped {
			t.Fatalf("%v, want Stopped", c.Kind)
		}
		c := a.next(t)
		lease := fastConfig().LeaseDuration
		if wait := c.Term.Start.Sub(resigned); c.Kind != lead.Started || wait < lease || wait > lease+fastConfig().RetryInterval {
			t.Fatalf("%v %v after Resign; want Started after one LeaseDuration (%v)", c.Kind, wait, lease)
		}
		if c.Term.Token <= first.Term.Token {
			t.Fatalf("new term's token %d, the resigned one's %d", c.Term.Token, first.Term.Token)
		}
	})
}

// A member of a Group resigns as a lone elector does.
func TestGroupMemberResignsAsALoneElectorDoes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New[meta]()
		g, err := lead.NewGroup(st, lead.WithConfig(fastConfig()), lead.WithLookupEnv(nil))
		if err != nil {
			t.Fatal(err)
		}
		a, err := g.Add("job", lead.WithIdentity("a"))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- g.Run(ctx) }()
		defer func() { cancel(); <-done }()
		synctest.Wait()
		b := start(t, st, "b")
		synctest.Wait()
		if err := a.Resign(ctx); err != nil {
			t.Fatalf("Resign = %v", err)
		}
		if a.IsLeader() {
			t.Fatal("IsLeader is true after Resign returned")
		}
		if c := b.next(t); c.Kind != lead.Started {
			t.Fatalf("b: %v, want Started", c.Kind)
		}
	})
}

// Resign's errors: a follower does not lead, a stopped elector has
// stopped, and a ctx that ends first ends the wait (the step-down goes
// on).
func TestResignRefusesFollowersAndStoppedElectorsAndHonoursCtx(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New[meta]()
		a := start(t, st, "a")
		a.next(t)
		b := start(t, st, "b")
		synctest.Wait()
		if err := b.e.Resign(context.Background()); !errors.Is(err, lead.ErrNotLeader) {
			t.Errorf("follower's Resign = %v, want ErrNotLeader", err)
		}
		started := make(chan struct{})
		go a.e.Lead(context.Background(), func(ctx context.Context, _ lead.Term) error {
			close(started)
			<-ctx.Done()
			<-time.After(time.Second) // slow to return
			return nil
		})
		<-started
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if err := a.e.Resign(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Resign with a ctx ending before the body returns = %v, want DeadlineExceeded", err)
		}
		if c := b.next(t); c.Kind != lead.Started {
			t.Errorf("b: %v, want Started once a's body returned", c.Kind)
		}
		a.stop(t)
		if err := a.e.Resign(context.Background()); !errors.Is(err, lead.ErrStopped) {
			t.Errorf("Resign after Run returned = %v, want ErrStopped", err)
		}
	})
}

// A body that never returns: Resign gives up at the term's deadline
// without releasing, and the elector stays in the election.
func TestResignWithABodyThatNeverReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New[meta]()
		a := start(t, st, "a")
		a.next(t)
		stuck := make(chan struct{})
		defer close(stuck)
		started := make(chan struct{})
		go a.e.Lead(context.Background(), func(context.Context, lead.Term) error {
			close(started)
			<-stuck
			return nil
		})
		<-started
		deadline := a.e.Status().Deadline
		if err := a.e.Resign(context.Background()); !errors.Is(err, lead.ErrBodiesStillRunning) {
			t.Fatalf("Resign = %v, want ErrBodiesStillRunning", err)
		}
		if now := time.Now(); now.Before(deadline) {
			t.Fatalf("Resign returned %v before the term's deadline", deadline.Sub(now))
		}
		if rec, _, err := st.Get(context.Background(), "job"); err != nil || rec.Holder != "a" {
			t.Fatalf("record: %+v, %v; want it still held by a", rec, err)
		}
		select {
		case <-a.e.Done():
			t.Fatal("Run returned")
		default:
		}
	})
}

// A body that resigns with its own context returns at once, and the lease
// is handed over as soon as the body has returned.
func TestBodyResignsWithItsOwnContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New[meta]()
		a := start(t, st, "a")
		a.next(t)
		b := start(t, st, "b")
		synctest.Wait()
		var resigned time.Time
		err := a.e.Lead(context.Background(), func(ctx context.Context, _ lead.Term) error {
			if err := a.e.Resign(ctx); !errors.Is(err, context.Canceled) {
				t.Errorf("Resign from the body = %v, want its context's error", err)
			}
			resigned = time.Now()
			return nil
		})
		if !errors.Is(err, lead.ErrLeadershipLost) {
			t.Fatalf("Lead = %v, want ErrLeadershipLost", err)
		}
		if c := b.next(t); c.Kind != lead.Started || c.Term.Start.Sub(resigned) > 100*time.Millisecond {
			t.Fatalf("b: %v %v after the body resigned; want Started at once", c.Kind, c.Term.Start.Sub(resigned))
		}
	})
}
