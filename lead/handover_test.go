package lead_test

import (
	"context"
	"errors"
	"fmt"
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

// HandOver gives the lease to the candidate it names, at once, and to no
// other: the third candidate, which would race for a plain release, waits.
func TestHandOverGoesToTheNamedSuccessorOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New[meta]()
		a := start(t, st, "a")
		first := a.next(t)
		b := start(t, st, "b")
		c := start(t, st, "c")
		synctest.Wait()
		handed := time.Now()
		if err := a.e.HandOver(context.Background(), "c"); err != nil {
			t.Fatalf("HandOver = %v", err)
		}
		assertNotLeading(t, a.e, "after HandOver returned")
		if ch := a.next(t); ch.Kind != lead.Stopped || !strings.Contains(ch.Reason.Error(), "handed over") {
			t.Fatalf("a: %v (%v), want Stopped for handed over", ch.Kind, ch.Reason)
		}
		ch := c.next(t)
		if ch.Kind != lead.Started || ch.Term.Start.Sub(handed) > 100*time.Millisecond || ch.Term.Token <= first.Term.Token {
			t.Fatalf("c: %v at %v after HandOver, token %d; want Started at once above %d", ch.Kind, ch.Term.Start.Sub(handed), ch.Term.Token, first.Term.Token)
		}
		if rec, _ := a.e.Record(); rec.Holder != "c" || rec.Successor != "" {
			t.Fatalf("a's record after HandOver: holder %q successor %q, want c and none", rec.Holder, rec.Successor)
		}
		select {
		case ch := <-b.changes:
			t.Fatalf("b: %v, want nothing: the release named c", ch.Kind)
		default:
		}
	})
}

// A successor that is not there does not take the named release: HandOver
// gives the lease back to every candidate after RenewDeadline with a plain
// release, and another candidate leads then, not a LeaseDuration later.
func TestHandOverToAnAbsentSuccessorFallsBackToAPlainRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New[meta]()
		a := start(t, st, "a")
		a.next(t)
		b := start(t, st, "b")
		synctest.Wait()
		handed := time.Now()
		err := a.e.HandOver(context.Background(), "ghost")
		if !errors.Is(err, lead.ErrHandOverFailed) || !strings.Contains(err.Error(), "released it to every candidate") {
			t.Fatalf("HandOver = %v, want ErrHandOverFailed after a plain release", err)
		}
		cfg := fastConfig()
		if took := time.Since(handed); took < cfg.RenewDeadline || took > cfg.RenewDeadline+cfg.BackendTimeout {
			t.Fatalf("HandOver returned after %v, want the fallback at RenewDeadline (%v)", took, cfg.RenewDeadline)
		}
		ch := b.next(t)
		if wait := ch.Term.Start.Sub(handed); ch.Kind != lead.Started || wait >= cfg.LeaseDuration {
			t.Fatalf("b: %v %v after HandOver; want Started once the plain release is stored, before a LeaseDuration (%v)", ch.Kind, wait, cfg.LeaseDuration)
		}
	})
}

// Without the fallback, the others wait out a named release nobody takes:
// the successor's absence costs them one LeaseDuration, never the lease.
func TestHandOverWithCtxEndingFallsBackAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New[meta]()
		a := start(t, st, "a")
		a.next(t)
		b := start(t, st, "b")
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		handed := time.Now()
		if err := a.e.HandOver(ctx, "ghost"); !errors.Is(err, lead.ErrHandOverFailed) {
			t.Fatalf("HandOver = %v, want ErrHandOverFailed", err)
		}
		ch := b.next(t)
		if wait := ch.Term.Start.Sub(handed); ch.Kind != lead.Started || wait > 300*time.Millisecond+100*time.Millisecond {
			t.Fatalf("b: %v %v after HandOver; want Started once ctx ended", ch.Kind, wait)
		}
	})
}

// The named release waits for the term's bodies, as every release does:
// the successor does not start while a body of the old term still runs.
func TestHandOverReleasesOnlyAfterTheBodiesReturn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New[meta]()
		a := start(t, st, "a")
		a.next(t)
		b := start(t, st, "b")
		synctest.Wait()
		running := make(chan struct{})
		var returned time.Time
		go a.e.Lead(context.Background(), func(ctx context.Context, _ lead.Term) error {
			close(running)
			<-ctx.Done()
			time.Sleep(700 * time.Millisecond) // a body slow to notice
			returned = time.Now()
			return nil
		})
		<-running
		if err := a.e.HandOver(context.Background(), "b"); err != nil {
			t.Fatalf("HandOver = %v", err)
		}
		ch := b.next(t)
		if ch.Kind != lead.Started || returned.IsZero() || ch.Term.Start.Before(returned) {
			t.Fatalf("b: %v at %v, the body returned at %v; want Started after it", ch.Kind, ch.Term.Start, returned)
		}
	})
}

