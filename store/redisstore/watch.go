package redisstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/internal/fnsink"
	"github.com/tenure-go/tenure/store/internal/latest"
)

// Watch delivers the current state of name first (an Absent event when there
// is no record), then every later change, in revision order.
//
// Every watch of a Store goes through the Store's [Hub]: one Pub/Sub
// connection for all names (and for all Stores given the same Hub with
// [WithHub]). Watch subscribes the name's channel (see Channel) on it and
// waits for the server to confirm before it reads the record, so no change
// falls between the two. Every CompareAndSwap publishes the whole new record
// on that channel from inside its script, so a change costs the watcher no
// extra round trip. A receiver that falls behind skips intermediate states
// and gets the latest, but never an older revision after a newer one, and
// never holds up the other watches. A record that cannot be read arrives as
// an event whose Err wraps [store.ErrCorruptRecord].
//
// Pub/Sub delivers at most once: a message published while the subscription
// is down is lost. So whenever the connection breaks (it is cut, the server
// restarts, a health-check ping goes unanswered), the Hub subscribes again
// with a backoff (see WithWatchBackoff) and then reads every watched record
// again, delivering it if it is newer than what was delivered (or an Absent
// event when the record is gone, as after a restart of a server that keeps
// no data). A follower can thus not stay stale after a missed message for
// longer than the reconnection takes.
//
// The channel is closed when ctx ends; until then one goroutine serves it,
// so cancel ctx when done. Watch returns an error when the name is bad
// ([store.ErrInvalidName]), ctx has ended, the first subscription fails or
// is not confirmed within twice the health-check period
// ([ErrWatchTimeout]), or the first read fails.
func (s *Store[M]) Watch(ctx context.Context, name string) (<-chan store.Event[M], error) {
	if err := s.check(ctx, "Watch", name); err != nil {
		return nil, err
	}
	box := latest.New[store.Event[M]]()
	w, err := s.join(ctx, "Watch", name, box)
	if err != nil {
		return nil, err
	}
	out := make(chan store.Event[M])
	go w.serve(ctx, box, out)
	return out, nil
}

var _ store.FuncWatcher[struct{}] = (*Store[struct{}])(nil)

// WatchFunc delivers what Watch would send, under the same rules, by
// calling fn: fn(ev, true) for each event, then fn(Event{}, false) once
// when ctx ends. It needs no goroutine of its own: the Hub's reading
// goroutine calls fn as it hands a change to the watches (and decodes the
// record for each), so fn must return quickly and must not call the
// Store; calls never overlap. Like Watch, it returns once the name's
// channel is subscribed and its record read (the first call, with that
// state or a newer one, comes before it returns), and returns the same
// errors, or one wrapping [store.ErrNilArgument] for a nil fn; fn is then
// never called. It implements [store.FuncWatcher].
func (s *Store[M]) WatchFunc(ctx context.Context, name string, fn func(ev store.Event[M], ok bool)) error {
	if err := s.check(ctx, "WatchFunc", name); err != nil {
		return err
	}
	if fn == nil {
		return fail("WatchFunc", name, fmt.Errorf("%w: fn is nil", store.ErrNilArgument))
	}
	sink := fnsink.New(fn)
	w, err := s.join(ctx, "WatchFunc", name, sink)
	if err != nil {
		return err
	}
	sink.Start()
	context.AfterFunc(ctx, func() {
		s.hub.remove(w, w.channel)
		sink.End()
	})
	return nil
}

// join starts a watch of name for op that offers its events to to: it
// joins the Hub, waits until the name's channel is subscribed, and offers
// the record read then.
func (s *Store[M]) join(ctx context.Context, op, name string, to offerer[M]) (*watch[M], error) {
	w := &watch[M]{
		s:       s,
		name:    name,
		channel: s.channel(name),
		to:      to,
	}
	e := s.hub.add(w, w.channel, s.key(name))
	timer := time.NewTimer(satDouble(s.hub.healthCheck))
	defer timer.Stop()
	select {
	case <-e.ready:
	case <-ctx.Done():
		s.hub.remove(w, w.channel)
		return nil, fail(op, name, ctx.Err())
	case <-timer.C:
		s.hub.remove(w, w.channel)
		return nil, fail(op, name, ErrWatchTimeout)
	}
	if e.err != nil {
		s.hub.remove(w, w.channel)
		return nil, fail(op, name, e.err)
	}
	ev, err := s.current(ctx, name)
	if err != nil {
		s.hub.remove(w, w.channel)
		return nil, fail(op, name, err)
	}
	w.offer(ev)
	return w, nil
}

