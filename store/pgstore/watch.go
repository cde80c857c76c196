package pgstore

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/tenure-go/tenure/store"
)

// defaultListenIdle is how long the listener waits for a notification
// before it checks, with a ping, that its connection still works.
const defaultListenIdle = 10 * time.Second

// listenIdle, in nanoseconds, replaces defaultListenIdle when not zero: for
// tests.
var listenIdle atomic.Int64

// defaultListenLinger is how long the listening connection stays open after
// the last watcher of its Store left; a watcher that comes meanwhile takes
// it as it is. While PostgreSQL ends a session that was listening, the
// commits that notify and the delivery of notifications wait: closing it
// as an elector stops, the moment its release has gone through, made the
// successor's acquiring write take 2–3 ms longer in 12 to 38 handovers of
// 100 (docs/benchmarks.md, 2026-12-03, ninth session). A second puts the
// close after the handover.
const defaultListenLinger = time.Second

// listenLinger, in nanoseconds, replaces defaultListenLinger when not zero:
// for tests.
var listenLinger atomic.Int64

// Timings of the listening connection.
const (
	// listenOpTimeout bounds connecting, LISTEN and the ping.
	listenOpTimeout = 5 * time.Second
	// Reconnection backs off from listenBackoffMin to listenBackoffMax.
	listenBackoffMin = 50 * time.Millisecond
	listenBackoffMax = 2 * time.Second
	// readBackoff is the pause before a watcher reads again after a failed
	// read.
	readBackoff = 200 * time.Millisecond
)

// hub is the one listening connection a Store keeps while it has watchers
// (and for defaultListenLinger after the last one left).
// It LISTENs on the Store's channel, and on each notification wakes the
// watchers of the name it carries; each watcher then delivers the record
// the notification carried, or reads it. After
// every (re)connection it wakes every watcher, so that a notification missed
// while the connection was down cannot leave one stale.
type hub[M any] struct {
	s *Store[M]

	mu       sync.Mutex
	subs     map[string][]*watch[M] // by name; mostly one each, so a slice (a map each cost about 200 bytes)
	nsubs    int
	gen      uint64             // the running listener's generation
	cancel   context.CancelFunc // stops the listener; nil when none runs
	up       bool               // LISTEN is in force
	failures int                // connection attempts that failed so far
	lastErr  error              // why the last attempt failed
	changed  chan struct{}      // closed and replaced when up or failures change
	linger   *time.Timer        // stops the listener once no watcher is left for a while; nil when not set
	lingers  uint64             // counts the lingers set: a timer of an earlier one does nothing
}

func newHub[M any](s *Store[M]) *hub[M] {
	return &hub[M]{s: s, subs: make(map[string][]*watch[M]), changed: make(chan struct{})}
}

// watch is one subscription.
type watch[M any] struct {
	name string
	// kick (capacity 1) wakes the watcher of Watch to read the record.
	kick chan struct{}
	// woken, set instead of kick for WatchFunc, is called (under hub.mu)
	// where kick would be sent on.
	woken func()

	mu       sync.Mutex
	notified int64 // the highest revision announced for the name
	force    bool  // read whatever the revision: the connection was down
	rec      *row  // the record at notified, if its notification carried it
}

// wake tells w that the record may have changed: to revision rev, or to an
// unknown one when rev is 0. r is the record at rev if the notification
// carried it (nil if not).
func (w *watch[M]) wake(rev int64, r *row) {
	w.mu.Lock()
	switch {
	case rev == 0:
		w.force = true
	case rev > w.notified:
		w.notified, w.rec = rev, r
	case rev == w.notified && w.rec == nil:
		w.rec = r
	}
	w.mu.Unlock()
	if w.woken != nil {
		w.woken()
		return
	}
	select {
	case w.kick <- struct{}{}:
	default: // a wake-up is already waiting; it will find this one
	}
}

