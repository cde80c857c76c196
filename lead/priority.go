package lead

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

// WithPriority makes the elector take part in preferring a leader by
// priority, n (at least 1; higher is preferred): a candidate that is not
// the leader advertises itself on the election's priority record
// (PriorityName) when no live candidate of at least its priority does,
// and a leader whose advertised candidate has a higher priority than its
// own hands the lease over to it (HandOver). So a higher-priority
// candidate that joins takes over through a handover, within about half a
// LeaseDuration plus the handover. Every elector of the name that may
// lead should have it: a leader without it never hands over. Each such
// elector reads the priority record every half LeaseDuration, and a
// candidate refreshes its advertisement as often; an elector without it
// never touches that record. n above lease.MaxToken makes New fail
// (ErrInvalidOption); 0 leaves it off.
func WithPriority(n uint64) Option {
	return func(o *options) {
		if n > lease.MaxToken {
			o.errs = append(o.errs, fmt.Errorf("%w: WithPriority(%d): the priority must be at most lease.MaxToken (%d)", ErrInvalidOption, n, lease.MaxToken))
			return
		}
		o.priority = n
	}
}

// PriorityName is the name of the record on which the candidates of the
// election name with WithPriority advertise: name + ".priority". Its
// Holder is the advertised candidate, its Transitions that candidate's
// priority, its LeaseDuration how long it may go without refreshing the
// record before others take it for gone. It never holds a lease.
func PriorityName(name string) string { return name + ".priority" }

// prefer runs WithPriority's rounds until the runner ends (ops) or, for
// the advertising, until Run's ctx ends: every half LeaseDuration, one
// read of the priority record, then a handover (leading) or an
// advertisement (not leading) if one is due.
func (e *Elector[M]) prefer(run, ops context.Context) {
	name := PriorityName(e.name)
	var (
		seenRev  lease.Revision // the priority record's revision last read
		seenAt   time.Time      // when it was first read at that revision
		triedRev lease.Revision // the revision last handed over for
	)
	for {
		tick := make(chan struct{})
		t := e.clock.AfterFunc(e.Config().LeaseDuration/2, func() { close(tick) })
		select {
		case <-tick:
		case <-ops.Done():
			t.Stop()
			return
		}
		if run.Err() != nil {
			return
		}
		cfg := e.Config()
		ctx, cancel := context.WithTimeout(ops, cfg.BackendTimeout)
		rec, rev, err := e.st.Get(ctx, name)
		cancel()
		found := err == nil
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			e.log.Debug("priority: read failed", "err", err)
			continue
		}
		now := e.clock.Now()
		if found && rev != seenRev {
			seenRev, seenAt = rev, now
		}
		live := found && now.Sub(seenAt) < max(cfg.LeaseDuration, rec.LeaseDuration)
		if e.IsLeader() {
			if live && rec.Holder != e.id && rec.Transitions > e.priority && rev != triedRev {
				triedRev = rev
				e.log.Info("handing over to a candidate of higher priority", "successor", rec.Holder, "priority", rec.Transitions)
				if err := e.HandOver(ops, rec.Holder); err != nil {
					e.log.Info("priority handover", "err", err)
				}
			}
			continue
		}
		if live && rec.Holder != e.id && rec.Transitions >= e.priority {
			continue // a live candidate of at least this priority is advertised
		}
		next := lease.Record[M]{Holder: e.id, Token: rec.Token, Transitions: e.priority, LeaseDuration: cfg.LeaseDuration, AcquiredAt: now, RenewedAt: now}
		if !found {
			rev = 0
		} else if rec.Holder == e.id {
			next.AcquiredAt = rec.AcquiredAt
		} else {
			next.Token = min(rec.Token+1, lease.MaxToken)
		}
		ctx, cancel = context.WithTimeout(ops, cfg.BackendTimeout)
		if _, _, err := e.st.CompareAndSwap(ctx, name, rev, next); err != nil && !errors.Is(err, store.ErrConflict) {
			e.log.Debug("priority: advertising failed", "err", err)
		}
		cancel()
	}
}
