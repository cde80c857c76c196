package redisstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-go/tenure/internal/batch"
	"github.com/tenure-go/tenure/internal/nilarg"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/internal/edge"
)

// Errors returned by New and Watch.
var (
	// ErrInvalidOption: an option was given a value it cannot take.
	ErrInvalidOption = errors.New("redisstore: invalid option")
	// ErrWatchTimeout: the server did not confirm a new watch's
	// subscription within twice the health-check period.
	ErrWatchTimeout = errors.New("redisstore: the subscription was not confirmed in time")
)

// Option configures a Store. A nil Option is ignored.
type Option func(*config)

type config struct {
	prefix      string
	healthCheck time.Duration
	minBackoff  time.Duration
	maxBackoff  time.Duration
	lossless    bool
	noGate      bool
	hub         *Hub
	now         func() time.Time // nil: time.Now
}

// defaultConfig returns the settings of a Store given no option.
func defaultConfig() config {
	return config{
		healthCheck: defaultHealthCheck,
		minBackoff:  defaultMinBackoff,
		maxBackoff:  defaultMaxBackoff,
	}
}

// WithHub makes the Store watch through hub, which may be shared with
// other Stores on the same client (New fails with ErrInvalidOption when
// hub was made for another client): all their watches then share one
// Pub/Sub connection. The hub's own health-check and backoff settings
// apply, not the Store's. A nil hub keeps the default: a Hub of the
// Store's own.
func WithHub(hub *Hub) Option {
	return func(c *config) {
		if hub != nil {
			c.hub = hub
		}
	}
}

// WithPrefix puts every key and channel of the Store under prefix: the record
// of name lives at <prefix>tenure:{<name>}. The default prefix is "". A prefix
// may not contain '{' or '}' (New fails with ErrInvalidOption): in Redis
// Cluster a brace in the prefix would make it the hash tag of every key,
// putting every record of the Store in one slot instead of hashing each by
// its name.
func WithPrefix(prefix string) Option {
	return func(c *config) { c.prefix = prefix }
}

// WithWatchHealthCheck sets how long the Store's [Hub] waits without
// hearing from the server before it pings its subscription, and waits again
// for the answer before it gives the connection up and subscribes anew. A
// new Watch also waits at most twice as long for its subscription. The default is 10s;
// d <= 0 keeps it.
func WithWatchHealthCheck(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.healthCheck = d
		}
	}
}

// WithWatchBackoff sets the pauses between the [Hub]'s attempts to
// subscribe again after it lost its connection: first initial, doubling up to
// limit. The defaults are 50ms and 2s. Values <= 0 keep the defaults; limit
// is raised to initial if it is lower.
func WithWatchBackoff(initial, limit time.Duration) Option {
	return func(c *config) {
		if initial > 0 {
			c.minBackoff = initial
		}
		if limit > 0 {
			c.maxBackoff = limit
		}
	}
}

// WithClock makes the Store read the time from now instead of time.Now.
// The only time the Store reads is how long it has seen the dataset's
// marker (the create gate, see WithMayLoseRecords), so now must be a
// monotonic clock that never runs faster than real time: a fast clock
// would vouch for a create before the marker has stood a full lease. A nil
// now keeps time.Now. Tests use it to age the marker without waiting.
func WithClock(now func() time.Time) Option {
	return func(c *config) { c.now = now }
}

// WithMayLoseRecords says whether the server may lose records, which is
// what [Store.MayLoseRecords] reports to electors (see [store.Lossy]). The
// default is true: Redis without persistence loses every record when it
// restarts, and even with an append-only file a crash or a failover to a
// replica can lose the latest writes. Electors then wait out an absent record
// for a whole LeaseDuration before they take it, since its holder may still
// believe it leads; the price is that a brand-new election also waits that
// long for its first leader.
//
// Pass false only when a lost record is impossible in your setup: a single
// server with appendfsync always, and no failover.
func WithMayLoseRecords(may bool) Option {
	return func(c *config) { c.lossless = !may }
}

// WithCreateGate says whether a Store that may lose records vouches for
// the create of a brand-new name, so that its creator leads at once (the
// create gate, see docs/backends/redis.md). The default is true. Pass
// false where someone the gate cannot see may edit Tenure's keys: a hand
// edit of the gate's marker or of a name's born field, a TTL on the keys,
// a module command that copies keys. Every create is then a claim, waited
// out for a whole LeaseDuration, as after a data loss.
func WithCreateGate(on bool) Option {
	return func(c *config) { c.noGate = !on }
}

