package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/redisstore"
)

// BenchmarkHandoverPaired alternates the handovers of go-redis alone (no
// Tenure) with BenchmarkHandoverPeerConfig's, one of each, in one run:
// each of the electors' handovers comes testcluster.FloorSettle after one
// of the floor's, so that both meet the machine at the same moments. It
// reports the p50 and p90 of each, the floor's as floor-p50-ms and
// floor-p90-ms; -test.v prints each pair in the order taken.
//
// The floor is three clients of their own, each subscribed to one
// channel, and a hash with a holder and a revision. The leader releases
// in one script guarded by the revision, which PUBLISHes the new
// revision; each follower, on that message, takes the hash in one script
// guarded by the message's revision and an empty holder, which PUBLISHes
// too (one wins, the other's script changes nothing). A handover is the
// time from the release's script to the winner's returning.
func BenchmarkHandoverPaired(b *testing.B) {
	srv := testcluster.PackageRedis(b)
	prefix := uniquePrefix(b)
	for b.Loop() {
		f := newRedisFloor(b, srv)
		hs, floor := testcluster.MeasureHandoverPaired(b, "handover", testcluster.PeerConfig(), testcluster.Handovers(b), func(tb testing.TB) store.Store[meta] {
			st, err := redisstore.New[meta](srv.Client(tb), redisstore.WithPrefix(prefix))
			if err != nil {
				tb.Fatal(err)
			}
			return st
		}, func() testcluster.Handover { return f.handover(b) })
		testcluster.ReportPairedHandover(b, "go-redis alone", floor, "redisstore", hs)
	}
}

// floorRelease sets the hash KEYS[1] released if its revision is ARGV[1],
// and PUBLISHes "free:" and the new revision on ARGV[2].
var floorRelease = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'rev') ~= ARGV[1] then return false end
local rev = redis.call('HINCRBY', KEYS[1], 'rev', 1)
redis.call('HSET', KEYS[1], 'holder', '')
redis.call('PUBLISH', ARGV[2], 'free:' .. rev)
return rev`)

// floorAcquire sets ARGV[3] as the holder of the hash KEYS[1] if its
// revision is ARGV[1] and it has no holder, and PUBLISHes "held:" and the
// new revision on ARGV[2].
var floorAcquire = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'rev') ~= ARGV[1] or redis.call('HGET', KEYS[1], 'holder') ~= '' then return false end
local rev = redis.call('HINCRBY', KEYS[1], 'rev', 1)
redis.call('HSET', KEYS[1], 'holder', ARGV[3])
redis.call('PUBLISH', ARGV[2], 'held:' .. rev)
return rev`)

// floorWin is a follower's successful acquire: who, when it returned, the
// revision it wrote, and how long it took.
type floorWin struct {
	id   int
	at   time.Time
	rev  int64
	took time.Duration
}

// redisFloor is BenchmarkHandoverPaired's three clients (go-redis alone)
// and their hash.
type redisFloor struct {
	key, channel string
	clients      []*redis.Client
	rev          int64        // the hash's revision, as the leader last wrote it
	leader       atomic.Int32 // the stopped leader does not take part
	wins         chan floorWin
	errs         chan error
}

// newRedisFloor makes the floor's hash held by node-0, its three clients,
// and a follower on each, subscribed to the channel until b's Cleanup,
// which ends the subscriptions and waits for the followers.
func newRedisFloor(b *testing.B, srv *testcluster.Redis) *redisFloor {
	b.Helper()
	c, cancel := context.WithCancel(context.Background())
	prefix := uniquePrefix(b)
	f := &redisFloor{key: prefix + "floor", channel: prefix + "floor-ch", clients: make([]*redis.Client, 3), rev: 1, wins: make(chan floorWin, 3), errs: make(chan error, 3)}
	for i := range f.clients {
		f.clients[i] = srv.Client(b)
	}
	var followers sync.WaitGroup
	var subs []*redis.PubSub
	b.Cleanup(func() {
		cancel()
		for _, s := range subs {
			_ = s.Close()
		}
		followers.Wait()
	})
	if err := f.clients[0].HSet(c, f.key, "holder", "node-0", "rev", f.rev).Err(); err != nil {
		b.Fatal(err)
	}
	// The server keeps scripts for every client: load them once, so that
	// no handover pays for a NOSCRIPT retry.
	for _, s := range []*redis.Script{floorRelease, floorAcquire} {
		if err := s.Load(c, f.clients[0]).Err(); err != nil {
			b.Fatal(err)
		}
	}
	for i, cl := range f.clients {
		sub := cl.Subscribe(c, f.channel)
		subs = append(subs, sub)
		if _, err := sub.Receive(c); err != nil { // the subscription's confirmation
			b.Fatal(err)
		}
		followers.Go(func() { followRedisFloor(c, i, &f.leader, cl, sub, f.key, f.channel, f.wins, f.errs) })
	}
	return f
}

// handover releases the hash as its leader and returns when a follower
// took it.
func (f *redisFloor) handover(b *testing.B) testcluster.Handover {
	b.Helper()
	c := b.Context()
	id := f.leader.Load()
	start := time.Now()
	if err := floorRelease.Run(c, f.clients[id], []string{f.key}, f.rev, f.channel).Err(); err != nil {
		b.Fatalf("release at revision %d: %v", f.rev, err)
	}
	releaseTook := time.Since(start)
	win := testcluster.Await(b, f.wins, f.errs, eventTimeout)
	f.leader.Store(int32(win.id))
	f.rev = win.rev
	return testcluster.Handover{Total: win.at.Sub(start), Release: releaseTook, Acquire: win.took}
}

// followRedisFloor takes the hash on every message that shows it
// released, guarded by that message's revision, as a subscribed follower
// would without reading first.
func followRedisFloor(c context.Context, id int, leader *atomic.Int32, cl *redis.Client, sub *redis.PubSub, key, channel string, wins chan<- floorWin, errs chan<- error) {
	me := fmt.Sprintf("node-%d", id)
	for {
		msg, err := sub.ReceiveMessage(c)
		if err != nil {
			if c.Err() == nil {
				errs <- fmt.Errorf("follower %d: receive: %w", id, err)
			}
			return
		}
		revText, free := strings.CutPrefix(msg.Payload, "free:")
		if !free || leader.Load() == int32(id) {
			continue
		}
		if _, err := strconv.ParseInt(revText, 10, 64); err != nil {
			errs <- fmt.Errorf("follower %d: payload %q: %w", id, msg.Payload, err)
			return
		}
		start := time.Now()
		rev, err := floorAcquire.Run(c, cl, []string{key}, revText, channel, me).Int64()
		switch {
		case err == nil:
			wins <- floorWin{id: id, at: time.Now(), rev: rev, took: time.Since(start)}
		case errors.Is(err, redis.Nil), c.Err() != nil:
		default:
			errs <- fmt.Errorf("follower %d: acquire: %w", id, err)
			return
		}
	}
}
