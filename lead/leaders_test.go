package lead_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/memstore"
)

// leaderLog collects what a Leaders channel reports.
type leaderLog struct {
	mu     sync.Mutex
	seen   []lead.Leader[meta]
	closed bool
}

func follow(t *testing.T, e *lead.Elector[meta], ctx context.Context) *leaderLog {
	t.Helper()
	ch, err := e.Leaders(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l := &leaderLog{}
	go func() {
		for x := range ch {
			l.mu.Lock()
			l.seen = append(l.seen, x)
			l.mu.Unlock()
		}
		l.mu.Lock()
		l.closed = true
		l.mu.Unlock()
	}()
	return l
}

func (l *leaderLog) snapshot() ([]lead.Leader[meta], bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]lead.Leader[meta](nil), l.seen...), l.closed
}

// holders lists the holders reported, "-" for nobody.
func holders(ls []lead.Leader[meta]) []string {
	var out []string
	for _, l := range ls {
		h := l.Holder
		if h == "" {
			h = "-"
		}
		out = append(out, h)
	}
	return out
}

// checkSequence: never the same change twice in a row, and the terms of
// the holders reported only go up.
func checkSequence(t *testing.T, who string, ls []lead.Leader[meta]) {
	t.Helper()
	for i := 1; i < len(ls); i++ {
		if ls[i].Holder == ls[i-1].Holder && ls[i].Token == ls[i-1].Token {
			t.Fatalf("%s: change %d repeats %+v", who, i, ls[i])
		}
	}
	var last uint64
	for i, l := range ls {
		if l.Holder == "" {
			if l.Token != 0 {
				t.Fatalf("%s: change %d: nobody holds, token %d", who, i, l.Token)
			}
			continue
		}
		if uint64(l.Token) <= last {
			t.Fatalf("%s: change %d: token %d after %d", who, i, l.Token, last)
		}
		if !l.Present || l.Record.Holder != l.Holder || uint64(l.Record.Token) != uint64(l.Token) || l.Revision == 0 {
			t.Fatalf("%s: change %d inconsistent: %+v", who, i, l)
		}
		last = uint64(l.Token)
	}
}

// Every elector, leader or follower, reports the same holders in the same
// order: the first leader, nobody after its release, the successor;
// renewals report nothing.
func TestLeadersReportsTheSameHoldersOnFollowersAndLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New[meta]()
		a := start(t, st, "a")
		firstLeader(t, a)
		if err := a.e.SetMetadata(meta{Addr: "a:80"}); err != nil {
			t.Fatal(err)
		}
		b, c := start(t, st, "b"), start(t, st, "c")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		logs := map[string]*leaderLog{"a": follow(t, a.e, ctx), "b": follow(t, b.e, ctx), "c": follow(t, c.e, ctx)}
		time.Sleep(10 * time.Second) // many renewals, with the new metadata
		synctest.Wait()
		for id, l := range logs {
			seen, _ := l.snapshot()
			if got := holders(seen); len(got) != 1 || got[0] != "a" {
				t.Fatalf("%s saw %v during a's renewals, want [a]", id, got)
			}
			if seen[0].Self != (id == "a") || seen[0].Token != 1 {
				t.Fatalf("%s: %+v", id, seen[0])
			}
		}
		a.stop(t)
		next, second := firstLeader(t, b, c)
		time.Sleep(time.Second)
		synctest.Wait()
		for id, l := range logs {
			seen, _ := l.snapshot()
			checkSequence(t, id, seen)
			got := holders(seen)
			if id == "a" {
				// a saw its own release, then stopped reading.
				if len(got) != 2 || got[1] != "-" {
					t.Fatalf("a saw %v, want [a -]", got)
				}
				continue
			}
			last := seen[len(seen)-1]
			if last.Holder != next.e.Identity() || last.Token != second.Term.Token || last.Self != (id == next.e.Identity()) {
				t.Fatalf("%s ended with %+v, want %s at token %d", id, last, next.e.Identity(), second.Term.Token)
			}
			if len(got) > 3 || got[0] != "a" {
				t.Fatalf("%s saw %v", id, got)
			}
		}
		// A channel opened now starts with the holder seen last, with its
		// newest record.
		late := follow(t, b.e, ctx)
		synctest.Wait()
		if seen, _ := late.snapshot(); len(seen) != 1 || seen[0].Holder != next.e.Identity() {
			t.Fatalf("late channel saw %v", holders(seen))
		}
	})
}