// satDouble returns 2*d, or the largest duration when that overflows.
func satDouble(d time.Duration) time.Duration {
	if d > math.MaxInt64/2 {
		return math.MaxInt64
	}
	return 2 * d
}

// current reads the record of name as an event. Its error is that of the
// read itself (the server cannot be reached, ctx ended): a missing or
// corrupt record is an event.
func (s *Store[M]) current(ctx context.Context, name string) (store.Event[M], error) {
	rec, rev, err := s.Get(ctx, name)
	return event(rec, rev, err)
}

// event turns the result of a read into an event, or the error of a read
// that did not happen.
func event[M any](rec lease.Record[M], rev lease.Revision, err error) (store.Event[M], error) {
	switch {
	case err == nil:
		return store.Event[M]{Record: rec, Revision: rev}, nil
	case errors.Is(err, store.ErrNotFound):
		return store.Event[M]{Absent: true}, nil
	case errors.Is(err, store.ErrCorruptRecord):
		return store.Event[M]{Err: err}, nil
	default:
		return store.Event[M]{}, err
	}
}

// The kinds of state a watch has offered last.
const (
	offeredNothing = iota
	offeredRecord
	offeredAbsent
	offeredError
)

// offerer takes the events of a watch: a Box that serve empties (Watch),
// or a Sink that calls the function of WatchFunc.
type offerer[M any] interface{ Offer(ev store.Event[M]) }

// watch is one Watch or WatchFunc: the Hub offers it states, and it passes
// on to its offerer those that are new.
type watch[M any] struct {
	s       *Store[M]
	name    string
	channel string
	to      offerer[M]

	mu       sync.Mutex
	last     int            // the kind of state offered last
	lastRev  lease.Revision // the highest revision offered
	lastErrS string         // the text of the error offered last
}

// offer makes ev the next state to deliver, unless it would repeat the last
// state offered or go back to an older revision.
func (w *watch[M]) offer(ev store.Event[M]) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case ev.Err != nil:
		if w.last == offeredError && w.lastErrS == ev.Err.Error() {
			return
		}
		w.last, w.lastErrS = offeredError, ev.Err.Error()
	case ev.Absent:
		if w.last == offeredAbsent {
			return
		}
		w.last = offeredAbsent
	default:
		if ev.Revision <= w.lastRev {
			return
		}
		w.last, w.lastRev = offeredRecord, ev.Revision
	}
	w.to.Offer(ev)
}

// serve feeds out from box, which w offers to, until ctx ends, then leaves
// the Hub and closes out. While the receiver is not ready, a newer state
// replaces the one waiting to be sent.
func (w *watch[M]) serve(ctx context.Context, box *latest.Box[store.Event[M]], out chan<- store.Event[M]) {
	defer close(out)
	defer w.s.hub.remove(w, w.channel)
	latest.Serve(ctx, box, out, func(ev store.Event[M]) store.Event[M] { return ev })
}

// deliver offers the record published in payload. It returns false when
// the payload is not a record (it should not happen: anyone may publish),
// and the Hub then reads the record instead.
func (w *watch[M]) deliver(payload string) bool {
	r, err := rawFromMessage(payload)
	if err != nil {
		return false
	}
	rec, rev, err := w.s.decode(w.name, &r)
	if err != nil {
		w.offer(store.Event[M]{Err: err})
		return true
	}
	// The holder outlives the message in the records made from it (an
	// elector keeps the last it saw): a copy, so that it does not keep the
	// whole payload alive.
	rec.Holder = strings.Clone(rec.Holder)
	w.offer(store.Event[M]{Record: rec, Revision: rev})
	return true
}

// offerRead offers the record the Hub read again.
func (w *watch[M]) offerRead(m map[string]string, err error) {
	rec, rev, err := w.s.fromHash(w.name, m, err)
	if ev, err := event(rec, rev, err); err == nil {
		w.offer(ev)
	}
}

// isTimeout reports a read deadline that passed.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
