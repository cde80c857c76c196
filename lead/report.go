package lead

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/tenure-go/tenure/fsm"
	"github.com/tenure-go/tenure/store"
)

// report logs what the machine reported, rate-limited per ErrorInterval,
// and keeps a rollback for Err (after which, as after a renewal hint a
// read contradicted, Leaders reports what Record shows). A corrupt record
// was logged already when its answer was checked.
func (r *runner[M]) report(a fsm.Action) {
	e := r.e
	switch a.Problem {
	case fsm.ProblemRollback:
		var err error
		if a.Revision == 0 {
			err = fmt.Errorf("lead: %q: %w: the store holds no record after revision %d; no new term for %v", e.name, ErrRevisionRollback, a.Newest, a.Wait)
		} else {
			err = fmt.Errorf("lead: %q: %w: the store shows revision %d after revision %d; no new term for %v", e.name, ErrRevisionRollback, a.Revision, a.Newest, a.Wait)
		}
		e.mu.Lock()
		e.rollbackErr = err
		e.resyncLeadersLocked()
		e.mu.Unlock()
		r.logAt(slog.LevelError, "rollback", "store revision went back", "revision", uint64(a.Revision), "newest", uint64(a.Newest), "wait", a.Wait, "error", err)
	case fsm.ProblemTokensExhausted:
		e.mu.Lock()
		err := e.exhaustedErr
		e.mu.Unlock()
		if err == nil {
			err = store.ErrTokenExhausted
		}
		r.logAt(slog.LevelError, "tokens", "fencing tokens exhausted", "token", a.Token, "error", err)
	case fsm.ProblemLongWait:
		err := fmt.Errorf("lead: %q: %w: the store showed a lease of %v, longer than this elector's LeaseDuration %v; no new term for %v. "+
			"If no process holds the election under that lease (a record written by hand, say), delete the record and restart every elector of the election to end the wait now",
			e.name, ErrLongWait, a.Wait, r.cfg.LeaseDuration, a.Wait)
		e.mu.Lock()
		e.longWaitErr, e.longUntil = err, a.Until
		e.mu.Unlock()
		r.logAt(slog.LevelWarn, "long-wait", "waiting longer than this elector's LeaseDuration for a longer lease seen in the store",
			"name", e.name, "wait", a.Wait, "lease_duration", r.cfg.LeaseDuration, "revision", uint64(a.Revision), "error", err)
	case fsm.ProblemClaim:
		e.mu.Lock()
		e.claimToken, e.claimUntil = a.Token, a.Until
		at := e.epoch.Add(a.Until)
		e.mu.Unlock()
		// Every claim is told, at Info: nothing is wrong, but for a
		// LeaseDuration nobody leads.
		e.log.Info("created the record only as a claim: not leading on it until it has stood for the wait (the store may have lost a record whose holder could still believe it leads); taking it over with a new token at leads_at, unless another elector takes the lease first",
			"token", a.Token, "wait", a.Wait, "leads_at", at, "state", r.m.State().String())
	case fsm.ProblemContradicted:
		e.mu.Lock()
		e.resyncLeadersLocked()
		e.mu.Unlock()
		r.logAt(slog.LevelWarn, "contradicted", "the store shows an older revision than a renewal its watch announced: a forged watch event, or a store that went back in time; no new term until the wait ends",
			"revision", uint64(a.Revision), "announced", uint64(a.Newest), "wait", a.Wait)
	}
}

// logError logs a failed store operation at most once per ErrorInterval for
// each operation, and keeps err for Err(). The store refusing to issue a
// token above lease.MaxToken is logged at Error, the rest at Warn.
func (r *runner[M]) logError(op string, err error) {
	e := r.e
	e.mu.Lock()
	e.lastErr = err
	e.mu.Unlock()
	level := slog.LevelWarn
	if errors.Is(err, store.ErrTokenExhausted) {
		level = slog.LevelError
	}
	r.logAt(level, op, "store operation failed", "op", op, "error", err)
}

// logCorrupt reports a corrupt record the store answered with: kept for
// Err() and logged at Error, at most once per ErrorInterval.
func (r *runner[M]) logCorrupt(op string, err error) {
	e := r.e
	e.mu.Lock()
	e.lastErr = err
	e.mu.Unlock()
	r.logAt(slog.LevelError, "corrupt", "store holds a corrupt record; not overwriting it, and not leading until it is replaced or removed", "op", op, "error", err)
}

// logAt logs msg at most once per ErrorInterval for each key, with the
// machine's state.
func (r *runner[M]) logAt(level slog.Level, key, msg string, args ...any) {
	now := r.now()
	if last, ok := r.errLog[key]; ok && now-last < r.cfg.ErrorInterval {
		return
	}
	r.errLog[key] = now
	r.e.log.Log(context.Background(), level, msg, append(args, "state", r.m.State().String())...)
}