// HandOver refuses what it cannot do: a follower does not lead, and the
// successor must be a valid identity other than the elector's own.
func TestHandOverRefusesFollowersAndBadSuccessors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New[meta]()
		a := start(t, st, "a")
		a.next(t)
		b := start(t, st, "b")
		synctest.Wait()
		ctx := context.Background()
		if err := b.e.HandOver(ctx, "a"); !errors.Is(err, lead.ErrNotLeader) {
			t.Errorf("follower's HandOver = %v, want ErrNotLeader", err)
		}
		for _, s := range []string{"", "a", "bad\x00name"} {
			if err := a.e.HandOver(ctx, s); !errors.Is(err, lead.ErrInvalidIdentity) {
				t.Errorf("HandOver(%q) = %v, want ErrInvalidIdentity", s, err)
			}
		}
		if !a.e.IsLeader() {
			t.Error("a refused HandOver ended the term")
		}
		var nilCtx context.Context
		if err := a.e.HandOver(nilCtx, "b"); !errors.Is(err, lead.ErrNilArgument) {
			t.Errorf("HandOver(nil ctx) = %v, want ErrNilArgument", err)
		}
	})
}

// A member of a Group hands its name over as a lone elector does.
func TestGroupMemberHandsOverAsALoneElectorDoes(t *testing.T) {
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
		c := start(t, st, "c")
		synctest.Wait()
		if err := a.HandOver(ctx, "c"); err != nil {
			t.Fatalf("HandOver = %v", err)
		}
		if ch := c.next(t); ch.Kind != lead.Started {
			t.Fatalf("c: %v, want Started", ch.Kind)
		}
		select {
		case ch := <-b.changes:
			t.Fatalf("b: %v, want nothing", ch.Kind)
		default:
		}
	})
}

// successorRace is a store on which the successor takes the named release
// as soon as it is stored, unseen by the elector that handed over (no
// watch; its next poll comes after the handover's ctx ends), so that the
// handing elector falls back while the successor leads.
type successorRace struct {
	store.Store[meta]
	successor string
	fired     atomic.Bool
}

func (s *successorRace) CompareAndSwap(ctx context.Context, name string, expected lease.Revision, next lease.Record[meta]) (lease.Record[meta], lease.Revision, error) {
	rec, rev, err := s.Store.CompareAndSwap(ctx, name, expected, next)
	if err == nil && next.Holder == "" && next.Successor == s.successor && s.fired.CompareAndSwap(false, true) {
		took := rec
		took.Holder, took.Successor, took.Token, took.LeaseDuration = s.successor, "", rec.Token+1, time.Minute
		if _, _, err := s.Store.CompareAndSwap(ctx, name, rev, took); err != nil {
			return rec, rev, fmt.Errorf("successorRace: the successor's acquire: %w", err)
		}
	}
	return rec, rev, err
}

func (s *successorRace) MayLoseRecords() bool { return false }

// The fallback swaps from the named release's revision: a successor that
// took the lease as the handover timed out keeps it, and HandOver says the
// handover happened.
func TestHandOverFallbackNeverOverwritesTheSuccessor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &successorRace{Store: memstore.New[meta](), successor: "b"}
		a := start(t, st, "a")
		a.next(t)
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		if err := a.e.HandOver(ctx, "b"); err != nil {
			t.Fatalf("HandOver = %v, want nil: b took the lease", err)
		}
		if !st.fired.Load() {
			t.Fatal("the named release was never written")
		}
		rec, _, err := st.Store.Get(context.Background(), "job")
		if err != nil || rec.Holder != "b" {
			t.Fatalf("stored %+v, %v; want b's term, which the fallback must not overwrite", rec, err)
		}
	})
}

// leadSlowly runs a body in n's term that returns d after its context
// ends, and returns once the body runs.
func leadSlowly(t *testing.T, n *node, d time.Duration) {
	t.Helper()
	running := make(chan struct{})
	go func() {
		_ = n.e.Lead(context.Background(), func(ctx context.Context, _ lead.Term) error {
			close(running)
			<-ctx.Done()
			time.Sleep(d)
			return nil
		})
	}()
	<-running
}

// A ctx that ends while the term's bodies still run, before the release
// naming the successor is stored: HandOver returns ctx's error, and the
// handover goes on without it: the release, once stored, is given back
// to every candidate after the handover timeout, not left for the others
// to wait out.
func TestHandOverWhoseCtxEndsBeforeTheReleaseGivesItBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New[meta]()
		a := start(t, st, "a")
		a.next(t)
		b := start(t, st, "b")
		synctest.Wait()
		leadSlowly(t, a, 700*time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		handed := time.Now()
		if err := a.e.HandOver(ctx, "ghost"); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("HandOver = %v, want ctx's error", err)
		}
		ch := b.next(t)
		if wait := ch.Term.Start.Sub(handed); ch.Kind != lead.Started || wait >= fastConfig().LeaseDuration {
			t.Fatalf("b: %v %v after HandOver; want Started once the release is given back, before a LeaseDuration", ch.Kind, wait)
		}
	})
}

