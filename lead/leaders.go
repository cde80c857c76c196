package lead

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"

	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/lease"
)

// Leader is who holds an election's lease, as an elector saw it in the
// store: what Record returns, at the moment it changed holder.
type Leader[M any] struct {
	// Holder is the holder's identity, or "" when nobody holds the lease:
	// the store holds no record, or a released one.
	Holder string
	// Token is the fencing token of the holder's term (0 when Holder is
	// "").
	Token fence.Token
	// Present reports that the store holds a record (held or released);
	// Record and Revision are then what it holds.
	Present bool
	// Record is the record seen; the zero Record when !Present.
	Record lease.Record[M]
	// Revision is the store's revision of Record; 0 when !Present.
	Revision lease.Revision
	// Self reports that Holder is this elector's identity. It says what the
	// record says, not that this elector leads now: use IsLeader, Term or
	// WithObserver for that.
	Self bool
	// Claim reports that the record says it is only a claim (lease.Record's
	// Claim): its holder created it in a store that may lose records and
	// does not lead on it yet. It takes it over with a new token, reported
	// as a change, once the claim has stood for its LeaseDuration. Like the
	// field it copies, it is for people: no elector decides anything on
	// it.
	Claim bool
}

// leaderKey is what makes two Leaders the same change: the holder and the
// term. Every "nobody holds it" is the same.
type leaderKey struct {
	holder string
	token  fence.Token
}

func (l Leader[M]) key() leaderKey {
	if l.Holder == "" {
		return leaderKey{}
	}
	return leaderKey{l.Holder, l.Token}
}

// changed reports whether b is a change from a for a Leaders channel:
// another holder or term, or, with meta, other metadata of the same
// holder in the same term (compared with reflect.DeepEqual).
func (a Leader[M]) changed(b Leader[M], meta bool) bool {
	if a.key() != b.key() {
		return true
	}
	return meta && a.Holder != "" && !reflect.DeepEqual(a.Record.Metadata, b.Record.Metadata)
}

// LeadersOption configures one call of Leaders.
type LeadersOption func(*leadersOptions)

type leadersOptions struct{ metadata bool }

// MetadataChanges makes Leaders report a change of the holder's metadata
// too: a Leader with the same holder and token and the new metadata.
// Metadata is compared with reflect.DeepEqual, on the values the store's
// codec decoded: a renewal with the same metadata is not a change, and
// nor is a released record's metadata.
//
// SetMetadata on the leader reaches the store at its next renewal (within
// its retry pause, RetryInterval plus jitter), and the leader reports it
// when the store answers. A follower learns of it:
//
//   - when the store's watch events are authentic (store.WatchCapabilities:
//     memstore, kubestore, etcdstore), from the watch event of that
//     renewal, at once;
//   - when they are only hints (redisstore, pgstore, a wrapper whose
//     WatchCapabilities claim nothing), from a read of the record the event
//     starts, about a round trip to the store later. At most one such read
//     is in flight and at most one starts per RetryInterval, so forged
//     events cost no more than that; a change that comes sooner after the
//     last such read waits for the rest of the RetryInterval, and one
//     replaced meanwhile is skipped. A read that shows an older revision
//     than the events it answers, or another holder or term, reports
//     nothing;
//   - when the store does not watch, at the follower's next read (within
//     its retry pause, as followers poll).
//
// A follower also learns of it at any read of its own. What the watch
// events and these reads show goes to the MetadataChanges channels only:
// the holders and terms reported, Record, and every decision of the
// elector still come from what its own reads and swaps accepted, so the
// rules of delivery of Leaders hold (tokens only go up, and a term
// reported is never followed by metadata of an earlier one). A value that
// lasts less than the leader's retry pause may never be written, and so
// never reported.
func MetadataChanges() LeadersOption { return func(o *leadersOptions) { o.metadata = true } }

// leaderFeed is an Elector's state for Leaders: the last leader seen and
// the subscriptions. It is guarded by the Elector's mu, but for metaSubs,
// written under it and read without it (on every watch event).
type leaderFeed[M any] struct {
	known bool
	last  Leader[M]
	// ahead: last is a record of the same holder and term newer than
	// Record's, reported to MetadataChanges from a watch event or a read
	// of its own (metafeed.go); an older record Record takes in after it
	// is not reported.
	ahead    bool
	subs     map[*leaderSub[M]]struct{}
	metaSubs atomic.Int32 // subscriptions with MetadataChanges
}

