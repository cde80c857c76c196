package lead

import (
	"sync"
	"testing"
	"time"

	"github.com/tenure-go/tenure/fsm"
	"github.com/tenure-go/tenure/store/memstore"
)

// The electors a Group adds without a clock of their own share the Group's
// one system clock (and so its readings of the boot time); one given a
// clock keeps it.
func TestGroupMembersWithoutAClockShareOneSystemClock(t *testing.T) {
	g, err := NewGroup[struct{}](memstore.New[struct{}]())
	if err != nil {
		t.Fatal(err)
	}
	own := newSystemClock()
	var els []*Elector[struct{}]
	for _, c := range []struct {
		name string
		opts []Option
	}{{"a", nil}, {"b", []Option{WithClock(nil)}}, {"own", []Option{WithClock(own)}}} {
		e, err := g.Add(c.name, c.opts...)
		if err != nil {
			t.Fatal(err)
		}
		els = append(els, e)
	}
	for _, e := range els[:2] {
		if e.clock != Clock(g.clock) || e.stops != stopCounter(g.clock) {
			t.Errorf("%s: clock %p, want the Group's %p, counting its stops", e.name, e.clock, g.clock)
		}
	}
	if els[2].clock != Clock(own) {
		t.Errorf("own: clock %p, want its own %p", els[2].clock, own)
	}
}

// sharedStops is a stopCounter whose total a test sets.
type sharedStops struct {
	mu    sync.Mutex
	total time.Duration
}

func (s *sharedStops) stoppedTotal() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// A stop of a clock that several leaders share counts once for each of
// them: each keeps what it has seen of the clock's total.
func TestStopOfASharedClockCountsForEveryLeader(t *testing.T) {
	stops := &sharedStops{}
	var els []*Elector[struct{}]
	for _, name := range []string{"a", "b"} {
		e := &Elector[struct{}]{name: name, stops: stops, state: fsm.Leader, epoch: time.Unix(1000, 0)}
		els = append(els, e)
	}
	stops.mu.Lock()
	stops.total = 5 * time.Second
	stops.mu.Unlock()
	for range 2 { // the second look finds nothing new
		for _, e := range els {
			e.mu.Lock()
			e.countStopsLocked()
			e.mu.Unlock()
		}
	}
	for _, e := range els {
		if want := time.Unix(995, 0); !e.epoch.Equal(want) {
			t.Errorf("%s: epoch %v, want %v (the stop counted once)", e.name, e.epoch, want)
		}
	}
}
