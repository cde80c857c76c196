package watchutil

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/tenure-go/tenure/store"
)

// ErrEnd, wrapped in an error a Source returns from Connect or Stream
// (see End), ends the Hub's connection for good: every watcher of the Hub
// ends (its channel closes, its function is called with false), and a
// Watch waiting for its key returns the error. The next Watch starts
// afresh.
var ErrEnd = errors.New("watchutil: the source gave up")

// End returns err marked to end the Hub's connection for good: it wraps
// err and ErrEnd, with err's text.
func End(err error) error { return endError{err} }

type endError struct{ error }

func (e endError) Unwrap() error        { return e.error }
func (e endError) Is(target error) bool { return target == ErrEnd }

// The default pauses between connection attempts.
const (
	DefaultMinBackoff = 50 * time.Millisecond
	DefaultMaxBackoff = 2 * time.Second
)

// A Source is what a Hub watches through: one connection at a time, opened
// while something is watched, that reports the changes of the keys
// watched. Its states T are what the store's watchers filter and decode
// (a record as received, say): they are untrusted input, checked by the
// watchers' Next. The Hub calls Connect and Stream from one goroutine.
type Source[K comparable, T any] interface {
	// Connect opens a connection through which the changes of keys (and,
	// once it is up, of every key) will reach Stream. a says which attempt
	// this is.
	Connect(ctx context.Context, a Attempt[K, T]) (Conn[K, T], error)
	// Reread reads the current states of keys again and hands each to
	// f.Put (or ends its watchers with f.End when it cannot). Its error
	// breaks the connection that asked for the read.
	Reread(ctx context.Context, keys []K, f *Feed[K, T]) error
}

// Attempt describes a call to Source.Connect. A run lasts from the first
// watcher of a Hub to the end of its last one (and its linger).
type Attempt[K comparable, T any] struct {
	// Keys are those watched when the attempt starts.
	Keys []K
	// Prev is the last connection of this run that came up; nil for the
	// first attempt of the run.
	Prev Conn[K, T]
	// Failures counts the attempts of this run that failed since a
	// connection last came up.
	Failures int
}

// A Conn is one connection of a Source.
type Conn[K comparable, T any] interface {
	// Stream hands what the connection receives to f until the
	// connection breaks or ctx ends, and returns why. A connection that
	// watches every key at once calls f.ReadyAll when it is up; one that
	// subscribes key by key (see Subscriber) calls f.Ready for the keys
	// its server has confirmed.
	Stream(ctx context.Context, f *Feed[K, T]) error
	// Close releases the connection, once Stream has returned.
	Close()
}

// A Subscriber is a Conn that subscribes key by key: the Hub subscribes
// the keys watched while it is open, and unsubscribes those no longer
// watched. Its calls are ordered as the Hub's watchers came and went; they
// must not block for long, and a failure should break the connection
// (whose successor subscribes every key). A key is not ready for its
// watchers until Stream reports it with Feed.Ready.
type Subscriber[K comparable] interface {
	Subscribe(key K)
	Unsubscribe(key K)
}

// HubOptions are the settings of a Hub; the zero value is the default.
type HubOptions struct {
	// MinBackoff and MaxBackoff bound the pause before a connection
	// attempt after one that failed or a connection that ended without
	// any progress: it starts at MinBackoff and doubles up to MaxBackoff.
	// Zero means DefaultMinBackoff and DefaultMaxBackoff.
	MinBackoff, MaxBackoff time.Duration
	// Linger keeps the connection open that long after the last watcher
	// left; a watcher that comes meanwhile takes it as it is. Zero closes
	// it at once.
	Linger time.Duration
	// ReadyTimeout, when not zero, bounds how long a Watch waits for its
	// key to be ready; it then returns ErrReadyTimeout (or, when that is
	// nil, context.DeadlineExceeded).
	ReadyTimeout    time.Duration
	ErrReadyTimeout error
}

// Hub fans the states of keys out to watchers: from a Source, over one
// connection that it opens while something is watched, reconnects with a
// backoff when it breaks, and closes after the last watcher left (and the
// linger); or, without a Source, from Publish. Writers never wait for
// watchers: a watcher that falls behind skips to the newest state. Make it
// with NewHub and watch with Watch or WatchFunc. It is safe for concurrent
// use.
type Hub[K comparable, T any] struct {
	src  Source[K, T]
	opts HubOptions

	// wmu orders the calls to a Subscriber: whoever makes one takes it
	// before releasing mu, so they follow the order the keys changed in.
	wmu sync.Mutex

	mu      sync.Mutex
	keys    map[K]*keyState[T]
	nsubs   int
	run     *run[K, T] // nil while none
	linger  *time.Timer
	lingers uint64 // counts lingers set: the timer of an earlier one does nothing
}

