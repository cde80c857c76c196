package simuser

import (
	"context"
	"fmt"
	"sync"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

// MapStore is a small in-process store of lease records: a map under a
// mutex, metadata kept encoded so that callers share nothing with it. It
// has no Watch, so electors on it poll. It stands for "your own store":
// it passes storetest, and the simulator's runtime mode runs on it.
type MapStore[M any] struct {
	codec store.JSONCodec[M]

	mu     sync.Mutex
	rev    lease.Revision
	recs   map[string]stored
	floors map[string]uint64 // the highest token each name has had
}

// stored is one record with its metadata encoded.
type stored struct {
	rec lease.Record[[]byte]
	rev lease.Revision
}

var _ store.Store[struct{}] = (*MapStore[struct{}])(nil)

// NewMapStore returns an empty MapStore.
func NewMapStore[M any]() *MapStore[M] {
	return &MapStore[M]{recs: map[string]stored{}, floors: map[string]uint64{}}
}

// Get returns the record of name and its revision, or an error wrapping
// store.ErrNotFound.
func (s *MapStore[M]) Get(ctx context.Context, name string) (lease.Record[M], lease.Revision, error) {
	if err := check(ctx, name); err != nil {
		return lease.Record[M]{}, 0, err
	}
	s.mu.Lock()
	cur, ok := s.recs[name]
	s.mu.Unlock()
	if !ok {
		return lease.Record[M]{}, 0, fmt.Errorf("mapstore: %q: %w", name, store.ErrNotFound)
	}
	rec, err := s.decode(cur.rec)
	return rec, cur.rev, err
}

// CompareAndSwap stores next under name if the current revision is
// expected (zero: if there is no record).
func (s *MapStore[M]) CompareAndSwap(ctx context.Context, name string, expected lease.Revision, next lease.Record[M]) (lease.Record[M], lease.Revision, error) {
	if err := check(ctx, name); err != nil {
		return lease.Record[M]{}, 0, err
	}
	if err := store.ValidateRecord(next); err != nil {
		return lease.Record[M]{}, 0, fmt.Errorf("mapstore: %q: %w", name, err)
	}
	meta, err := store.EncodeMetadata(s.codec, next.Metadata)
	if err != nil {
		return lease.Record[M]{}, 0, fmt.Errorf("mapstore: %q: %w", name, err)
	}
	enc := lease.Record[[]byte]{
		Holder: next.Holder, Token: next.Token, Transitions: next.Transitions,
		AcquiredAt: next.AcquiredAt.Round(0), RenewedAt: next.RenewedAt.Round(0),
		LeaseDuration: next.LeaseDuration, Claim: next.Claim, Successor: next.Successor, Metadata: meta,
	}
	s.mu.Lock()
	cur, ok := s.recs[name]
	if cur.rev != expected || !ok && expected != 0 {
		s.mu.Unlock()
		if !ok {
			return lease.Record[M]{}, 0, fmt.Errorf("mapstore: %q: no record, expected revision %d: %w", name, expected, store.ErrConflict)
		}
		rec, derr := s.decode(cur.rec)
		if derr != nil {
			return lease.Record[M]{}, 0, derr
		}
		return rec, cur.rev, fmt.Errorf("mapstore: %q: revision %d, expected %d: %w", name, cur.rev, expected, store.ErrConflict)
	}
	if !ok || !store.Renews(cur.rec, enc) {
		// A new term: its token goes above every token the name has had,
		// whatever the caller proposed.
		tok, err := store.NewToken(enc.Token, s.floors[name])
		if err != nil {
			s.mu.Unlock()
			return lease.Record[M]{}, 0, fmt.Errorf("mapstore: %q: %w", name, err)
		}
		enc.Token = tok
	}
	s.floors[name] = max(s.floors[name], enc.Token)
	s.rev++
	s.recs[name] = stored{rec: enc, rev: s.rev}
	rev := s.rev
	s.mu.Unlock()
	rec, err := s.decode(enc)
	return rec, rev, err
}

// decode returns r with its metadata decoded afresh.
func (s *MapStore[M]) decode(r lease.Record[[]byte]) (lease.Record[M], error) {
	m, err := s.codec.Decode(r.Metadata)
	if err != nil {
		return lease.Record[M]{}, err
	}
	return lease.Record[M]{
		Holder: r.Holder, Token: r.Token, Transitions: r.Transitions,
		AcquiredAt: r.AcquiredAt, RenewedAt: r.RenewedAt,
		LeaseDuration: r.LeaseDuration, Claim: r.Claim, Successor: r.Successor, Metadata: m,
	}, nil
}

// check refuses an ended context, then a bad name.
func check(ctx context.Context, name string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("mapstore: %q: %w", name, err)
	}
	if err := store.ValidateName(name); err != nil {
		return fmt.Errorf("mapstore: %w", err)
	}
	return nil
}