// leaderSub is one Leaders channel: the newest leader not yet sent, and a
// goroutine sending it.
type leaderSub[M any] struct {
	wake chan struct{} // capacity 1
	meta bool          // MetadataChanges

	mu      sync.Mutex
	pending Leader[M]
	full    bool
}

func (s *leaderSub[M]) offer(l Leader[M]) {
	s.mu.Lock()
	s.pending, s.full = l, true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *leaderSub[M]) take() (Leader[M], bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.pending, s.full
	s.pending, s.full = Leader[M]{}, false
	return l, ok
}

// Leaders returns a channel that reports every change of holder this
// elector sees, for followers and the leader alike: another elector taking
// the lease, a new term of the same holder, a release, the record
// vanishing. It starts with the holder seen last, if the elector has seen
// the store yet; a renewal (same holder, same token) is not a change. This
// is client-go's OnNewLeader, with the record (and its metadata) in hand.
//
// A change is what this elector accepted from the store, as Record reports
// it: the answer of a read or a swap it checked (a change of metadata
// alone, with MetadataChanges, may also come from the watch: see
// MetadataChanges). An elector learns of a
// change at its next read: at once when the store watches (store.Watcher),
// within a RetryInterval when followers poll. A record names its holder
// until someone replaces it, also after the holder crashed: a lease that
// nobody renews is reported when another elector takes it over.
//
// Delivery never blocks the elector: each channel holds the newest change
// not yet received, and a receiver that falls behind skips to the newest
// one. A receiver gets changes in the order the elector saw them, may miss
// a holder that came and went meanwhile, and never gets the same holder
// and term twice in a row (with MetadataChanges, never the same holder,
// term and metadata). Tokens only go up, unless the store goes back in
// time (see ErrRevisionRollback): the elector then reports what the store
// holds now. The channel is closed when ctx ends, or after Run has returned and
// the last change was received. Leaders may be called before Run, and any
// number of times; each channel is independent, and costs a goroutine until
// it is closed.
//
// With MetadataChanges, the channel also reports each change of the
// holder's metadata within a term, as etcd's Observe reports every value,
// on a follower as soon as its watch shows it (see MetadataChanges for
// exactly when): the same rules of delivery apply, a receiver that falls
// behind skipping to the newest value.
//
// Leaders returns an error wrapping ErrNilArgument for a nil ctx or
// option, or an Elector not made by New.
func (e *Elector[M]) Leaders(ctx context.Context, opts ...LeadersOption) (<-chan Leader[M], error) {
	if err := e.usable("Leaders"); err != nil {
		return nil, err
	}
	if ctx == nil {
		return nil, fmt.Errorf("%w: Leaders: ctx is nil", ErrNilArgument)
	}
	var o leadersOptions
	for i, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("%w: Leaders: option %d of %d is nil", ErrNilArgument, i+1, len(opts))
		}
		opt(&o)
	}
	s := &leaderSub[M]{wake: make(chan struct{}, 1), meta: o.metadata}
	out := make(chan Leader[M])
	e.mu.Lock()
	if e.leaders.subs == nil {
		e.leaders.subs = map[*leaderSub[M]]struct{}{}
	}
	e.leaders.subs[s] = struct{}{}
	if s.meta {
		e.leaders.metaSubs.Add(1)
	}
	if e.leaders.known {
		s.offer(e.leaders.last)
	}
	e.mu.Unlock()
	go func() {
		defer close(out)
		defer func() {
			e.mu.Lock()
			delete(e.leaders.subs, s)
			if s.meta {
				e.leaders.metaSubs.Add(-1)
			}
			e.mu.Unlock()
		}()
		e.serveLeaders(ctx, s, out)
	}()
	return out, nil
}

