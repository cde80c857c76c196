package fnsink

import (
	"slices"
	"testing"
)

type call struct {
	v  int
	ok bool
}

func record() (*[]call, func(int, bool)) {
	var calls []call
	return &calls, func(v int, ok bool) { calls = append(calls, call{v, ok}) }
}

func TestHeldUntilStarted(t *testing.T) {
	calls, fn := record()
	s := New(fn)
	s.Offer(1)
	s.Offer(2) // replaces 1
	if len(*calls) != 0 {
		t.Fatalf("called before Start: %v", *calls)
	}
	s.Start()
	s.Start()
	s.Offer(3)
	s.End()
	s.End()
	s.Offer(4)
	s.Start()
	want := []call{{2, true}, {3, true}, {0, false}}
	if !slices.Equal(*calls, want) {
		t.Fatalf("calls %v, want %v", *calls, want)
	}
}

func TestStartedWithNothingHeld(t *testing.T) {
	calls, fn := record()
	s := New(fn)
	s.Start()
	s.End()
	if want := []call{{0, false}}; !slices.Equal(*calls, want) {
		t.Fatalf("calls %v, want %v", *calls, want)
	}
}

// A Sink ended before it was started never calls fn.
func TestEndedBeforeStart(t *testing.T) {
	calls, fn := record()
	s := New(fn)
	s.Offer(1)
	s.End()
	s.Start()
	s.Offer(2)
	if len(*calls) != 0 {
		t.Fatalf("calls %v, want none", *calls)
	}
}
