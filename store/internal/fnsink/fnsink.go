// Package fnsink delivers a watch's events by calling a function, as
// store.FuncWatcher asks, for the stores whose watches start in steps (a
// subscription, then a read of the current state) while events may
// already come in: a Sink holds what is offered until the watch is
// started, then calls the function with it and with each later event,
// and ends it once.
package fnsink

import "sync"

// Sink calls fn with the events offered to it, one call at a time. Make
// it with New. Its methods are safe for concurrent use; they call fn under
// the Sink's lock, so fn must not call them.
type Sink[E any] struct {
	mu      sync.Mutex
	fn      func(ev E, ok bool)
	started bool
	ended   bool
	held    E    // the newest event offered before Start
	holding bool // held is set
}

// New returns a Sink that delivers to fn once started.
func New[E any](fn func(ev E, ok bool)) *Sink[E] { return &Sink[E]{fn: fn} }

// Offer delivers ev: fn(ev, true) once the Sink is started; before, ev is
// held in place of any event held, to be delivered by Start (so, as with
// a watchutil.Box, only the newest waits); after End, it is dropped.
func (s *Sink[E]) Offer(ev E) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.ended:
	case s.started:
		s.fn(ev, true)
	default:
		s.held, s.holding = ev, true
	}
}

// Start delivers the event held, if any, and every later one as it is
// offered. It does nothing once the Sink is started or ended.
func (s *Sink[E]) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.ended {
		return
	}
	s.started = true
	if s.holding {
		ev := s.held
		var zero E
		s.held, s.holding = zero, false
		s.fn(ev, true)
	}
}

// End calls fn(zero, false) once if the Sink was started, and fn never
// again: a Sink ended before it was started (a watch that failed to
// start) never calls fn at all.
func (s *Sink[E]) End() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	s.ended = true
	var zero E
	s.held, s.holding = zero, false
	if s.started {
		s.fn(zero, false)
	}
}