// keyState is one watched key.
type keyState[T any] struct {
	subs    []member[T] // mostly one: a slice (a map each cost about 200 bytes)
	ready   chan struct{}
	isReady bool
	err     error // why the key failed before it was ready
}

// run is one life of a Hub's connection.
type run[K comparable, T any] struct {
	cancel context.CancelFunc
	sub    Subscriber[K] // the current connection, when it subscribes key by key
	live   bool          // a connection watching every key came up
}

// member is one watcher of a key. offer never blocks (unless a WatchFunc
// callback does); end ends the watch. A member drops what is offered until
// reading is called (the read that follows sees it), holds what comes
// while it reads, and delivers from first, which it is given the state
// read.
type member[T any] interface {
	offer(v T)
	reading()
	first(v T)
	end()
}

// NewHub returns a Hub over src, or one fed by Publish when src is nil.
func NewHub[K comparable, T any](src Source[K, T], opts HubOptions) *Hub[K, T] {
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = DefaultMinBackoff
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = DefaultMaxBackoff
	}
	opts.MaxBackoff = max(opts.MaxBackoff, opts.MinBackoff)
	return &Hub[K, T]{src: src, opts: opts, keys: map[K]*keyState[T]{}}
}

// A Watcher says how one watch reads, filters and decodes the states of
// its key.
type Watcher[T, U, E any] struct {
	// Read reads the current state once the key is ready, so that a
	// change after it reaches the watcher. Its error is returned by Watch
	// as it is. For a Hub fed by Publish, Read runs in Watch, under the
	// lock the store publishes under.
	Read func(ctx context.Context) (T, error)
	// Next is offered every state of the key in the order received: it
	// returns what to deliver and whether to deliver it (false for a state
	// not newer than one delivered, say). Calls to it never overlap.
	Next func(v T) (U, bool)
	// Conv turns what Next kept into the event delivered, as it is
	// delivered (so a watcher that falls behind skips decoding).
	Conv func(u U) E
	// Fail, when set, wraps the errors of Watch that are not Read's.
	Fail func(err error) error
}

// Every returns a Watcher that reads current and delivers every state,
// turned into an event by conv when it is delivered: for a Hub fed by
// Publish.
func Every[T, E any](current T, conv func(v T) E) Watcher[T, T, E] {
	return Watcher[T, T, E]{
		Read: func(context.Context) (T, error) { return current, nil },
		Next: func(v T) (T, bool) { return v, true },
		Conv: conv,
	}
}

// Watch returns a channel that delivers the state w.Read finds once key
// is ready, then each later state Next keeps, skipping to the newest when
// the receiver falls behind. The channel is closed when ctx ends or the
// Hub ends the watch, and the watcher forgotten; until then a goroutine
// serves it. Watch returns an error wrapping store.ErrNilArgument for a
// nil argument or a Hub not made by NewHub, ctx's error when it ends
// first, the error of the first connection that fails while key waits to
// be ready, and Read's.
func Watch[K comparable, T, U, E any](ctx context.Context, h *Hub[K, T], key K, w Watcher[T, U, E]) (<-chan E, error) {
	if err := check(ctx, h, w, "Watch"); err != nil {
		return nil, err
	}
	m := &boxMember[T, U]{next: w.Next, box: NewBox[U]()}
	// A Hub fed by Publish never ends a watch: ctx alone does.
	sctx, stop := ctx, context.CancelFunc(func() {})
	if h.src != nil {
		sctx, stop = context.WithCancel(ctx)
	}
	m.cancel = stop
	if err := h.join(ctx, key, m, w.Read, w.Fail); err != nil {
		stop()
		return nil, err
	}
	out := make(chan E)
	go func() {
		defer close(out) // after the watcher is forgotten
		defer h.remove(key, m)
		Serve(sctx, m.box, out, w.Conv)
	}()
	return out, nil
}

