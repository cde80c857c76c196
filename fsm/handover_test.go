package fsm

import (
	"testing"
	"time"
)

// named is a release that hands the lease to successor.
func named(token, trans uint64, successor string) Lease {
	l := released(token, trans)
	l.Successor = successor
	return l
}

func handOver(t time.Duration, successor string) Event {
	return Event{Kind: Resign, Now: t, Successor: successor}
}

// A release that names a successor is taken at once by that successor
// only: every other node waits it out as a held record, for its
// LeaseDuration from when it first saw it. The leader that hands over ends
// its term first, then writes the named release.
func TestNamedRelease(t *testing.T) {
	tests := []struct {
		name  string
		o     Options
		steps []step
	}{
		{"the leader ends its term, then releases naming the successor", Options{}, join(leaderAt(), []step{
			{handOver(1*s, "succ"), []Action{stopped(5, ReasonHandedOver), release(11, named(5, 3, "succ"))}, Expiring},
			{done(1*s+ms, named(5, 3, "succ"), 12), nil, Follower},
			// It does not take back what it handed over: the release
			// names another, waited out for a lease from its answer.
			{tick(10 * s), []Action{aRead()}, Follower},
			{read(10*s+ms, named(5, 3, "succ"), 12), nil, Follower},
			{tick(16 * s), []Action{aRead()}, Follower},
			{read(16*s+ms-ns, named(5, 3, "succ"), 12), nil, Follower},
			{tick(16*s + ms), []Action{acquire(12, me(6, 4))}, Candidate},
		})},
		{"a handover to itself is a plain resign", Options{}, join(leaderAt(), []step{
			{handOver(1*s, "me"), []Action{stopped(5, ReasonResigned), release(11, released(5, 3))}, Expiring},
		})},
		{"the successor takes it at once after a read", Options{}, join(followOther(), []step{
			{watched(1*s, named(4, 2, "me"), 11), []Action{aRead()}, Follower},
			{read(1*s+ms, named(4, 2, "me"), 11), []Action{acquire(11, me(5, 3))}, Candidate},
			{done(1*s+2*ms, me(5, 3), 12), []Action{started(5, 1*s+ms)}, Leader},
		})},
		{"another node waits a named release out", Options{}, join(followOther(), []step{
			{watched(1*s, named(4, 2, "succ"), 11), []Action{aRead()}, Follower},
			{read(1*s+ms, named(4, 2, "succ"), 11), nil, Follower},
			{tick(3 * s), []Action{aRead()}, Follower},
			{read(3*s+ms, named(4, 2, "succ"), 11), nil, Follower},
			{tick(16 * s), []Action{aRead()}, Follower},
			{read(16*s+ms-ns, named(4, 2, "succ"), 11), nil, Follower},
			{tick(16*s + ms), []Action{acquire(11, me(5, 3))}, Candidate},
		})},
		{"a plain release written over the named one is taken at once", Options{}, join(followOther(), []step{
			{watched(1*s, named(4, 2, "succ"), 11), []Action{aRead()}, Follower},
			{read(1*s+ms, named(4, 2, "succ"), 11), nil, Follower},
			// The handing leader fell back: same token, no successor.
			{watched(1*s+500*ms, released(4, 2), 12), []Action{aRead()}, Follower},
			{read(1*s+501*ms, released(4, 2), 12), []Action{acquire(12, me(5, 3))}, Candidate},
		})},
		{"authentic: the successor takes the event in at once", Options{AuthenticWatch: true}, join(followOther(), []step{
			{watched(1*s, named(4, 2, "me"), 11), []Action{acquire(11, me(5, 3))}, Candidate},
		})},
		{"authentic: a release naming another is a hint", Options{AuthenticWatch: true}, join(followOther(), []step{
			{watched(1*s, named(4, 2, "succ"), 11), []Action{aRead()}, Follower},
			{read(1*s+ms, named(4, 2, "succ"), 11), nil, Follower},
		})},
		{"guarded: the successor swaps guarded by the named release", Options{GuardedRelease: true}, join(followOther(), []step{
			{watched(1*s, named(4, 2, "me"), 11), []Action{guardedAcquire(11, named(4, 2, "me"), me(5, 3))}, Candidate},
			{done(1*s+ms, me(5, 3), 12), []Action{started(5, 1*s)}, Leader},
		})},
		{"guarded: a release naming another is read, then waited out", Options{GuardedRelease: true}, join(followOther(), []step{
			{watched(1*s, named(4, 2, "succ"), 11), []Action{aRead()}, Follower},
			{read(1*s+ms, named(4, 2, "succ"), 11), nil, Follower},
		})},
		{"a held record naming a successor is refused", Options{}, join(followOther(), []step{
			{tick(2 * s), []Action{aRead()}, Follower},
			{read(2*s+ms, Lease{Holder: "other", Token: 4, Transitions: 2, LeaseDuration: 15 * s, Successor: "me"}, 11), []Action{corrupt(11)}, Follower},
			{tick(30 * s), []Action{aRead()}, Follower},
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.o
			o.Identity, o.Config = "me", testConfig()
			runSteps(t, o, tt.steps)
		})
	}
}