// take returns what wake recorded and clears force and the record (the
// taker has it: kept, it would hold a payload per watch for nothing).
func (w *watch[M]) take() (notified int64, force bool, rec *row) {
	w.mu.Lock()
	defer w.mu.Unlock()
	notified, force, rec = w.notified, w.force, w.rec
	w.force, w.rec = false, nil
	return notified, force, rec
}

// add registers w and starts a listener if none runs. It returns the number
// of failed connection attempts so far, for wait.
func (h *hub[M]) add(w *watch[M]) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.subs[w.name] = append(h.subs[w.name], w)
	h.nsubs++
	if h.linger != nil {
		// The listener was about to stop: it serves w instead.
		h.linger.Stop()
		h.linger = nil
		h.lingers++
	}
	if h.cancel == nil {
		ctx, cancel := context.WithCancel(context.Background())
		h.gen++
		h.cancel, h.up = cancel, false
		go h.listen(ctx, h.gen)
	}
	return h.failures
}

// remove unregisters w and, when no watcher is left, stops the listener
// after defaultListenLinger unless a watcher comes meanwhile.
func (h *hub[M]) remove(w *watch[M]) {
	h.mu.Lock()
	defer h.mu.Unlock()
	set := h.subs[w.name]
	i := slices.Index(set, w)
	if i < 0 {
		return
	}
	if len(set) == 1 {
		delete(h.subs, w.name)
	} else {
		set[i] = set[len(set)-1]
		set[len(set)-1] = nil
		h.subs[w.name] = set[:len(set)-1]
	}
	h.nsubs--
	if h.nsubs == 0 && h.cancel != nil {
		d := time.Duration(listenLinger.Load())
		if d == 0 {
			d = defaultListenLinger
		}
		h.lingers++
		n := h.lingers
		h.linger = time.AfterFunc(d, func() { h.stopListening(n) })
	}
}

// stopListening stops the listener if the linger n is still the current
// one and not yet spent: no watcher came since it was set (add cancels it
// and counts it), so none is left and the listener it was set for runs.
func (h *hub[M]) stopListening(n uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n != h.lingers || h.linger == nil {
		return
	}
	h.linger = nil
	// The listener winds down by itself; from now on its generation is
	// stale and it changes nothing here.
	h.cancel()
	h.cancel, h.up = nil, false
	h.gen++
	h.broadcast()
}

// broadcast signals a change of up or failures. h.mu is held.
func (h *hub[M]) broadcast() {
	close(h.changed)
	h.changed = make(chan struct{})
}