// WatchFunc delivers what Watch would send by calling fn instead, with no
// goroutine: fn(ev, true) with the state read before WatchFunc returns,
// then with each later state, called by whoever hands it to the Hub
// (Publish, or the connection's goroutine), then fn(zero, false) once when
// ctx ends or the Hub ends the watch. Calls never overlap; fn must return
// quickly and must not call the Hub (nor the store). It returns the errors
// of Watch, or one wrapping store.ErrNilArgument for a nil fn; fn is then
// never called.
func WatchFunc[K comparable, T, U, E any](ctx context.Context, h *Hub[K, T], key K, w Watcher[T, U, E], fn func(ev E, ok bool)) error {
	if err := check(ctx, h, w, "WatchFunc"); err != nil {
		return err
	}
	if fn == nil {
		return fmt.Errorf("%w: watchutil: WatchFunc: fn is nil", store.ErrNilArgument)
	}
	// No context of its own (a child context and its AfterFunc cost
	// hundreds of bytes per watch): ctx's end and the Hub's end of the
	// watch both finish it, once.
	m := &funcMember[K, T, U, E]{h: h, key: key, next: w.Next, conv: w.Conv, fn: fn}
	if err := h.join(ctx, key, m, w.Read, w.Fail); err != nil {
		return err
	}
	unregister := context.AfterFunc(ctx, m.finish)
	m.mu.Lock()
	m.unregister = unregister
	ended := m.ended
	m.mu.Unlock()
	if ended {
		// The Hub ended the watch before its first state was delivered:
		// finish it now that it was.
		go m.finish()
	}
	return nil
}

func check[K comparable, T, U, E any](ctx context.Context, h *Hub[K, T], w Watcher[T, U, E], op string) error {
	switch {
	case ctx == nil:
		return fmt.Errorf("%w: watchutil: %s: ctx is nil", store.ErrNilArgument, op)
	case h == nil || h.keys == nil:
		return fmt.Errorf("%w: watchutil: %s: the Hub is nil or not made by NewHub", store.ErrNilArgument, op)
	case w.Read == nil || w.Next == nil || w.Conv == nil:
		return fmt.Errorf("%w: watchutil: %s: the Watcher's Read, Next or Conv is nil", store.ErrNilArgument, op)
	}
	return ctx.Err()
}

// join adds m as a watcher of key, waits until key is ready, and offers
// it the state read then. On an error m is forgotten; the caller ends it.
func (h *Hub[K, T]) join(ctx context.Context, key K, m member[T], read func(context.Context) (T, error), wrap func(error) error) error {
	ks := h.add(key, m)
	fail := func(err error) error {
		h.remove(key, m)
		if wrap != nil {
			err = wrap(err)
		}
		return err
	}
	if ks != nil {
		var timeout <-chan time.Time
		if d := h.opts.ReadyTimeout; d > 0 {
			t := time.NewTimer(d)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-ks.ready:
			if ks.err != nil {
				return fail(ks.err)
			}
		case <-ctx.Done():
			return fail(ctx.Err())
		case <-timeout:
			if h.opts.ErrReadyTimeout != nil {
				return fail(h.opts.ErrReadyTimeout)
			}
			return fail(context.DeadlineExceeded)
		}
	}
	m.reading()
	v, err := read(ctx)
	if err != nil {
		h.remove(key, m)
		return err
	}
	m.first(v)
	return nil
}

// add registers m as a watcher of key, starting a run if none is, and
// returns key's state when m must wait for it to be ready (nil when it is).
func (h *Hub[K, T]) add(key K, m member[T]) *keyState[T] {
	h.mu.Lock()
	h.nsubs++
	if h.linger != nil {
		h.linger.Stop()
		h.linger = nil
		h.lingers++
	}
	ks := h.keys[key]
	if ks != nil {
		ks.subs = append(ks.subs, m)
		ready := ks.isReady
		h.mu.Unlock()
		if ready {
			return nil
		}
		return ks
	}
	if h.src == nil {
		// Publish feeds every key: ready at once.
		h.keys[key] = &keyState[T]{subs: []member[T]{m}, isReady: true}
		h.mu.Unlock()
		return nil
	}
	ks = &keyState[T]{subs: []member[T]{m}, ready: make(chan struct{})}
	h.keys[key] = ks
	r := h.run
	switch {
	case r == nil:
		ctx, cancel := context.WithCancel(context.Background())
		r = &run[K, T]{cancel: cancel}
		h.run = r
		go h.loop(ctx, r)
	case r.live:
		ks.isReady = true
		h.mu.Unlock()
		return nil
	case r.sub != nil:
		sub := r.sub
		h.wmu.Lock()
		h.mu.Unlock()
		defer h.wmu.Unlock()
		sub.Subscribe(key)
		return ks
	}
	h.mu.Unlock()
	return ks
}