// serveLeaders sends what s is offered on out until ctx ends, or Run has
// returned and nothing is left to send.
func (e *Elector[M]) serveLeaders(ctx context.Context, s *leaderSub[M], out chan<- Leader[M]) {
	var (
		sent    Leader[M]
		anySent bool
		next    Leader[M]
		send    chan<- Leader[M] // nil while nothing waits to be sent
		stopped = e.stopped
	)
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
			if l, ok := s.take(); ok && (!anySent || sent.changed(l, s.meta)) {
				next, send = l, out
			} else if ok {
				// Back to the holder last sent before the receiver took
				// the one in between: nothing new to tell.
				send = nil
			}
		case send <- next:
			sent, anySent, send = next, true, nil
		case <-stopped:
			// Run has returned: the elector learns nothing more. Send
			// what waits, then close.
			stopped = nil
			if l, ok := s.take(); ok && (!anySent || sent.changed(l, s.meta)) {
				next, send = l, out
			}
			if send == nil {
				return
			}
		}
		if stopped == nil && send == nil {
			return
		}
	}
}

// seeLeaderLocked publishes the holder of what Record reports now, if it
// differs from the last one published. absentSeen says the elector has just
// accepted that the store holds no record (Record's ok is false then, but
// before the first read it is false too). e.mu must be held.
func (e *Elector[M]) seeLeaderLocked(absentSeen bool) {
	var l Leader[M]
	switch {
	case e.haveRec:
		l = e.leaderOf(e.rec, e.rev)
	case !absentSeen:
		return
	}
	f := &e.leaders
	if f.known && f.last.key() == l.key() {
		if f.ahead && l.Revision < f.last.Revision {
			// A read answered with an older record of the term than the
			// one the feed reported from the watch: its metadata is not
			// news.
			return
		}
		prev := f.last
		f.last, f.ahead = l, false // the newest record of the same holder, for new channels
		if f.metaSubs.Load() > 0 && prev.changed(l, true) {
			f.offerMetadataLocked(l)
		}
		return
	}
	f.known, f.last, f.ahead = true, l, false
	for s := range f.subs {
		s.offer(l)
	}
}

// leaderOf is the Leader of rec at revision rev, as this elector sees it.
func (e *Elector[M]) leaderOf(rec lease.Record[M], rev lease.Revision) Leader[M] {
	l := Leader[M]{Holder: rec.Holder, Token: fence.Token(rec.Token), Present: true, Record: rec, Revision: rev}
	if l.Holder == "" {
		l.Token = 0
	}
	l.Self = l.Holder != "" && l.Holder == e.id
	l.Claim = l.Holder != "" && rec.Claim
	return l
}

// offerMetadataLocked offers l to the MetadataChanges channels. The
// Elector's mu must be held.
func (f *leaderFeed[M]) offerMetadataLocked(l Leader[M]) {
	for s := range f.subs {
		if s.meta {
			s.offer(l)
		}
	}
}

// metadataNewsLocked reports whether l, a record the elector has not
// accepted (from a watch event or a read for MetadataChanges), is news to
// the MetadataChanges channels: the holder and term reported last, at a
// newer revision, with other metadata. The holders and terms themselves
// are learned from what the elector accepts only, so tokens only go up on
// the channels, and a term reported is never followed by metadata of the
// one before. The Elector's mu must be held.
func (f *leaderFeed[M]) metadataNewsLocked(l Leader[M]) bool {
	return f.known && f.last.Holder != "" && f.last.key() == l.key() &&
		l.Revision > f.last.Revision && f.last.changed(l, true)
}

// seeMetadataLocked reports l to the MetadataChanges channels if it is
// news (metadataNewsLocked), and keeps it as the last leader reported.
// The Elector's mu must be held.
func (f *leaderFeed[M]) seeMetadataLocked(l Leader[M]) {
	if f.metaSubs.Load() == 0 || !f.metadataNewsLocked(l) {
		return
	}
	f.last, f.ahead = l, true
	f.offerMetadataLocked(l)
}

// resyncLeadersLocked makes the feed report what Record shows, after the store
// went back in time: a record the feed reported from the watch, newer
// than Record's, may be one the store lost. The Elector's mu must be
// held.
func (e *Elector[M]) resyncLeadersLocked() {
	if e.leaders.ahead {
		e.leaders.ahead = false
		e.seeLeaderLocked(false)
	}
}
