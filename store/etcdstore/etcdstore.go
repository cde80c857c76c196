package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-go/tenure/internal/nilarg"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/internal/edge"
)

// Errors returned by this package.
var (
	// ErrUnexpectedReply: etcd answered something a transaction of this
	// package cannot produce (a revision that did not grow, a missing
	// response). Nothing is known of what was written.
	ErrUnexpectedReply = errors.New("etcdstore: unexpected reply")
)

// DefaultPrefix is the prefix of every key when WithPrefix is not given.
const DefaultPrefix = "tenure/"

// maxCounterRetries bounds how often CompareAndSwap retries when only the
// token key changed under it.
const maxCounterRetries = 4

// maxCached bounds the names whose last known state a Store remembers.
const maxCached = 4096

// Option configures a Store. A nil Option is ignored.
type Option func(*config)

type config struct {
	prefix string
	lossy  bool
}

// WithPrefix puts every key of the Store under prefix (see Key and
// TokenKey). The default is DefaultPrefix, "tenure/". An empty prefix is
// allowed.
func WithPrefix(prefix string) Option {
	return func(c *config) { c.prefix = prefix }
}

// WithMayLoseRecords says whether the cluster may lose records, which is
// what [Store.MayLoseRecords] reports to electors (see [store.Lossy]). The
// default is false: etcd acknowledges a write once a quorum of members has
// it in its fsynced log, so a record vanishes only when someone deletes
// it. Pass true when the cluster may be restored from a snapshot (etcdutl
// snapshot restore brings back older records and older revisions) or its
// members run with --unsafe-no-fsync: electors then wait out an absent
// record for a whole LeaseDuration before they take it.
func WithMayLoseRecords(may bool) Option {
	return func(c *config) { c.lossy = may }
}

// Store keeps lease records in etcd, one key per election name, beside a
// token key that survives the record's deletion. It implements
// [store.Store], [store.Watcher], [store.Lossy], [store.MetadataChecker]
// and [store.Validator], and is safe for concurrent use. See the package
// documentation for the layout and the guarantees.
type Store[M any] struct {
	client *clientv3.Client
	codec  store.Codec[M]
	cfg    config
	now    func() time.Time // the wall clock that floors new terms' tokens

	mu    sync.Mutex
	known map[string]known // the last state seen of each name
}

var (
	_ store.Store[struct{}]   = (*Store[struct{}])(nil)
	_ store.Watcher[struct{}] = (*Store[struct{}])(nil)
	_ store.Lossy             = (*Store[struct{}])(nil)
)

// New returns a Store that keeps its records through client, with
// metadata encoded by [store.JSONCodec] (see NewWithCodec for another
// codec). The Store does not close the client. New fails on a nil client
// (an error wrapping [store.ErrNilArgument]).
func New[M any](client *clientv3.Client, opts ...Option) (*Store[M], error) {
	return NewWithCodec[M](client, nil, opts...)
}

// NewWithCodec is New with metadata encoded and decoded by codec, whose
// type fixes the Store's metadata type. A nil codec means
// [store.JSONCodec].
func NewWithCodec[M any](client *clientv3.Client, codec store.Codec[M], opts ...Option) (*Store[M], error) {
	if nilarg.IsNil(client) {
		return nil, fmt.Errorf("etcdstore: New: %w: client is nil", store.ErrNilArgument)
	}
	if nilarg.IsNil(client.KV) || nilarg.IsNil(client.Watcher) {
		return nil, fmt.Errorf("etcdstore: New: %w: client was not made by clientv3.New", store.ErrNilArgument)
	}
	cfg := config{prefix: DefaultPrefix}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if nilarg.IsNil(codec) {
		codec = store.JSONCodec[M]{}
	}
	return &Store[M]{client: client, cfg: cfg, codec: codec, now: time.Now, known: map[string]known{}}, nil
}

// MayLoseRecords reports whether the cluster may lose records; it
// implements [store.Lossy]. It is false unless WithMayLoseRecords(true)
// was given (and true for a nil Store, the conservative answer).
func (s *Store[M]) MayLoseRecords() bool { return s == nil || s.cfg.lossy }

