package redisstore

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-go/tenure/internal/nilarg"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/watchutil"
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
	w           *watchutil.Hub[watchKey, msg]

	// The records whose watches asked for a read (see watchState.next),
	// read once the message that made them ask is handed on.
	askedAny atomic.Bool
	askedMu  sync.Mutex
	asked    []watchKey
}

// askRead asks the Hub to read k's record again, once it has handed on the
// message it is handing on. The watches of one key that ask together get
// one read, which reaches each of them.
func (h *Hub) askRead(k watchKey) {
	h.askedMu.Lock()
	defer h.askedMu.Unlock()
	if !slices.Contains(h.asked, k) {
		h.asked = append(h.asked, k)
	}
	h.askedAny.Store(true)
}

// takeAsked returns the records asked to be read again, and forgets them.
func (h *Hub) takeAsked() []watchKey {
	if !h.askedAny.Load() {
		return nil
	}
	h.askedMu.Lock()
	defer h.askedMu.Unlock()
	keys := h.asked
	h.asked = nil
	h.askedAny.Store(false)
	return keys
}

// watchKey is one watched record, by its channel: the Hub hashes it for
// every record heard, so it holds no second string.
type watchKey struct{ channel string }

// key returns the key of the record.
func (k watchKey) key() string { return strings.TrimSuffix(k.channel, channelSuffix) }

// msg is one state of a watched record as the Hub learns it: a record
// published on its channel (raw, when heard), the reply of an HGETALL
// (read), or, for the watch that starts, the event its Store read (first,
// a store.Event[M]). The raw record is held by value: a Hub hands on
// thousands a second, and a pointer would cost each an allocation.
type msg struct {
	raw   raw
	heard bool
	read  bool
	hash  map[string]string
	err   error // the HGETALL's error (a WRONGTYPE reply, say)
	first any
}

// The default watch timings.
const (
	defaultHealthCheck = 10 * time.Second
	defaultMinBackoff  = watchutil.DefaultMinBackoff
	defaultMaxBackoff  = watchutil.DefaultMaxBackoff
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
	h := &Hub{client: client, healthCheck: cfg.healthCheck}
	h.w = watchutil.NewHub[watchKey, msg](h, watchutil.HubOptions{
		MinBackoff:      cfg.minBackoff,
		MaxBackoff:      cfg.maxBackoff,
		ReadyTimeout:    satDouble(cfg.healthCheck),
		ErrReadyTimeout: ErrWatchTimeout,
	})
	return h
}

// sameClient reports whether a and b are the same client.
func sameClient(a, b redis.UniversalClient) bool {
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	return ta == tb && ta != nil && ta.Comparable() && any(a) == any(b)
}

// subscription is one Pub/Sub connection of a Hub. Its channels are
// subscribed each with a barrier: a ping whose answer, once it arrives,
// says the server has the subscriptions made before it.
type subscription struct {
	h  *Hub
	ps *redis.PubSub

	mu       sync.Mutex
	channels map[string]subscribed // the keys subscribed, by channel
	batches  map[string]int        // the batch channels subscribed, with their keys' count
	seq      uint64                // the last barrier number handed out
	pending  map[uint64][]watchKey
}

// subscribed is a key subscribed on a connection.
type subscribed struct {
	k         watchKey
	barrier   uint64 // the barrier that confirms it
	confirmed bool   // by that barrier, on this connection
}

// Connect opens a new subscription to the channels of every key (see
// add), followed by a barrier ping: once its answer arrives, Stream
// reports the keys ready.
func (h *Hub) Connect(ctx context.Context, a watchutil.Attempt[watchKey, msg]) (watchutil.Conn[watchKey, msg], error) {
	s := &subscription{
		h: h, ps: h.client.Subscribe(ctx),
		channels: make(map[string]subscribed, len(a.Keys)),
		batches:  make(map[string]int),
		pending:  make(map[uint64][]watchKey),
	}
	channels := make([]string, 0, 2*len(a.Keys)+1)
	s.mu.Lock()
	for _, k := range a.Keys {
		channels = s.add(channels, k)
	}
	seq := s.mark(a.Keys...)
	s.mu.Unlock()
	var err error
	for i := 0; i < len(channels) && err == nil; i += rereadBatch {
		err = s.ps.Subscribe(ctx, channels[i:min(i+rereadBatch, len(channels))]...)
	}
	if err == nil {
		err = s.ps.Ping(ctx, syncPrefix+strconv.FormatUint(seq, 10))
	}
	if err != nil {
		_ = s.ps.Close()
		return nil, err
	}
	return s, nil
}

