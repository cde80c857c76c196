package redisstore

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-go/tenure/internal/nilarg"
	"github.com/tenure-go/tenure/store"
)

// Hub is the one Pub/Sub connection through which the watches of one or
// more Stores on the same client receive their changes. Every Store has a
// hub of its own unless it is given a shared one with [WithHub]: then all
// the Stores given that Hub, whatever their prefix or metadata type, watch
// through a single connection.
//
// The connection exists only while something is watched: the first Watch
// opens it, and it is closed when the last watch ends, so a Hub needs no
// Close. While it is open, one goroutine reads it and hands every change to
// the watches of its channel without waiting for any of them (a watch that
// falls behind keeps only the newest state). When the connection breaks
// (the server restarts, the connection is cut, a health-check ping goes
// unanswered), the Hub subscribes again to every watched channel on a new
// connection, with a backoff, and then reads every watched record again,
// pipelined, so no watch misses a change made while it was cut off.
//
// A Hub is safe for concurrent use.
type Hub struct {
	client      redis.UniversalClient
	healthCheck time.Duration
	minBackoff  time.Duration
	maxBackoff  time.Duration

	// wmu orders the commands written to the subscription: whoever writes
	// takes it before releasing mu, so the server sees SUBSCRIBE and
	// UNSUBSCRIBE in the order the entries changed under mu.
	wmu sync.Mutex

	mu      sync.Mutex
	entries map[string]*entry // by channel
	ps      *redis.PubSub     // the current subscription; nil while none is up
	gen     uint64            // the current reading loop; bumped when one starts
	stop    context.CancelFunc
	seq     uint64              // the last barrier number handed out
	pending map[uint64][]*entry // entries waiting for the barrier of that number
}

// entry is one watched channel and the watches on it.
type entry struct {
	channel string
	key     string
	subs    []subscriber // mostly one: a slice (a map each cost about 200 bytes)

	// ready is closed once the channel is subscribed (confirmed) or the
	// first subscription failed (err is then set).
	ready     chan struct{}
	confirmed bool
	err       error
	sync      uint64 // the barrier that confirms it, while not confirmed
}

// subscriber is one watch as the Hub sees it.
type subscriber interface {
	// deliver offers a published payload; false means it is not a record,
	// and the record must be read instead.
	deliver(payload string) bool
	// offerRead offers the reply of an HGETALL of the key (err is that of
	// the command, a WRONGTYPE reply say).
	offerRead(m map[string]string, err error)
}

// The default watch timings.
const (
	defaultHealthCheck = 10 * time.Second
	defaultMinBackoff  = 50 * time.Millisecond
	defaultMaxBackoff  = 2 * time.Second
	// rereadBatch is how many records one pipeline reads after a
	// reconnection.
	rereadBatch = 512
	// syncPrefix starts the payload of the pings that mark a barrier.
	syncPrefix = "tenure-sync:"
)

// NewHub returns a Hub for client, to share between Stores with [WithHub].
// Of the options, only [WithWatchHealthCheck] and [WithWatchBackoff] apply
// to a Hub; the others are ignored. It fails on a nil client (an error
// wrapping [store.ErrNilArgument]).
func NewHub(client redis.UniversalClient, opts ...Option) (*Hub, error) {
	if nilarg.IsNil(client) {
		return nil, fmt.Errorf("redisstore: NewHub: %w: client is nil", store.ErrNilArgument)
	}
	cfg := defaultConfig()
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	return newHub(client, cfg), nil
}

func newHub(client redis.UniversalClient, cfg config) *Hub {
	return &Hub{
		client:      client,
		healthCheck: cfg.healthCheck,
		minBackoff:  cfg.minBackoff,
		maxBackoff:  max(cfg.maxBackoff, cfg.minBackoff),
		entries:     make(map[string]*entry),
		pending:     make(map[uint64][]*entry),
	}
}

// sameClient reports whether a and b are the same client.
func sameClient(a, b redis.UniversalClient) bool {
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	return ta == tb && ta != nil && ta.Comparable() && any(a) == any(b)
}

