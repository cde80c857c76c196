package testcluster

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/memstore"
)

// TestStartClosesTheStoreOfAStoppedElector checks that what an elector's
// store registers with Cleanup runs, last registered first, when Start
// replaces that elector after it stopped (as a restarted process's
// connections close), and otherwise when the test ends: so a benchmark
// that restarts electors a hundred times does not hold a hundred clients.
func TestStartClosesTheStoreOfAStoppedElector(t *testing.T) {
	var mu sync.Mutex
	var log []string
	record := func(format string, args ...any) {
		mu.Lock()
		log = append(log, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	logged := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(log)
	}
	shared := memstore.New[string]()
	made := 0
	t.Run("electors", func(t *testing.T) {
		c := NewElectors(t, "job", 10*time.Second, func(tb testing.TB) store.Store[string] {
			made++
			n := made
			record("open %d", n)
			tb.Cleanup(func() { record("close %d, first registered", n) })
			tb.Cleanup(func() { record("close %d, last registered", n) })
			return shared
		})
		cfg := FastConfig()
		c.Start("a", cfg)
		c.NextLeader()
		c.Stop("a")
		c.Start("a", cfg) // a stopped: its store closes first
		c.Start("b", cfg)
		c.Start("b", cfg) // the first b still runs: its store stays open
		want := []string{"open 1", "close 1, last registered", "close 1, first registered", "open 2", "open 3", "open 4"}
		if got := logged(); !slices.Equal(got, want) {
			t.Errorf("while the test runs:\n got %q\nwant %q", got, want)
		}
	})
	want := []string{"open 1", "close 1, last registered", "close 1, first registered", "open 2", "open 3", "open 4",
		"close 2, last registered", "close 2, first registered",
		"close 3, last registered", "close 3, first registered",
		"close 4, last registered", "close 4, first registered"}
	if got := logged(); !slices.Equal(got, want) {
		t.Errorf("after the test:\n got %q\nwant %q", got, want)
	}
}

// TestHandoverTakesALateStopped checks that a handover takes the stopped
// leader's Stopped also when it comes after its successor's Started (the
// stopped elector's observer ran late), where the next handover's wait
// took it for the new leader's loss and failed; the changes of others stay
// for later waits, in order.
func TestHandoverTakesALateStopped(t *testing.T) {
	c := NewElectors(t, "job", time.Second, func(tb testing.TB) store.Store[string] { return memstore.New[string]() })
	for _, ch := range []Change{
		{ID: "b", Change: lead.Change{Kind: lead.Started}},
		{ID: "a", Change: lead.Change{Kind: lead.Stopped}},
		{ID: "c", Change: lead.Change{Kind: lead.Stopped}},
	} {
		c.changes <- ch
	}
	c.pending = []Change{{ID: "a", Change: lead.Change{Kind: lead.Stopped}}, {ID: "d", Change: lead.Change{Kind: lead.Started}}}
	c.takeStopped("a")
	var got []string
	for {
		ch, ok := c.Next(0)
		if !ok {
			break
		}
		got = append(got, ch.ID+" "+ch.Kind.String())
	}
	want := []string{"d started", "b started", "c stopped"}
	if !slices.Equal(got, want) {
		t.Errorf("changes left: got %q, want %q", got, want)
	}
}