// add records k as subscribed and appends to channels those to subscribe
// for it: its channel, its hears-batches channel (which tells the batch
// script that this subscriber hears the batch channel, so that it need not
// publish the record on the name's channel too), and the batch channel of
// its prefix if no key subscribed it yet. s.mu is held.
func (s *subscription) add(channels []string, k watchKey) []string {
	if sk, ok := s.channels[k.channel]; ok && sk.k == k {
		return channels
	}
	s.channels[k.channel] = subscribed{k: k}
	channels = append(channels, k.channel, k.channel+hearsBatchesSuffix)
	if b := batchOf(k.channel); b != "" {
		if s.batches[b]++; s.batches[b] == 1 {
			channels = append(channels, b)
		}
	}
	return channels
}

// drop forgets k and returns the channels to unsubscribe for it. s.mu is
// held.
func (s *subscription) drop(k watchKey) []string {
	if sk, ok := s.channels[k.channel]; !ok || sk.k != k {
		return nil
	}
	delete(s.channels, k.channel)
	channels := []string{k.channel, k.channel + hearsBatchesSuffix}
	if b := batchOf(k.channel); b != "" {
		if s.batches[b]--; s.batches[b] <= 0 {
			delete(s.batches, b)
			channels = append(channels, b)
		}
	}
	return channels
}

// mark hands out the next barrier, which confirms keys. s.mu is held.
func (s *subscription) mark(keys ...watchKey) uint64 {
	s.seq++
	for _, k := range keys {
		if sk, ok := s.channels[k.channel]; ok && sk.k == k {
			sk.barrier = s.seq
			s.channels[k.channel] = sk
		}
	}
	s.pending[s.seq] = append(s.pending[s.seq], keys...)
	return s.seq
}

// Subscribe subscribes the channels of k (see add), followed by a barrier. The
// writes are the Hub's, not a watcher's: one watcher's cancelled context
// must not break the connection of all; the client's WriteTimeout bounds
// them.
func (s *subscription) Subscribe(k watchKey) {
	s.mu.Lock()
	channels := s.add(nil, k)
	seq := s.mark(k)
	s.mu.Unlock()
	wctx := context.Background()
	if len(channels) > 0 && s.ps.Subscribe(wctx, channels...) != nil || s.ps.Ping(wctx, syncPrefix+strconv.FormatUint(seq, 10)) != nil {
		// go-redis may have reconnected without the channel: start over
		// on a new connection, which subscribes to every key.
		_ = s.ps.Close()
	}
}

// Unsubscribe unsubscribes the channels of k (those of its prefix with
// the last key of the prefix).
func (s *subscription) Unsubscribe(k watchKey) {
	s.mu.Lock()
	channels := s.drop(k)
	s.mu.Unlock()
	if len(channels) > 0 && s.ps.Unsubscribe(context.Background(), channels...) != nil {
		_ = s.ps.Close()
	}
}

// Close closes the subscription.
func (s *subscription) Close() { _ = s.ps.Close() }

// Stream reads the subscription until it breaks or ctx ends, and returns
// why.
func (s *subscription) Stream(ctx context.Context, f *watchutil.Feed[watchKey, msg]) error {
	stop := context.AfterFunc(ctx, func() { _ = s.ps.Close() })
	defer stop()
	pinged := false // a health-check ping is out and unanswered
	for {
		m, err := s.ps.ReceiveTimeout(ctx, s.h.healthCheck)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			if isTimeout(err) && !pinged {
				pinged = true
				if err = s.ps.Ping(ctx); err == nil {
					continue
				}
			}
			return err
		}
		pinged = false
		switch m := m.(type) {
		case *redis.Message:
			if err := s.heard(ctx, f, m.Channel, m.Payload); err != nil {
				return err
			}
		case *redis.Subscription:
			// A channel subscribed again, by go-redis on a new connection
			// after a failed write: changes may have been missed.
			if m.Kind != "subscribe" {
				continue
			}
			s.mu.Lock()
			sk, ok := s.channels[m.Channel]
			ok = ok && sk.confirmed
			s.mu.Unlock()
			if ok {
				if err := f.Reread(ctx, sk.k); err != nil {
					return err
				}
			}
		case *redis.Pong:
			if keys := s.synced(m.Payload); len(keys) > 0 {
				f.Progress()
				if err := f.Ready(ctx, keys...); err != nil {
					return err
				}
			}
		}
	}
}