// remove forgets m. The last watcher of a key unsubscribes it; the last
// of all ends the run, after the linger.
func (h *Hub[K, T]) remove(key K, m member[T]) {
	h.mu.Lock()
	ks := h.keys[key]
	if ks == nil {
		h.mu.Unlock()
		return
	}
	i := slices.Index(ks.subs, m)
	if i < 0 {
		h.mu.Unlock()
		return
	}
	last := len(ks.subs) - 1
	ks.subs[i] = ks.subs[last]
	ks.subs[last] = nil
	ks.subs = ks.subs[:last]
	h.nsubs--
	if len(ks.subs) > 0 {
		h.mu.Unlock()
		return
	}
	delete(h.keys, key)
	r := h.run
	if h.nsubs == 0 && r != nil {
		if d := h.opts.Linger; d > 0 {
			h.lingers++
			n := h.lingers
			h.linger = time.AfterFunc(d, func() { h.stopLingering(n) })
		} else {
			h.stopLocked()
		}
	}
	if r == nil || r.sub == nil || h.run != r {
		h.mu.Unlock()
		return
	}
	sub := r.sub
	h.wmu.Lock()
	h.mu.Unlock()
	defer h.wmu.Unlock()
	sub.Unsubscribe(key)
}

// stopLingering ends the run if the linger n is still the current one:
// no watcher came since it was set.
func (h *Hub[K, T]) stopLingering(n uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n != h.lingers || h.linger == nil {
		return
	}
	h.linger = nil
	h.stopLocked()
}

// stopLocked ends the current run. h.mu is held.
func (h *Hub[K, T]) stopLocked() {
	if h.run != nil {
		h.run.cancel()
		h.run = nil
	}
}

// loop is run r: it connects, streams until the connection breaks, and
// connects again with a backoff, until its ctx ends.
func (h *Hub[K, T]) loop(ctx context.Context, r *run[K, T]) {
	backoff := h.opts.MinBackoff
	var a Attempt[K, T]
	for {
		keys, ok := h.snapshot(r)
		if !ok {
			return
		}
		a.Keys = keys
		c, err := h.src.Connect(ctx, a)
		if ctx.Err() != nil {
			if err == nil {
				c.Close()
			}
			return
		}
		if err != nil {
			a.Failures++
			if !h.failed(r, err) || !sleep(ctx, backoff) {
				return
			}
			backoff = min(2*backoff, h.opts.MaxBackoff)
			continue
		}
		a.Prev, a.Failures = c, 0
		f := &Feed[K, T]{h: h, r: r, src: h.src}
		h.connected(r, c, keys)
		err = c.Stream(ctx, f)
		h.disconnected(r)
		c.Close()
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, ErrEnd):
			h.end(r, err)
			return
		case f.progress:
			backoff = h.opts.MinBackoff
		default:
			if !sleep(ctx, backoff) {
				return
			}
			backoff = min(2*backoff, h.opts.MaxBackoff)
		}
	}
}

// sleep waits d, or returns false when ctx ends first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// snapshot returns the keys watched, or false when r is not the current
// run.
func (h *Hub[K, T]) snapshot(r *run[K, T]) ([]K, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.run != r {
		return nil, false
	}
	keys := make([]K, 0, len(h.keys))
	for k := range h.keys {
		keys = append(keys, k)
	}
	return keys, true
}

// connected makes c the connection of r. A Subscriber is given the keys
// that came since keys was taken, and told of those gone since.
func (h *Hub[K, T]) connected(r *run[K, T], c Conn[K, T], keys []K) {
	sub, ok := c.(Subscriber[K])
	if !ok {
		return
	}
	h.mu.Lock()
	if h.run != r {
		h.mu.Unlock()
		return
	}
	r.sub = sub
	var gone []K
	for _, k := range keys {
		if h.keys[k] == nil {
			gone = append(gone, k)
		}
	}
	var came []K
	for k := range h.keys {
		if !slices.Contains(keys, k) {
			came = append(came, k)
		}
	}
	h.wmu.Lock()
	h.mu.Unlock()
	defer h.wmu.Unlock()
	for _, k := range came {
		sub.Subscribe(k)
	}
	for _, k := range gone {
		sub.Unsubscribe(k)
	}
}

