package lead_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/memstore"
)

// lossyMem is a memstore that says it may lose records (as a Redis
// without persistence does), keeping memstore's watch.
type lossyMem struct{ *memstore.Store[meta] }

func (lossyMem) MayLoseRecords() bool { return true }

// On a store that may lose records, the first elector's record is only a
// claim, and everything that shows it says so: the claimer logs at Info
// how long it waits and why, its Status and the stored record mark the
// claim, and a follower's Leaders reports it with Claim; once the claim
// has stood for a LeaseDuration the claimer takes it over with a new
// token, and the term is reported without Claim.
func TestClaimIsShownUntilTakenOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := memstore.New[meta]()
		st := lossyMem{mem}
		logs := &recorder{}
		began := time.Now()
		leaseDur := fastConfig().LeaseDuration
		a := start(t, st, "a", lead.WithLogger(slog.New(logs)))
		synctest.Wait()

		rec, _, err := mem.Get(context.Background(), "job")
		if err != nil || rec.Holder != "a" || !rec.Claim {
			t.Fatalf("stored record after the create = %+v, %v; want a's claim", rec, err)
		}
		claimToken := rec.Token
		if a.e.IsLeader() {
			t.Fatal("the claimer leads on its claim")
		}
		if s := a.e.Status(); !s.Claim || !s.ClaimEnds.Equal(began.Add(leaseDur)) || s.InTerm {
			t.Fatalf("claimer's Status = %+v; want Claim until %v", s, began.Add(leaseDur))
		}
		infos := logs.find(slog.LevelInfo, "claim")
		if len(infos) != 1 {
			t.Fatalf("Info records about the claim: %+v; want one", infos)
		}
		got := infos[0]
		if got.attrs["wait"] != leaseDur.String() || got.attrs["token"] != fmt.Sprint(claimToken) ||
			!strings.HasPrefix(got.attrs["leads_at"], began.Add(leaseDur).Round(0).String()) ||
			!strings.Contains(got.msg, "may have lost a record whose holder could still believe it leads") {
			t.Fatalf("the claim's Info record = %+v; want the wait, the token, when it leads and why", got)
		}

		// b comes later, so that its own wait ends after a's.
		time.Sleep(100 * time.Millisecond)
		b := start(t, st, "b")
		seen := follow(t, b.e, context.Background())
		synctest.Wait()
		if ls, _ := seen.snapshot(); len(ls) != 1 || ls[0].Holder != "a" || !ls[0].Claim || uint64(ls[0].Token) != claimToken || !ls[0].Record.Claim {
			t.Fatalf("follower's Leaders during the claim = %+v; want a's claim", ls)
		}

		time.Sleep(leaseDur - 100*time.Millisecond - time.Nanosecond)
		synctest.Wait()
		if a.e.IsLeader() {
			t.Fatal("the claimer leads before its claim has stood a LeaseDuration")
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		c := a.next(t)
		if c.Kind != lead.Started || uint64(c.Term.Token) <= claimToken {
			t.Fatalf("claimer's change = %+v; want a term with a token above the claim's %d", c, claimToken)
		}
		ls, _ := seen.snapshot()
		if len(ls) != 2 || ls[1].Holder != "a" || ls[1].Claim || ls[1].Record.Claim || uint64(ls[1].Token) != uint64(c.Term.Token) {
			t.Fatalf("follower's Leaders = %+v; want the claim, then a's term without Claim", ls)
		}
		if rec, _, _ := mem.Get(context.Background(), "job"); rec.Claim || rec.Token != uint64(c.Term.Token) {
			t.Fatalf("stored record of the term = %+v; want Claim false", rec)
		}
		if s := a.e.Status(); s.Claim || !s.Leading {
			t.Fatalf("leader's Status = %+v; want Leading and no Claim", s)
		}
		if n := len(logs.find(slog.LevelInfo, "claim")); n != 1 {
			t.Fatalf("%d Info records about a claim; want only the one", n)
		}
	})
}

// A store that keeps its records makes no claim: the record of the first
// term says Claim false, and nothing about a claim is logged.
func TestNoClaimOnAStoreThatKeepsRecords(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := memstore.New[meta]()
		logs := &recorder{}
		a := start(t, mem, "a", lead.WithLogger(slog.New(logs)))
		firstLeader(t, a)
		if rec, _, err := mem.Get(context.Background(), "job"); err != nil || rec.Claim {
			t.Fatalf("stored record = %+v, %v; want no claim", rec, err)
		}
		if got := logs.find(slog.LevelInfo, "claim"); len(got) != 0 {
			t.Fatalf("Info records about a claim: %+v", got)
		}
	})
}

// claimTrusting shows electors what an elector that trusted Claim would
// see: a record marked Claim as free. It exists to show that
// TestForgedClaimChangesNothing catches such an elector.
type claimTrusting struct{ store.Store[meta] }

func (claimTrusting) MayLoseRecords() bool { return false }

func (s claimTrusting) Get(ctx context.Context, name string) (lease.Record[meta], lease.Revision, error) {
	rec, rev, err := s.Store.Get(ctx, name)
	if rec.Claim {
		rec.Holder = ""
	}
	return rec, rev, err
}