// Run ending after the release naming the successor was stored: HandOver
// goes on waiting for the successor, and gives the lease back to every
// candidate after the handover timeout rather than leave it named.
func TestHandOverWhoseRunEndsAfterTheReleaseGivesItBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New[meta]()
		a := start(t, st, "a")
		a.next(t)
		b := start(t, st, "b")
		synctest.Wait()
		leadSlowly(t, a, 200*time.Millisecond)
		res := make(chan error, 1)
		handed := time.Now()
		go func() { res <- a.e.HandOver(context.Background(), "ghost") }()
		synctest.Wait()
		a.cancel()
		if err := <-res; !errors.Is(err, lead.ErrHandOverFailed) {
			t.Fatalf("HandOver = %v, want ErrHandOverFailed: given back after the handover timeout", err)
		}
		ch := b.next(t)
		if wait := ch.Term.Start.Sub(handed); ch.Kind != lead.Started || wait >= fastConfig().LeaseDuration {
			t.Fatalf("b: %v %v after HandOver; want Started once the release is given back, before a LeaseDuration", ch.Kind, wait)
		}
	})
}

// lostNamedRelease is a store on which the successor takes the named
// release as soon as it is stored, and the reply to that release is lost:
// the releaser's retry then finds the successor holding the lease.
type lostNamedRelease struct {
	store.Store[meta]
	successor string
	fired     atomic.Bool
}

func (s *lostNamedRelease) CompareAndSwap(ctx context.Context, name string, expected lease.Revision, next lease.Record[meta]) (lease.Record[meta], lease.Revision, error) {
	rec, rev, err := s.Store.CompareAndSwap(ctx, name, expected, next)
	if err == nil && next.Holder == "" && next.Successor == s.successor && s.fired.CompareAndSwap(false, true) {
		took := rec
		took.Holder, took.Successor, took.Token, took.LeaseDuration = s.successor, "", rec.Token+1, time.Minute
		if _, _, err := s.Store.CompareAndSwap(ctx, name, rev, took); err != nil {
			return rec, rev, fmt.Errorf("lostNamedRelease: the successor's acquire: %w", err)
		}
		return lease.Record[meta]{}, 0, context.DeadlineExceeded
	}
	return rec, rev, err
}

func (s *lostNamedRelease) MayLoseRecords() bool { return false }

// The named release's reply is lost, and the successor has the lease by
// the time the releaser looks: HandOver reports the handover done.
func TestHandOverWhoseReleaseReplyIsLostSeesTheSuccessorLead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &lostNamedRelease{Store: memstore.New[meta](), successor: "b"}
		a := start(t, st, "a")
		a.next(t)
		if err := a.e.HandOver(context.Background(), "b"); err != nil {
			t.Fatalf("HandOver = %v, want nil: b took the lease", err)
		}
		if !st.fired.Load() {
			t.Fatal("the named release was never written")
		}
	})
}

// A body of the term that hands over passes its own context, which ends
// at once: HandOver returns, and the handover goes on without it, to the
// named successor, at once; another candidate does not get it.
func TestHandOverFromABodyStillGoesToTheSuccessor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New[meta]()
		a := start(t, st, "a")
		first := a.next(t)
		b := start(t, st, "b")
		c := start(t, st, "c")
		synctest.Wait()
		handed := time.Now()
		res := make(chan error, 1)
		go func() {
			_ = a.e.Lead(context.Background(), func(ctx context.Context, _ lead.Term) error {
				res <- a.e.HandOver(ctx, "b")
				return nil
			})
		}()
		if err := <-res; !errors.Is(err, context.Canceled) && !errors.Is(err, lead.ErrLeadershipLost) && err != nil {
			t.Fatalf("HandOver from the body = %v, want its context's error", err)
		}
		ch := b.next(t)
		if ch.Kind != lead.Started || ch.Term.Start.Sub(handed) > 100*time.Millisecond || ch.Term.Token <= first.Term.Token {
			t.Fatalf("b: %v %v after HandOver; want Started at once", ch.Kind, ch.Term.Start.Sub(handed))
		}
		time.Sleep(fastConfig().RenewDeadline + time.Second)
		synctest.Wait()
		select {
		case ch := <-c.changes:
			t.Fatalf("c: %v, want nothing: the release named b", ch.Kind)
		default:
		}
		if rec, _, _ := st.Get(context.Background(), "job"); rec.Holder != "b" {
			t.Fatalf("stored holder %q, want b", rec.Holder)
		}
	})
}