// Key returns the key that holds the record of name: <prefix>leases/<name>.
func (s *Store[M]) Key(name string) (string, error) {
	if err := s.Validate(); err != nil {
		return "", err
	}
	if err := store.ValidateName(name); err != nil {
		return "", fmt.Errorf("etcdstore: %w", err)
	}
	return s.key(name), nil
}

// TokenKey returns the key that holds the highest token issued under name:
// <prefix>tokens/<name>. It outlives the record: deleting the record key
// does not reset it.
func (s *Store[M]) TokenKey(name string) (string, error) {
	if err := s.Validate(); err != nil {
		return "", err
	}
	if err := store.ValidateName(name); err != nil {
		return "", fmt.Errorf("etcdstore: %w", err)
	}
	return s.tokenKey(name), nil
}

func (s *Store[M]) key(name string) string      { return s.cfg.prefix + "leases/" + name }
func (s *Store[M]) tokenKey(name string) string { return s.cfg.prefix + "tokens/" + name }

// known is what a Store last saw of a name. It only spares CompareAndSwap
// a read: every transaction compares the revisions it relies on, so a
// stale entry costs a retry, never a wrong write.
type known struct {
	rev      lease.Revision // the record's mod revision; 0: absent
	holder   string
	token    uint64
	bad      bool   // the record cannot be read
	floor    uint64 // the token key's value
	floorRev int64  // the token key's mod revision; 0: absent
	floorBad bool   // the token key cannot be read
}

// state is one read of a name: both keys, as of one revision.
type state[M any] struct {
	known
	rec lease.Record[M] // decoded anew from etcd's reply
	err error           // why the record cannot be read (wraps store.ErrCorruptRecord)
	// floorErr says why the token key cannot be read.
	floorErr error
	at       int64 // the revision of the read (etcd's header revision)
	// noRev says the record has no usable mod revision: rev is then
	// store.MaxRevision, which only keeps it from passing for absent.
	noRev bool
}

// read reads the record and the token key of name in one transaction.
func (s *Store[M]) read(ctx context.Context, name string) (state[M], error) {
	resp, err := s.client.Txn(ctx).Then(clientv3.OpGet(s.key(name)), clientv3.OpGet(s.tokenKey(name))).Commit()
	if err != nil {
		return state[M]{}, err
	}
	return s.parseState(name, resp)
}

// parseState reads the two range responses of a transaction: the record's
// and the token key's.
func (s *Store[M]) parseState(name string, resp *clientv3.TxnResponse) (state[M], error) {
	if len(resp.Responses) != 2 || resp.Responses[0].GetResponseRange() == nil || resp.Responses[1].GetResponseRange() == nil {
		return state[M]{}, fmt.Errorf("%w: a read of %q returned %d responses, want 2 ranges", ErrUnexpectedReply, name, len(resp.Responses))
	}
	var st state[M]
	if resp.Header != nil {
		st.at = resp.Header.Revision
	}
	if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
		st.rev, st.rec, st.err = s.decodeKV(name, kvs[0].ModRevision, kvs[0].Value)
		st.holder, st.token, st.bad = st.rec.Holder, st.rec.Token, st.err != nil
		if st.bad && st.rev == 0 {
			// Never confuse an unreadable record with an absent one.
			st.rev, st.noRev = store.MaxRevision, true
		}
	}
	if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) > 0 {
		st.floorRev = kvs[0].ModRevision
		if st.floor, st.floorErr = parseCounter(kvs[0].Value); st.floorErr != nil {
			st.floorBad = true
			st.floorErr = fmt.Errorf("etcdstore: record %q: %w: %s: %w", name, store.ErrCorruptRecord, s.tokenKey(name), st.floorErr)
		}
	}
	return st, nil
}