// wait blocks until LISTEN is in force, a connection attempt after the
// failures-th has failed, or ctx ends.
func (h *hub[M]) wait(ctx context.Context, failures int) error {
	for {
		h.mu.Lock()
		up, n, err, ch := h.up, h.failures, h.lastErr, h.changed
		h.mu.Unlock()
		switch {
		case up:
			return nil
		case n > failures:
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}

// connected records that listener gen's LISTEN is in force (or no longer,
// or that an attempt failed with err) and, when it is, wakes every watcher:
// after a (re)connection, any could be stale.
func (h *hub[M]) connected(gen uint64, up bool, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if gen != h.gen {
		return
	}
	h.up = up
	if err != nil {
		h.failures++
		h.lastErr = err
	}
	h.broadcast()
	if up {
		for _, set := range h.subs {
			for _, w := range set {
				w.wake(0, nil)
			}
		}
	}
}

// notified wakes the watchers of name for revision rev, whose record r
// carries if not nil.
func (h *hub[M]) notified(name string, rev int64, r *row) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, w := range h.subs[name] {
		w.wake(rev, r)
	}
}

// parseNotification reads a payload of the Store's channel: "REVISION:NAME",
// or the whole record, "r1:REVISION:TOKEN:TRANSITIONS:LEASE_NS:ACQUIRED_US:
// RENEWED_US:METADATA_HEX:HOLDER_BYTES:HOLDER" followed by the name (times
// in microseconds since 1970, the metadata as it is stored). Anyone who may
// NOTIFY on the channel can send anything: ok is false for a payload that
// is not one of these, and a record that is not well formed is dropped (r
// is nil: a watcher reads the record). The record is only as good as a
// watch event: a hint, checked by whoever reads it (Store.record).
func parseNotification(payload string) (name string, rev int64, r *row, ok bool) {
	if rest, full := strings.CutPrefix(payload, "r1:"); full {
		f := strings.SplitN(rest, ":", 9)
		if len(f) != 9 {
			return "", 0, nil, false
		}
		rev, err := strconv.ParseInt(f[0], 10, 64)
		n, err2 := strconv.Atoi(f[7])
		if err != nil || err2 != nil || rev < 1 || n < 0 || n > len(f[8]) {
			return "", 0, nil, false
		}
		// The holder outlives the notification in the records made from
		// it (an elector keeps the last it saw): a copy, so that it does not
		// keep the whole payload alive.
		holder, name := strings.Clone(f[8][:n]), f[8][n:]
		acq, err := strconv.ParseInt(f[4], 10, 64)
		ren, err2 := strconv.ParseInt(f[5], 10, 64)
		meta, err3 := hex.DecodeString(f[6])
		if err != nil || err2 != nil || err3 != nil {
			return name, rev, nil, true
		}
		r := &row{
			holder: &holder, token: &f[1], revision: &f[0], durationNS: &f[3], transitions: &f[2], metadata: &meta,
			acquiredAt: pgtype.Timestamptz{Time: time.UnixMicro(acq), Valid: true},
			renewedAt:  pgtype.Timestamptz{Time: time.UnixMicro(ren), Valid: true},
		}
		return name, rev, r, true
	}
	revText, name, ok := strings.Cut(payload, ":")
	rev, err := strconv.ParseInt(revText, 10, 64)
	if !ok || err != nil {
		return "", 0, nil, false
	}
	return name, rev, nil, true
}

// listen keeps a LISTEN connection until ctx ends, reconnecting with
// backoff when it breaks.
func (h *hub[M]) listen(ctx context.Context, gen uint64) {
	backoff := listenBackoffMin
	for ctx.Err() == nil {
		conn, channel, err := h.connect(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			h.connected(gen, false, err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, listenBackoffMax)
			continue
		}
		backoff = listenBackoffMin
		h.connected(gen, true, nil)
		h.serve(ctx, conn, channel)
		closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = conn.Close(closeCtx)
		cancel()
		h.connected(gen, false, nil)
	}
}

// connect takes a connection out of the pool for good (so that LISTEN
// state never leaks back into it) and listens on the channel, which it
// returns.
func (h *hub[M]) connect(ctx context.Context) (*pgx.Conn, string, error) {
	// Watch and WatchFunc check the table first, which sets the channel.
	channel := h.s.Channel()
	if channel == "" {
		return nil, "", errors.New("pgstore: Watch: the channel is not known before the table is checked")
	}
	ctx, cancel := context.WithTimeout(ctx, listenOpTimeout)
	defer cancel()
	pc, err := h.s.pool.Acquire(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("pgstore: Watch: connecting: %w", err)
	}
	conn := pc.Hijack()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		_ = conn.Close(context.Background())
		return nil, "", fmt.Errorf("pgstore: Watch: LISTEN: %w", err)
	}
	return conn, channel, nil
}