// gatedStore holds every CompareAndSwap until open is closed.
type gatedStore struct {
	store.Store[meta]
	open chan struct{}
}

func (g *gatedStore) CompareAndSwap(ctx context.Context, name string, exp lease.Revision, next lease.Record[meta]) (lease.Record[meta], lease.Revision, error) {
	select {
	case <-g.open:
	case <-ctx.Done():
		return lease.Record[meta]{}, 0, ctx.Err()
	}
	return g.Store.CompareAndSwap(ctx, name, exp, next)
}

func (g *gatedStore) MayLoseRecords() bool { return false }

// An elector that finds no record reports nobody, then itself.
func TestLeadersReportsNobodyBeforeTheFirstLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := &gatedStore{Store: memstore.New[meta](), open: make(chan struct{})}
		e, err := lead.New("job", gate, lead.WithIdentity("a"), lead.WithConfig(fastConfig()), lead.WithLookupEnv(nil))
		if err != nil {
			t.Fatal(err)
		}
		l := follow(t, e, context.Background())
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- e.Run(ctx) }()
		<-e.Ready() // the first read found no record
		synctest.Wait()
		if seen, _ := l.snapshot(); len(seen) != 1 || seen[0].Holder != "" || seen[0].Present || seen[0].Self {
			t.Fatalf("before any record: %+v", seen)
		}
		close(gate.open)
		for !e.IsLeader() {
			time.Sleep(time.Second)
		}
		synctest.Wait()
		seen, _ := l.snapshot()
		if got := holders(seen); len(got) != 2 || got[1] != "a" || !seen[1].Self {
			t.Fatalf("saw %+v", seen)
		}
		checkSequence(t, "a", seen)
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		seen, closed := l.snapshot()
		if !closed {
			t.Fatal("channel still open after Run returned")
		}
		if got := holders(seen); got[len(got)-1] != "-" {
			t.Fatalf("after the release: %v", got)
		}
	})
}

// TestLeadersSlowReceiverNeverBlocksTheElector: a channel nobody reads
// does not delay renewals or handovers, and once read it gives the newest
// holder, never an older one.
func TestLeadersSlowReceiverNeverBlocksTheElector(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New[meta]()
		a := start(t, st, "a")
		firstLeader(t, a)
		ch, err := a.e.Leaders(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		// Nobody receives. Three handovers happen meanwhile.
		var last *node
		for i, id := range []string{"b", "c", "d"} {
			n := start(t, st, id)
			prev := a
			if last != nil {
				prev = last
			}
			synctest.Wait()
			prev.stop(t)
			if got := n.next(t); got.Kind != lead.Started || uint64(got.Term.Token) != uint64(i+2) {
				t.Fatalf("%s: %+v", id, got)
			}
			last = n
		}
		if !last.e.IsLeader() {
			t.Fatal("d does not lead")
		}
		// a stopped before the others: its channel holds what a saw last
		// (nobody, after its own release), then closes.
		got := <-ch
		if got.Holder != "" {
			t.Fatalf("a's channel gave %+v", got)
		}
		if _, ok := <-ch; ok {
			t.Fatal("a's channel not closed after Run returned")
		}
		// d's own channel, never read until now, gives d.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel() // the channel's goroutine ends with ctx
		dch, err := last.e.Leaders(ctx)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(30 * time.Second)
		if got := <-dch; got.Holder != "d" || got.Token != 4 || !got.Self {
			t.Fatalf("d's channel gave %+v", got)
		}
	})
}

func TestLeadersClosesWhenCtxEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := start(t, memstore.New[meta](), "a")
		firstLeader(t, n)
		ctx, cancel := context.WithCancel(context.Background())
		ch, err := n.e.Leaders(ctx)
		if err != nil {
			t.Fatal(err)
		}
		cancel()
		for range ch { // what was sent before ctx ended, then the end
		}
		if !n.e.IsLeader() {
			t.Fatal("ending a Leaders channel affected the elector")
		}
	})
}

func TestLeadersRefusesNilArguments(t *testing.T) {
	var nilElector *lead.Elector[meta]
	if _, err := nilElector.Leaders(context.Background()); !errors.Is(err, lead.ErrNilArgument) {
		t.Fatalf("nil Elector: %v", err)
	}
	if _, err := (&lead.Elector[meta]{}).Leaders(context.Background()); !errors.Is(err, lead.ErrNilArgument) {
		t.Fatalf("zero Elector: %v", err)
	}
	e, err := lead.New("job", memstore.New[meta](), lead.WithLookupEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	//lint:ignore SA1012 the nil context is the point
	if _, err := e.Leaders(nil); !errors.Is(err, lead.ErrNilArgument) {
		t.Fatalf("nil ctx: %v", err)
	}
}

// With MetadataChanges, Leaders reports the holder again when its metadata
// changes within a term, once per change; renewals with the same metadata
// are not changes, and a channel without the option reports none of it.
func TestLeadersWithMetadataChangesReportsNewMetadata(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New[meta]()
		a := start(t, st, "a")
		if err := a.e.SetMetadata(meta{Addr: "10.0.0.1:80"}); err != nil {
			t.Fatal(err)
		}
		firstLeader(t, a)
		// Run may have acquired before SetMetadata: a renewal writes it.
		time.Sleep(time.Second)
		synctest.Wait()
		b := start(t, st, "b")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ch, err := b.e.Leaders(ctx, lead.MetadataChanges())
		if err != nil {
			t.Fatal(err)
		}
		var (
			mu   sync.Mutex
			seen []lead.Leader[meta]
		)
		go func() {
			for l := range ch {
				mu.Lock()
				seen = append(seen, l)
				mu.Unlock()
			}
		}()
		plain := follow(t, b.e, ctx)
		time.Sleep(5 * time.Second) // ten renewals with the same metadata
		synctest.Wait()
		if err := a.e.SetMetadata(meta{Addr: "10.0.0.2:80"}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if err := a.e.SetMetadata(meta{Addr: "10.0.0.3:80"}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second)
		synctest.Wait()
		mu.Lock()
		var addrs []string
		for _, l := range seen {
			if l.Holder != "a" || l.Token != 1 {
				t.Errorf("reported %s in term %d, want a in term 1", l.Holder, l.Token)
			}
			addrs = append(addrs, l.Record.Metadata.Addr)
		}
		mu.Unlock()
		if want := []string{"10.0.0.1:80", "10.0.0.2:80", "10.0.0.3:80"}; !slices.Equal(addrs, want) {
			t.Errorf("MetadataChanges reported metadata %q, want %q", addrs, want)
		}
		if got, _ := plain.snapshot(); len(got) != 1 {
			t.Errorf("Leaders without the option reported %d changes, want 1 (the holder)", len(got))
		}
	})
}

// Leaders refuses a nil option.
func TestLeadersRefusesANilOption(t *testing.T) {
	e, err := lead.New("job", memstore.New[meta](), lead.WithLookupEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Leaders(context.Background(), nil); !errors.Is(err, lead.ErrNilArgument) {
		t.Errorf("Leaders with a nil option = %v, want ErrNilArgument", err)
	}
}