// add registers sub as a watch of channel, whose record is at key, and
// returns its entry: once e.ready is closed, the channel is subscribed
// (unless e.err is set) and the record may be read.
func (h *Hub) add(sub subscriber, channel, key string) *entry {
	h.mu.Lock()
	if e := h.entries[channel]; e != nil {
		e.subs = append(e.subs, sub)
		h.mu.Unlock()
		return e
	}
	e := &entry{channel: channel, key: key, subs: []subscriber{sub}, ready: make(chan struct{})}
	h.entries[channel] = e
	if h.stop == nil {
		// Nothing was watched: start a reading loop, whose first
		// connection subscribes to e.
		h.gen++
		ctx, cancel := context.WithCancel(context.Background())
		h.stop = cancel
		go h.run(ctx, h.gen)
		h.mu.Unlock()
		return e
	}
	ps := h.ps
	if ps == nil {
		// The loop is between connections: its next one subscribes to e.
		h.mu.Unlock()
		return e
	}
	h.seq++
	e.sync = h.seq
	h.pending[h.seq] = append(h.pending[h.seq], e)
	seq := h.seq
	h.wmu.Lock()
	h.mu.Unlock()
	defer h.wmu.Unlock()
	// The writes are the hub's, not the caller's: one watcher's cancelled
	// context must not break the connection of all. The client's
	// WriteTimeout bounds them.
	wctx := context.Background()
	if ps.Subscribe(wctx, channel) != nil || ps.Ping(wctx, syncPrefix+strconv.FormatUint(seq, 10)) != nil {
		// go-redis may have reconnected without e's channel: start over
		// on a new connection, which subscribes to every entry.
		_ = ps.Close()
	}
	return e
}

// remove ends the watch sub of channel. The last watch of a channel
// unsubscribes from it; the last of all closes the connection.
func (h *Hub) remove(sub subscriber, channel string) {
	h.mu.Lock()
	e := h.entries[channel]
	if e == nil {
		h.mu.Unlock()
		return
	}
	i := slices.Index(e.subs, sub)
	if i < 0 {
		h.mu.Unlock()
		return
	}
	last := len(e.subs) - 1
	e.subs[i] = e.subs[last]
	e.subs[last] = nil
	e.subs = e.subs[:last]
	if len(e.subs) > 0 {
		h.mu.Unlock()
		return
	}
	delete(h.entries, channel)
	ps := h.ps
	if len(h.entries) == 0 {
		h.stop()
		h.stop, h.ps = nil, nil
		clear(h.pending)
		h.mu.Unlock()
		if ps != nil {
			_ = ps.Close()
		}
		return
	}
	if ps == nil {
		h.mu.Unlock()
		return
	}
	h.wmu.Lock()
	h.mu.Unlock()
	defer h.wmu.Unlock()
	if ps.Unsubscribe(context.Background(), channel) != nil {
		_ = ps.Close()
	}
}

// current reports whether gen is the running loop; mu must be held.
func (h *Hub) current(gen uint64) bool { return h.stop != nil && h.gen == gen }

// run is the reading loop of generation gen: it connects, reads until the
// connection breaks, and connects again with a backoff, until ctx ends.
func (h *Hub) run(ctx context.Context, gen uint64) {
	backoff := h.minBackoff
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		ps, err := h.connect(ctx, gen)
		if ps == nil && err == nil {
			return
		}
		connected := err == nil
		if connected {
			err = h.receive(ctx, gen, ps)
			if ctx.Err() != nil {
				return
			}
			backoff = h.minBackoff
		} else {
			backoff = min(2*backoff, h.maxBackoff)
		}
		h.broken(gen, ps, err, !connected)
		timer.Reset(backoff)
	}
}

// connect opens a new subscription to every watched channel, followed by a
// barrier ping: once its answer arrives, receive confirms the new entries
// and reads the others again. It returns nil and no error when the loop
// is to end.
func (h *Hub) connect(ctx context.Context, gen uint64) (*redis.PubSub, error) {
	h.mu.Lock()
	if !h.current(gen) || ctx.Err() != nil {
		h.mu.Unlock()
		return nil, nil
	}
	ps := h.client.Subscribe(ctx) // no channel: no I/O yet
	h.ps = ps
	h.seq++
	seq := h.seq
	clear(h.pending)
	channels := make([]string, 0, len(h.entries))
	all := make([]*entry, 0, len(h.entries))
	for ch, e := range h.entries {
		channels = append(channels, ch)
		all = append(all, e)
		e.sync = seq
	}
	h.pending[seq] = all
	h.wmu.Lock()
	h.mu.Unlock()
	defer h.wmu.Unlock()
	var err error
	for i := 0; i < len(channels) && err == nil; i += rereadBatch {
		err = ps.Subscribe(ctx, channels[i:min(i+rereadBatch, len(channels))]...)
	}
	if err == nil {
		err = ps.Ping(ctx, syncPrefix+strconv.FormatUint(seq, 10))
	}
	if err != nil {
		return ps, err
	}
	return ps, nil
}