// Store keeps lease records in Redis, one hash per election name. It
// implements [store.Store], [store.Watcher] and [store.Lossy] and is safe for concurrent
// use. See the package documentation for the key layout and the guarantees.
type Store[M any] struct {
	client redis.UniversalClient
	codec  store.Codec[M]
	// reuseMeta: a watch may hand out again the metadata it decoded
	// last for the same encoding (see reusesMeta).
	reuseMeta bool
	swapCodec store.Codec[M] // the codec swaps encode with (see swapCodec)
	cfg       config
	hub       *Hub                                 // the watches' connection
	gate      *gate                                // the create gate's marker as this Store saw it; nil: no gate
	pipe      *batch.Runner[pipeCall, redis.Cmder] // Get's and CompareAndSwap's commands
}

var (
	_ store.Store[struct{}]   = (*Store[struct{}])(nil)
	_ store.Watcher[struct{}] = (*Store[struct{}])(nil)
	_ store.Lossy             = (*Store[struct{}])(nil)
)

// MayLoseRecords reports whether the server may lose records; it implements
// [store.Lossy]. It is true unless WithMayLoseRecords(false) was given.
func (s *Store[M]) MayLoseRecords() bool { return s == nil || !s.cfg.lossless }

// New returns a Store that keeps its records through client, which may be
// a *redis.Client, a *redis.ClusterClient or a failover client (a
// *redis.Ring too, but see docs/backends/redis.md on why not). The Store
// does not close the client.
//
// The client's own settings apply (timeouts, retries, pool). go-redis only
// cuts a blocked command at a context deadline when ContextTimeoutEnabled is
// set; the Store returns when the context ends in either case, and the
// abandoned command then finishes or times out in the background.
//
// Metadata is encoded with [store.JSONCodec]; see NewWithCodec for another
// codec. New fails on a nil client (an error wrapping
// [store.ErrNilArgument]), and with ErrInvalidOption on a prefix with a
// brace or a hub made for another client.
func New[M any](client redis.UniversalClient, opts ...Option) (*Store[M], error) {
	return NewWithCodec[M](client, nil, opts...)
}

// NewWithCodec is New with metadata encoded and decoded by codec, whose
// type fixes the Store's metadata type. A nil codec means
// [store.JSONCodec].
func NewWithCodec[M any](client redis.UniversalClient, codec store.Codec[M], opts ...Option) (*Store[M], error) {
	if nilarg.IsNil(client) {
		return nil, fmt.Errorf("redisstore: New: %w: client is nil", store.ErrNilArgument)
	}
	cfg := defaultConfig()
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if i := strings.IndexAny(cfg.prefix, "{}"); i >= 0 {
		return nil, fmt.Errorf("%w: WithPrefix(%q): a key prefix may not contain %q (found at byte %d): a brace would make the prefix the Redis Cluster hash tag of every key", ErrInvalidOption, cfg.prefix, cfg.prefix[i], i)
	}
	cfg.maxBackoff = max(cfg.maxBackoff, cfg.minBackoff)
	if nilarg.IsNil(codec) {
		codec = store.JSONCodec[M]{}
	}
	reuse := reusesMeta(codec)
	s := &Store[M]{client: client, cfg: cfg, codec: codec, reuseMeta: reuse, swapCodec: swapCodec(codec, reuse), hub: cfg.hub, gate: newGate(client, cfg), pipe: newPipe(client)}
	switch {
	case s.hub == nil:
		s.hub = newHub(client, cfg)
	case s.hub.client == nil || s.hub.w == nil:
		return nil, fmt.Errorf("%w: WithHub: the Hub was not made by NewHub", ErrInvalidOption)
	case !sameClient(s.hub.client, client):
		return nil, fmt.Errorf("%w: WithHub: the Hub was made for another client (%T) than the Store's (%T): a Hub reads records through its own client", ErrInvalidOption, s.hub.client, client)
	}
	return s, nil
}

// Key returns the key of the hash that holds the record of name:
// <prefix>tenure:{<escaped name>}, where the escaped name is name with '%',
// '{' and '}' written as %25, %7B and %7D. The braces make the name the
// Redis Cluster hash tag, and the escaping keeps every name inside its
// braces: no two names share a key, and no name reaches a key outside its
// own.
func (s *Store[M]) Key(name string) (string, error) {
	if err := s.Validate(); err != nil {
		return "", err
	}
	if err := store.ValidateName(name); err != nil {
		return "", fmt.Errorf("redisstore: %w", err)
	}
	return s.key(name), nil
}