// serve passes the notifications of channel on until the connection
// breaks or ctx ends.
func (h *hub[M]) serve(ctx context.Context, conn *pgx.Conn, channel string) {
	// One wait context serves until it expires, busy or not: a context per
	// notification (a timer each) was a sixth of what listening cost at
	// thousands of notifications a second. So a busy connection is pinged
	// once per idle period too, which costs nothing that matters.
	var w struct {
		ctx    context.Context
		cancel context.CancelFunc
	}
	defer func() {
		if w.cancel != nil {
			w.cancel()
		}
	}()
	for {
		if w.ctx == nil || w.ctx.Err() != nil {
			if w.cancel != nil {
				w.cancel()
			}
			idle := time.Duration(listenIdle.Load())
			if idle == 0 {
				idle = defaultListenIdle
			}
			w.ctx, w.cancel = context.WithTimeout(ctx, idle)
		}
		n, err := conn.WaitForNotification(w.ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			if !errors.Is(err, context.DeadlineExceeded) || conn.IsClosed() {
				return
			}
			// Quiet for a while: make sure the connection still works.
			pctx, cancel := context.WithTimeout(ctx, listenOpTimeout)
			err = conn.Ping(pctx)
			cancel()
			if err != nil {
				return
			}
			continue
		}
		if n == nil || n.Channel != channel {
			continue
		}
		name, rev, r, ok := parseNotification(n.Payload)
		if !ok {
			continue // not ours: someone else notified on the channel
		}
		h.notified(name, rev, r)
	}
}

// Watch delivers the current state of name first (an Absent event when
// there is no record), then every later change in revision order. A
// receiver that falls behind skips intermediate revisions and gets the
// latest, never an older revision after a newer one. A record that cannot be
// decoded arrives as an event with Err wrapping store.ErrCorruptRecord (and,
// as from Get, no revision).
//
// Changes are learned through LISTEN on Channel, over one connection per
// Store shared by all its watchers, taken from the pool. It is closed a
// second after the last watcher leaves, not at once: while the server ends
// a listening session, notifying commits wait, and an elector that stops
// releases its lease just before its watch ends, as its successor writes.
// A write announces its whole record when its metadata takes at most 2
// KiB, and watchers deliver it as it came, without a read; otherwise (or
// when the record in the notification does not check out) the watchers of
// its name read the record.
// Anyone who may NOTIFY on the channel can make up a notification: treat
// an event as a hint, as package lead does, and read before acting on it.
// When that connection breaks it is opened again, and then every watcher
// reads its record again, so that a change made while it was down is not
// missed.
//
// Watch returns once LISTEN is in force and the current state has been read,
// or with an error if the first connection attempt fails, if name is bad
// (store.ErrInvalidName), or if ctx ends first. The channel is closed when
// ctx ends; until then a goroutine serves it, so cancel ctx when done.
func (s *Store[M]) Watch(ctx context.Context, name string) (<-chan store.Event[M], error) {
	if err := s.check(ctx, "Watch", name); err != nil {
		return nil, err
	}
	if err := s.ensureSchema(ctx); err != nil {
		return nil, err
	}
	w := &watch[M]{name: name, kick: make(chan struct{}, 1)}
	failures := s.hub.add(w)
	if err := s.hub.wait(ctx, failures); err != nil {
		s.hub.remove(w)
		return nil, fmt.Errorf("pgstore: Watch %q: %w", name, withCtx(ctx, err))
	}
	// LISTEN is in force: a change from now on wakes w. Read the state as
	// of now; the wake-up that the connection gave w is spent on it.
	w.take()
	select {
	case <-w.kick:
	default:
	}
	rctx, cancel := context.WithTimeout(ctx, listenOpTimeout)
	first, err := s.observe(rctx, name)
	cancel()
	if err != nil {
		s.hub.remove(w)
		return nil, fmt.Errorf("pgstore: Watch %q: %w", name, withCtx(ctx, err))
	}
	out := make(chan store.Event[M])
	go s.serveWatch(ctx, w, first, out)
	return out, nil
}

// observation is one read of a name for a watcher.
type observation[M any] struct {
	ev  store.Event[M]
	rev int64 // the row's revision, even when ev hides it; 0 when absent
}

// observe reads the state of name as an event.
func (s *Store[M]) observe(ctx context.Context, name string) (observation[M], error) {
	r, found, err := s.read(ctx, name)
	if err != nil {
		return observation[M]{}, err
	}
	if !found {
		return observation[M]{ev: store.Event[M]{Absent: true}}, nil
	}
	rec, rev, err := s.record(name, &r)
	if err != nil {
		return observation[M]{ev: store.Event[M]{Err: err}, rev: r.rev()}, nil
	}
	return observation[M]{ev: store.Event[M]{Record: rec, Revision: rev}, rev: int64(rev)}, nil
}