// broken handles the end of subscription ps: it is closed, and when it
// could not even be set up (failed), the entries never confirmed fail
// with err (their Watch returns it). The others wait for the next
// connection, which subscribes them all again.
func (h *Hub) broken(gen uint64, ps *redis.PubSub, err error, failed bool) {
	if ps != nil {
		_ = ps.Close()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.current(gen) {
		return
	}
	if h.ps == ps {
		h.ps = nil
	}
	clear(h.pending)
	if !failed {
		return
	}
	for ch, e := range h.entries {
		if !e.confirmed {
			e.err = err
			close(e.ready)
			delete(h.entries, ch)
		}
	}
	if len(h.entries) == 0 {
		h.stop()
		h.stop = nil
	}
}

// receive reads ps until it breaks or ctx ends, and returns why.
func (h *Hub) receive(ctx context.Context, gen uint64, ps *redis.PubSub) error {
	pinged := false       // a health-check ping is out and unanswered
	var subs []subscriber // dispatch's scratch, reused for every message
	for {
		msg, err := ps.ReceiveTimeout(ctx, h.healthCheck)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			if isTimeout(err) && !pinged {
				pinged = true
				h.wmu.Lock()
				err = ps.Ping(ctx)
				h.wmu.Unlock()
				if err == nil {
					continue
				}
			}
			return err
		}
		pinged = false
		var reread []*entry
		switch m := msg.(type) {
		case *redis.Message:
			var e *entry
			if e, subs = h.dispatch(m.Channel, m.Payload, subs); e != nil {
				reread = []*entry{e}
			}
		case *redis.Subscription:
			// A channel subscribed again, by go-redis on a new connection
			// after a failed write: changes may have been missed.
			if m.Kind == "subscribe" {
				h.mu.Lock()
				if e := h.entries[m.Channel]; e != nil && e.confirmed {
					reread = []*entry{e}
				}
				h.mu.Unlock()
			}
		case *redis.Pong:
			reread = h.synced(gen, m.Payload)
		}
		if len(reread) > 0 {
			if err := h.reread(ctx, reread); err != nil {
				return err
			}
		}
	}
}

// dispatch hands a published payload to the watches of channel. It
// returns the entry when its record must be read instead, and scratch
// (emptied, its capacity kept) for the next call.
func (h *Hub) dispatch(channel, payload string, scratch []subscriber) (*entry, []subscriber) {
	subs := scratch[:0]
	h.mu.Lock()
	e := h.entries[channel]
	if e != nil {
		subs = append(subs, e.subs...)
	}
	h.mu.Unlock()
	bad := false
	for _, s := range subs {
		if !s.deliver(payload) {
			bad = true
		}
	}
	clear(subs) // hold no watch that ends after this message
	if bad {
		return e, subs[:0]
	}
	return nil, subs[:0]
}

// synced handles the answer to a barrier ping: the entries waiting for it
// are now subscribed. It confirms the new ones and returns the others,
// whose records must be read again.
func (h *Hub) synced(gen uint64, payload string) []*entry {
	n, ok := strings.CutPrefix(payload, syncPrefix)
	if !ok {
		return nil
	}
	seq, err := strconv.ParseUint(n, 10, 64)
	if err != nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.current(gen) {
		return nil
	}
	var reread []*entry
	for _, e := range h.pending[seq] {
		if h.entries[e.channel] != e || e.sync != seq {
			continue // removed, or waiting for a later barrier
		}
		if e.confirmed {
			reread = append(reread, e)
			continue
		}
		e.confirmed = true
		close(e.ready)
	}
	delete(h.pending, seq)
	return reread
}

// reread reads the records of entries again, pipelined, and offers them to
// their watches. Its error is that of a command that could not run.
func (h *Hub) reread(ctx context.Context, entries []*entry) error {
	for len(entries) > 0 {
		batch := entries[:min(rereadBatch, len(entries))]
		entries = entries[len(batch):]
		cmds := make([]*redis.MapStringStringCmd, len(batch))
		_, err := call(ctx, func() ([]redis.Cmder, error) {
			return h.client.Pipelined(ctx, func(p redis.Pipeliner) error {
				for i, e := range batch {
					cmds[i] = p.HGetAll(ctx, e.key)
				}
				return nil
			})
		})
		if err != nil && ctx.Err() != nil {
			return err
		}
		for i, e := range batch {
			m, err := cmds[i].Result()
			if err != nil && !isWrongType(err) {
				return err
			}
			h.mu.Lock()
			subs := slices.Clone(e.subs)
			h.mu.Unlock()
			for _, s := range subs {
				s.offerRead(m, err)
			}
		}
	}
	return nil
}