// disconnected records that r has no connection.
func (h *Hub[K, T]) disconnected(r *run[K, T]) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r.sub = nil
}

// failed handles a connection attempt that failed with err: the keys
// waiting to be ready fail with it, and so does the run when err wraps
// ErrEnd or no key is left. It reports whether the run goes on.
func (h *Hub[K, T]) failed(r *run[K, T], err error) bool {
	if errors.Is(err, ErrEnd) {
		h.end(r, err)
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.run != r {
		return false
	}
	for k, ks := range h.keys {
		if !ks.isReady {
			ks.err = err
			close(ks.ready)
			h.nsubs -= len(ks.subs)
			delete(h.keys, k)
		}
	}
	if len(h.keys) == 0 {
		h.stopLocked()
		return false
	}
	return true
}

// end ends run r with err: the keys waiting to be ready fail with it, and
// every watcher ends.
func (h *Hub[K, T]) end(r *run[K, T], err error) {
	h.mu.Lock()
	if h.run != r {
		h.mu.Unlock()
		return
	}
	h.stopLocked()
	var ended []member[T]
	for k, ks := range h.keys {
		if !ks.isReady {
			ks.err = err
			close(ks.ready)
		}
		ended = append(ended, ks.subs...)
		delete(h.keys, k)
	}
	h.nsubs = 0
	h.mu.Unlock()
	for _, m := range ended {
		m.end()
	}
}

// Publish offers v, the new state of key, to every watcher of key, in the
// caller's goroutine. A store without a Source calls it (and Watch) under
// the lock that orders its writes, so that watchers see them in order.
// Publish on a nil Hub does nothing.
func (h *Hub[K, T]) Publish(key K, v T) {
	if h == nil {
		return
	}
	h.mu.Lock()
	ks := h.keys[key]
	if ks == nil {
		h.mu.Unlock()
		return
	}
	if len(ks.subs) == 1 {
		m := ks.subs[0]
		h.mu.Unlock()
		m.offer(v)
		return
	}
	subs := slices.Clone(ks.subs)
	h.mu.Unlock()
	for _, m := range subs {
		m.offer(v)
	}
}

// Watchers returns how many watchers key has now.
func (h *Hub[K, T]) Watchers(key K) int {
	if h == nil {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if ks := h.keys[key]; ks != nil {
		return len(ks.subs)
	}
	return 0
}

// Feed is how a connection hands its Hub what it learns. Its methods are
// called from Stream (and Source.Reread).
type Feed[K comparable, T any] struct {
	h        *Hub[K, T]
	r        *run[K, T]
	src      Source[K, T]
	progress bool
}

// Put offers v, the new state of key, to the watchers of key. It counts
// as progress.
func (f *Feed[K, T]) Put(key K, v T) {
	f.progress = true
	f.h.Publish(key, v)
}

// Progress records that the connection works, so that the next attempt
// after it breaks starts without a pause.
func (f *Feed[K, T]) Progress() { f.progress = true }

// Ready reports keys subscribed on the connection: a key whose watchers
// wait becomes ready (they read its state themselves), and one that was
// ready is read again (the connection may have missed changes). It returns
// the error of that read. It counts as progress.
func (f *Feed[K, T]) Ready(ctx context.Context, keys ...K) error {
	f.progress = true
	return f.ready(ctx, keys, false)
}

// ReadyAll is Ready for every key watched, and for every key watched from
// now on: for a connection that watches every key at once.
func (f *Feed[K, T]) ReadyAll(ctx context.Context) error {
	f.progress = true
	return f.ready(ctx, nil, true)
}

func (f *Feed[K, T]) ready(ctx context.Context, keys []K, all bool) error {
	h := f.h
	h.mu.Lock()
	if h.run != f.r {
		h.mu.Unlock()
		return nil
	}
	if all {
		f.r.live = true
		keys = keys[:0]
		for k := range h.keys {
			keys = append(keys, k)
		}
	}
	var reread []K
	for _, k := range keys {
		ks := h.keys[k]
		switch {
		case ks == nil:
		case ks.isReady:
			reread = append(reread, k)
		default:
			ks.isReady = true
			close(ks.ready)
		}
	}
	h.mu.Unlock()
	return f.Reread(ctx, reread...)
}

// Reread reads keys again through the Source and offers what it reads.
func (f *Feed[K, T]) Reread(ctx context.Context, keys ...K) error {
	if len(keys) == 0 {
		return nil
	}
	return f.src.Reread(ctx, keys, f)
}

// End ends the watches of key: their channels close, their functions are
// called with false.
func (f *Feed[K, T]) End(key K) {
	h := f.h
	h.mu.Lock()
	var subs []member[T]
	if ks := h.keys[key]; ks != nil {
		subs = slices.Clone(ks.subs)
	}
	h.mu.Unlock()
	for _, m := range subs {
		m.end()
	}
}

// gate is what a member was offered before its first state: nothing
// (state gateClosed, offers dropped), what comes during its read (held,
// in order), then nothing more (open: offers pass).
type gate[T any] struct {
	state int
	held  []T
}

const (
	gateClosed = iota
	gateHolding
	gateOpen
)

// pass reports whether v is to be delivered now, holding it if it comes
// during the read. The member's lock is held.
func (g *gate[T]) pass(v T) bool {
	switch g.state {
	case gateHolding:
		g.held = append(g.held, v)
	case gateOpen:
		return true
	}
	return false
}

// open returns v, the state read, and what came during the read, to
// deliver in that order; from now on offers pass. The member's lock is
// held.
func (g *gate[T]) open(v T) []T {
	vs := append([]T{v}, g.held...)
	g.state, g.held = gateOpen, nil
	return vs
}

// boxMember is a watcher of Watch: what Next keeps waits in a Box, which
// a goroutine serves.
type boxMember[T, U any] struct {
	cancel context.CancelFunc
	next   func(T) (U, bool)
	box    *Box[U]

	mu   sync.Mutex
	gate gate[T]
}

func (b *boxMember[T, U]) offer(v T) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.gate.pass(v) {
		b.put(v)
	}
}

func (b *boxMember[T, U]) put(v T) {
	if u, ok := b.next(v); ok {
		b.box.Offer(u)
	}
}

func (b *boxMember[T, U]) reading() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.gate.state = gateHolding
}

