package redisstore

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/internal/latest"
)

// Watch delivers the current state of name first (an Absent event when there
// is no record), then every later change, in revision order.
//
// It subscribes to the name's channel (see Channel) before it reads the
// record, so no change falls between the two. Every CompareAndSwap publishes
// the whole new record on that channel from inside its script, so a change
// costs the watcher no extra round trip. A receiver that falls behind skips
// intermediate states and gets the latest, but never an older revision after
// a newer one. A record that cannot be read arrives as an event whose Err
// wraps [store.ErrCorruptRecord].
//
// Pub/Sub delivers at most once: a message published while the subscription
// is down is lost. So whenever the subscription breaks (the connection is
// cut, the server restarts, a health-check ping goes unanswered), Watch
// subscribes again with a backoff (see WithWatchBackoff) and then reads the
// record again, delivering it if it is newer than what was delivered (or an
// Absent event when the record is gone, as after a restart of a server that
// keeps no data). A follower can thus not stay stale after a missed message
// for longer than the reconnection takes.
//
// The channel is closed when ctx ends; until then two goroutines serve it,
// so cancel ctx when done. Watch returns an error when the name is bad
// ([store.ErrInvalidName]), ctx has ended, or the first subscription or the
// first read fails.
func (s *Store[M]) Watch(ctx context.Context, name string) (<-chan store.Event[M], error) {
	if err := s.check(ctx, "Watch", name); err != nil {
		return nil, err
	}
	w := &watch[M]{
		s:       s,
		name:    name,
		channel: s.channel(name),
		box:     latest.New[store.Event[M]](),
		out:     make(chan store.Event[M]),
	}
	ps, err := w.subscribe(ctx)
	if err != nil {
		return nil, fail("Watch", name, err)
	}
	ev, err := s.current(ctx, name)
	if err != nil {
		_ = ps.Close()
		return nil, fail("Watch", name, err)
	}
	w.ps = ps
	w.offer(ev)
	go w.receive(ctx, ps)
	go w.serve(ctx)
	return w.out, nil
}

// current reads the record of name as an event. Its error is that of the
// read itself (the server cannot be reached, ctx ended): a missing or
// corrupt record is an event.
func (s *Store[M]) current(ctx context.Context, name string) (store.Event[M], error) {
	rec, rev, err := s.Get(ctx, name)
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

// watch is one Watch: receive reads the subscription and offers states,
// serve hands the latest offered state to the receiver.
type watch[M any] struct {
	s       *Store[M]
	name    string
	channel string
	box     *latest.Box[store.Event[M]] // the state to deliver next
	out     chan store.Event[M]

	mu       sync.Mutex
	ps       *redis.PubSub  // the current subscription, closed by serve at the end
	closed   bool           // serve has ended: no new subscription may start
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
	w.box.Offer(ev)
}

// serve feeds the channel until ctx ends, then closes the subscription and
// the channel. While the receiver is not ready, a newer state replaces the
// one waiting to be sent.
func (w *watch[M]) serve(ctx context.Context) {
	defer close(w.out)
	defer w.shutdown()
	latest.Serve(ctx, w.box, w.out, func(ev store.Event[M]) store.Event[M] { return ev })
}

// shutdown closes the current subscription, which ends a blocked receive,
// and keeps any new one from starting.
func (w *watch[M]) shutdown() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	if w.ps != nil {
		_ = w.ps.Close()
		w.ps = nil
	}
}

// setPS makes ps the current subscription. It closes ps and returns false
// when the watch has ended.
func (w *watch[M]) setPS(ps *redis.PubSub) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		_ = ps.Close()
		return false
	}
	w.ps = ps
	return true
}

// dropPS closes ps and forgets it if it is the current subscription.
func (w *watch[M]) dropPS(ps *redis.PubSub) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ps == ps {
		w.ps = nil
	}
	_ = ps.Close()
}

// subscribe subscribes to the channel and waits for the server to confirm.
func (w *watch[M]) subscribe(ctx context.Context) (*redis.PubSub, error) {
	ps := w.s.client.Subscribe(ctx, w.channel)
	_, err := call(ctx, func() (struct{}, error) {
		for {
			msg, err := ps.ReceiveTimeout(ctx, w.s.cfg.healthCheck)
			if err != nil {
				return struct{}{}, err
			}
			if sub, ok := msg.(*redis.Subscription); ok && sub.Kind == "subscribe" {
				return struct{}{}, nil
			}
		}
	})
	if err != nil {
		_ = ps.Close()
		return nil, err
	}
	return ps, nil
}

// receive reads the subscription until ctx ends, offering every record
// published, and subscribes again (then reads the record again) whenever
// the subscription breaks.
func (w *watch[M]) receive(ctx context.Context, ps *redis.PubSub) {
	pinged := false // a ping is out and unanswered
	for {
		msg, err := ps.ReceiveTimeout(ctx, w.s.cfg.healthCheck)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			if isTimeout(err) && !pinged {
				pinged = true
				if ps.Ping(ctx) == nil {
					continue
				}
			}
			w.dropPS(ps)
			if ps = w.resubscribe(ctx); ps == nil {
				return
			}
			pinged = false
			continue
		}
		pinged = false
		var rerr error
		switch m := msg.(type) {
		case *redis.Message:
			rerr = w.handle(ctx, m.Payload)
		case *redis.Subscription:
			// go-redis subscribed again on a new connection by itself:
			// messages may have been lost meanwhile.
			if m.Kind == "subscribe" {
				rerr = w.reread(ctx)
			}
		}
		if rerr != nil && ctx.Err() == nil {
			// The record could not be read: the watch cannot know it is
			// current until a read succeeds.
			w.dropPS(ps)
			if ps = w.resubscribe(ctx); ps == nil {
				return
			}
		}
	}
}

// reread reads the record again and offers it.
func (w *watch[M]) reread(ctx context.Context) error {
	ev, err := w.s.current(ctx, w.name)
	if err != nil {
		return err
	}
	w.offer(ev)
	return nil
}

// handle offers the record published in payload. A payload that is not a
// record (it should not happen) makes the watch read the record instead; the
// error is that of this read.
func (w *watch[M]) handle(ctx context.Context, payload string) error {
	r, err := rawFromMessage(payload)
	if err != nil {
		return w.reread(ctx)
	}
	rec, rev, err := w.s.decode(w.name, &r)
	if err != nil {
		w.offer(store.Event[M]{Err: err})
		return nil
	}
	w.offer(store.Event[M]{Record: rec, Revision: rev})
	return nil
}

// resubscribe subscribes again and reads the record again, pausing between
// attempts with a growing backoff, until both succeed or ctx ends (then it
// returns nil).
func (w *watch[M]) resubscribe(ctx context.Context) *redis.PubSub {
	backoff := w.s.cfg.minBackoff
	timer := time.NewTimer(backoff)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		}
		ps, err := w.subscribe(ctx)
		if err == nil {
			if !w.setPS(ps) {
				return nil
			}
			if w.reread(ctx) == nil {
				return ps
			}
			w.dropPS(ps)
		}
		backoff = min(2*backoff, w.s.cfg.maxBackoff)
		timer.Reset(backoff)
	}
}

// isTimeout reports a read deadline that passed.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