// heard hands on a message received on channel: a record published on a
// name's channel, or a batch message, whose entries each go to the
// watches of the name whose channel the entry names, as if published on
// it. A message that is not a record (anyone may publish) makes the Hub
// read the record instead; a batch message not well formed is used up to
// where it is not (its entries are hints like any message, which a lost
// one would be too). A record heard that went back makes its watches ask
// for a read (see watchState.next), made once the message is handed on.
// Its error is that of such a read.
func (s *subscription) heard(ctx context.Context, f *watchutil.Feed[watchKey, msg], channel, payload string) error {
	if err := s.handOn(ctx, f, channel, payload); err != nil {
		return err
	}
	if keys := s.h.takeAsked(); len(keys) > 0 {
		return f.Reread(ctx, keys...)
	}
	return nil
}

// handOn hands on a message received on channel (see heard).
func (s *subscription) handOn(ctx context.Context, f *watchutil.Feed[watchKey, msg], channel, payload string) error {
	if k, ok := s.key(channel); ok {
		return s.put(ctx, f, k, payload)
	}
	s.mu.Lock()
	batch := s.batches[channel] > 0
	s.mu.Unlock()
	if !batch {
		return nil
	}
	// An entry goes to the Hub as it is: the Hub hands it to the watches
	// of its key, if any (a lookup here first would cost as much again).
	var err error
	batchEntries(payload, func(ch, m string) {
		if err != nil || !strings.HasSuffix(ch, channelSuffix) || !inBatch(ch, channel) {
			return
		}
		r, bad := rawFromMessage(m)
		k := watchKey{channel: ch}
		switch {
		case bad == nil:
			f.Put(k, msg{raw: r, heard: true})
		case s.watched(ch):
			err = f.Reread(ctx, k)
		}
	})
	return err
}

// put hands on m, a message published on the channel of k.
func (s *subscription) put(ctx context.Context, f *watchutil.Feed[watchKey, msg], k watchKey, m string) error {
	r, err := rawFromMessage(m)
	if err != nil {
		// Not a record (anyone may publish): read it instead.
		return f.Reread(ctx, k)
	}
	f.Put(k, msg{raw: r, heard: true})
	return nil
}

// watched reports whether the channel of a key is subscribed.
func (s *subscription) watched(channel string) bool {
	_, ok := s.key(channel)
	return ok
}

// key returns the key whose channel is channel.
func (s *subscription) key(channel string) (watchKey, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sk, ok := s.channels[channel]
	return sk.k, ok
}

// synced handles the answer to a barrier ping: it returns the keys it
// confirms, those subscribed and waiting for no later barrier.
func (s *subscription) synced(payload string) []watchKey {
	n, ok := strings.CutPrefix(payload, syncPrefix)
	if !ok {
		return nil
	}
	seq, err := strconv.ParseUint(n, 10, 64)
	if err != nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var keys []watchKey
	for _, k := range s.pending[seq] {
		if sk, ok := s.channels[k.channel]; ok && sk.k == k && sk.barrier == seq {
			keys = append(keys, k)
			sk.confirmed = true
			s.channels[k.channel] = sk
		}
	}
	delete(s.pending, seq)
	return keys
}

// Reread reads the records of keys again, pipelined, and offers them to
// their watches. Its error is that of a command that could not run.
func (h *Hub) Reread(ctx context.Context, keys []watchKey, f *watchutil.Feed[watchKey, msg]) error {
	for len(keys) > 0 {
		batch := keys[:min(rereadBatch, len(keys))]
		keys = keys[len(batch):]
		cmds := make([]*redis.MapStringStringCmd, len(batch))
		_, err := call(ctx, func() ([]redis.Cmder, error) {
			return h.client.Pipelined(ctx, func(p redis.Pipeliner) error {
				for i, k := range batch {
					cmds[i] = p.HGetAll(ctx, k.key())
				}
				return nil
			})
		})
		if err != nil && ctx.Err() != nil {
			return err
		}
		for i, k := range batch {
			m, err := cmds[i].Result()
			if err != nil && !isWrongType(err) {
				return err
			}
			f.Put(k, msg{read: true, hash: m, err: err})
		}
	}
	return nil
}
