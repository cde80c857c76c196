package lead

import (
	"context"
	"errors"
	"log/slog"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

// A follower that hears the leader renew through its watch does not read
// the record (the machine takes the events as renewals heard, and a
// renewal with new metadata looks like any other: fsm.Lease has none), so
// what it accepts, and Record shows, changes about once per LeaseDuration.
// For the MetadataChanges channels, a watch event showing the holder and
// term reported last at a newer revision with other metadata is news:
//
//   - when the store's events are authentic (store.WatchCapabilities), it
//     is reported as it is;
//   - when they are hints, which anyone who can publish on the store's
//     channel can forge, a read of the store confirms it: the read's answer
//     is reported if it still shows that holder and term, at the revision
//     of a hint it answers or later (the oldest: a forged hint at a far
//     revision does not hide a true one beside it). At most one such read
//     is in flight, at most one starts per RetryInterval (a flood of forged
//     hints costs no more), and hints that come meanwhile are answered by
//     the next.
//
// Neither goes to the machine or to Record: both are for the channels
// only (leaderFeed.seeMetadataLocked). Nothing of this runs while no
// channel asks for metadata changes.

// watchedMetadata takes the valid record of watch event ev to the
// MetadataChanges channels, if any is open and it is news.
func (r *runner[M]) watchedMetadata(ev store.Event[M]) {
	e := r.e
	if e.leaders.metaSubs.Load() == 0 || e.metadataFromReadsOnly {
		return
	}
	l := e.leaderOf(ev.Record, ev.Revision)
	e.mu.Lock()
	if e.authentic {
		e.leaders.seeMetadataLocked(l)
		e.mu.Unlock()
		return
	}
	news := e.leaders.metadataNewsLocked(l)
	e.mu.Unlock()
	// This elector's own record is its own writes, whose answers report
	// it when it leads.
	if !news || l.Self {
		return
	}
	if r.metaWant == 0 || ev.Revision < r.metaWant {
		r.metaWant = ev.Revision
	}
	r.readForMetadata()
}

// readForMetadata starts a read of the record for the MetadataChanges
// channels, if a hint waits for one, none is in flight and the last
// started a RetryInterval ago at least; if it is too early, a timer starts
// it then.
func (r *runner[M]) readForMetadata() {
	if r.metaWant == 0 || r.metaBusy || r.stopping || r.opCtx.Err() != nil {
		return
	}
	e := r.e
	now := e.clock.Now()
	if wait := r.metaNext.Sub(now); wait > 0 {
		if r.metaTimer == nil {
			r.metaTimer = e.clock.AfterFunc(wait, func() { r.loop.post(r, msgMetaRetry) })
		}
		return
	}
	r.metaAsked, r.metaWant, r.metaBusy = r.metaWant, 0, true
	r.metaNext = now.Add(r.cfg.RetryInterval)
	r.startOpThen(0, func(ctx context.Context) (lease.Record[M], lease.Revision, error) {
		return e.st.Get(ctx, e.name)
	}, r.loop.postMetaRead)
}

// metaRead takes the answer to a read for the MetadataChanges channels:
// a record checked as untrusted input, showing the holder and term
// reported last at the hinted revision or later, is reported if it is
// news. Nothing of it goes to the machine.
func (r *runner[M]) metaRead(res result[M]) {
	r.metaBusy = false
	e := r.e
	switch {
	case res.err == nil && res.rev >= r.metaAsked && checkStored(res.rec, res.rev) == nil:
		e.mu.Lock()
		e.leaders.seeMetadataLocked(e.leaderOf(res.rec, res.rev))
		e.mu.Unlock()
	case res.err != nil && !errors.Is(res.err, store.ErrNotFound):
		r.logMetaRead(res.err)
	}
	r.readForMetadata() // for a hint that came meanwhile
}

// logMetaRead logs a failed read for MetadataChanges, at Debug and at most
// once per ErrorInterval: the machine's own reads report the store's
// failures, and keep them for Err.
func (r *runner[M]) logMetaRead(err error) {
	if errors.Is(err, context.Canceled) && r.opCtx.Err() != nil {
		return
	}
	r.logAt(slog.LevelDebug, "metadata-read", "store read for MetadataChanges failed", "error", err)
}