// serveWatch feeds one watcher's channel until ctx ends. While the receiver
// is not ready, a newer state replaces the one waiting to be sent.
func (s *Store[M]) serveWatch(ctx context.Context, w *watch[M], first observation[M], out chan<- store.Event[M]) {
	defer close(out)
	defer s.hub.remove(w)
	var (
		lastRev    = first.rev       // the highest revision delivered or waiting
		lastAbsent = first.ev.Absent // the latest state is absence
		ev         = first.ev
		send       = out // nil while there is nothing to send
		due        bool  // the record must be read again
		retry      <-chan time.Time
	)
	for {
		select {
		case <-ctx.Done():
			return
		case send <- ev:
			send = nil
			continue
		case <-w.kick:
			notified, force, r := w.take()
			if !force && !due && notified > lastRev && r != nil {
				// The notification carried the record: no read. A record
				// that does not check out is left to a read.
				if rec, rev, err := s.record(w.name, r); err == nil && int64(rev) == notified {
					ev, send, lastRev, lastAbsent = store.Event[M]{Record: rec, Revision: rev}, out, notified, false
					continue
				}
			}
			if force || notified > lastRev {
				due = true
			}
		case <-retry:
			retry = nil
		}
		if !due || retry != nil {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, listenOpTimeout)
		o, err := s.observe(rctx, w.name)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			retry = time.After(readBackoff) // due stays set
			continue
		}
		due = false
		switch {
		case o.ev.Absent:
			if !lastAbsent {
				ev, send, lastAbsent = o.ev, out, true
			}
		case o.rev > lastRev:
			ev, send, lastRev, lastAbsent = o.ev, out, o.rev, false
		}
	}
}

var _ store.FuncWatcher[struct{}] = (*Store[struct{}])(nil)

// WatchFunc delivers what Watch would send, under the same rules, by
// calling fn: fn(ev, true) for each event, then fn(Event{}, false) once
// when ctx ends. It holds no goroutine while nothing happens: the
// listener calls fn with a record its notification carried, and a read
// the watch needs (a notification without the record, a reconnection) is
// made by a goroutine that lives only for that read (after a failed read,
// a timer starts the next). Calls never overlap; fn must return quickly
// and must not call the Store. Like Watch, it returns once LISTEN is in
// force and the current state has been read (the first call, with that
// state, comes before it returns), with the same errors, or one wrapping
// store.ErrNilArgument for a nil fn; fn is then never called.
func (s *Store[M]) WatchFunc(ctx context.Context, name string, fn func(ev store.Event[M], ok bool)) error {
	if err := s.check(ctx, "WatchFunc", name); err != nil {
		return err
	}
	if fn == nil {
		return fmt.Errorf("pgstore: WatchFunc %q: %w: fn is nil", name, store.ErrNilArgument)
	}
	if err := s.ensureSchema(ctx); err != nil {
		return err
	}
	w := &watch[M]{name: name}
	f := &funcWatch[M]{s: s, w: w, fn: fn}
	f.startRead = func() { go f.read(ctx) }
	w.woken = f.woken
	failures := s.hub.add(w)
	if err := s.hub.wait(ctx, failures); err != nil {
		s.hub.remove(w)
		return fmt.Errorf("pgstore: WatchFunc %q: %w", name, withCtx(ctx, err))
	}
	// LISTEN is in force: as in Watch, the wake-up the connection gave w
	// is spent on the read below.
	f.mu.Lock()
	w.take()
	f.kicked = false
	f.mu.Unlock()
	rctx, cancel := context.WithTimeout(ctx, listenOpTimeout)
	first, err := s.observe(rctx, name)
	cancel()
	if err != nil {
		s.hub.remove(w)
		return fmt.Errorf("pgstore: WatchFunc %q: %w", name, withCtx(ctx, err))
	}
	f.start(first)
	context.AfterFunc(ctx, func() {
		s.hub.remove(w)
		f.end()
	})
	return nil
}