// forgedRun is what TestForgedClaimChangesNothing compares: the holders and
// tokens each elector reported, and when, from the start.
func forgedRun(t *testing.T, claim, trusting bool) string {
	t.Helper()
	var out string
	synctest.Test(t, func(t *testing.T) {
		mem := memstore.New[meta]()
		var st store.Store[meta] = mem
		if trusting {
			st = claimTrusting{mem}
		}
		ctx := context.Background()
		began := time.Now()
		// A term of a holder that has crashed, and a term of a live
		// leader, each marked Claim (or not) by someone who is not its
		// holder.
		ghost := lease.Record[[]byte]{Holder: "ghost", Token: 7, Transitions: 2, LeaseDuration: fastConfig().LeaseDuration, AcquiredAt: began, RenewedAt: began, Claim: claim, Metadata: []byte("{}")}
		if _, err := mem.PutRaw("job", ghost); err != nil {
			t.Fatal(err)
		}
		// b starts later, so that a's wait ends first: one takeover,
		// the same in every run.
		a := start(t, st, "a")
		time.Sleep(100 * time.Millisecond)
		b := start(t, st, "b")
		var trace []string
		note := func(n *node) {
			for {
				select {
				case c := <-n.changes:
					trace = append(trace, fmt.Sprintf("%v %s %v token=%d", time.Since(began), n.e.Identity(), c.Kind, c.Term.Token))
				default:
					return
				}
			}
		}
		step := func(d time.Duration) {
			time.Sleep(d)
			synctest.Wait()
			note(a)
			note(b)
			trace = append(trace, fmt.Sprintf("%v leaders a=%v b=%v", time.Since(began), a.e.IsLeader(), b.e.IsLeader()))
		}
		for range 8 {
			step(500 * time.Millisecond)
		}
		rec, _, err := mem.Get(ctx, "job")
		if err != nil || rec.Holder == "" {
			t.Fatalf("record after the takeover = %+v, %v", rec, err)
		}
		live := lease.Record[[]byte]{Holder: rec.Holder, Token: rec.Token, Transitions: rec.Transitions, LeaseDuration: rec.LeaseDuration, AcquiredAt: rec.AcquiredAt, RenewedAt: rec.RenewedAt, Claim: claim, Metadata: []byte("{}")}
		if _, err := mem.PutRaw("job", live); err != nil {
			t.Fatal(err)
		}
		for range 16 {
			step(500 * time.Millisecond)
		}
		out = strings.Join(trace, "\n")
	})
	return out
}

// Claim is for people: a record that says Claim wrongly (on a dead
// holder's term, on a live leader's term) changes nothing electors do. The
// runs with the forged mark and without it are the same, step by step; an
// elector that took a claim for a free lease would differ (shown with
// claimTrusting).
func TestForgedClaimChangesNothing(t *testing.T) {
	plain := forgedRun(t, false, false)
	if !strings.Contains(plain, "started") {
		t.Fatalf("no term started in the run:\n%s", plain)
	}
	if forged := forgedRun(t, true, false); forged != plain {
		t.Fatalf("a forged Claim changed what electors did:\nwithout it:\n%s\nwith it:\n%s", plain, forged)
	}
	// The same comparison catches electors that trust Claim.
	if plain, trusted := forgedRun(t, false, true), forgedRun(t, true, true); trusted == plain {
		t.Fatalf("electors that trust Claim went unnoticed:\n%s", trusted)
	}
}

// heldCreate holds each create (a swap expecting no record) until release
// is closed, and then applies it whatever became of the caller's context:
// the create was sent, and lands after the caller stopped waiting.
type heldCreate struct {
	lossyMem
	sent    chan struct{}
	release chan struct{}
}

func (h heldCreate) CompareAndSwap(ctx context.Context, name string, expected lease.Revision, next lease.Record[meta]) (lease.Record[meta], lease.Revision, error) {
	if expected == 0 {
		close(h.sent)
		<-h.release
		ctx = context.WithoutCancel(ctx)
	}
	return h.lossyMem.CompareAndSwap(ctx, name, expected, next)
}

// An elector stopped while its create is in flight, on a store that may
// lose records, leaves the record it created standing: it is a claim,
// and released it would be free at once to whoever comes next, while the
// holder of a record the store lost may still believe it leads.
func TestStoppedClaimerLeavesItsClaimStanding(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := memstore.New[meta]()
		st := heldCreate{lossyMem{mem}, make(chan struct{}), make(chan struct{})}
		a := start(t, st, "a")
		<-st.sent
		a.cancel()
		synctest.Wait()
		close(st.release)
		if err := <-a.done; err != nil {
			t.Fatalf("Run = %v", err)
		}
		synctest.Wait()
		rec, _, err := mem.Get(context.Background(), "job")
		if err != nil || rec.Holder != "a" || !rec.Claim {
			t.Fatalf("stored record after the stop = %+v, %v; want a's claim, not released", rec, err)
		}
	})
}

// The same holds for an elector removed from a Group (as Shards does
// when a shard moves away) while its create is in flight.
func TestRemovedClaimerLeavesItsClaimStanding(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := memstore.New[meta]()
		st := heldCreate{lossyMem{mem}, make(chan struct{}), make(chan struct{})}
		g, err := lead.NewGroup[meta](st, lead.WithConfig(fastConfig()), lead.WithLookupEnv(nil), lead.WithIdentity("a"))
		if err != nil {
			t.Fatal(err)
		}
		e, err := g.Add("job")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- g.Run(ctx) }()
		<-st.sent
		if !g.Remove("job") {
			t.Fatal("Remove found no elector")
		}
		synctest.Wait()
		close(st.release)
		<-e.Done()
		synctest.Wait()
		rec, _, err := mem.Get(context.Background(), "job")
		if err != nil || rec.Holder != "a" || !rec.Claim {
			t.Errorf("stored record after the removal = %+v, %v; want a's claim, not released", rec, err)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run = %v", err)
		}
	})
}
