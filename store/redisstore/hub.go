package redisstore

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
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
}

// watchKey is one watched record: its channel and its key.
type watchKey struct{ channel, key string }

// msg is one state of a watched record as the Hub learns it: a record
// published on its channel (raw), the reply of an HGETALL (read), or, for
// the watch that starts, the event its Store read (first, a
// store.Event[M]).
type msg struct {
	raw   *raw
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
	seq      uint64                // the last barrier number handed out
	pending  map[uint64][]watchKey
}

// subscribed is a key subscribed on a connection.
type subscribed struct {
	k         watchKey
	barrier   uint64 // the barrier that confirms it
	confirmed bool   // by that barrier, on this connection
}

// Connect opens a new subscription to the channel of every key, followed
// by a barrier ping: once its answer arrives, Stream reports the keys
// ready.
func (h *Hub) Connect(ctx context.Context, a watchutil.Attempt[watchKey, msg]) (watchutil.Conn[watchKey, msg], error) {
	s := &subscription{
		h: h, ps: h.client.Subscribe(ctx),
		channels: make(map[string]subscribed, len(a.Keys)),
		pending:  make(map[uint64][]watchKey),
	}
	channels := make([]string, len(a.Keys))
	s.mu.Lock()
	for i, k := range a.Keys {
		channels[i] = k.channel
		s.channels[k.channel] = subscribed{k: k}
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

// Subscribe subscribes the channel of k, followed by a barrier. The
// writes are the Hub's, not a watcher's: one watcher's cancelled context
// must not break the connection of all; the client's WriteTimeout bounds
// them.
func (s *subscription) Subscribe(k watchKey) {
	s.mu.Lock()
	s.channels[k.channel] = subscribed{k: k}
	seq := s.mark(k)
	s.mu.Unlock()
	wctx := context.Background()
	if s.ps.Subscribe(wctx, k.channel) != nil || s.ps.Ping(wctx, syncPrefix+strconv.FormatUint(seq, 10)) != nil {
		// go-redis may have reconnected without the channel: start over
		// on a new connection, which subscribes to every key.
		_ = s.ps.Close()
	}
}

// Unsubscribe unsubscribes the channel of k.
func (s *subscription) Unsubscribe(k watchKey) {
	s.mu.Lock()
	delete(s.channels, k.channel)
	s.mu.Unlock()
	if s.ps.Unsubscribe(context.Background(), k.channel) != nil {
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
			k, ok := s.key(m.Channel)
			if !ok {
				continue
			}
			r, err := rawFromMessage(m.Payload)
			if err != nil {
				// Not a record (anyone may publish): read it instead.
				err = f.Reread(ctx, k)
			} else {
				f.Put(k, msg{raw: &r})
			}
			if err != nil {
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
					cmds[i] = p.HGetAll(ctx, k.key)
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
