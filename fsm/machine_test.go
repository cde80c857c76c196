package fsm

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tenure-go/tenure/lease"
)

const (
	ms = time.Millisecond
	s  = time.Second
	ns = time.Nanosecond
	us = time.Microsecond
)

// testConfig has no jitter so that every time in the tables is exact:
// LeaseDuration 15s, RenewDeadline 10s, RetryInterval 2s.
func testConfig() lease.Config {
	c := lease.DefaultConfig()
	c.RetryJitter = 0
	return c
}

func other(token, trans uint64) Lease {
	return Lease{Holder: "other", Token: token, Transitions: trans, LeaseDuration: 15 * s}
}

func me(token, trans uint64) Lease {
	return Lease{Holder: "me", Token: token, Transitions: trans, LeaseDuration: 15 * s}
}

func released(token, trans uint64) Lease {
	return Lease{Token: token, Transitions: trans, LeaseDuration: 15 * s}
}

func tick(t time.Duration) Event { return Event{Kind: Tick, Now: t} }
func read(t time.Duration, l Lease, rev lease.Revision) Event {
	return Event{Kind: ReadDone, Now: t, Lease: l, Revision: rev}
}
func readAbsent(t time.Duration) Event { return Event{Kind: ReadDone, Now: t, Absent: true} }
func readFailed(t time.Duration) Event {
	return Event{Kind: ReadFailed, Now: t, Err: errors.New("down")}
}
func watched(t time.Duration, l Lease, rev lease.Revision) Event {
	return Event{Kind: Watched, Now: t, Lease: l, Revision: rev}
}
func watchedAbsent(t time.Duration) Event { return Event{Kind: Watched, Now: t, Absent: true} }
func done(t time.Duration, l Lease, rev lease.Revision) Event {
	return Event{Kind: SwapDone, Now: t, Lease: l, Revision: rev}
}
func conflict(t time.Duration, l Lease, rev lease.Revision) Event {
	return Event{Kind: SwapConflict, Now: t, Lease: l, Revision: rev}
}
func conflictAbsent(t time.Duration) Event { return Event{Kind: SwapConflict, Now: t, Absent: true} }
func failed(t time.Duration) Event {
	return Event{Kind: SwapFailed, Now: t, Err: errors.New("timeout")}
}
func stop(t time.Duration, release bool) Event { return Event{Kind: Stop, Now: t, Release: release} }
func resign(t time.Duration) Event             { return Event{Kind: Resign, Now: t} }
func reconfigure(t time.Duration, c lease.Config) Event {
	return Event{Kind: Reconfigure, Now: t, Config: c}
}

func aRead() Action { return Action{Kind: Read} }
func acquire(exp lease.Revision, next Lease) Action {
	return Action{Kind: Swap, Swap: Acquire, Expected: exp, Next: next}
}

// create is the Acquire of a record in a lossy store: only a claim.
func create(next Lease) Action {
	return Action{Kind: Swap, Swap: Acquire, Next: next, Claim: true}
}
func claimed(token uint64, rev lease.Revision, wait, until time.Duration) Action {
	return Action{Kind: Report, Problem: ProblemClaim, Token: token, Revision: rev, Wait: wait, Until: until}
}
func renew(exp lease.Revision, next Lease) Action {
	return Action{Kind: Swap, Swap: Renew, Expected: exp, Next: next}
}
func release(exp lease.Revision, next Lease) Action {
	return Action{Kind: Swap, Swap: Release, Expected: exp, Next: next}
}
func started(token uint64, since time.Duration) Action {
	return Action{Kind: StartedLeading, Token: token, Since: since}
}
func stopped(token uint64, r Reason) Action {
	return Action{Kind: StoppedLeading, Token: token, Reason: r}
}
func aDone() Action { return Action{Kind: Done} }
func rolledBack(to, newest lease.Revision, until, wait time.Duration) Action {
	return Action{Kind: Report, Problem: ProblemRollback, Revision: to, Newest: newest, Until: until, Wait: wait}
}
func contradicted(rev, newest lease.Revision, until, wait time.Duration) Action {
	return Action{Kind: Report, Problem: ProblemContradicted, Revision: rev, Newest: newest, Until: until, Wait: wait}
}
func corrupt(rev lease.Revision) Action {
	return Action{Kind: Report, Problem: ProblemCorrupt, Revision: rev}
}
func exhausted(token uint64) Action {
	return Action{Kind: Report, Problem: ProblemTokensExhausted, Token: token}
}
func longWait(rev lease.Revision, wait, until time.Duration) Action {
	return Action{Kind: Report, Problem: ProblemLongWait, Revision: rev, Wait: wait, Until: until}
}
func readCorrupt(t time.Duration, rev lease.Revision) Event {
	return Event{Kind: ReadDone, Now: t, Revision: rev, Corrupt: true}
}
func watchedCorrupt(t time.Duration, rev lease.Revision) Event {
	return Event{Kind: Watched, Now: t, Revision: rev, Corrupt: true}
}

// polls returns the steps of a follower polling every 9s (the slow config)
// from first until before end, each read answered 1ms later with l at rev.
func polls(first, end time.Duration, l Lease, rev lease.Revision) []step {
	var out []step
	for t := first; t < end; t += 9 * s {
		out = append(out, step{tick(t), []Action{aRead()}, Follower}, step{read(t+ms, l, rev), nil, Follower})
	}
	return out
}

// renewals returns the watch events of "other" (token 4) renewing every 2s
// from first until before end, at revisions from rev up, each asking for
// nothing.
func renewals(first, end time.Duration, rev lease.Revision) []step {
	var out []step
	for t := first; t < end; t += 2 * s {
		out = append(out, step{watched(t, other(4, 2), rev), nil, Follower})
		rev++
	}
	return out
}

type step struct {
	ev    Event
	want  []Action
	state State
}

// leaderAt returns the steps that make the machine leader with token 5 at
// revision 11, its acquire sent at 1ms: read at 0 finds the lease released.
func leaderAt() []step {
	return []step{
		{tick(0), []Action{aRead()}, Follower},
		{read(1*ms, released(4, 2), 10), []Action{acquire(10, me(5, 3))}, Candidate},
		{done(2*ms, me(5, 3), 11), []Action{started(5, 1*ms)}, Leader},
	}
}