func (b *boxMember[T, U]) first(v T) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, v := range b.gate.open(v) {
		b.put(v)
	}
}

func (b *boxMember[T, U]) end() { b.cancel() }

// funcMember is a watcher of WatchFunc: it calls fn itself, under its
// lock, from first on; nothing is delivered after stop.
type funcMember[K comparable, T, U, E any] struct {
	h    *Hub[K, T]
	key  K
	next func(T) (U, bool)
	conv func(U) E
	fn   func(E, bool)

	mu         sync.Mutex
	gate       gate[T]
	stopped    bool
	ended      bool        // the Hub ended the watch
	unregister func() bool // undoes the AfterFunc of the watch's ctx
}

func (f *funcMember[K, T, U, E]) offer(v T) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.stopped && f.gate.pass(v) {
		f.put(v)
	}
}

func (f *funcMember[K, T, U, E]) put(v T) {
	if u, ok := f.next(v); ok {
		f.fn(f.conv(u), true)
	}
}

func (f *funcMember[K, T, U, E]) reading() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gate.state = gateHolding
}

func (f *funcMember[K, T, U, E]) first(v T) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return
	}
	for _, v := range f.gate.open(v) {
		f.put(v)
	}
}

// end: the Hub ended the watch. It is finished from another goroutine,
// as the end of a context would be, once its first state was delivered
// (WatchFunc finishes it otherwise).
func (f *funcMember[K, T, U, E]) end() {
	f.mu.Lock()
	started := f.gate.state == gateOpen || f.stopped
	f.ended = true
	f.mu.Unlock()
	if started {
		go f.finish()
	}
}

// finish forgets the watch and stops it; the second call does nothing.
func (f *funcMember[K, T, U, E]) finish() {
	f.h.remove(f.key, f)
	f.stop()
}

// stop calls fn with false once, if the watch started, and fn never again.
func (f *funcMember[K, T, U, E]) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return
	}
	f.stopped = true
	if f.unregister != nil {
		f.unregister()
	}
	f.gate.held = nil
	if f.gate.state == gateOpen {
		var e E
		f.fn(e, false)
	}
}
