package redisstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"strings"
	"time"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/watchutil"
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
// extra round trip; a batch of swaps publishes its records as one message
// on the prefix's batch channel, which the Hub subscribes too, and whose
// every record reaches the watches of its own name as if it had been
// published on the name's channel. A receiver that falls behind skips intermediate states
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
	return watchutil.Watch(ctx, s.hub.w, s.watchKey(name), s.watcher("Watch", name))
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
	return watchutil.WatchFunc(ctx, s.hub.w, s.watchKey(name), s.watcher("WatchFunc", name), fn)
}

// watchKey is what the Hub watches for name.
func (s *Store[M]) watchKey(name string) watchKey {
	return watchKey{channel: s.channel(name)}
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

// watchState is what one watch remembers of what it offered, in one
// place: a watch touches it for every record heard, and 10,000 watches'
// states do not stay in a processor's cache.
type watchState[M any] struct {
	last     int            // the kind of state offered last
	lastRev  lease.Revision // the highest revision offered, or the one a read showed below it
	lastErrS string         // the text of the error offered last
	readLast bool           // the record offered last came from a read, and no record heard since was new
	asked    bool           // a read is asked for (a record heard went back) and has not come
	meta     metaCache[M]   // the metadata heard last
	holder   string         // the holder heard last, a copy of its own
}

// next reports whether ev, read from the store (read) or heard, is new,
// neither repeating the last state offered nor going back to an older
// revision, and if so takes it as offered. ask reports that a record
// heard went back below the revision offered last without a read to
// explain it: anyone may publish a record at a revision the store never
// reached, or the store went back, and a read tells which. A read is what
// the store holds, so one below the revision offered is offered: without
// that, one forged record at the highest revision would silence the
// watch until it ended.
func (w *watchState[M]) next(ev store.Event[M], read bool) (_ store.Event[M], ok, ask bool) {
	// A read below the revision offered is offered only when this watch
	// asked for it: the Hub's read for another reason (a reconnection,
	// another watcher's ask) can reach a watch that joins after its own
	// newer first read, and is then old news.
	wasAsked := w.asked
	if read {
		w.asked = false
	}
	switch {
	case ev.Err != nil:
		if w.last == offeredError && w.lastErrS == ev.Err.Error() {
			return ev, false, false
		}
		w.last, w.lastErrS = offeredError, ev.Err.Error()
	case ev.Absent:
		if w.last == offeredAbsent {
			return ev, false, false
		}
		w.last = offeredAbsent
	case ev.Revision == w.lastRev, ev.Revision < w.lastRev && (!read || !wasAsked):
		// Heard before a read that showed a newer revision, it is old
		// news; heard after a newer record, it is not.
		ask = ev.Revision < w.lastRev && !read && !w.readLast && !w.asked
		w.asked = w.asked || ask
		return ev, false, ask
	default:
		w.last, w.lastRev, w.readLast = offeredRecord, ev.Revision, read
	}
	return ev, true, false
}

// watcher is how one Watch or WatchFunc of name for op reads its record
// and turns what the Hub receives into events: it passes on those that
// are new (watchState.next).
func (s *Store[M]) watcher(op, name string) watchutil.Watcher[msg, store.Event[M], store.Event[M]] {
	w := &watchState[M]{last: offeredNothing}
	return watchutil.Watcher[msg, store.Event[M], store.Event[M]]{
		Read: func(ctx context.Context) (msg, error) {
			ev, err := s.current(ctx, name)
			if err != nil {
				return msg{}, fail(op, name, err)
			}
			return msg{first: ev}, nil
		},
		Next: func(m msg) (store.Event[M], bool) {
			switch {
			case m.first != nil:
				ev, _ := m.first.(store.Event[M])
				ev, ok, _ := w.next(ev, true)
				return ev, ok
			case m.heard:
				rec, rev, err := s.decodeCached(name, &m.raw, &w.meta)
				if err != nil {
					ev, ok, _ := w.next(store.Event[M]{Err: err}, false)
					return ev, ok
				}
				// The holder outlives the message in the records made
				// from it (an elector keeps the last it saw): a copy, so
				// that it does not keep the whole payload alive, made
				// once for the renewals of one holder.
				if rec.Holder != w.holder {
					w.holder = strings.Clone(rec.Holder)
				}
				rec.Holder = w.holder
				ev, ok, ask := w.next(store.Event[M]{Record: rec, Revision: rev}, false)
				if ask {
					s.hub.askRead(watchKey{channel: s.channel(name)})
				}
				return ev, ok
			}
			rec, rev, err := s.fromHash(name, m.hash, m.err)
			ev, err := event(rec, rev, err)
			if err != nil {
				return ev, false
			}
			ev, ok, _ := w.next(ev, true)
			return ev, ok
		},
		Conv: func(ev store.Event[M]) store.Event[M] { return ev },
		Fail: func(err error) error { return fail(op, name, err) },
	}
}

// isTimeout reports a read deadline that passed.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