// decodeKV checks and converts a stored record: its revision must lie in
// [1, store.MaxRevision], its value must parse and pass
// store.ValidateStored, and its metadata must decode. The revision is
// returned with the error when it is in bounds.
func (s *Store[M]) decodeKV(name string, modRev int64, value []byte) (lease.Revision, lease.Record[M], error) {
	if modRev <= 0 {
		return 0, lease.Record[M]{}, corrupt(name, fmt.Errorf("mod revision %d is not positive", modRev))
	}
	rev := lease.Revision(modRev)
	r, meta, err := decodeRecord(value)
	if err != nil {
		return rev, lease.Record[M]{}, corrupt(name, err)
	}
	rec := lease.Record[M]{
		Holder:        r.Holder,
		Token:         r.Token,
		AcquiredAt:    r.AcquiredAt,
		RenewedAt:     r.RenewedAt,
		LeaseDuration: r.LeaseDuration,
		Transitions:   r.Transitions,
		Claim:         r.Claim,
		Successor:     r.Successor,
	}
	if err := store.ValidateStored(rec); err != nil {
		return rev, lease.Record[M]{}, corrupt(name, err)
	}
	if len(meta) > store.MaxMetadataBytes {
		return rev, lease.Record[M]{}, corrupt(name, fmt.Errorf("metadata is %d bytes, the limit is %d", len(meta), store.MaxMetadataBytes))
	}
	if rec.Metadata, err = s.codec.Decode(meta); err != nil {
		return rev, lease.Record[M]{}, corrupt(name, err)
	}
	return rev, rec, nil
}

// remember keeps k as the last state seen of name.
func (s *Store[M]) remember(name string, k known) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.known[name]; !ok && len(s.known) >= maxCached {
		for n := range s.known { // drop any one
			delete(s.known, n)
			break
		}
	}
	s.known[name] = k
}

// recall returns the last state seen of name.
func (s *Store[M]) recall(name string) (known, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.known[name]
	return k, ok
}

// saw updates the record part of what is known of name from a watch event,
// when it is newer. The token key's part stays: if it changed too, the
// next swap's comparison finds out. The record's token does not raise the
// floor: the event shows the record, not the token key, which may hold
// less (a token written by hand above it), and a renewal raises the token
// key only while it holds less than the token (see known.raises).
func (s *Store[M]) saw(name string, rev lease.Revision, rec lease.Record[M], bad bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.known[name]
	if !ok || rev <= k.rev {
		return
	}
	k.rev, k.holder, k.token, k.bad = rev, rec.Holder, rec.Token, bad
	s.known[name] = k
}

// Get returns the record stored under name and its revision (the key's mod
// revision), in one transaction that also reads the token key. It returns
// an error wrapping [store.ErrNotFound] when there is none,
// [store.ErrCorruptRecord] when the value cannot be read (not a record of
// this package, a field out of the bounds of [store.ValidateStored],
// metadata the codec rejects), [store.ErrInvalidName] for a bad name, and
// an error wrapping ctx.Err() once ctx has ended.
func (s *Store[M]) Get(ctx context.Context, name string) (lease.Record[M], lease.Revision, error) {
	if err := s.check(ctx, "Get", name); err != nil {
		return lease.Record[M]{}, 0, err
	}
	st, err := s.read(ctx, name)
	if err != nil {
		return lease.Record[M]{}, 0, fail(ctx, "Get", name, err)
	}
	s.remember(name, st.known)
	switch {
	case st.err != nil:
		return lease.Record[M]{}, 0, st.err
	case st.rev == 0:
		return lease.Record[M]{}, 0, fmt.Errorf("etcdstore: Get %q: %w", name, store.ErrNotFound)
	}
	return st.rec, st.rev, nil
}