// funcWatch is one WatchFunc: it does what serveWatch does for a Watch,
// in whoever wakes it (the listener, under hub.mu) and in a goroutine
// that lives for one read.
type funcWatch[M any] struct {
	s  *Store[M]
	w  *watch[M]
	fn func(ev store.Event[M], ok bool)
	// startRead starts a goroutine that reads the record (read, with the
	// watch's ctx).
	startRead func()

	mu         sync.Mutex
	started    bool        // the first state was delivered
	ended      bool        // fn was called with false, or never will be
	kicked     bool        // a wake-up waits for the watch to start or a read to end
	lastRev    int64       // the highest revision delivered
	lastAbsent bool        // the latest state delivered is absence
	due        bool        // the record must be read again
	reading    bool        // a read runs
	retry      *time.Timer // set while a failed read waits to be retried
}

// start delivers first, the state read when the watch started, and the
// wake-ups that came meanwhile.
func (f *funcWatch[M]) start(first observation[M]) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.started, f.lastRev, f.lastAbsent = true, first.rev, first.ev.Absent
	f.fn(first.ev, true)
	if f.kicked {
		f.kicked = false
		f.kick()
	}
	f.maybeRead()
}

// woken handles a wake-up of w, as serveWatch one received from w.kick:
// at once, unless the watch has not started or a read runs (then when it
// starts, or when the read ends).
func (f *funcWatch[M]) woken() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ended {
		return
	}
	if !f.started || f.reading {
		f.kicked = true
		return
	}
	f.kick()
	f.maybeRead()
}

// kick delivers the record a notification carried, or marks the record
// due for a read. f.mu is held.
func (f *funcWatch[M]) kick() {
	notified, force, r := f.w.take()
	if !force && !f.due && notified > f.lastRev && r != nil {
		// The notification carried the record: no read. A record that
		// does not check out is left to a read.
		if rec, rev, err := f.s.record(f.w.name, r); err == nil && int64(rev) == notified {
			f.lastRev, f.lastAbsent = notified, false
			f.fn(store.Event[M]{Record: rec, Revision: rev}, true)
			return
		}
	}
	if force || notified > f.lastRev {
		f.due = true
	}
}

// maybeRead starts a read when one is due, and none runs or waits for its
// retry. f.mu is held.
func (f *funcWatch[M]) maybeRead() {
	if f.ended || !f.due || f.reading || f.retry != nil {
		return
	}
	f.reading = true
	f.startRead()
}

// read reads the record and delivers it if it is new; after a failure a
// timer starts the next read.
func (f *funcWatch[M]) read(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, listenOpTimeout)
	o, err := f.s.observe(rctx, f.w.name)
	cancel()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reading = false
	if f.ended || ctx.Err() != nil {
		return
	}
	if err != nil {
		f.retry = time.AfterFunc(readBackoff, f.retried) // due stays set
	} else {
		f.due = false
		switch {
		case o.ev.Absent:
			if !f.lastAbsent {
				f.lastAbsent = true
				f.fn(o.ev, true)
			}
		case o.rev > f.lastRev:
			f.lastRev, f.lastAbsent = o.rev, false
			f.fn(o.ev, true)
		}
	}
	if f.kicked {
		f.kicked = false
		f.kick()
	}
	f.maybeRead()
}

// retried lets the read that failed be made again.
func (f *funcWatch[M]) retried() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.retry = nil
	f.maybeRead()
}

// end calls fn with false, once, if the watch started; fn is never called
// again.
func (f *funcWatch[M]) end() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ended {
		return
	}
	f.ended = true
	if f.retry != nil {
		f.retry.Stop()
		f.retry = nil
	}
	if f.started {
		f.fn(store.Event[M]{}, false)
	}
}