func (s *Store[M]) key(name string) string {
	return s.cfg.prefix + "tenure:{" + escape(name) + "}"
}

// Channel returns the Pub/Sub channel on which every change of the record of
// name is published: its key followed by ":changes".
func (s *Store[M]) Channel(name string) (string, error) {
	if err := s.Validate(); err != nil {
		return "", err
	}
	if err := store.ValidateName(name); err != nil {
		return "", fmt.Errorf("redisstore: %w", err)
	}
	return s.channel(name), nil
}

func (s *Store[M]) channel(name string) string { return s.key(name) + channelSuffix }

// channelSuffix follows a name's key in the name of its channel.
const channelSuffix = ":changes"

// escape percent-encodes '%', '{' and '}'.
func escape(name string) string {
	if !strings.ContainsAny(name, "%{}") {
		return name
	}
	var b strings.Builder
	for i := range len(name) {
		switch c := name[i]; c {
		case '%':
			b.WriteString("%25")
		case '{':
			b.WriteString("%7B")
		case '}':
			b.WriteString("%7D")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// Get returns the record stored under name and its revision, in one HGETALL.
// It returns an error wrapping [store.ErrNotFound] when there is none,
// [store.ErrCorruptRecord] when the hash cannot be read (a field missing,
// unparsable or changed by hand, metadata the codec rejects, a key of
// another type), [store.ErrInvalidName] for a bad name, and an error
// wrapping ctx.Err() once ctx has ended.
func (s *Store[M]) Get(ctx context.Context, name string) (lease.Record[M], lease.Revision, error) {
	if err := s.check(ctx, "Get", name); err != nil {
		return lease.Record[M]{}, 0, err
	}
	var m map[string]string
	cmd, err := s.pipe.Do(ctx, pipeCall{key: s.key(name)})
	if err == nil {
		c, ok := cmd.(*redis.MapStringStringCmd)
		if !ok {
			return lease.Record[M]{}, 0, fail("Get", name, fmt.Errorf("a reply of type %T to HGETALL", cmd))
		}
		m = c.Val()
	}
	return s.fromHash(name, m, err)
}

// fromHash turns the reply of an HGETALL of the record of name into the
// record, as Get returns it.
func (s *Store[M]) fromHash(name string, m map[string]string, err error) (lease.Record[M], lease.Revision, error) {
	if err != nil {
		if isWrongType(err) {
			return lease.Record[M]{}, 0, corrupt(name, err)
		}
		return lease.Record[M]{}, 0, fail("Get", name, err)
	}
	if len(m) == 0 {
		return lease.Record[M]{}, 0, fmt.Errorf("redisstore: Get %q: %w", name, store.ErrNotFound)
	}
	r, err := rawFromMap(m)
	if err != nil {
		return lease.Record[M]{}, 0, corrupt(name, err)
	}
	return s.decode(name, &r)
}

// CompareAndSwap stores next under name if the stored revision equals
// expected (zero: only if no record exists), in one script run with
// EVALSHA (and EVAL when the server has lost the script cache). It returns
// the stored record and its new revision.
//
// On mismatch it returns an error wrapping [store.ErrConflict] with the
// current record and revision (zero when there is none), from the same
// reply. A stored record that cannot be read is never overwritten:
// CompareAndSwap then returns an error wrapping [store.ErrCorruptRecord],
// whatever the expected revision. It refuses a bad name, a record that
// breaks [store.ValidateRecord], metadata that cannot be encoded or is too
// large, and an ended ctx, writing nothing.
//
// The store assigns the revision (at least the server's TIME in
// microseconds, and above the stored one) and may raise the Token: a write
// that continues the stored term ([store.Renews]) keeps its token, and any
// other one (a create, a new term) gets a Token above the stored one and of
// at least the server's TIME in microseconds. Tokens and revisions thus keep
// growing when Redis loses its data. When that Token would exceed
// lease.MaxToken, CompareAndSwap writes nothing and returns an error
// wrapping [store.ErrTokenExhausted]. A stored record outside the bounds of
// [store.ValidateStored], or at [store.MaxRevision], is reported as
// [store.ErrCorruptRecord] and not overwritten. The Token of the returned
// record is the one to use. AcquiredAt and RenewedAt are stored as given,
// in UTC, to the nanosecond.
//
// When go-redis retries the script after a network error and the first
// attempt did write, the retry reports that write as a success.
func (s *Store[M]) CompareAndSwap(ctx context.Context, name string, expected lease.Revision, next lease.Record[M]) (lease.Record[M], lease.Revision, error) {
	return s.compareAndSwap(ctx, "CompareAndSwap", name, expected, nil, next, nil)
}

// VouchesCreates reports whether the create gate is on (see
// [WithCreateGate]): only then may CreateVouched vouch for a create. It is
// part of [store.CreateVoucher].
func (s *Store[M]) VouchesCreates() bool { return s != nil && s.gate != nil }

// CreateVouched creates next under name as CompareAndSwap expecting
// revision 0 does, and reports whether the create gate vouches for it: the
// dataset's marker has stood for next's LeaseDuration and the name was
// never deleted since (see docs/backends/redis.md). A create the gate
// vouches for is stored with Claim false, since its creator leads on it at
// once. It implements [store.CreateVoucher].
func (s *Store[M]) CreateVouched(ctx context.Context, name string, next lease.Record[M]) (lease.Record[M], lease.Revision, bool, error) {
	var vouched bool
	rec, rev, err := s.compareAndSwap(ctx, "CreateVouched", name, 0, nil, next, &vouched)
	return rec, rev, vouched && err == nil, err
}

// GuardsReleases reports true: CompareReleasedAndSwap guards its swap. It
// is part of [store.ReleaseGuard].
func (s *Store[M]) GuardsReleases() bool { return true }

// CompareReleasedAndSwap stores next under name as CompareAndSwap does,
// and only if the record stored at revision expected is released and
// shows was (the script checks it before it writes); otherwise it returns
// an error wrapping [store.ErrConflict] with the record found. It never
// creates a record. It implements [store.ReleaseGuard]: an elector takes
// a release it heard of on Pub/Sub over with it, without reading first,
// and a forged message makes it fail, never overwrite a live lease.
func (s *Store[M]) CompareReleasedAndSwap(ctx context.Context, name string, expected lease.Revision, was store.Released, next lease.Record[M]) (lease.Record[M], lease.Revision, error) {
	return s.compareAndSwap(ctx, "CompareReleasedAndSwap", name, expected, &was, next, nil)
}

// swapArgs returns the keys and arguments of the compare-and-swap script
// for a swap of next under name from expected (guarded by was when it is
// not nil; ask: the caller asks the gate to vouch for a create), and the
// metadata as stored; op names the method in errors.
func (s *Store[M]) swapArgs(op, name string, expected lease.Revision, was *store.Released, next lease.Record[M], ask bool) ([]string, []any, M, error) {
	return s.appendSwapArgs(nil, op, name, expected, was, next, ask)
}

// appendSwapArgs is swapArgs, appending the arguments to args (a batch's:
// see swapBatch).
func (s *Store[M]) appendSwapArgs(args []any, op, name string, expected lease.Revision, was *store.Released, next lease.Record[M], ask bool) ([]string, []any, M, error) {
	enc, m, err := store.EncodeRecord(s.swapCodec, next)
	if err != nil {
		return nil, nil, m, fmt.Errorf("redisstore: %s %q: %w", op, name, err)
	}
	acquired, renewed, err := edge.FormatTimes(next)
	if err != nil {
		return nil, nil, m, fmt.Errorf("redisstore: %s %q: %w", op, name, err)
	}
	nonce := strconv.FormatUint(rand.Uint64(), 36)
	if next.Stamp != 0 {
		// The record keeps its Stamp in the nonce of the call that wrote
		// it (field op), after a dot: see stampOf.
		nonce += "." + strconv.FormatUint(next.Stamp, 36)
	}
	key := s.key(name)
	keys, gateOn, seen, age := []string{key}, "", "", "0"
	if s.gate != nil {
		keys = append(keys, s.gate.marker)
		gateOn = "1"
		seen, age = s.gate.attest()
	}
	args = append(args,
		strconv.FormatUint(uint64(expected), 10),
		nonce,
		key+channelSuffix, // s.channel(name), without making the key again
		next.Holder,
		strconv.FormatUint(next.Token, 10),
		acquired,
		renewed,
		strconv.FormatInt(int64(next.LeaseDuration), 10),
		strconv.FormatUint(next.Transitions, 10),
		enc.Metadata,
		gateOn, seen, age, "born:"+escape(name),
		claimArg(expected, next, s.gate != nil, ask),
	)
	switch {
	case was != nil:
		// The guard's arguments (a plain swap, a renewal, sends none).
		args = append(args, "1", strconv.FormatUint(was.Token, 10), strconv.FormatUint(was.Transitions, 10), strconv.FormatInt(int64(was.LeaseDuration), 10),
			was.Successor, next.Successor)
	case next.Successor != "":
		args = append(args, "", "", "", "", "", next.Successor)
	}
	return keys, args, m, nil
}

// compareAndSwap is CompareAndSwap, guarded by was when it is not nil
// (CompareReleasedAndSwap), asking the gate to vouch for a create when
// vouched is not nil (CreateVouched), which then receives its answer; op
// names the method in errors.
func (s *Store[M]) compareAndSwap(ctx context.Context, op, name string, expected lease.Revision, was *store.Released, next lease.Record[M], vouched *bool) (lease.Record[M], lease.Revision, error) {
	if err := s.check(ctx, op, name); err != nil {
		return lease.Record[M]{}, 0, err
	}
	keys, args, m, err := s.swapArgs(op, name, expected, was, next, vouched != nil)
	if err != nil {
		return lease.Record[M]{}, 0, err
	}
	cmd, err := s.pipe.Do(ctx, pipeCall{script: casScript, keys: keys, args: args})
	var reply []any
	if err == nil {
		c, ok := cmd.(*redis.Cmd)
		if !ok {
			return lease.Record[M]{}, 0, fail(op, name, fmt.Errorf("a reply of type %T to the script", cmd))
		}
		reply, err = c.Slice()
	}
	if err != nil {
		return lease.Record[M]{}, 0, fail(op, name, err)
	}
	return s.swapped(op, name, expected, next, m, reply, vouched)
}

// swapped reads the reply of the script run by CompareAndSwap, which
// wrote next with metadata m if the record of name was at revision
// expected, and returns what CompareAndSwap returns; a create the gate
// vouched for sets *vouched when vouched is not nil.
func (s *Store[M]) swapped(op, name string, expected lease.Revision, next lease.Record[M], m M, reply []any, vouched *bool) (lease.Record[M], lease.Revision, error) {
	var status string
	if len(reply) > 0 {
		status, _ = reply[0].(string)
	}
	if s.gate != nil && len(reply) > 1 && (status == "ok" || status == "conflict" || status == "absent") {
		// Every one of these replies ends with the marker's nonce, save
		// "ok", which adds whether the create was vouched for and whether
		// the record is a claim.
		i := len(reply) - 1
		if status == "ok" {
			i -= 2
		}
		if nonce, ok := reply[i].(string); ok {
			s.gate.saw(nonce)
		}
	}
	switch {
	case status == "ok" && len(reply) == 6:
		rs, _ := reply[1].(string)
		ts, _ := reply[2].(string)
		rev, ok1 := decimal(rs)
		token, ok2 := decimal(ts)
		if !ok1 || !ok2 || rev == 0 || rev > uint64(store.MaxRevision) || token == 0 || token > lease.MaxToken {
			return lease.Record[M]{}, 0, fmt.Errorf("redisstore: %s %q: unexpected reply %q", op, name, reply)
		}
		rec := lease.Record[M]{
			Holder:        next.Holder,
			Token:         token,
			AcquiredAt:    edge.StoredTime(next.AcquiredAt),
			RenewedAt:     edge.StoredTime(next.RenewedAt),
			LeaseDuration: next.LeaseDuration,
			Transitions:   next.Transitions,
			Successor:     next.Successor,
			Metadata:      m,
		}
		if c, _ := reply[5].(string); c == "1" {
			rec.Claim = true
		}
		rec.Stamp = next.Stamp
		if v, _ := reply[4].(string); v == "1" && expected == 0 && s.gate != nil && vouched != nil {
			*vouched = true
		}
		return rec, lease.Revision(rev), nil
	case status == "conflict" && len(reply) == 4+numFields:
		r, err := rawFromReply(reply[1 : 3+numFields])
		if err != nil {
			return lease.Record[M]{}, 0, corrupt(name, err)
		}
		cur, rev, err := s.decode(name, &r)
		if err != nil {
			return lease.Record[M]{}, 0, err
		}
		if rev == expected {
			// Only a guarded swap is refused at its revision.
			return cur, rev, fmt.Errorf("redisstore: %s %q: the record at revision %d is not the released one expected: %w", op, name, rev, store.ErrConflict)
		}
		return cur, rev, fmt.Errorf("redisstore: %s %q: expected revision %d, found %d: %w", op, name, expected, rev, store.ErrConflict)
	case status == "absent" && len(reply) == 2:
		return lease.Record[M]{}, 0, fmt.Errorf("redisstore: %s %q: expected revision %d, found no record: %w", op, name, expected, store.ErrConflict)
	case status == "exhausted" && len(reply) == 2:
		need, _ := reply[1].(string)
		return lease.Record[M]{}, 0, fmt.Errorf("redisstore: %s %q: nothing was written: %w: the new term would need token %s, above lease.MaxToken (%d)", op, name, store.ErrTokenExhausted, need, lease.MaxToken)
	case status == "corrupt" && len(reply) == 2:
		reason, _ := reply[1].(string)
		return lease.Record[M]{}, 0, fmt.Errorf("redisstore: %s %q: the stored record is not overwritten: %w: %s", op, name, store.ErrCorruptRecord, reason)
	default:
		return lease.Record[M]{}, 0, fmt.Errorf("redisstore: %s %q: unexpected reply %q", op, name, reply)
	}
}

// claimArg is the script's claim argument (ARGV[15]) for a swap of next
// expecting revision expected: "" when next is no claim; "v" (a claim
// unless the gate vouches for it) for a create whose caller asked for a
// vouch (ask: CreateVouched), with the gate on, since a create the gate
// vouches for is led on at once (see lease.Record's Claim); "1" otherwise.
func claimArg[M any](expected lease.Revision, next lease.Record[M], gate, ask bool) string {
	switch {
	case !next.Claim:
		return ""
	case gate && expected == 0 && ask:
		return "v"
	default:
		return "1"
	}
}

// decode checks and converts a stored record: its fields must parse and
// pass store.ValidateStored, and its metadata must decode.
func (s *Store[M]) decode(name string, r *raw) (lease.Record[M], lease.Revision, error) {
	return s.decodeCached(name, r, nil)
}

// decodeCached is decode, with the metadata handed out again from c (nil:
// none) when the Store reuses metadata and c holds the same encoding.
func (s *Store[M]) decodeCached(name string, r *raw, c *metaCache[M]) (lease.Record[M], lease.Revision, error) {
	p, err := r.parse()
	if err != nil {
		return lease.Record[M]{}, 0, corrupt(name, err)
	}
	rec := lease.Record[M]{
		Holder:        p.holder,
		Token:         p.token,
		AcquiredAt:    p.acquired,
		RenewedAt:     p.renewed,
		LeaseDuration: p.duration,
		Transitions:   p.transitions,
		Claim:         p.claim,
		Successor:     p.successor,
		Stamp:         p.stamp,
	}
	if err := store.ValidateStored(rec); err != nil {
		return lease.Record[M]{}, 0, corrupt(name, err)
	}
	if !s.reuseMeta {
		c = nil
	}
	if rec.Metadata, err = s.decodeMeta(p.meta, c); err != nil {
		return lease.Record[M]{}, 0, corrupt(name, err)
	}
	return rec, lease.Revision(p.rev), nil
}

// call runs f, which talks to Redis, and returns its result, or ctx's error
// as soon as ctx ends: go-redis cuts a command at a context deadline only
// when the client has ContextTimeoutEnabled, and never at a cancellation.
// An abandoned f finishes in the background; its outcome is unknown to the
// caller, as the store contract allows.
func call[T any](ctx context.Context, f func() (T, error)) (T, error) {
	if ctx.Done() == nil {
		return f()
	}
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := f()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// check refuses a Store not made by New, a nil or ended ctx, then a bad
// name, for operation op.
func (s *Store[M]) check(ctx context.Context, op, name string) error {
	return edge.Check(ctx, "redisstore", op, name, s.Validate(), store.ValidateName)
}

// fail wraps an error from Redis or from ctx.
func fail(op, name string, err error) error {
	return fmt.Errorf("redisstore: %s %q: %w", op, name, err)
}

// corrupt wraps why the record of name cannot be read in ErrCorruptRecord.
func corrupt(name string, err error) error { return edge.Corrupt("redisstore", name, err) }

// isWrongType reports a WRONGTYPE reply: the key holds something other than
// a hash.
func isWrongType(err error) bool {
	return redis.HasErrorPrefix(err, "WRONGTYPE")
}