func join(parts ...[]step) []step {
	var out []step
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// followOther returns the steps that make the machine a follower that first
// saw "other" hold revision 10 at 1ms.
func followOther() []step {
	return []step{
		{tick(0), []Action{aRead()}, Follower},
		{read(1*ms, other(4, 2), 10), nil, Follower},
	}
}

func TestTransitions(t *testing.T) {
	tests := []struct {
		name  string
		lossy bool
		slow  bool // RetryInterval 9s: no poll between the steps
		steps []step
	}{
		{"first tick reads", false, false, []step{
			{tick(0), []Action{aRead()}, Follower},
		}},
		{"absent record is created at once", false, false, []step{
			{tick(0), []Action{aRead()}, Follower},
			{readAbsent(1 * ms), []Action{acquire(0, me(1, 0))}, Candidate},
		}},
		{"a record created in a lossy store is a claim, led on after LeaseDuration", true, true, []step{
			{tick(0), []Action{aRead()}, Follower},
			{readAbsent(1 * ms), []Action{create(me(1, 0))}, Candidate},
			{done(2*ms, me(1, 0), 1), []Action{claimed(1, 1, 15*s, 15*s+2*ms)}, Follower},
			{tick(9*s + 1*ms), []Action{aRead()}, Follower},
			{read(9*s+2*ms, me(1, 0), 1), nil, Follower},
			{tick(15*s + 2*ms), []Action{acquire(1, me(2, 0))}, Candidate},
			{done(15*s+3*ms, me(2, 0), 2), []Action{started(2, 15*s+2*ms)}, Leader},
		}},
		{"released lease is taken at once, transitions grow", false, false, []step{
			{tick(0), []Action{aRead()}, Follower},
			{read(1*ms, released(7, 3), 42), []Action{acquire(42, me(8, 4))}, Candidate},
		}},
		{"held lease is polled every RetryInterval", false, false, join(followOther(), []step{
			{tick(2*s - ns), nil, Follower},
			{tick(2 * s), []Action{aRead()}, Follower},
			{readFailed(2*s + 1*ms), nil, Follower},
			{tick(4 * s), []Action{aRead()}, Follower},
		})},
		{"expired lease: 1ns before patience ends", false, true, join(followOther(), []step{
			{tick(9 * s), []Action{aRead()}, Follower},
			{read(9*s+ms, other(4, 2), 10), nil, Follower},
			{tick(15*s + 1*ms - ns), nil, Follower},
		})},
		{"expired lease: exactly when patience ends", false, true, join(followOther(), []step{
			{tick(9 * s), []Action{aRead()}, Follower},
			{read(9*s+ms, other(4, 2), 10), nil, Follower},
			{tick(15*s + 1*ms), []Action{acquire(10, me(5, 3))}, Candidate},
		})},
		{"expired lease: 1ns after patience ends", false, true, join(followOther(), []step{
			{tick(9 * s), []Action{aRead()}, Follower},
			{read(9*s+ms, other(4, 2), 10), nil, Follower},
			{tick(15*s + 1*ms + ns), []Action{acquire(10, me(5, 3))}, Candidate},
		})},
		{"a new revision restarts patience", false, true, join(followOther(), []step{
			{tick(9 * s), []Action{aRead()}, Follower},
			{read(9*s+ms, other(4, 2), 11), nil, Follower},
			{tick(15*s + 1*ms), nil, Follower},
			{tick(18 * s), []Action{aRead()}, Follower},
			{read(18*s+ms, other(4, 2), 11), nil, Follower},
			{tick(24*s + 1*ms - ns), nil, Follower},
			{tick(24*s + 1*ms), []Action{acquire(11, me(5, 3))}, Candidate},
		})},
		{"a watched renewal is not news: no read, and patience is not restarted", false, true, join(followOther(), []step{
			{watched(3*s, other(4, 2), 12), nil, Follower},
			// Quiet: the silence bound is 13.5s (9s + 4.5s), the safety
			// net LeaseDuration after the last answer.
			{tick(9 * s), nil, Follower},
			{tick(15*s + 1*ms - ns), nil, Follower},
			// The wait for revision 10 is over, but a renewal was heard:
			// read before taking over.
			{tick(15*s + 1*ms), []Action{aRead()}, Follower},
			{read(15*s+2*ms, other(4, 2), 12), nil, Follower},
			// No renewal heard since 3s: polling goes on.
			{tick(24*s + 1*ms), []Action{aRead()}, Follower},
			{read(24*s+2*ms, other(4, 2), 12), nil, Follower},
			{tick(30*s + 2*ms - ns), nil, Follower},
			{tick(30*s + 2*ms), []Action{acquire(12, me(5, 3))}, Candidate},
		})},
		{"renewals heard keep a follower quiet; the safety net reads once per LeaseDuration", false, false, join(followOther(), renewals(1*s, 15*s, 11), []step{
			{tick(15*s + 1*ms - ns), nil, Follower},
			{tick(15*s + 1*ms), []Action{aRead()}, Follower},
			{read(15*s+2*ms, other(4, 2), 17), nil, Follower},
		}, renewals(15*s+500*ms, 30*s, 18), []step{
			{tick(30*s + 2*ms - ns), nil, Follower},
			{tick(30*s + 2*ms), []Action{aRead()}, Follower},
		})},
		{"silence after renewals: the follower reads, then polls again", false, false, join(followOther(), []step{
			{watched(1*s, other(4, 2), 11), nil, Follower},
			{tick(2 * s), nil, Follower},
			{tick(4*s - ns), nil, Follower},
			{tick(4 * s), []Action{aRead()}, Follower},
			{read(4*s+ms, other(4, 2), 11), nil, Follower},
			{tick(6*s - ns), nil, Follower},
			{tick(6 * s), []Action{aRead()}, Follower},
		})},
		{"a renewal heard at a revision not newer than the one read keeps nobody quiet", false, false, join(followOther(), []step{
			{watched(1*s, other(4, 2), 10), nil, Follower},
			{tick(2 * s), []Action{aRead()}, Follower},
		})},
		{"a refused answer at a newer revision, then the accepted record again: a rollback", false, false, join(followOther(), []step{
			{tick(2 * s), []Action{aRead()}, Follower},
			{readCorrupt(2*s+ms, 12), []Action{corrupt(12)}, Follower},
			{tick(4*s + ms), []Action{aRead()}, Follower},
			{read(4*s+2*ms, other(4, 2), 10), []Action{contradicted(10, 12, 19*s+2*ms, 15*s)}, Follower},
		})},
		{"a renewal heard while the last answer was refused still counts against a rollback", false, false, join(followOther(), []step{
			{tick(2 * s), []Action{aRead()}, Follower},
			{readCorrupt(2*s+ms, 10), []Action{corrupt(10)}, Follower},
			{watched(2*s+500*ms, other(4, 2), 12), nil, Follower},
			{tick(4*s + ms), []Action{aRead()}, Follower},
			{read(4*s+2*ms, other(4, 2), 10), []Action{contradicted(10, 12, 19*s+2*ms, 15*s)}, Follower},
		})},
		{"a lost watch ends the quiet: the follower reads at once", false, false, join(followOther(), []step{
			{watched(1*s, other(4, 2), 11), nil, Follower},
			{tick(2 * s), nil, Follower},
			{Event{Kind: WatchLost, Now: 2*s + 500*ms}, []Action{aRead()}, Follower},
			{read(2*s+501*ms, other(4, 2), 11), nil, Follower},
			{tick(4*s + 500*ms), []Action{aRead()}, Follower},
		})},
		{"forged renewals after a crash delay the takeover until a lease after the last one", false, true, join(followOther(), []step{
			{tick(9 * s), []Action{aRead()}, Follower},
			{read(9*s+ms, other(4, 2), 10), nil, Follower},
		}, renewals(10*s, 15*s, 100), []step{
			{tick(15*s + 1*ms), []Action{aRead()}, Follower},
			{watched(15*s+1*ms+500*ns, other(4, 2), 1000), nil, Follower},
			// The store still holds revision 10, first read at 1ms, though
			// renewals up to 102 were heard before the read was sent: the
			// hints were forged, or the store went back and lost them
			// while their writer may still believe it leads. Wait a lease.
			{read(15*s+2*ms, other(4, 2), 10), []Action{contradicted(10, 102, 30*s+2*ms, 15*s)}, Follower},
			// Hints no longer count as renewals: the follower polls, and
			// forged renewals postpone no read. But each one that a read
			// then contradicts is a rollback it cannot rule out: a forger
			// delays the takeover until a lease after it stops.
			{watched(16*s, other(4, 2), 2000), nil, Follower},
			{tick(24*s + 2*ms), []Action{aRead()}, Follower},
			{read(24*s+3*ms, other(4, 2), 10), []Action{contradicted(10, 2000, 39*s+3*ms, 15*s)}, Follower},
			{tick(33*s + 3*ms), []Action{aRead()}, Follower},
			{read(33*s+4*ms, other(4, 2), 10), nil, Follower},
			{tick(39*s + 3*ms - ns), nil, Follower},
			{tick(39*s + 3*ms), []Action{acquire(10, me(5, 3))}, Candidate},
		})},
		{"after a contradicted hint, a read showing a renewal makes hints count again", false, false, join(followOther(), renewals(1*s, 4*s, 11), []step{
			// Renewals heard before the watch was lost still count.
			{Event{Kind: WatchLost, Now: 4 * s}, []Action{aRead()}, Follower},
			{read(4*s+ms, other(4, 2), 10), []Action{contradicted(10, 12, 19*s+ms, 15*s)}, Follower},
			// Hints are not taken as renewals now: they postpone no read.
			{watched(5*s, other(4, 2), 13), nil, Follower},
			{tick(6 * s), []Action{aRead()}, Follower},
			// A read shows the store moved on: hints count again.
			{read(6*s+ms, other(4, 2), 14), nil, Follower},
			{watched(7*s, other(4, 2), 15), nil, Follower},
			{tick(8*s + ms), nil, Follower},
			{tick(10*s - ns), nil, Follower},
			{tick(10 * s), []Action{aRead()}, Follower},
		})},
		{"a renewal of another term is news: read at once", false, false, join(followOther(), []step{
			{watched(1*s, other(5, 3), 11), []Action{aRead()}, Follower},
		})},
		{"the leader's own renewals coming back ask for nothing", false, false, join(leaderAt(), []step{
			{watched(3*ms, me(5, 3), 11), nil, Leader},
			{tick(2*s + 1*ms), []Action{renew(11, me(5, 3))}, Leader},
			{watched(2*s+2*ms, me(5, 3), 12), nil, Leader},
			{done(2*s+3*ms, me(5, 3), 12), nil, Leader},
			{tick(4*s + 1*ms - ns), nil, Leader},
			{tick(4*s + 1*ms), []Action{renew(12, me(5, 3))}, Leader},
		})},
		{"a watched revision older than the one accepted is not news", false, false, join(followOther(), []step{
			{watched(1*s, released(4, 2), 9), nil, Follower},
			{watched(1*s, released(4, 2), 10), nil, Follower},
			{tick(2*s - ns), nil, Follower},
		})},
		{"a watched release is read, then taken: one round trip more", false, false, join(followOther(), []step{
			{watched(500*ms, released(4, 2), 11), []Action{aRead()}, Follower},
			{read(501*ms, released(4, 2), 11), []Action{acquire(11, me(5, 3))}, Candidate},
		})},
		{"a hint during a read in flight is settled by a read that follows", false, false, join(followOther(), []step{
			{tick(2 * s), []Action{aRead()}, Follower},
			{watched(2*s+1*ms, released(4, 2), 11), nil, Follower},
			{read(2*s+2*ms, other(4, 2), 10), []Action{aRead()}, Follower},
			{read(2*s+3*ms, released(4, 2), 11), []Action{acquire(11, me(5, 3))}, Candidate},
		})},
		{"a hint the answer in flight covers needs no read", false, false, join(followOther(), []step{
			{tick(2 * s), []Action{aRead()}, Follower},
			{watched(2*s+1*ms, released(4, 2), 11), nil, Follower},
			{read(2*s+2*ms, released(4, 2), 11), []Action{acquire(11, me(5, 3))}, Candidate},
		})},
		{"a failed hinted read drops the hint; polling goes on", false, false, join(followOther(), []step{
			{watched(1*s, released(4, 2), 11), []Action{aRead()}, Follower},
			{readFailed(1*s + 1*ms), nil, Follower},
			{tick(2*s - ns), nil, Follower},
			{tick(2 * s), []Action{aRead()}, Follower},
		})},
		{"a forged hint costs one read and a lease's wait; while hints are muted one costs only the wait", false, false, join(followOther(), []step{
			{watched(1*s, Lease{Holder: "evil", Token: lease.MaxToken, LeaseDuration: lease.MaxDuration}, math.MaxUint64), []Action{aRead()}, Follower},
			// The store shows revision 10, not the one the event claimed:
			// a rollback or a forgery, which the machine cannot tell apart.
			{read(1*s+1*ms, other(4, 2), 10), []Action{contradicted(10, math.MaxUint64, 16*s+1*ms, 15*s)}, Follower},
			// Muted: no read, but the revision counts at the next answer.
			{watched(1*s+2*ms, released(4, 2), math.MaxUint64), nil, Follower},
			{tick(2 * s), []Action{aRead()}, Follower},
			{read(2*s+1*ms, other(4, 2), 10), []Action{contradicted(10, math.MaxUint64, 17*s+1*ms, 15*s)}, Follower},
			// An absence or a corrupt record claims no revision.
			{watchedAbsent(3*s + 1*ms - ns), nil, Follower},
			{watchedCorrupt(3*s+1*ms, 11), []Action{aRead()}, Follower},
			{read(3*s+2*ms, other(4, 2), 10), nil, Follower},
			// Reads go on while it waits; the term starts when the wait ends.
			{tick(16 * s), []Action{aRead()}, Follower},
			{read(16*s+1*ms, other(4, 2), 10), nil, Follower},
			{tick(17*s + 1*ms), []Action{acquire(10, me(5, 3))}, Candidate},
		})},
		{"own record after a restart is waited out, not trusted", false, false, []step{
			{tick(0), []Action{aRead()}, Follower},
			{read(1*ms, me(4, 2), 10), nil, Follower},
			{tick(2 * s), []Action{aRead()}, Follower},
			{read(2*s+ms, me(4, 2), 10), nil, Follower},
			{tick(15*s + 1*ms), []Action{acquire(10, me(5, 2))}, Candidate},
		}},
		{"candidate leads from the time its request was sent", false, false, leaderAt()},
		{"acquire reply exactly at the renew deadline is too late", false, false, []step{
			{tick(0), []Action{aRead()}, Follower},
			{read(1*ms, released(4, 2), 10), []Action{acquire(10, me(5, 3))}, Candidate},
			{done(10*s+1*ms, me(5, 3), 11), []Action{release(11, released(5, 3))}, Expiring},
			{done(10*s+2*ms, released(5, 3), 12), []Action{acquire(12, me(6, 4))}, Candidate},
		}},
		{"acquire reply 1ns before the renew deadline leads", false, false, []step{
			{tick(0), []Action{aRead()}, Follower},
			{read(1*ms, released(4, 2), 10), []Action{acquire(10, me(5, 3))}, Candidate},
			{done(10*s+1*ms-ns, me(5, 3), 11), []Action{started(5, 1*ms), renew(11, me(5, 3))}, Leader},
			{tick(10*s + 1*ms), []Action{stopped(5, ReasonDeadline)}, Expiring},
		}},
		{"store may raise the token", false, false, []step{
			{tick(0), []Action{aRead()}, Follower},
			{readAbsent(1 * ms), []Action{acquire(0, me(1, 0))}, Candidate},
			{done(2*ms, me(1_000_000, 0), 3), []Action{started(1_000_000, 1*ms)}, Leader},
		}},
		{"candidate conflict follows the winner", false, true, join(followOther(), []step{
			{watched(1*s, released(4, 2), 11), []Action{aRead()}, Follower},
			{read(1*s+1*ms, released(4, 2), 11), []Action{acquire(11, me(5, 3))}, Candidate},
			{conflict(1*s+2*ms, other(5, 3), 12), nil, Follower},
			{tick(10*s + 1*ms), []Action{aRead()}, Follower},
			{read(10*s+2*ms, other(5, 3), 12), nil, Follower},
			{tick(16*s + 2*ms - ns), nil, Follower},
			{tick(16*s + 2*ms), []Action{acquire(12, me(6, 4))}, Candidate},
		})},
		{"candidate failure forgets, reads after the pause, then confirms its own write", false, false, join(followOther(), []step{
			{watched(1*s, released(4, 2), 11), []Action{aRead()}, Follower},
			{read(1*s+1*ms, released(4, 2), 11), []Action{acquire(11, me(5, 3))}, Candidate},
			{failed(1*s + 200*ms), nil, Follower},
			{tick(3*s + 1*ms - ns), nil, Follower},
			{tick(3*s + 1*ms), []Action{aRead()}, Follower},
			{read(3*s+100*ms, me(5, 3), 12), []Action{renew(12, me(5, 3))}, Candidate},
			{done(3*s+200*ms, me(5, 3), 13), []Action{started(5, 3*s+100*ms)}, Leader},
		})},
		{"candidate failure: someone else won", false, false, join(followOther(), []step{
			{watched(1*s, released(4, 2), 11), []Action{aRead()}, Follower},
			{read(1*s+1*ms, released(4, 2), 11), []Action{acquire(11, me(5, 3))}, Candidate},
			{failed(1*s + 200*ms), nil, Follower},
			{tick(3*s + 1*ms), []Action{aRead()}, Follower},
			{read(3*s+100*ms, other(5, 3), 12), nil, Follower},
		})},
		{"leader renews every RetryInterval from the last send", false, false, join(leaderAt(), []step{
			{tick(2*s + 1*ms - ns), nil, Leader},
			{tick(2*s + 1*ms), []Action{renew(11, me(5, 3))}, Leader},
			{done(2*s+5*ms, me(5, 3), 12), nil, Leader},
			{tick(4*s + 1*ms), []Action{renew(12, me(5, 3))}, Leader},
		})},
		{"renewal counts from the request, not the reply", false, false, join(leaderAt(), []step{
			{tick(2*s + 1*ms), []Action{renew(11, me(5, 3))}, Leader},
			{done(3*s, me(5, 3), 12), nil, Leader},
			{tick(4*s + 1*ms), []Action{renew(12, me(5, 3))}, Leader},
			{failed(6 * s), nil, Leader},
			{tick(12*s + 1*ms - ns), []Action{renew(12, me(5, 3))}, Leader},
			{failed(12 * s), nil, Leader},
			{tick(12*s + 1*ms), []Action{stopped(5, ReasonDeadline), release(12, released(5, 3))}, Expiring},
		})},
		{"renew deadline: 1ns after", false, false, join(leaderAt(), []step{
			{tick(2*s + 1*ms), []Action{renew(11, me(5, 3))}, Leader},
			{failed(4 * s), nil, Leader},
			{tick(10*s + 1*ms + ns), []Action{stopped(5, ReasonDeadline), release(11, released(5, 3))}, Expiring},
		})},
		{"a renewal reply handled after the deadline does not revive the term", false, false, join(leaderAt(), []step{
			{tick(9*s + 1*ms), []Action{renew(11, me(5, 3))}, Leader},
			{done(10*s+1*ms, me(5, 3), 12), []Action{stopped(5, ReasonDeadline), release(12, released(5, 3))}, Expiring},
		})},
		{"leader conflict steps down at once", false, false, join(leaderAt(), []step{
			{tick(2*s + 1*ms), []Action{renew(11, me(5, 3))}, Leader},
			{conflict(2*s+2*ms, other(6, 4), 13), []Action{stopped(5, ReasonLost)}, Follower},
		})},
		{"a record vanishing from a store that keeps records is a rollback: the leader steps down, nobody leads for a lease", false, true, join(leaderAt(), []step{
			{tick(9*s + 1*ms), []Action{renew(11, me(5, 3))}, Leader},
			{conflictAbsent(9*s + 2*ms), []Action{rolledBack(0, 11, 24*s+2*ms, 15*s), stopped(5, ReasonLost)}, Follower},
			{tick(18*s + 1*ms), []Action{aRead()}, Follower},
			{readAbsent(18*s + 2*ms), nil, Follower},
			{tick(24*s + 2*ms - ns), nil, Follower},
			{tick(24*s + 2*ms), []Action{acquire(0, me(6, 4))}, Candidate},
		})},
		{"leader conflict on a vanished record in a lossy store steps down and claims", true, false, join(leaderAt(), []step{
			{tick(2*s + 1*ms), []Action{renew(11, me(5, 3))}, Leader},
			{conflictAbsent(2*s + 2*ms), []Action{stopped(5, ReasonLost), create(me(6, 4))}, Candidate},
		})},
		{"leader conflict showing its own renewal keeps the term", false, false, join(leaderAt(), []step{
			{tick(2*s + 1*ms), []Action{renew(11, me(5, 3))}, Leader},
			{failed(2*s + 500*ms), nil, Leader},
			{tick(4*s + 1*ms), []Action{renew(11, me(5, 3))}, Leader},
			{conflict(4*s+2*ms, me(5, 3), 12), []Action{renew(12, me(5, 3))}, Leader},
			{done(4*s+3*ms, me(5, 3), 13), nil, Leader},
			{tick(6*s + 2*ms - ns), nil, Leader},
			{tick(6*s + 2*ms), []Action{renew(13, me(5, 3))}, Leader},
		})},
		{"leader watching another holder renews at once, and steps down on the conflict", false, false, join(leaderAt(), []step{
			{watched(1*s, other(6, 4), 12), []Action{renew(11, me(5, 3))}, Leader},
			{conflict(1*s+1*ms, other(6, 4), 12), []Action{stopped(5, ReasonLost)}, Follower},
		})},
		{"leader keeps leading after a forged watch event; the renewal it cost moves the pace on", false, false, join(leaderAt(), []step{
			{watched(1*s, other(6, 4), math.MaxUint64), []Action{renew(11, me(5, 3))}, Leader},
			{done(1*s+1*ms, me(5, 3), 12), nil, Leader},
			{watched(1*s+2*ms, other(6, 4), math.MaxUint64), nil, Leader},
			{tick(3*s - ns), nil, Leader},
			{tick(3 * s), []Action{renew(12, me(5, 3))}, Leader},
		})},
		{"a forged event claiming the next revision is not confirmed by the renewal it caused", false, false, join(leaderAt(), []step{
			{watched(1*s, other(6, 4), 12), []Action{renew(11, me(5, 3))}, Leader},
			{done(1*s+1*ms, me(5, 3), 12), nil, Leader},
			{watched(1*s+2*ms, other(6, 4), 13), nil, Leader},
			{watchedAbsent(3*s - ns), nil, Leader},
			{tick(3 * s), []Action{renew(12, me(5, 3))}, Leader},
		})},
		{"forged absences cost a leader one renewal per RetryInterval", false, false, join(leaderAt(), []step{
			{watchedAbsent(1 * s), []Action{renew(11, me(5, 3))}, Leader},
			{done(1*s+1*ms, me(5, 3), 12), nil, Leader},
			{watchedAbsent(1*s + 2*ms), nil, Leader},
			{watchedAbsent(2 * s), nil, Leader},
			{tick(3 * s), []Action{renew(12, me(5, 3))}, Leader},
			{done(3*s+1*ms-2*ns, me(5, 3), 13), nil, Leader},
			{watchedAbsent(3*s + 1*ms - ns), nil, Leader},
			{watchedAbsent(3*s + 1*ms), []Action{renew(13, me(5, 3))}, Leader},
		})},
		{"a read confirming a hint at its revision with its record does not mute hints", false, false, join(followOther(), []step{
			{watched(1*s, other(5, 3), 11), []Action{aRead()}, Follower},
			{read(1*s+1*ms, other(5, 3), 11), nil, Follower},
			{watched(1*s+2*ms, released(5, 3), 12), []Action{aRead()}, Follower},
		})},
		{"a read showing the hinted revision with another record mutes hints", false, false, join(followOther(), []step{
			{watched(1*s, released(4, 2), 11), []Action{aRead()}, Follower},
			{read(1*s+1*ms, other(4, 2), 11), nil, Follower},
			{watched(1*s+2*ms, released(4, 2), 12), nil, Follower},
		})},
		{"leader checks a watched absence with a renewal", false, false, join(leaderAt(), []step{
			{watchedAbsent(1 * s), []Action{renew(11, me(5, 3))}, Leader},
			{done(1*s+1*ms, me(5, 3), 12), nil, Leader},
			{tick(3 * s), []Action{renew(12, me(5, 3))}, Leader},
		})},
		{"a hint during a leader's renewal that its answer does not cover: one more renewal", false, false, join(leaderAt(), []step{
			{tick(2*s + 1*ms), []Action{renew(11, me(5, 3))}, Leader},
			{watched(2*s+2*ms, other(6, 4), 13), nil, Leader},
			{done(2*s+3*ms, me(5, 3), 12), []Action{renew(12, me(5, 3))}, Leader},
			{done(2*s+4*ms, me(5, 3), 13), nil, Leader},
			{tick(4*s + 3*ms), []Action{renew(13, me(5, 3))}, Leader},
		})},
		{"a leader's own renewal seen through the watch is not news", false, false, join(leaderAt(), []step{
			{tick(2*s + 1*ms), []Action{renew(11, me(5, 3))}, Leader},
			{watched(2*s+2*ms, me(5, 3), 12), nil, Leader},
			{done(2*s+3*ms, me(5, 3), 12), nil, Leader},
			{watched(2*s+4*ms, me(5, 3), 12), nil, Leader},
			{tick(4*s + 1*ms - ns), nil, Leader},
		})},
		{"the event of its own acquire, come before the answer, costs a new leader a renewal at once, and mutes nothing", false, false, []step{
			{tick(0), []Action{aRead()}, Follower},
			{read(1*ms, released(4, 2), 10), []Action{acquire(10, me(5, 3))}, Candidate},
			{watched(1*ms+500*us, me(5, 3), 11), nil, Candidate},
			{done(2*ms, me(5, 3), 11), []Action{started(5, 1*ms), renew(11, me(5, 3))}, Leader},
			{done(3*ms, me(5, 3), 12), nil, Leader},
			// Hints are not muted: the next news costs a renewal at once.
			{watched(4*ms, other(6, 4), 13), []Action{renew(12, me(5, 3))}, Leader},
		}},
		{"an event during the acquire at another revision than the answer's costs a renewal", false, false, []step{
			{tick(0), []Action{aRead()}, Follower},
			{read(1*ms, released(4, 2), 10), []Action{acquire(10, me(5, 3))}, Candidate},
			{watched(1*ms+500*us, me(5, 3), 12), nil, Candidate},
			{done(2*ms, me(5, 3), 11), []Action{started(5, 1*ms), renew(11, me(5, 3))}, Leader},
		}},
		{"an event during the acquire showing another record costs a renewal", false, false, []step{
			{tick(0), []Action{aRead()}, Follower},
			{read(1*ms, released(4, 2), 10), []Action{acquire(10, me(5, 3))}, Candidate},
			{watched(1*ms+500*us, other(6, 4), 11), nil, Candidate},
			{done(2*ms, me(5, 3), 11), []Action{started(5, 1*ms), renew(11, me(5, 3))}, Leader},
		}},
		{"an unreadable record watched at the acquire's revision costs a renewal", false, false, []step{
			{tick(0), []Action{aRead()}, Follower},
			{read(1*ms, released(4, 2), 10), []Action{acquire(10, me(5, 3))}, Candidate},
			{Event{Kind: Watched, Now: 1*ms + 500*us, Lease: me(5, 3), Revision: 11, Corrupt: true}, nil, Candidate},
			{done(2*ms, me(5, 3), 11), []Action{started(5, 1*ms), renew(11, me(5, 3))}, Leader},
		}},
		{"an event newer than the answer to a read in flight makes another read before a swap", false, false, []step{
			{tick(0), []Action{aRead()}, Follower},
			{watched(500*us, me(5, 3), 11), nil, Follower},
			// Revision 11 may have been written after the read was
			// served: a swap from 10 would fail, or succeed only if the
			// store went back and lost 11.
			{read(1*ms, released(4, 2), 10), []Action{aRead()}, Follower},
			{read(2*ms, released(4, 2), 10), []Action{contradicted(10, 11, 15*s+2*ms, 15*s)}, Follower},
			{tick(14 * s), []Action{aRead()}, Follower},
			{read(14*s+1*ms, released(4, 2), 10), nil, Follower},
			{tick(15*s + 2*ms), []Action{acquire(10, me(5, 3))}, Candidate},
		}},
		{"a read showing no record after one, in a store that keeps records, is a rollback", false, true, join(followOther(), []step{
			{tick(9 * s), []Action{aRead()}, Follower},
			{readAbsent(9*s + 1*ms), []Action{rolledBack(0, 10, 24*s+1*ms, 15*s)}, Follower},
			{tick(18 * s), []Action{aRead()}, Follower},
			{readAbsent(18*s + 1*ms), nil, Follower},
			{tick(24*s + 1*ms - ns), nil, Follower},
			{tick(24*s + 1*ms), []Action{acquire(0, me(5, 3))}, Candidate},
		})},
		{"leader watching its own renewal stays", false, false, join(leaderAt(), []step{
			{tick(2*s + 1*ms), []Action{renew(11, me(5, 3))}, Leader},
			{watched(2*s+2*ms, me(5, 3), 12), nil, Leader},
			{done(2*s+3*ms, me(5, 3), 12), nil, Leader},
		})},
		{"stop releases, then done", false, false, join(leaderAt(), []step{
			{stop(1*s, true), []Action{stopped(5, ReasonStopped), release(11, released(5, 3))}, Expiring},
			{done(1*s+ms, released(5, 3), 12), []Action{aDone()}, Follower},
			{tick(20 * s), nil, Follower},
		})},
		{"stop without release", false, false, join(leaderAt(), []step{
			{stop(1*s, false), []Action{stopped(5, ReasonStopped), aDone()}, Expiring},
		})},
		{"stop during a renewal waits for it, then releases its revision", false, false, join(leaderAt(), []step{
			{tick(2*s + 1*ms), []Action{renew(11, me(5, 3))}, Leader},
			{stop(2*s+2*ms, true), []Action{stopped(5, ReasonStopped)}, Expiring},
			{done(2*s+3*ms, me(5, 3), 12), []Action{release(12, released(5, 3))}, Expiring},
			{conflict(2*s+4*ms, other(6, 4), 13), []Action{aDone()}, Follower},
		})},
		{"stop as candidate gives back what it won", false, false, join(followOther(), []step{
			{watched(1*s, released(4, 2), 11), []Action{aRead()}, Follower},
			{read(1*s, released(4, 2), 11), []Action{acquire(11, me(5, 3))}, Candidate},
			{stop(1*s+ms, true), nil, Candidate},
			{done(1*s+2*ms, me(5, 3), 12), []Action{release(12, released(5, 3))}, Expiring},
			{done(1*s+3*ms, released(5, 3), 13), []Action{aDone()}, Follower},
		})},
		{"stop as follower", false, false, join(followOther(), []step{
			{tick(2 * s), []Action{aRead()}, Follower},
			{stop(2*s+ms, true), []Action{aDone()}, Follower},
			{read(2*s+2*ms, released(4, 2), 11), nil, Follower},
		})},
		{"resign releases, then takes no term for a LeaseDuration", false, true, join(leaderAt(), []step{
			{resign(1 * s), []Action{stopped(5, ReasonResigned), release(11, released(5, 3))}, Expiring},
			{done(1*s+ms, released(5, 3), 12), nil, Follower},
			{tick(10 * s), []Action{aRead()}, Follower},
			{read(10*s+ms, released(5, 3), 12), nil, Follower},
			{tick(16*s - ns), nil, Follower},
			{tick(16 * s), []Action{acquire(12, me(6, 4))}, Candidate},
		})},
		{"resign: another holder seen ends the wait", false, true, join(leaderAt(), []step{
			{resign(1 * s), []Action{stopped(5, ReasonResigned), release(11, released(5, 3))}, Expiring},
			{done(1*s+ms, released(5, 3), 12), nil, Follower},
			{tick(10 * s), []Action{aRead()}, Follower},
			{read(10*s+ms, other(6, 4), 13), nil, Follower},
			{watched(12*s, released(6, 4), 14), []Action{aRead()}, Follower},
			{read(12*s+ms, released(6, 4), 14), []Action{acquire(14, me(7, 5))}, Candidate},
		})},
		{"resign: another's term, released before it was seen, ends the wait", false, true, join(leaderAt(), []step{
			{resign(1 * s), []Action{stopped(5, ReasonResigned), release(11, released(5, 3))}, Expiring},
			{done(1*s+ms, released(5, 3), 12), nil, Follower},
			{tick(10 * s), []Action{aRead()}, Follower},
			{read(10*s+ms, released(6, 4), 14), []Action{acquire(14, me(7, 5))}, Candidate},
		})},
		{"resign: a hint of another holder does not end the wait", false, true, join(leaderAt(), []step{
			{resign(1 * s), []Action{stopped(5, ReasonResigned), release(11, released(5, 3))}, Expiring},
			{done(1*s+ms, released(5, 3), 12), nil, Follower},
			{watched(2*s, other(6, 4), 13), []Action{aRead()}, Follower},
			// The read does not show it: a rollback or a forgery, waited
			// out as one (past the resign's wait).
			{read(2*s+ms, released(5, 3), 12), []Action{contradicted(12, 13, 17*s+ms, 15*s)}, Follower},
			{tick(10 * s), []Action{aRead()}, Follower},
			{read(10*s+ms, released(5, 3), 12), nil, Follower},
			{tick(17*s + ms - ns), nil, Follower},
			{tick(17*s + ms), []Action{acquire(12, me(6, 4))}, Candidate},
		})},
		{"resign during a renewal waits for it, then releases its revision", false, false, join(leaderAt(), []step{
			{tick(2*s + 1*ms), []Action{renew(11, me(5, 3))}, Leader},
			{resign(2*s + 2*ms), []Action{stopped(5, ReasonResigned)}, Expiring},
			{done(2*s+3*ms, me(5, 3), 12), []Action{release(12, released(5, 3))}, Expiring},
			{done(2*s+4*ms, released(5, 3), 13), nil, Follower},
		})},
		{"resign is ignored by a follower", false, false, join(followOther(), []step{
			{resign(1 * s), nil, Follower},
			{tick(2 * s), []Action{aRead()}, Follower},
			{read(2*s+ms, released(4, 2), 11), []Action{acquire(11, me(5, 3))}, Candidate},
		})},
		{"resign is ignored while stopping", false, false, join(leaderAt(), []step{
			{tick(2*s + 1*ms), []Action{renew(11, me(5, 3))}, Leader},
			{stop(2*s+2*ms, true), []Action{stopped(5, ReasonStopped)}, Expiring},
			{resign(2*s + 3*ms), nil, Expiring},
			{done(2*s+4*ms, me(5, 3), 12), []Action{release(12, released(5, 3))}, Expiring},
			{done(2*s+5*ms, released(5, 3), 13), []Action{aDone()}, Follower},
		})},
		{"stop after resign finishes the release, then done", false, false, join(leaderAt(), []step{
			{resign(1 * s), []Action{stopped(5, ReasonResigned), release(11, released(5, 3))}, Expiring},
			{stop(1*s+ms, true), nil, Expiring},
			{done(1*s+2*ms, released(5, 3), 12), []Action{aDone()}, Follower},
		})},
		{"expiring retries the release until the lease surely expired", false, true, join(leaderAt(), []step{
			{tick(9*s + 1*ms), []Action{renew(11, me(5, 3))}, Leader},
			{failed(9*s + 500*ms), nil, Leader},
			{tick(10*s + 1*ms), []Action{stopped(5, ReasonDeadline), release(11, released(5, 3))}, Expiring},
			{failed(10*s + 500*ms), nil, Expiring},
			{tick(19*s + 1*ms), []Action{release(11, released(5, 3))}, Expiring},
			{failed(19*s + 500*ms), nil, Expiring},
			{tick(24*s + 1*ms - ns), nil, Expiring},
			{tick(24*s + 1*ms), []Action{acquire(11, me(6, 3))}, Candidate},
		})},
		{"expiring release conflict follows the winner", false, false, join(leaderAt(), []step{
			{stop(1*s, true), []Action{stopped(5, ReasonStopped), release(11, released(5, 3))}, Expiring},
			{conflict(1*s+ms, other(6, 4), 12), []Action{aDone()}, Follower},
		})},
		{"released by deadline, then acquires a new term", false, false, join(leaderAt(), []step{
			{tick(2*s + 1*ms), []Action{renew(11, me(5, 3))}, Leader},
			{failed(10*s + 1*ms), []Action{stopped(5, ReasonDeadline), release(11, released(5, 3))}, Expiring},
			{done(10*s+2*ms, released(5, 3), 12), []Action{acquire(12, me(6, 4))}, Candidate},
		})},
		{"same holder re-acquires after expiry: new token, same transitions", false, false, []step{
			{tick(0), []Action{aRead()}, Follower},
			{read(1*ms, me(9, 6), 30), nil, Follower},
			{tick(15*s + 1*ms), []Action{acquire(30, me(10, 6))}, Candidate},
		}},
		{"lossy store: record lost after it was seen", true, true, join(followOther(), []step{
			{tick(9 * s), []Action{aRead()}, Follower},
			{readAbsent(9*s + 1*ms), []Action{create(me(5, 3))}, Candidate},
			{done(9*s+2*ms, me(5, 3), 11), []Action{claimed(5, 11, 15*s, 24*s+2*ms)}, Follower},
			{watched(10*s, other(4, 2), 10), nil, Follower},
			{tick(18*s + 1*ms), []Action{aRead()}, Follower},
			{read(18*s+2*ms, me(5, 3), 11), nil, Follower},
			{tick(24*s + 2*ms), []Action{acquire(11, me(6, 3))}, Candidate},
		})},
		{"lossy store: a create with an unknown outcome is a claim too", true, true, []step{
			{tick(0), []Action{aRead()}, Follower},
			{readAbsent(1 * ms), []Action{create(me(1, 0))}, Candidate},
			{failed(5 * s), nil, Follower},
			{tick(9*s + 1*ms), []Action{aRead()}, Follower},
			{read(9*s+2*ms, me(1, 0), 1), nil, Follower},
			{tick(18*s + 1*ms), []Action{aRead()}, Follower},
			{read(18*s+2*ms, me(1, 0), 1), nil, Follower},
			{tick(24*s + 2*ms - ns), nil, Follower},
			{tick(24*s + 2*ms), []Action{acquire(1, me(2, 0))}, Candidate},
		}},
		{"lossy store: an older unknown acquire does not make a later claim confirmable", true, true, join(followOther(), []step{
			{tick(9 * s), []Action{aRead()}, Follower},
			{read(9*s+1*ms, released(4, 2), 11), []Action{acquire(11, me(5, 3))}, Candidate},
			{failed(9*s + 200*ms), nil, Follower},
			{tick(18*s + 1*ms), []Action{aRead()}, Follower},
			{readAbsent(18*s + 2*ms), []Action{create(me(5, 3))}, Candidate},
			{failed(18*s + 500*ms), nil, Follower},
			{tick(27*s + 2*ms), []Action{aRead()}, Follower},
			{read(27*s+3*ms, me(5, 3), 12), nil, Follower},
			{tick(36*s + 2*ms), []Action{aRead()}, Follower},
			{read(36*s+3*ms, me(5, 3), 12), nil, Follower},
			{tick(42*s + 3*ms - ns), nil, Follower},
			{tick(42*s + 3*ms), []Action{acquire(12, me(6, 3))}, Candidate},
		})},
		{"a read's absence after a watched record is read again; absence then is a rollback", false, false, []step{
			{tick(0), []Action{aRead()}, Follower},
			{watched(0, other(1, 0), 1), nil, Follower},
			{readAbsent(0), []Action{aRead()}, Follower},
			{readAbsent(1 * ms), []Action{contradicted(0, 1, 15*s+1*ms, 15*s)}, Follower},
			{tick(14 * s), []Action{aRead()}, Follower},
			{readAbsent(14*s + 1*ms), nil, Follower},
			{tick(15*s + 1*ms), []Action{acquire(0, me(1, 0))}, Candidate},
			{conflict(15*s+2*ms, other(1, 0), 1), nil, Follower},
		}},
		{"lossy store: a record back after a read found none is a rollback", true, true, join(followOther(), []step{
			{tick(9 * s), []Action{aRead()}, Follower},
			{readAbsent(9*s + 1*ms), []Action{create(me(5, 3))}, Candidate},
			{conflict(9*s+2*ms, other(4, 2), 10), []Action{rolledBack(10, 10, 24*s+2*ms, 15*s)}, Follower},
			{tick(18*s + 1*ms), []Action{aRead()}, Follower},
			{read(18*s+2*ms, other(4, 2), 10), nil, Follower},
			{tick(24*s + 2*ms - ns), nil, Follower},
			{tick(24*s + 2*ms), []Action{acquire(10, me(5, 3))}, Candidate},
		})},
		{"after an unknown outcome the newest revision is news again, an older one is not", false, true, join(followOther(), []step{
			{tick(9 * s), []Action{aRead()}, Follower},
			{read(9*s+1*ms, released(4, 2), 11), []Action{acquire(11, me(5, 3))}, Candidate},
			{failed(9*s + 200*ms), nil, Follower},
			{watched(10*s, other(4, 2), 10), nil, Follower},
			{tick(18*s + 1*ms), []Action{aRead()}, Follower},
			{read(18*s+2*ms, released(4, 2), 11), []Action{acquire(11, me(5, 3))}, Candidate},
		})},
		// Revisions that go backwards (restore from a backup, replica
		// promotion, hand edit).
		{"a read older than the newest accepted is a rollback: no term before a full lease from then", false, true, join(followOther(), []step{
			{tick(9 * s), []Action{aRead()}, Follower},
			{read(9*s+1*ms, other(4, 2), 1), []Action{rolledBack(1, 10, 24*s+1*ms, 15*s)}, Follower},
			{tick(15*s + 1*ms), nil, Follower},
			{tick(18 * s), []Action{aRead()}, Follower},
			{read(18*s+1*ms, other(4, 2), 1), nil, Follower},
			{tick(24*s + 1*ms - ns), nil, Follower},
			{tick(24*s + 1*ms), []Action{acquire(1, me(5, 3))}, Candidate},
			{done(24*s+2*ms, me(5, 3), 2), []Action{started(5, 24*s+1*ms)}, Leader},
		})},
		{"a rollback to a free record (revision 1, no holder) is not taken before a full lease; the token stays above all seen", false, true, join(followOther(), []step{
			{tick(9 * s), []Action{aRead()}, Follower},
			{read(9*s+1*ms, released(1, 0), 1), []Action{rolledBack(1, 10, 24*s+1*ms, 15*s)}, Follower},
			{tick(18 * s), []Action{aRead()}, Follower},
			{read(18*s+1*ms, released(1, 0), 1), nil, Follower},
			{tick(24*s + 1*ms - ns), nil, Follower},
			{tick(24*s + 1*ms), []Action{acquire(1, me(5, 3))}, Candidate},
		})},
		{"the same revision holding another record is a rollback", false, true, join(followOther(), []step{
			{tick(9 * s), []Action{aRead()}, Follower},
			{read(9*s+1*ms, released(4, 2), 10), []Action{rolledBack(10, 10, 24*s+1*ms, 15*s)}, Follower},
		})},
		{"a rollback waits the longer of the last record's lease and its own", false, true, []step{
			{tick(0), []Action{aRead()}, Follower},
			{read(1*ms, Lease{Holder: "other", Token: 4, Transitions: 2, LeaseDuration: 40 * s}, 10), []Action{longWait(10, 40*s, 40*s+1*ms)}, Follower},
			{tick(9 * s), []Action{aRead()}, Follower},
			{read(9*s+1*ms, released(4, 2), 3), []Action{rolledBack(3, 10, 49*s+1*ms, 40*s)}, Follower},
		}},
		{"a leader whose renewal meets its own record at an older revision steps down: a rollback", false, true, join(leaderAt(), []step{
			{tick(9*s + 1*ms), []Action{renew(11, me(5, 3))}, Leader},
			{conflict(9*s+2*ms, me(5, 3), 3), []Action{rolledBack(3, 11, 24*s+2*ms, 15*s), stopped(5, ReasonLost)}, Follower},
			{tick(18*s + 1*ms), []Action{aRead()}, Follower},
			{read(18*s+2*ms, me(5, 3), 3), nil, Follower},
			{tick(24*s + 2*ms - ns), nil, Follower},
			{tick(24*s + 2*ms), []Action{acquire(3, me(6, 3))}, Candidate},
		})},
		{"a swap reported done at an older revision is a rollback, not a term", false, true, join(followOther(), []step{
			{tick(9 * s), []Action{aRead()}, Follower},
			{read(9*s+1*ms, released(4, 2), 11), []Action{acquire(11, me(5, 3))}, Candidate},
			{done(9*s+2*ms, me(5, 3), 7), []Action{rolledBack(7, 11, 24*s+2*ms, 15*s)}, Follower},
		})},
		{"a rollback forgets an acquire with an unknown outcome", false, true, join(followOther(), []step{
			{tick(9 * s), []Action{aRead()}, Follower},
			{read(9*s+1*ms, released(4, 2), 11), []Action{acquire(11, me(5, 3))}, Candidate},
			{failed(9*s + 500*ms), nil, Follower},
			{tick(18*s + 1*ms), []Action{aRead()}, Follower},
			{read(18*s+2*ms, me(5, 3), 5), []Action{rolledBack(5, 11, 33*s+2*ms, 15*s)}, Follower},
			{tick(27*s + 1*ms), []Action{aRead()}, Follower},
			{read(27*s+2*ms, me(5, 3), 5), nil, Follower},
			{tick(33*s + 2*ms), []Action{acquire(5, me(6, 3))}, Candidate},
		})},
		// The request budget: no store behaviour makes a loop.
		{"a conflict showing the revision it expected gets one retry, then the retry pause", false, true, join(followOther(), []step{
			{tick(9 * s), []Action{aRead()}, Follower},
			{read(9*s+1*ms, released(4, 2), 11), []Action{acquire(11, me(5, 3))}, Candidate},
			{conflict(9*s+2*ms, released(4, 2), 11), []Action{acquire(11, me(5, 3))}, Candidate},
			{conflict(9*s+3*ms, released(4, 2), 11), nil, Follower},
			{tick(18*s + 2*ms - ns), nil, Follower},
			{tick(18*s + 2*ms), []Action{acquire(11, me(5, 3))}, Candidate},
		})},
		{"a leader's renewals meeting its own record again and again pause after two retries", false, false, join(leaderAt(), []step{
			{tick(2*s + 1*ms), []Action{renew(11, me(5, 3))}, Leader},
			{conflict(2*s+2*ms, me(5, 3), 12), []Action{renew(12, me(5, 3))}, Leader},
			{conflict(2*s+3*ms, me(5, 3), 13), []Action{renew(13, me(5, 3))}, Leader},
			{conflict(2*s+4*ms, me(5, 3), 14), nil, Leader},
			{tick(4*s + 3*ms - ns), nil, Leader},
			{tick(4*s + 3*ms), []Action{renew(14, me(5, 3))}, Leader},
		})},
		// Records out of bounds are refused.
		{"a record out of bounds is refused: no takeover, no token or wait from it; a valid one is taken at once", false, true, join(followOther(), []step{
			{tick(9 * s), []Action{aRead()}, Follower},
			{read(9*s+1*ms, Lease{Holder: "evil", Token: lease.MaxToken + 1, LeaseDuration: math.MaxInt64}, 11), []Action{corrupt(11)}, Follower},
			{tick(15*s + 1*ms), nil, Follower},
			{tick(18 * s), []Action{aRead()}, Follower},
			{readCorrupt(18*s+1*ms, 11), []Action{corrupt(11)}, Follower},
			{tick(27 * s), []Action{aRead()}, Follower},
			{read(27*s+1*ms, released(4, 2), 12), []Action{acquire(12, me(5, 3))}, Candidate},
		})},
		{"a leader whose renewal meets a corrupt record steps down", false, false, join(leaderAt(), []step{
			{tick(2*s + 1*ms), []Action{renew(11, me(5, 3))}, Leader},
			{Event{Kind: SwapConflict, Now: 2*s + 2*ms, Revision: 12, Corrupt: true}, []Action{corrupt(12), stopped(5, ReasonLost)}, Follower},
			{tick(4*s + 1*ms), []Action{aRead()}, Follower},
		})},
		{"a candidate whose swap is reported done with a record out of bounds does not lead", false, false, join(followOther(), []step{
			{tick(2 * s), []Action{aRead()}, Follower},
			{read(2*s+1*ms, released(4, 2), 11), []Action{acquire(11, me(5, 3))}, Candidate},
			{done(2*s+2*ms, Lease{Holder: "me", Token: 5, Transitions: 3}, 12), []Action{corrupt(12)}, Follower},
		})},
		{"a swap reported done with no record is not led on", false, false, join(followOther(), []step{
			{tick(2 * s), []Action{aRead()}, Follower},
			{read(2*s+1*ms, released(4, 2), 11), []Action{acquire(11, me(5, 3))}, Candidate},
			{Event{Kind: SwapDone, Now: 2*s + 2*ms, Lease: me(5, 3), Absent: true}, []Action{corrupt(0)}, Follower},
		})},
		{"confirming an acquire with an unknown outcome promises its own LeaseDuration, whatever the store shows", false, false, join(followOther(), []step{
			{tick(2 * s), []Action{aRead()}, Follower},
			{read(2*s+1*ms, released(4, 2), 11), []Action{acquire(11, me(5, 3))}, Candidate},
			{failed(2*s + 200*ms), nil, Follower},
			{tick(4*s + 1*ms), []Action{aRead()}, Follower},
			{read(4*s+2*ms, Lease{Holder: "me", Token: 5, Transitions: 3, LeaseDuration: 1}, 12), []Action{renew(12, me(5, 3))}, Candidate},
		})},
		{"a store that lowers the token of a new term is not led on", false, false, join(followOther(), []step{
			{tick(2 * s), []Action{aRead()}, Follower},
			{read(2*s+1*ms, released(4, 2), 11), []Action{acquire(11, me(5, 3))}, Candidate},
			{done(2*s+2*ms, me(4, 3), 12), nil, Follower},
		})},
		// Token exhaustion.
		{"the last token is issued", false, false, []step{
			{tick(0), []Action{aRead()}, Follower},
			{read(1*ms, released(lease.MaxToken-1, 2), 10), []Action{acquire(10, me(lease.MaxToken, 3))}, Candidate},
			{done(2*ms, me(lease.MaxToken, 3), 11), []Action{started(lease.MaxToken, 1*ms)}, Leader},
			{tick(2*s + 1*ms), []Action{renew(11, me(lease.MaxToken, 3))}, Leader},
		}},
		{"tokens exhausted: no new term, a report per answer, polling goes on", false, false, []step{
			{tick(0), []Action{aRead()}, Follower},
			{read(1*ms, released(lease.MaxToken, 2), 10), []Action{exhausted(lease.MaxToken)}, Follower},
			{tick(2*s - ns), nil, Follower},
			{tick(2 * s), []Action{aRead()}, Follower},
			{read(2*s+1*ms, released(lease.MaxToken, 2), 10), []Action{exhausted(lease.MaxToken)}, Follower},
			{tick(3 * s), nil, Follower},
		}},
		{"tokens exhausted: a held record is not taken over when it expires", false, true, []step{
			{tick(0), []Action{aRead()}, Follower},
			{read(1*ms, other(lease.MaxToken, 2), 10), nil, Follower},
			{tick(9 * s), []Action{aRead()}, Follower},
			{read(9*s+1*ms, other(lease.MaxToken, 2), 10), nil, Follower},
			{tick(15*s + 1*ms), []Action{exhausted(lease.MaxToken)}, Follower},
			{tick(18 * s), []Action{aRead()}, Follower},
		}},
		{"Transitions stops at its bound", false, false, []step{
			{tick(0), []Action{aRead()}, Follower},
			{read(1*ms, released(4, lease.MaxToken), 10), []Action{acquire(10, Lease{Holder: "me", Token: 5, Transitions: lease.MaxToken, LeaseDuration: 15 * s})}, Candidate},
		}},
		// maxLease (lossy stores) comes from accepted records only and
		// decays once an absence has been waited out in full.
		{"lossy store: a longer lease seen is waited out after a loss, then forgotten", true, true, join([]step{
			{tick(0), []Action{aRead()}, Follower},
			{read(1*ms, Lease{Holder: "other", Token: 4, Transitions: 2, LeaseDuration: 60 * s}, 10), []Action{longWait(10, 60*s, 60*s+1*ms)}, Follower},
			{tick(9 * s), []Action{aRead()}, Follower},
			{readAbsent(9*s + 1*ms), []Action{create(me(5, 3))}, Candidate},
			{done(9*s+2*ms, me(5, 3), 11), []Action{longWait(11, 60*s, 69*s+2*ms), claimed(5, 11, 60*s, 69*s+2*ms)}, Follower},
		}, polls(18*s+1*ms, 69*s+2*ms, me(5, 3), 11), []step{
			{tick(69*s + 2*ms - ns), nil, Follower},
			{tick(69*s + 2*ms), []Action{acquire(11, me(6, 3))}, Candidate},
			{done(69*s+3*ms, me(6, 3), 12), []Action{started(6, 69*s+2*ms)}, Leader},
			{tick(78*s + 2*ms), []Action{renew(12, me(6, 3))}, Leader},
			{conflictAbsent(78*s + 3*ms), []Action{stopped(6, ReasonLost), create(me(7, 4))}, Candidate},
			{done(78*s+4*ms, me(7, 4), 13), []Action{claimed(7, 13, 15*s, 93*s+4*ms)}, Follower},
		}, polls(87*s+3*ms, 93*s+4*ms, me(7, 4), 13), []step{
			{tick(93*s + 4*ms - ns), nil, Follower},
			{tick(93*s + 4*ms), []Action{acquire(13, me(8, 4))}, Candidate},
		})},
		{"lossy store: a refused record's LeaseDuration is never waited for", true, true, join(followOther(), []step{
			{tick(9 * s), []Action{aRead()}, Follower},
			{read(9*s+1*ms, Lease{Holder: "evil", Token: 5, LeaseDuration: lease.MaxDuration + 1}, 11), []Action{corrupt(11)}, Follower},
			{tick(18 * s), []Action{aRead()}, Follower},
			{readAbsent(18*s + 1*ms), []Action{create(me(5, 3))}, Candidate},
			{done(18*s+2*ms, me(5, 3), 12), []Action{claimed(5, 12, 15*s, 33*s+2*ms)}, Follower},
			{tick(27*s + 1*ms), []Action{aRead()}, Follower},
			{read(27*s+2*ms, me(5, 3), 12), nil, Follower},
			{tick(33*s + 2*ms), []Action{acquire(12, me(6, 3))}, Candidate},
		})},
		{"reconfigure applies to the next pause", false, false, join(followOther(), []step{
			{reconfigure(1*s, func() lease.Config { c := testConfig(); c.RetryInterval = 5 * s; return c }()), nil, Follower},
			{tick(2 * s), []Action{aRead()}, Follower},
			{read(2*s+ms, other(4, 2), 10), nil, Follower},
			{tick(7*s - ns), nil, Follower},
			{tick(7 * s), []Action{aRead()}, Follower},
		})},
		{"reconfigure shortens a leader's belief", false, false, join(leaderAt(), []step{
			{reconfigure(1*s, func() lease.Config { c := testConfig(); c.RenewDeadline = 3 * s; c.BackendTimeout = s; return c }()), nil, Leader},
			{tick(2*s + 1*ms), []Action{renew(11, me(5, 3))}, Leader},
			{tick(3*s + 1*ms), []Action{stopped(5, ReasonDeadline)}, Expiring},
		})},
		{"invalid reconfigure is ignored", false, false, join(followOther(), []step{
			{reconfigure(1*s, lease.Config{}), nil, Follower},
			{tick(2 * s), []Action{aRead()}, Follower},
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			if tt.slow {
				cfg.RetryInterval = 9 * s
			}
			runSteps(t, Options{Identity: "me", Config: cfg, LossyStore: tt.lossy}, tt.steps)
		})
	}
}

func TestLeadingEndsAtDeadlineEvenWithoutTick(t *testing.T) {
	m, _ := New(Options{Identity: "me", Config: testConfig()})
	for _, st := range leaderAt() {
		m.Step(st.ev)
	}
	until := 1*ms + 10*s
	if m.LeaderUntil() != until {
		t.Fatalf("LeaderUntil = %v, want %v", m.LeaderUntil(), until)
	}
	for _, c := range []struct {
		at   time.Duration
		want bool
	}{{until - ns, true}, {until, false}, {until + ns, false}} {
		if got := m.Leading(c.at); got != c.want {
			t.Errorf("Leading(%v) = %v, want %v", c.at, got, c.want)
		}
	}
	if tok, since, ok := m.Term(); !ok || tok != 5 || since != 1*ms {
		t.Errorf("Term() = %d, %v, %v; want 5, 1ms, true", tok, since, ok)
	}
}

func TestNextWake(t *testing.T) {
	m, _ := New(Options{Identity: "me", Config: testConfig()})
	if got := m.NextWake(); got != 0 {
		t.Fatalf("new machine wakes at %v, want 0", got)
	}
	m.Step(tick(0))
	if got := m.NextWake(); got != Never {
		t.Fatalf("while reading wakes at %v, want Never", got)
	}
	m.Step(read(1*ms, other(1, 0), 1))
	if got := m.NextWake(); got != 2*s {
		t.Fatalf("follower wakes at %v, want 2s", got)
	}
	m2, _ := New(Options{Identity: "me", Config: testConfig()})
	for _, st := range leaderAt() {
		m2.Step(st.ev)
	}
	if got := m2.NextWake(); got != 2*s+1*ms {
		t.Fatalf("leader wakes at %v, want 2.001s", got)
	}
	m2.Step(tick(2*s + 1*ms))
	if got := m2.NextWake(); got != 10*s+1*ms {
		t.Fatalf("renewing leader wakes at %v, want its deadline 10.001s", got)
	}
}

func TestJitterStaysInRange(t *testing.T) {
	c := testConfig()
	c.RetryJitter = 0.5
	for _, f := range []float64{0, 0.25, 0.999999} {
		m, _ := New(Options{Identity: "me", Config: c, Rand: fixedRand(f)})
		m.Step(tick(0))
		m.Step(read(0, other(1, 0), 1))
		want := 2*s + time.Duration(float64(2*s)*0.5*f)
		if got := m.NextWake(); got != want {
			t.Errorf("rand %v: next read at %v, want %v", f, got, want)
		}
	}
}

type fixedRand float64

func (f fixedRand) Float64() float64 { return float64(f) }

func TestNewRejectsBadOptions(t *testing.T) {
	if _, err := New(Options{Config: testConfig()}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("empty identity: %v", err)
	}
	if _, err := New(Options{Identity: "me"}); !errors.Is(err, ErrInvalidOptions) || !errors.Is(err, lease.ErrInvalidConfig) {
		t.Errorf("zero config: %v", err)
	}
}

// BenchmarkStep measures one renewal cycle of a leader: a tick that issues
// the renewal and the reply that confirms it.
func BenchmarkStep(b *testing.B) {
	m, _ := New(Options{Identity: "me", Config: testConfig(), Rand: fixedRand(0.5)})
	for _, st := range leaderAt() {
		m.Step(st.ev)
	}
	now := 2 * ms
	rev := lease.Revision(11)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		now += 2 * s
		m.Step(Event{Kind: Tick, Now: now})
		rev++
		m.Step(Event{Kind: SwapDone, Now: now + ms, Lease: me(5, 3), Revision: rev})
	}
	if m.State() != Leader {
		b.Fatalf("state %v", m.State())
	}
}

// A record whose LeaseDuration someone shortened (1ns, on a live leader's
// record) is waited out for the follower's own LeaseDuration at least: the
// leader believes for its own RenewDeadline whatever the record says.
func TestPatienceIsAtLeastOwnLeaseDuration(t *testing.T) {
	for _, d := range []time.Duration{1 * ns, 1 * s, 15*s - 1, 15 * s, 20 * s} {
		m, _ := New(Options{Identity: "me", Config: testConfig()})
		m.Step(tick(0))
		short := other(4, 2)
		short.LeaseDuration = d
		m.Step(read(1*ms, short, 10))
		want := 1*ms + max(d, 15*s)
		acquiredAt := time.Duration(-1)
		// Wake when the machine asks; answer every read 1ms later with
		// the same record.
		for acquiredAt < 0 {
			now := m.NextWake()
			if now == Never || now > time.Minute {
				t.Fatalf("record LeaseDuration %v: the follower never acquires", d)
			}
			acts := m.Step(tick(now))
			for len(acts) == 1 && acts[0].Kind == Read {
				now += ms
				acts = m.Step(read(now, short, 10))
			}
			for _, a := range acts {
				if a.Kind == Swap && a.Swap == Acquire {
					acquiredAt = now
				}
			}
		}
		if acquiredAt < want {
			t.Errorf("record LeaseDuration %v: acquired at %v, before %v (own LeaseDuration 15s)", d, acquiredAt, want)
		}
		if acquiredAt > want+2*s+ms {
			t.Errorf("record LeaseDuration %v: acquired at %v, want soon after %v", d, acquiredAt, want)
		}
	}
}

func vouched(t time.Duration, l Lease, rev lease.Revision) Event {
	return Event{Kind: SwapDone, Now: t, Lease: l, Revision: rev, Vouched: true}
}

// TestVouchedCreates: on a store that may lose records, a create the store
// vouches for (Event.Vouched) leads at once; one it does not vouch for, or
// whose outcome is unknown, is a claim. Vouched means nothing on another
// swap. A create refused while no record exists (no store of this module
// does that) is not sent again for a LeaseDuration. The config polls every
// 9s, LeaseDuration 15s.
func TestVouchedCreates(t *testing.T) {
	tests := []struct {
		name  string
		lossy bool
		steps []step
	}{
		{"a vouched create leads at once", true, []step{
			{tick(0), []Action{aRead()}, Follower},
			{readAbsent(1 * ms), []Action{create(me(1, 0))}, Candidate},
			{vouched(2*ms, me(1, 0), 1), []Action{started(1, 1*ms)}, Leader},
		}},
		{"a create not vouched for is a claim", true, []step{
			{tick(0), []Action{aRead()}, Follower},
			{readAbsent(1 * ms), []Action{create(me(1, 0))}, Candidate},
			{done(2*ms, me(1, 0), 1), []Action{claimed(1, 1, 15*s, 15*s+2*ms)}, Follower},
			{tick(9*s + 1*ms), []Action{aRead()}, Follower},
			{read(9*s+2*ms, me(1, 0), 1), nil, Follower},
			{tick(15*s + 2*ms - ns), nil, Follower},
			{tick(15*s + 2*ms), []Action{acquire(1, me(2, 0))}, Candidate},
			{done(15*s+3*ms, me(2, 0), 2), []Action{started(2, 15*s+2*ms)}, Leader},
		}},
		{"a node stopped while its create is in flight leaves the claim standing", true, []step{
			{tick(0), []Action{aRead()}, Follower},
			{readAbsent(1 * ms), []Action{create(me(1, 0))}, Candidate},
			{stop(2*ms, true), nil, Candidate},
			{done(3*ms, me(1, 0), 1), []Action{aDone()}, Follower},
		}},
		{"a store that keeps its records has a created lease released on stop", false, []step{
			{tick(0), []Action{aRead()}, Follower},
			{readAbsent(1 * ms), []Action{acquire(0, me(1, 0))}, Candidate},
			{stop(2*ms, true), nil, Candidate},
			{done(3*ms, me(1, 0), 1), []Action{release(1, released(1, 0))}, Expiring},
		}},
		{"a create with an unknown outcome is a claim even if it landed", true, []step{
			{tick(0), []Action{aRead()}, Follower},
			{readAbsent(1 * ms), []Action{create(me(1, 0))}, Candidate},
			{failed(500 * ms), nil, Follower},
			{tick(9*s + 1*ms), []Action{aRead()}, Follower},
			{read(9*s+2*ms, me(1, 0), 1), nil, Follower},
		}},
		{"vouched on a takeover of a released lease changes nothing", true, []step{
			{tick(0), []Action{aRead()}, Follower},
			{read(1*ms, released(7, 3), 42), []Action{acquire(42, me(8, 4))}, Candidate},
			{vouched(2*ms, me(8, 4), 43), []Action{started(8, 1*ms)}, Leader},
		}},
		{"a refused create is sent again a LeaseDuration later", true, []step{
			{tick(0), []Action{aRead()}, Follower},
			{readAbsent(1 * ms), []Action{create(me(1, 0))}, Candidate},
			{conflictAbsent(2 * ms), nil, Follower},
			{tick(9*s + 1*ms), []Action{aRead()}, Follower},
			{readAbsent(9*s + 2*ms), nil, Follower},
			{tick(15*s + 2*ms - ns), nil, Follower},
			{tick(15*s + 2*ms), []Action{create(me(1, 0))}, Candidate},
		}},
		{"a store that keeps its records and refuses a create is waited out too", false, []step{
			{tick(0), []Action{aRead()}, Follower},
			{readAbsent(1 * ms), []Action{acquire(0, me(1, 0))}, Candidate},
			{conflictAbsent(2 * ms), nil, Follower},
			{tick(9*s + 1*ms), []Action{aRead()}, Follower},
			{readAbsent(9*s + 2*ms), nil, Follower},
			{tick(15*s + 2*ms - ns), nil, Follower},
			{tick(15*s + 2*ms), []Action{acquire(0, me(1, 0))}, Candidate},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.RetryInterval = 9 * s
			runSteps(t, Options{Identity: "me", Config: cfg, LossyStore: tt.lossy}, tt.steps)
		})
	}
}

// With authentic watch events (Options.AuthenticWatch) a follower with no
// request in flight takes a release shown by an event over at once, from
// the event's revision; every other event stays a hint.
func TestAuthenticWatch(t *testing.T) {
	tests := []struct {
		name      string
		authentic bool
		steps     []step
	}{
		{"a release event is taken over at once", true, join(followOther(), []step{
			{watched(1*s, released(4, 2), 11), []Action{acquire(11, me(5, 3))}, Candidate},
			{done(1*s+1*ms, me(5, 3), 12), []Action{started(5, 1*s)}, Leader},
			// The same event again, late: old news.
			{watched(1*s+2*ms, released(4, 2), 11), nil, Leader},
		})},
		{"without the claim a release event makes a read", false, join(followOther(), []step{
			{watched(1*s, released(4, 2), 11), []Action{aRead()}, Follower},
			{read(1*s+1*ms, released(4, 2), 11), []Action{acquire(11, me(5, 3))}, Candidate},
		})},
		{"a read in flight: the event is a hint, read after it", true, join(followOther(), []step{
			{tick(2 * s), []Action{aRead()}, Follower},
			{watched(2*s+ms/2, released(4, 2), 11), nil, Follower},
			// The read was served before the release.
			{read(2*s+1*ms, other(4, 2), 10), []Action{aRead()}, Follower},
			{read(2*s+2*ms, released(4, 2), 11), []Action{acquire(11, me(5, 3))}, Candidate},
		})},
		{"a release older than the record accepted is old news", true, join(followOther(), []step{
			{watched(1*s, released(3, 1), 9), nil, Follower},
			{watched(1*s, released(4, 2), 10), nil, Follower},
			{tick(2 * s), []Action{aRead()}, Follower},
		})},
		{"a stale release after someone acquired: the swap conflicts", true, join(followOther(), []step{
			{watched(1*s, released(4, 2), 11), []Action{acquire(11, me(5, 3))}, Candidate},
			{conflict(1*s+1*ms, Lease{Holder: "third", Token: 5, Transitions: 3, LeaseDuration: 15 * s}, 12), nil, Follower},
			{watched(1*s+2*ms, released(4, 2), 11), nil, Follower},
		})},
		{"another holder is a hint", true, join(followOther(), []step{
			{watched(1*s, other(5, 3), 11), []Action{aRead()}, Follower},
		})},
		{"an absent event is a hint", true, join(followOther(), []step{
			{watchedAbsent(1 * s), []Action{aRead()}, Follower},
		})},
		{"an unreadable event is a hint", true, join(followOther(), []step{
			{watchedCorrupt(1*s, 11), []Action{aRead()}, Follower},
		})},
		{"a release out of bounds is a hint", true, join(followOther(), []step{
			{watched(1*s, Lease{Token: lease.MaxToken + 1, LeaseDuration: 15 * s}, 11), []Action{aRead()}, Follower},
		})},
		{"a leader renews on it, as on any hint", true, join(leaderAt(), []step{
			{watched(1*s, released(5, 3), 12), []Action{renew(11, me(5, 3))}, Leader},
		})},
		{"while a rollback's wait holds, an event is a hint", true, join(followOther(), []step{
			{tick(2 * s), []Action{aRead()}, Follower},
			{read(2*s+1*ms, other(4, 2), 9), []Action{rolledBack(9, 10, 17*s+1*ms, 15*s)}, Follower},
			{watched(3*s, released(4, 2), 11), []Action{aRead()}, Follower},
			{read(3*s+1*ms, released(4, 2), 11), nil, Follower},
			{tick(17*s + 1*ms), []Action{acquire(11, me(5, 3))}, Candidate},
		})},
		{"a release from before a rollback, late, is a hint", true, join(followOther(), []step{
			// The store went back from revision 10 to 3; the event at 8,
			// after the wait, was sent before the rollback: a read decides
			// (taking it in would have swapped from 8).
			{tick(2 * s), []Action{aRead()}, Follower},
			{read(2*s+1*ms, other(4, 2), 3), []Action{rolledBack(3, 10, 17*s+1*ms, 15*s)}, Follower},
			{tick(4 * s), []Action{aRead()}, Follower},
			{read(4*s+1*ms, other(5, 3), 4), nil, Follower},
			{watched(18*s, released(4, 2), 8), []Action{aRead()}, Follower},
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runSteps(t, Options{Identity: "me", Config: testConfig(), AuthenticWatch: tt.authentic}, tt.steps)
		})
	}
}

// runSteps feeds steps to a new Machine with o and checks each step's
// actions and state.
func runSteps(t *testing.T, o Options, steps []step) {
	t.Helper()
	m, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	for i, st := range steps {
		got := m.Step(st.ev)
		if len(got) != 0 || len(st.want) != 0 {
			if diff := cmp.Diff(st.want, got); diff != "" {
				t.Fatalf("step %d (%v at %v): actions (-want +got):\n%s", i, st.ev.Kind, st.ev.Now, diff)
			}
		}
		if m.State() != st.state {
			t.Fatalf("step %d (%v at %v): state %v, want %v", i, st.ev.Kind, st.ev.Now, m.State(), st.state)
		}
	}
}

// A renewal heard while hints are muted still makes the follower read
// before it takes over the revision it waited out: if the store went back
// and lost that renewal, the swap would succeed while the renewal's
// writer still leads. The read shows the contradiction, and the follower
// waits a lease more (the simulator's adversary seed 8710).
func TestRenewalHeardWhileMutedIsReadFirst(t *testing.T) {
	cfg := testConfig()
	cfg.RetryInterval = 9 * s // no poll between the steps
	runSteps(t, Options{Identity: "me", Config: cfg}, join(followOther(), []step{
		{tick(9 * s), []Action{aRead()}, Follower},
		{read(9*s+1*ms, other(4, 2), 10), nil, Follower},
		// A hint that the record is gone, contradicted by the read:
		// hints are muted for a RetryInterval.
		{watchedAbsent(14 * s), []Action{aRead()}, Follower},
		{read(14*s+1*ms, other(4, 2), 10), nil, Follower},
		// The leader's renewal, heard while muted.
		{watched(15*s, other(4, 2), 11), nil, Follower},
		// The store lost it (a rollback to 10): the follower reads before
		// it swaps from 10, and the read contradicts the renewal heard.
		{tick(15*s + 1*ms), []Action{aRead()}, Follower},
		{read(15*s+2*ms, other(4, 2), 10), []Action{contradicted(10, 11, 30*s+2*ms, 15*s)}, Follower},
		{tick(30*s + 2*ms), []Action{acquire(10, me(5, 3))}, Candidate},
	}))
	// Any revision heard above the one it would swap from counts, not
	// only a renewal of the record it follows: released at 12, it does
	// not swap from 12 while 13 was heard and not yet settled.
	runSteps(t, Options{Identity: "me", Config: testConfig()}, join(followOther(), []step{
		{tick(2 * s), []Action{aRead()}, Follower},
		{watched(2*s+ms/2, other(4, 2), 13), nil, Follower},
		{read(2*s+1*ms, released(4, 2), 12), nil, Follower},
		{tick(4 * s), []Action{aRead()}, Follower},
		{read(4*s+1*ms, released(4, 2), 12), []Action{contradicted(12, 13, 19*s+1*ms, 15*s)}, Follower},
	}))
}

func guardedAcquire(exp lease.Revision, was, next Lease) Action {
	return Action{Kind: Swap, Swap: Acquire, Expected: exp, Next: next, Guarded: true, Was: was}
}

// With a store that guards swaps from a release (Options.GuardedRelease), a
// follower takes over a release a watch event shows with a guarded swap
// from the event's revision instead of reading first; the store's answer
// decides, and nothing the event claimed is taken in before it.
func TestGuardedRelease(t *testing.T) {
	third := Lease{Holder: "third", Token: 5, Transitions: 3, LeaseDuration: 15 * s}
	tests := []struct {
		name    string
		guarded bool
		lossy   bool
		steps   []step
	}{
		{"a release event is taken over with a guarded swap", true, false, join(followOther(), []step{
			{watched(1*s, released(4, 2), 11), []Action{guardedAcquire(11, released(4, 2), me(5, 3))}, Candidate},
			{done(1*s+1*ms, me(5, 3), 12), []Action{started(5, 1*s)}, Leader},
			// The same event again, late: old news.
			{watched(1*s+2*ms, released(4, 2), 11), nil, Leader},
		})},
		{"the term's first renewal comes a RetryInterval after the guarded swap", true, false, join(followOther(), []step{
			// The follower's schedule (a read at 2s+1ms) is not the
			// leader's.
			{watched(1*s, released(4, 2), 11), []Action{guardedAcquire(11, released(4, 2), me(5, 3))}, Candidate},
			{done(1*s+1*ms, me(5, 3), 12), []Action{started(5, 1*s)}, Leader},
			{tick(2*s + 1*ms), nil, Leader},
			{tick(3*s - 1*ms), nil, Leader},
			{tick(3 * s), []Action{renew(12, me(5, 3))}, Leader},
		})},
		{"without the guard a release event makes a read", false, false, join(followOther(), []step{
			{watched(1*s, released(4, 2), 11), []Action{aRead()}, Follower},
			{read(1*s+1*ms, released(4, 2), 11), []Action{acquire(11, me(5, 3))}, Candidate},
		})},
		{"the token and transitions go above the event's and every one seen", true, false, join(followOther(), []step{
			{watched(1*s, released(7, 9), 11), []Action{guardedAcquire(11, released(7, 9), me(8, 10))}, Candidate},
		})},
		{"a forged release of the live lease: the store shows it, the follower waits it out, hints muted", true, false, join(followOther(), []step{
			{watched(1*s, released(4, 2), 10+1), []Action{guardedAcquire(11, released(4, 2), me(5, 3))}, Candidate},
			// The leader renewed at 11: the guard fails.
			{conflict(1*s+1*ms, other(4, 2), 11), nil, Follower},
			// Muted for a RetryInterval: the next forgery makes no read,
			// but its revision is read before a swap from 11.
			{watched(1*s+2*ms, released(4, 2), 12), nil, Follower},
			{tick(16*s + 1*ms), []Action{aRead()}, Follower},
			{read(16*s+2*ms, other(4, 2), 11), []Action{contradicted(11, 12, 31*s+2*ms, 15*s)}, Follower},
			{tick(31*s + 2*ms), []Action{acquire(11, me(5, 3))}, Candidate},
		})},
		{"a forged release at a huge revision: no token of it is taken in", true, false, join(followOther(), []step{
			{watched(1*s, released(lease.MaxToken-1, 2), math.MaxUint64), []Action{guardedAcquire(math.MaxUint64, released(lease.MaxToken-1, 2), me(lease.MaxToken, 3))}, Candidate},
			// The store shows 10, below the revision the event claimed: a
			// rollback or a forgery, waited out as a rollback.
			{conflict(1*s+1*ms, other(4, 2), 10), []Action{contradicted(10, math.MaxUint64, 16*s+1*ms, 15*s)}, Follower},
			{tick(14 * s), []Action{aRead()}, Follower},
			{read(14*s+1*ms, other(4, 2), 10), nil, Follower},
			// No token from the forgery: the acquire takes token 5.
			{tick(16*s + 1*ms), []Action{acquire(10, me(5, 3))}, Candidate},
		})},
		{"no token left above the event's: a read instead", true, false, join(followOther(), []step{
			{watched(1*s, released(lease.MaxToken, 2), 11), []Action{aRead()}, Follower},
		})},
		{"the swap fails: its outcome is unknown, a read follows", true, false, join(followOther(), []step{
			{watched(1*s, released(4, 2), 11), []Action{guardedAcquire(11, released(4, 2), me(5, 3))}, Candidate},
			{failed(1*s + 1*ms), nil, Follower},
			{tick(3*s + 1*ms), []Action{aRead()}, Follower},
			// It landed: confirmed with a renewal.
			{read(3*s+2*ms, me(5, 3), 12), []Action{renew(12, me(5, 3))}, Candidate},
		})},
		{"a read in flight: the event waits for its answer", true, false, join(followOther(), []step{
			{tick(2 * s), []Action{aRead()}, Follower},
			{watched(2*s+ms/2, released(4, 2), 11), nil, Follower},
			{read(2*s+1*ms, other(4, 2), 10), []Action{guardedAcquire(11, released(4, 2), me(5, 3))}, Candidate},
		})},
		{"a release older than the record accepted is old news", true, false, join(followOther(), []step{
			{watched(1*s, released(4, 2), 10), nil, Follower},
			{tick(2 * s), []Action{aRead()}, Follower},
		})},
		{"after a renewal heard above the event's revision: a read", true, false, join(followOther(), []step{
			{watched(1*s, other(4, 2), 12), nil, Follower},
			{watched(1*s+1*ms, released(4, 2), 11), []Action{aRead()}, Follower},
		})},
		{"while a rollback's wait holds: a read", true, false, join(followOther(), []step{
			{tick(2 * s), []Action{aRead()}, Follower},
			{read(2*s+1*ms, other(4, 2), 9), []Action{rolledBack(9, 10, 17*s+1*ms, 15*s)}, Follower},
			{watched(3*s, released(4, 2), 11), []Action{aRead()}, Follower},
		})},
		{"a stale release after someone acquired: the swap conflicts", true, false, join(followOther(), []step{
			{watched(1*s, released(4, 2), 11), []Action{guardedAcquire(11, released(4, 2), me(5, 3))}, Candidate},
			{conflict(1*s+1*ms, third, 12), nil, Follower},
			{watched(1*s+2*ms, released(4, 2), 11), nil, Follower},
		})},
		{"another holder is a hint", true, false, join(followOther(), []step{
			{watched(1*s, other(5, 3), 11), []Action{aRead()}, Follower},
		})},
		{"in a store that may lose records, too", true, true, join(followOther(), []step{
			{watched(1*s, released(4, 2), 11), []Action{guardedAcquire(11, released(4, 2), me(5, 3))}, Candidate},
			{done(1*s+1*ms, me(5, 3), 12), []Action{started(5, 1*s)}, Leader},
		})},
		{"an acquire whose outcome was unknown, shown by the conflict: waited out", true, false, join(followOther(), []step{
			{tick(15*s + 1*ms), []Action{acquire(10, me(5, 3))}, Candidate},
			{failed(15*s + 2*ms), nil, Follower},
			{watched(15*s+3*ms, released(4, 2), 50), []Action{guardedAcquire(50, released(4, 2), me(5, 3))}, Candidate},
			// The acquire had landed, but the node proposed a token
			// since: only that attempt's outcome may be confirmed, as
			// after a second acquire. Its own record is waited out.
			{conflict(15*s+4*ms, me(5, 3), 11), []Action{contradicted(11, 50, 30*s+4*ms, 15*s)}, Follower},
			{tick(30*s + 4*ms), []Action{acquire(11, me(6, 3))}, Candidate},
		})},
		{"a guarded swap that fails, then a read below the event's revision: waited out as a rollback", true, false, join(followOther(), []step{
			{watched(14*s, released(4, 2), 11), []Action{guardedAcquire(11, released(4, 2), me(5, 3))}, Candidate},
			// The poll that was due: the record at 10, unchanged.
			{failed(14*s + 1*ms), []Action{aRead()}, Follower},
			{read(14*s+2*ms, other(4, 2), 10), []Action{contradicted(10, 11, 29*s+2*ms, 15*s)}, Follower},
			{tick(28 * s), []Action{aRead()}, Follower},
			{read(28*s+1*ms, other(4, 2), 10), nil, Follower},
			{tick(29*s + 2*ms), []Action{acquire(10, me(5, 3))}, Candidate},
		})},
		{"a store that answers success at the guarded revision breaks its contract: no term", true, false, join(followOther(), []step{
			{watched(1*s, released(4, 2), 11), []Action{guardedAcquire(11, released(4, 2), me(5, 3))}, Candidate},
			{done(1*s+1*ms, me(5, 3), 11), []Action{rolledBack(11, 11, 16*s+1*ms, 15*s)}, Follower},
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runSteps(t, Options{Identity: "me", Config: testConfig(), GuardedRelease: tt.guarded, LossyStore: tt.lossy}, tt.steps)
		})
	}
}

// BenchmarkStepAuthenticRelease measures a follower taking a release shown
// by an authentic watch event over: the event, and the conflict that sends
// it back to following.
func BenchmarkStepAuthenticRelease(b *testing.B) {
	m, _ := New(Options{Identity: "me", Config: testConfig(), AuthenticWatch: true})
	m.Step(tick(0))
	m.Step(read(ms, other(4, 2), 10))
	now := ms
	rev := lease.Revision(10)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		now += ms
		rev++
		m.Step(watched(now, released(4, 2), rev))
		rev++
		m.Step(conflict(now+ms/2, other(4, 2), rev))
	}
	if m.State() != Follower {
		b.Fatalf("state %v", m.State())
	}
}

// An answer the store could not read shows no revision, so it settles no
// watch event: a read that then shows a revision below one an event
// showed is a contradiction, waited out as a rollback.
func TestUnreadableAnswerSettlesNoEvent(t *testing.T) {
	third := Lease{Holder: "third", Token: 5, Transitions: 3, LeaseDuration: 15 * s}
	runSteps(t, Options{Identity: "me", Config: testConfig()}, join(followOther(), []step{
		{watched(1*s, third, 11), []Action{aRead()}, Follower},
		{readCorrupt(1*s+1*ms, 0), []Action{corrupt(0)}, Follower},
		{tick(4 * s), []Action{aRead()}, Follower},
		{read(4*s+1*ms, other(4, 2), 10), []Action{contradicted(10, 11, 19*s+1*ms, 15*s)}, Follower},
	}))
}

// stamped returns ev with the stamp of the write it shows.
func stamped(ev Event, stamp uint64) Event {
	ev.Stamp = stamp
	return ev
}

// A follower that heard a renewal, and then read that very write (the
// revision and record it showed, and on a store whose events may be
// forged the same nonzero stamp), counts its wait from the renewal's
// receipt: the write existed then. Otherwise the wait counts from the
// read's answer. The renewal is heard at 2s, read after the silence at
// 5s+1ms; the lease (15s) is taken over at 17s or at 20s+1ms.
func TestHeardRenewalConfirmedByReadStartsTheWait(t *testing.T) {
	cfg := testConfig()
	cfg.RetryInterval = 9 * s // no poll between the steps: the silence is 13.5s
	heard := func(authentic bool, heardStamp, readStamp uint64, takeOver time.Duration) []step {
		steps := join(followOther(), []step{
			{stamped(watched(2*s, other(4, 2), 11), heardStamp), nil, Follower},
			{tick(15*s + 500*ms), []Action{aRead()}, Follower},
			{stamped(read(15*s+501*ms, other(4, 2), 11), readStamp), nil, Follower},
		})
		if takeOver > 17*s {
			steps = append(steps, step{tick(17 * s), nil, Follower})
		}
		return append(steps, step{tick(takeOver), []Action{acquire(11, me(5, 3))}, Candidate})
	}
	tests := []struct {
		name      string
		authentic bool
		steps     []step
	}{
		{"the same stamp: from the renewal's receipt", false, heard(false, 7, 7, 17*s)},
		{"another stamp: from the read", false, heard(false, 7, 8, 30*s+501*ms)},
		{"no stamp: from the read", false, heard(false, 0, 0, 30*s+501*ms)},
		{"a stamp on the read only: from the read", false, heard(false, 0, 7, 30*s+501*ms)},
		{"an authentic watch: from the renewal's receipt", true, heard(true, 0, 0, 17*s)},
		{"renewals still heard: the read before a takeover waits for the quiet", true, join(heard(true, 0, 0, 17*s)[:5], []step{
			{watched(16*s, other(4, 2), 12), nil, Follower},
			{tick(17 * s), nil, Follower},
			{tick(24*s + 500*ms), nil, Follower},
			{tick(29*s + 500*ms), []Action{aRead()}, Follower},
		})},
		{"the read shows a newer revision: from the read", false, join(followOther(), []step{
			{stamped(watched(2*s, other(4, 2), 11), 7), nil, Follower},
			{tick(15*s + 500*ms), []Action{aRead()}, Follower},
			{stamped(read(15*s+501*ms, other(4, 2), 12), 7), nil, Follower},
			{tick(17 * s), nil, Follower},
			{tick(30*s + 501*ms), []Action{acquire(12, me(5, 3))}, Candidate},
		})},
		{"the read shows another record at the revision: from the read", true, join(followOther(), []step{
			{watched(2*s, other(4, 2), 11), nil, Follower},
			{tick(15*s + 500*ms), []Action{aRead()}, Follower},
			{read(15*s+501*ms, other(4, 3), 11), nil, Follower},
			{tick(17 * s), nil, Follower},
			{tick(30*s + 501*ms), []Action{acquire(11, me(5, 4))}, Candidate},
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runSteps(t, Options{Identity: "me", Config: cfg, AuthenticWatch: tt.authentic}, tt.steps)
		})
	}
}