// CompareAndSwap stores next under name if the stored revision equals
// expected (zero: only if no record exists), in one etcd transaction that
// compares the key's mod revision with expected. It returns the stored
// record and its new revision, the transaction's revision.
//
// On mismatch the transaction's else branch reads the key, so the error,
// wrapping [store.ErrConflict], comes with the current record and revision
// (zero when there is none) from the same round trip. A stored record that
// cannot be read is never overwritten: CompareAndSwap then returns an
// error wrapping [store.ErrCorruptRecord], whatever the expected revision.
// It refuses a bad name, a record that breaks [store.ValidateRecord],
// metadata that cannot be encoded or is too large, and an ended ctx,
// writing nothing.
//
// A write that continues the stored term ([store.Renews]) keeps its token;
// any other one gets a token above both the stored one and the token key,
// and at least the wall clock in microseconds ([store.NewToken],
// [store.ClockToken]: a restore of etcd takes the token key back, not the
// clock), and raises the token key in the same transaction.
// When that token would exceed lease.MaxToken, or the token key cannot be
// read, a new term writes nothing and fails with [store.ErrTokenExhausted]
// or [store.ErrCorruptRecord]. The Token of the returned record is the one
// to use. A record at [store.MaxRevision] is reported as
// [store.ErrCorruptRecord].
//
// The Store remembers the last state it saw of each name (from Get,
// CompareAndSwap and Watch): when it knows the record at expected, the
// swap is one round trip, as every renewal is; otherwise it reads first.
// The transaction compares every revision it relies on, so a stale memory
// costs a round trip, never a wrong write.
func (s *Store[M]) CompareAndSwap(ctx context.Context, name string, expected lease.Revision, next lease.Record[M]) (lease.Record[M], lease.Revision, error) {
	if err := s.check(ctx, "CompareAndSwap", name); err != nil {
		return lease.Record[M]{}, 0, err
	}
	enc, m, err := store.EncodeRecord(s.codec, next)
	if err != nil {
		return lease.Record[M]{}, 0, fmt.Errorf("etcdstore: CompareAndSwap %q: %w", name, err)
	}
	if _, _, err := edge.FormatTimes(next); err != nil {
		return lease.Record[M]{}, 0, fmt.Errorf("etcdstore: CompareAndSwap %q: %w", name, err)
	}

	var st state[M]
	fresh := false // st was read from etcd, not recalled
	reread := func() error {
		if st, err = s.read(ctx, name); err != nil {
			return fail(ctx, "CompareAndSwap", name, err)
		}
		s.remember(name, st.known)
		fresh = true
		return nil
	}
	if k, ok := s.recall(name); ok && k.rev == expected {
		st.known = k
	} else if err := reread(); err != nil {
		return lease.Record[M]{}, 0, err
	}
	for attempt := 0; ; attempt++ {
		if st.bad {
			if !fresh { // only a fresh read carries the reason
				if err := reread(); err != nil {
					return lease.Record[M]{}, 0, err
				}
				continue
			}
			return lease.Record[M]{}, 0, fmt.Errorf("etcdstore: CompareAndSwap %q: the stored record is not overwritten: %w", name, st.err)
		}
		if st.rev != expected {
			if st.rev == 0 {
				return lease.Record[M]{}, 0, fmt.Errorf("etcdstore: CompareAndSwap %q: expected revision %d, found no record: %w", name, expected, store.ErrConflict)
			}
			return st.rec, st.rev, fmt.Errorf("etcdstore: CompareAndSwap %q: expected revision %d, found %d: %w", name, expected, st.rev, store.ErrConflict)
		}
		if st.rev == store.MaxRevision {
			return lease.Record[M]{}, 0, fmt.Errorf("etcdstore: CompareAndSwap %q: the stored record is not overwritten: %w: it is at revision %d, store.MaxRevision, and no later revision exists", name, store.ErrCorruptRecord, st.rev)
		}
		token := next.Token
		if st.rev == 0 || !store.Renews(lease.Record[struct{}]{Holder: st.holder, Token: st.token}, next) {
			if st.floorBad {
				if !fresh {
					if err := reread(); err != nil {
						return lease.Record[M]{}, 0, err
					}
					continue
				}
				return lease.Record[M]{}, 0, fmt.Errorf("etcdstore: CompareAndSwap %q: nothing was written: a new term needs the highest token issued: %w", name, st.floorErr)
			}
			// Above the wall clock too (store.ClockToken): a restore of
			// etcd takes the token key back, the clock it does not.
			floor := max(st.floor, store.ClockToken(s.now()))
			if st.rev != 0 {
				floor = max(floor, st.token)
			}
			if token, err = store.NewToken(next.Token, floor); err != nil {
				return lease.Record[M]{}, 0, fmt.Errorf("etcdstore: CompareAndSwap %q: nothing was written: %w", name, err)
			}
		}
		value, err := encodeRecord(next, token, enc.Metadata)
		if err != nil {
			return lease.Record[M]{}, 0, fmt.Errorf("etcdstore: CompareAndSwap %q: %w: %w", name, store.ErrInvalidRecord, err)
		}
		resp, err := s.swap(ctx, name, expected, st.known, token, value)
		if err != nil {
			return lease.Record[M]{}, 0, fail(ctx, "CompareAndSwap", name, err)
		}
		if resp.Succeeded {
			rev := lease.Revision(0)
			if resp.Header != nil && resp.Header.Revision > 0 {
				rev = lease.Revision(resp.Header.Revision)
			}
			if rev <= expected {
				return lease.Record[M]{}, 0, fmt.Errorf("etcdstore: CompareAndSwap %q: %w: the write's revision %d is not above %d", name, ErrUnexpectedReply, rev, expected)
			}
			s.remember(name, st.known.after(rev, next.Holder, token))
			return swappedRecord(next, token, m), rev, nil
		}
		if st, err = s.parseState(name, resp); err != nil {
			return lease.Record[M]{}, 0, fail(ctx, "CompareAndSwap", name, err)
		}
		s.remember(name, st.known)
		fresh = true
		if st.rev == expected && !st.bad && attempt >= maxCounterRetries {
			// Only the token key changed, again and again.
			return lease.Record[M]{}, 0, fmt.Errorf("etcdstore: CompareAndSwap %q: nothing was written: the token key %s kept changing (%d attempts): %w", name, s.tokenKey(name), attempt+1, store.ErrConflict)
		}
	}
}

