package redisstore

import (
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-go/tenure/lease"
)

// gate is what a Store knows of the create gate's marker (see casScript):
// the nonce it saw last and when it first saw it, by the monotonic clock.
// Every swap attests how long the Store has seen the nonce, and the script
// keeps the longest such age: the marker has stood at least that long.
type gate struct {
	marker string // the marker's key (markerKey), made once: every swap names it
	mu     sync.Mutex
	nonce  string
	since  time.Time
	now    func() time.Time
}

// newGate returns the gate of a Store on client with cfg, or nil when the
// Store does not gate creates: a Store that says it keeps its records
// (WithMayLoseRecords(false)) needs no gate, and a Redis Cluster or Ring
// client would need a marker per slot or per shard, which this Store does
// not keep (their creates stay claims).
func newGate(client redis.UniversalClient, cfg config) *gate {
	if _, single := client.(*redis.Client); !single || cfg.lossless || cfg.noGate {
		return nil
	}
	g := &gate{marker: markerKey(cfg.prefix), now: time.Now}
	if cfg.now != nil {
		g.now = cfg.now
	}
	return g
}

// attest returns the nonce to attest and the age, in nanoseconds, to attest
// for it: "" and "0" when the Store has seen none.
func (g *gate) attest() (nonce, age string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.nonce == "" {
		return "", "0"
	}
	d := min(max(g.now().Sub(g.since), 0), lease.MaxDuration)
	return g.nonce, strconv.FormatInt(int64(d), 10)
}

// saw takes in the nonce of a reply, received now. The marker existed when
// the script ran, before now: counting from now attests less than it
// lived, never more.
func (g *gate) saw(nonce string) {
	if nonce == "" || len(nonce) > 64 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if nonce != g.nonce {
		g.nonce, g.since = nonce, g.now()
	}
}

// markerKey is the key of the dataset marker: <prefix>tenure:marker. Its
// hash also holds a field born:<escaped name> for every name written since
// the marker was made.
func (s *Store[M]) markerKey() string { return markerKey(s.cfg.prefix) }

func markerKey(prefix string) string { return prefix + "tenure:marker" }