// swappedRecord is the record a swap of next with token and metadata m stored.
func swappedRecord[M any](next lease.Record[M], token uint64, m M) lease.Record[M] {
	return lease.Record[M]{
		Holder:        next.Holder,
		Token:         token,
		AcquiredAt:    edge.StoredTime(next.AcquiredAt),
		RenewedAt:     edge.StoredTime(next.RenewedAt),
		LeaseDuration: next.LeaseDuration,
		Transitions:   next.Transitions,
		Claim:         next.Claim,
		Successor:     next.Successor,
		Metadata:      m,
	}
}

// swap runs the transaction of one attempt of CompareAndSwap: it writes
// value, whose token is token, to the record of name if the record is
// still at revision expected, and raises the token key to token (if st,
// what the attempt knows of name, says token passes it) if that key is
// still at the revision st read. Otherwise it reads both keys.
func (s *Store[M]) swap(ctx context.Context, name string, expected lease.Revision, st known, token uint64, value []byte) (*clientv3.TxnResponse, error) {
	cmps := []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(s.key(name)), "=", int64(expected))}
	ops := []clientv3.Op{clientv3.OpPut(s.key(name), string(value))}
	if st.raises(token) {
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(s.tokenKey(name)), "=", st.floorRev))
		ops = append(ops, clientv3.OpPut(s.tokenKey(name), formatCounter(token)))
	}
	return s.client.Txn(ctx).If(cmps...).Then(ops...).Else(clientv3.OpGet(s.key(name)), clientv3.OpGet(s.tokenKey(name))).Commit()
}

// raises reports whether a write of token raises the token key: whenever
// the token passes it, in every new term, and in a renewal of a term whose
// token someone wrote by hand above it.
func (k known) raises(token uint64) bool { return !k.floorBad && token > k.floor }

// after returns what is known of the name once a swap from k wrote holder
// and token at revision rev.
func (k known) after(rev lease.Revision, holder string, token uint64) known {
	now := known{rev: rev, holder: holder, token: token, floor: k.floor, floorRev: k.floorRev}
	if k.raises(token) {
		now.floor, now.floorRev = token, int64(rev)
	}
	return now
}

// check refuses a Store not made by New, a nil or ended ctx, then a bad
// name, for operation op.
func (s *Store[M]) check(ctx context.Context, op, name string) error {
	return edge.Check(ctx, "etcdstore", op, name, s.Validate(), store.ValidateName)
}

// fail wraps an error from etcd, and ctx's error when ctx has ended (the
// client may report that as a gRPC status of its own).
func fail(ctx context.Context, op, name string, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("etcdstore: %s %q: %w: %w", op, name, cerr, err)
	}
	return fmt.Errorf("etcdstore: %s %q: %w", op, name, err)
}

// corrupt wraps why the record of name cannot be read in ErrCorruptRecord.
func corrupt(name string, err error) error { return edge.Corrupt("etcdstore", name, err) }

// forget drops what is known of name.
func (s *Store[M]) forget(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.known, name)
}
