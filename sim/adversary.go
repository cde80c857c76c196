package sim

// The adversary: whoever else can write the store or its watch feed. It
// forges records (FaultForge), pushes watch events the store never wrote
// (FaultForgeWatch), rolls the store back to an earlier revision
// (FaultRollback) and restores a stale backup (FaultRestore). It acts
// during a window and then stops, so that recovery can be checked.
//
// The model, and the choices it rests on:
//
//   - A forged record is stored like any write: it gets the next revision
//     and goes to every watcher. Zero fields of Fault.Record mean "as
//     stored": a forge may touch the current holder's record (same holder
//     and token) and change only its LeaseDuration, say. A forged record
//     never clears the holder: a release written behind a live leader's
//     back hands the lease over at once, and no elector can defend
//     against that.
//   - A record that fails store.ValidateStored (LeaseDuration outside
//     [0, lease.MaxDuration] or zero with a holder, a token or Transitions
//     above lease.MaxToken, a holder that is not a valid name) is refused
//     by default, as a validating store (redisstore) and lead do: a read
//     or a swap of it fails with ErrCorruptRecord and the swap writes
//     nothing; the driver feeds the machine ReadDone or SwapConflict with
//     Event.Corrupt, and a watch event carrying it as Watched with
//     Corrupt (a hint), as lead does. With
//     Faults.CorruptAsValid the store and the driver pass it on as a valid
//     observation, as a store that does not validate what it reads and a
//     driver that does not check it would: the machine itself must
//     defend (fsm.InBounds).
//   - Every write is validated as store.ValidateRecord does: a token or
//     Transitions above lease.MaxToken is refused (ErrTokenExhausted),
//     and never wraps.
//   - At the end of its window the forger removes its record if it still
//     stands: DEL in a store that can lose records (the machines treat
//     absence as a claim there), otherwise it writes back the last record
//     the nodes wrote before it, as an operator repairing the damage
//     would, or, if there was none or it was released, a valid record
//     held by nobody the nodes know, with the honest lease. Recovery is checked
//     from then on. (A DEL in a store that keeps its records is a
//     rollback to the machines: see TestSimOpenDeletedLongLease.)
//   - A rollback makes an earlier revision current again, with the record
//     it held; a restore makes revision 1 current, holding a stale backup
//     (the first record the nodes wrote) with the holder cleared. Neither is
//     announced on the watch feed. Both bring back the token floor of
//     the copy they restore, as a real restore does; new terms' tokens
//     stay above every earlier term's only through the store's clock
//     floor (tokenClock). The revision counter is not rewound (later
//     writes get revisions above every one issued), unless the fault has
//     Reuse (Faults.ReuseRevisions): then it goes back with the data, as
//     an etcd snapshot restore without --bump-revision does under
//     etcdstore and kubestore, and later writes are given again the
//     revisions the lost history had, so that a swap expecting one of
//     them succeeds against a record its sender never saw. A rollback
//     never lands on a record the forger wrote.
//   - A rollback or restore can hand the lease to a node behind a live
//     leader's back: a node whose stale observation becomes current again
//     wins its swap (an ABA no elector can see), and a node that never saw
//     the store go back takes a released record (a restored backup, a
//     later genuine release) at once. Two leaders made that way are
//     excused (excused); a node that saw the store go back and still
//     takes a released record without waiting is not.
//   - Recovery: once the forger is gone, or after a rollback, restore or
//     forged watch event, a node leads within the liveness bound, counted,
//     while every node that could lead waits out a rollback it saw, from
//     the earliest end of those waits: a full lease of what the node last
//     saw (or its own), from when it saw the store go back.

import (
	"fmt"
	"math"
	"time"

	"github.com/tenure-go/tenure/fsm"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

// mallory holds the forged records that name no node.
const mallory = "mallory"

// Errors behind refused requests.
const (
	errRefused = simError("store refused to write a token or Transitions past lease.MaxToken")
	errCorrupt = simError("the stored record is corrupt (store.ErrCorruptRecord)")
)

// adversary is what the simulation keeps about the adversary's actions.
type adversary struct {
	// Records the store never held at their revision: forged watch
	// events and restored backups. An observation of one is not checked
	// against the store's history.
	madeUp map[lease.Revision][]fsm.Lease
	// Revisions a rollback or restore made current again: a node may go
	// back to one of them.
	back map[lease.Revision]bool
	// Revisions the forger wrote.
	forgedRev map[lease.Revision]bool
	// The stored record fails store.ValidateStored when the store holds
	// this revision (0: none).
	corruptRev lease.Revision
	// Forges in their window, by fault index.
	forges map[int]forgeState
	// The last record the nodes wrote (or a rollback made current) before
	// a forge: what a forger's repair writes back.
	honestPresent bool
	honest        fsm.Lease
	// The real time of the last rollback or restore (-1 if none): terms
	// that started before it may overlap later ones (excused).
	releasedAt int64
	// calmAt is the calm time the adversary last set: a liveness failure
	// counted from it is a failed recovery.
	calmAt int64
	// The last rollback, restore or forged watch event (-1: none).
	backAt int64
	// When the forged releases were stored (FaultForgeRelease).
	forgedReleases []int64
	// The last forged watch event that looked like a renewal of the stored
	// record (-1: none): it may keep a follower quiet (see
	// renewalForgeryExtra).
	lookalikeAt int64
	// Targeted faults (targeted.go).
	armed     []int
	hold      holdState
	aheadCut  aheadCut
	jitter    int
	jitterP   float64
	jitterMax int64
	// Bounds of the checks (budget.go), from every config in use.
	minRetry time.Duration
	maxRetry time.Duration // RetryInterval·(1+RetryJitter)
	maxRenew time.Duration
	maxLease time.Duration
}

// forgeState is one forge in its window.
type forgeState struct {
	rev         lease.Revision // the forged record's revision
	prevPresent bool           // the last honest record before it
	prev        fsm.Lease
}

// adversarial reports whether the adversary's schedule is drawn.
func (f Faults) adversarial() bool {
	return f.Forge || f.ForgeWatch || f.Rollback || f.Restore || f.Targeted || f.Jitter || f.Extreme || f.ForgeRelease
}

// AdversaryFaults returns AllFaults with every fault of the adversary on
// (forged records and watch events, rollbacks, restores, targeted faults,
// per-message jitter), records that fail validation refused.
func AdversaryFaults() Faults {
	f := AllFaults()
	f.Forge, f.ForgeWatch, f.Rollback, f.Restore, f.Targeted, f.Jitter = true, true, true, true, true, true
	return f
}

// advInit sets the bounds the checks use from every config of the run.
func (s *Cluster) advInit(cfgs []lease.Config) {
	a := &s.adv
	a.releasedAt, a.backAt, a.lookalikeAt = -1, -1, -1
	a.hold.node = -1
	a.minRetry = math.MaxInt64
	for _, c := range cfgs {
		a.minRetry = min(a.minRetry, c.RetryInterval)
		a.maxRetry = max(a.maxRetry, c.MaxRetryInterval())
		a.maxRenew = max(a.maxRenew, c.RenewDeadline)
		a.maxLease = max(a.maxLease, c.LeaseDuration)
	}
}

// advDisturbed notes a disturbance by the adversary at real time t.
func (s *Cluster) advDisturbed(t int64) {
	s.chk.disturbed(t)
	if s.chk.calmFrom == t {
		s.adv.calmAt = t
	}
}

// holdEnd is when node n may lead again after it saw the store go back:
// the fixed machine starts no term before a full lease of what it last saw
// (or its own, if longer) has passed since.
func (s *Cluster) holdEnd(n *node, lastLease time.Duration) int64 {
	l := max(lastLease, n.m.Config().LeaseDuration)
	return s.now + int64(float64(l)/(1-s.rho)) + 2*s.net.max
}

// livenessExtra is what the liveness bound grows by while every node that
// could lead waits out a rollback it saw: up to the earliest end of their
// waits.
func (s *Cluster) livenessExtra() int64 {
	c := &s.chk
	end := int64(math.MaxInt64)
	for _, n := range s.nodes {
		if n.up && n.pausedUntil <= s.now && !n.reqCut && !n.respCut {
			end = min(end, n.adv.holdEnd)
		}
	}
	if from := max(c.calmFrom, c.lastLeader); end != math.MaxInt64 && end > from {
		return end - from
	}
	return 0
}

// holding reports whether some node waits out a rollback it saw, or may
// ignore watch events after one contradicted the store (for a
// RetryInterval after a rollback, a restore or a forged event): a handover
// is not checked meanwhile.
func (s *Cluster) holding() bool {
	if s.adv.backAt >= 0 && s.now < s.adv.backAt+int64(float64(s.adv.maxRetry)/(1-s.rho))+4*s.net.max {
		return true
	}
	for _, n := range s.nodes {
		if n.up && n.adv.holdEnd > s.now {
			return true
		}
	}
	return false
}

// livenessCheck names a liveness failure: "recovery" when the adversary's
// action is what it counts from.
func (s *Cluster) livenessCheck() string {
	if s.adv.calmAt != 0 && s.chk.calmFrom == s.adv.calmAt {
		return "recovery"
	}
	return "liveness"
}

// applyAdv starts a fault of the adversary; end is its end event.
func (s *Cluster) applyAdv(i int, end *simEvent) {
	f := s.faults[i]
	c := &s.chk
	switch f.Kind {
	case FaultForge:
		s.forge(i, f)
		c.active++
		s.push(*end)
	case FaultForgeWatch:
		if (f.Released || f.Renewal) && f.Window > 0 {
			s.adv.armed = append(s.adv.armed, i)
			return
		}
		s.forgeWatch(f, 0)
	case FaultRollback:
		if f.Window > 0 {
			s.adv.armed = append(s.adv.armed, i)
			return
		}
		s.rollback(f)
	case FaultRestore:
		s.restore(f)
	case FaultForgeRelease:
		s.forgeRelease()
	case FaultRenewCut, FaultHold:
		s.adv.armed = append(s.adv.armed, i)
	case FaultJitter:
		s.adv.jitter++
		s.adv.jitterP, s.adv.jitterMax = f.Prob, int64(f.Latency)
		c.active++
		s.push(*end)
	}
}

// endAdv ends a fault of the adversary with a duration.
func (s *Cluster) endAdv(ev *simEvent) {
	f := s.faults[ev.count]
	c := &s.chk
	switch f.Kind {
	case FaultForge:
		s.unforge(ev.count)
		c.active--
		s.advDisturbed(s.now)
	case FaultJitter:
		s.adv.jitter--
		c.active--
		// Messages sent during the window still arrive late.
		s.advDisturbed(s.now + s.adv.jitterMax)
	}
}

// forged fills the zero fields of r from the stored record.
func (s *Cluster) forged(r fsm.Lease) fsm.Lease {
	st := &s.store
	if r.Holder == "" {
		r.Holder = st.rec.Holder
		if !st.present || r.Holder == "" {
			r.Holder = mallory
		}
	}
	if r.Token == 0 {
		r.Token = max(st.rec.Token, 1)
	}
	if r.Transitions == 0 {
		r.Transitions = st.rec.Transitions
	}
	return r
}

// invalid reports whether r fails store.ValidateStored.
func invalid(r fsm.Lease) bool {
	return store.ValidateStored(lease.Record[struct{}]{
		Holder: r.Holder, Token: r.Token, Transitions: r.Transitions, LeaseDuration: r.LeaseDuration,
	}) != nil
}

// forge stores fault i's forged record.
func (s *Cluster) forge(i int, f Fault) {
	st := &s.store
	if !st.present || !s.adv.forgedRev[st.rev] {
		s.adv.honestPresent, s.adv.honest = st.present, st.rec
	}
	fs := forgeState{prevPresent: s.adv.honestPresent, prev: s.adv.honest}
	fs.rev = s.advWrite(s.forged(f.Record), "forged")
	if s.adv.forges == nil {
		s.adv.forges = make(map[int]forgeState)
	}
	s.adv.forges[i] = fs
}

// unforge removes fault i's forged record if it still stands.
func (s *Cluster) unforge(i int) {
	fs := s.adv.forges[i]
	delete(s.adv.forges, i)
	st := &s.store
	if !st.present || st.rev != fs.rev {
		s.tracef(-1, "adversary gone; its record was replaced")
		return
	}
	switch {
	case s.lossy:
		s.tracef(-1, "adversary deletes its record")
		s.loseData()
	case !fs.prevPresent || fs.prev.Holder == "":
		// No record, or a released one (a restored backup, say) while a
		// node may still believe it leads: writing a released record now
		// would hand the lease over behind its back, and a DEL is a
		// rollback to the machines (TestSimOpenDeletedLongLease). A valid
		// record of nobody's, with the honest lease, is waited out and
		// taken over like any expired lease.
		s.advWrite(fsm.Lease{Holder: mallory, Token: max(st.floor, 1), Transitions: fs.prev.Transitions,
			LeaseDuration: s.opt.Config.LeaseDuration}, "replaced")
	default:
		s.advWrite(fs.prev, "written back")
	}
}

// advWrite stores r as a new revision written by the adversary (no
// contract check applies to it) and returns the revision.
func (s *Cluster) advWrite(r fsm.Lease, what string) lease.Revision {
	st := &s.store
	st.present, st.rec, st.rev = true, r, s.issue()
	if r.Token <= lease.MaxToken {
		st.floor = max(st.floor, r.Token)
	}
	st.keep(st.rev, r)
	s.stampWrite()
	s.or.Forge(s.now, st.rev, orec(r))
	if s.adv.forgedRev == nil {
		s.adv.forgedRev = make(map[lease.Revision]bool)
	}
	s.adv.forgedRev[st.rev] = true
	bad := invalid(r)
	if bad {
		s.adv.corruptRev = st.rev
	}
	if s.tracing() {
		s.tracef(-1, "store rev %d %s by the adversary: holder=%q token=%d transitions=%d lease=%d (valid: %v)",
			st.rev, what, r.Holder, r.Token, r.Transitions, int64(r.LeaseDuration), !bad)
	}
	if s.tl != nil {
		s.tl.AddStore(s.now, storeText(st.rev, r, "adversary"))
	}
	if !bad || s.opt.Faults.CorruptAsValid {
		s.broadcast(simEvent{lease: r, rev: st.rev})
	} else {
		s.broadcast(simEvent{rev: st.rev, result: resCorrupt})
	}
	return st.rev
}

// forgeWatch pushes a record the store does not hold to some nodes' watch
// feeds. A forged release (f.Released) shows the live lease released at
// the stored revision plus ahead (1: the revision of a renewal in flight).
func (s *Cluster) forgeWatch(f Fault, ahead lease.Revision) {
	r := s.forged(f.Record)
	rev := f.Revision
	if st := &s.store; (s.opt.Store.trustForged || f.Released) && st.present && st.rec.Holder != "" {
		// "Released at revision r" while r is (or is about to be) a live
		// lease: the broken variant's forgery, and the forged release.
		r, rev = st.rec, st.rev+ahead
		r.Holder = ""
		if f.Released && f.Mask == 0 {
			// Aimed at the followers: every node that does not lead.
			for _, n := range s.nodes {
				if !n.up || n.m.State() != fsm.Leader {
					f.Mask |= 1 << n.idx
				}
			}
		}
	} else if f.Released {
		return // no live lease to forge the release of
	}
	var res result
	if invalid(r) && !s.opt.Faults.CorruptAsValid {
		// The driver cannot read it: it passes on a corrupt hint.
		r, res = fsm.Lease{}, resCorrupt
	}
	if s.adv.madeUp == nil {
		s.adv.madeUp = make(map[lease.Revision][]fsm.Lease)
	}
	s.adv.madeUp[rev] = append(s.adv.madeUp[rev], r)
	if s.tracing() {
		s.tracef(-1, "forged watch event rev %d holder=%q token=%d lease=%d to nodes %b", rev, r.Holder, r.Token, int64(r.LeaseDuration), f.Mask)
	}
	for _, n := range s.nodes {
		if f.Mask&(1<<n.idx) == 0 || !n.up {
			continue
		}
		w := simEvent{kind: evWatch, node: int32(n.idx), gen: n.gen, lease: r, rev: rev, stamp: s.store.stamp, result: res, at: s.now + s.latency()}
		if !s.opt.Faults.WatchChaos {
			w.at = max(w.at, n.watchLast)
			n.watchLast = w.at
		}
		s.push(w)
	}
	s.adv.backAt = s.now
	st := &s.store
	if res != resCorrupt && st.present && r.Holder != "" && r.Holder == st.rec.Holder && r.Token == st.rec.Token {
		// It looks like a renewal of the record the nodes follow: it may
		// postpone their reads, never start a wait. That delay is bounded
		// (renewalForgeryExtra), and the liveness check keeps counting
		// from the last real disturbance.
		s.adv.lookalikeAt = s.now
		return
	}
	s.advDisturbed(s.now)
}

// renewalForgeryExtra is what the liveness bound grows by, counted from
// from, when forged watch events that look like renewals of the stored
// record reached nodes within a lease before from or later: a follower
// that hears renewals reads at least once per LeaseDuration after the
// store's last answer (the safety net), and once more before taking over
// from a revision a renewal was heard after; so forged renewals delay a
// leader by at most one LeaseDuration and a round trip.
func (s *Cluster) renewalForgeryExtra(from int64) int64 {
	if s.adv.lookalikeAt < 0 {
		return 0
	}
	extra := int64(float64(s.adv.maxLease)/(1-s.rho)) + 4*s.net.max
	if s.adv.lookalikeAt+extra < from {
		return 0
	}
	return extra
}

// forgeRelease stores the release of the live lease behind its holder's
// back, exactly as the holder would (FaultForgeRelease).
func (s *Cluster) forgeRelease() {
	st := &s.store
	if !st.present || st.rec.Holder == "" {
		s.tracef(-1, "forged release: no live lease to release")
		return
	}
	r := st.rec
	r.Holder = ""
	s.advWrite(r, "forged release")
	s.adv.forgedReleases = append(s.adv.forgedReleases, s.now)
}

// rollback rewinds the store to an earlier revision.
func (s *Cluster) rollback(f Fault) {
	s.rollbackTo(f, 0)
}

// rollbackTo rewinds the store as rollback does, or to revision to if it
// is not 0.
func (s *Cluster) rollbackTo(f Fault, to lease.Revision) {
	st := &s.store
	if st.counter == 0 {
		return
	}
	var r0 lease.Revision
	if to != 0 {
		r0 = to
	} else if f.Touch && st.present && st.rec.Holder != "" {
		// Back to the first revision of the current term: same holder and
		// token, a lower revision.
		r0 = st.rev
		for r0 > 1 {
			prev := st.history[r0-1]
			if prev.Holder != st.rec.Holder || prev.Token != st.rec.Token {
				break
			}
			r0--
		}
	} else {
		base := st.counter
		if st.present {
			base = st.rev
		}
		r0 = base - min(max(f.Revision, 1), base-1)
	}
	for r0 > 1 && s.adv.forgedRev[r0] {
		r0--
	}
	if r0 == 0 || s.adv.forgedRev[r0] || st.present && r0 == st.rev {
		s.tracef(-1, "rollback: nothing to rewind to")
		return
	}
	st.present, st.rec, st.rev, st.stamp = true, st.history[r0], r0, st.stampAt(r0)
	if f.Reuse {
		// The counter goes back with the data: the next write gets r0+1
		// again (an etcd snapshot restore without --bump-revision).
		st.counter = r0
	}
	s.or.Rollback(s.now, r0)
	st.floor = st.restoredFloor(r0)
	s.adv.corruptRev = 0
	s.rewind(r0)
	if s.tracing() {
		s.tracef(-1, "store ROLLBACK to rev %d holder=%q token=%d", r0, st.rec.Holder, st.rec.Token)
	}
	if s.tl != nil {
		s.tl.AddStore(s.now, storeText(r0, st.rec, "rollback"))
	}
}

// restore makes a stale backup current: revision 1 holding the first
// record the nodes wrote, holder cleared.
func (s *Cluster) restore(f Fault) {
	st := &s.store
	first := lease.Revision(1)
	for int(first) < len(st.history) && s.adv.forgedRev[first] {
		first++
	}
	if int(first) >= len(st.history) {
		return // the nodes never wrote
	}
	r := st.history[first]
	r.Holder = ""
	st.present, st.rec, st.rev = true, r, 1
	st.stamp = s.newStamp()
	if f.Reuse {
		st.counter = 1 // the next write gets revision 2 again
	}
	s.or.Restore(s.now, 1, orec(r))
	st.floor = st.restoredFloor(first)
	s.adv.corruptRev = 0
	if s.adv.madeUp == nil {
		s.adv.madeUp = make(map[lease.Revision][]fsm.Lease)
	}
	s.adv.madeUp[1] = append(s.adv.madeUp[1], r)
	s.rewind(1)
	if s.tracing() {
		s.tracef(-1, "store RESTORED from a backup: rev 1 token=%d, no holder", r.Token)
	}
	if s.tl != nil {
		s.tl.AddStore(s.now, storeText(1, r, "restore"))
	}
}

// rewind notes that revision r is current again.
func (s *Cluster) rewind(r lease.Revision) {
	if s.adv.back == nil {
		s.adv.back = make(map[lease.Revision]bool)
	}
	s.adv.back[r] = true
	s.adv.releasedAt, s.adv.backAt = s.now, s.now
	s.advDisturbed(s.now)
}

// refused says whether the store refuses the request ev, and how:
// resCorrupt for a read or swap of a corrupt record (unless
// Faults.CorruptAsValid), resFailed for a swap whose record breaks
// store.ValidateRecord's bounds; 0 if it does not.
func (s *Cluster) refused(ev *simEvent) result {
	st := &s.store
	switch {
	case s.adv.corruptRev != 0 && st.present && st.rev == s.adv.corruptRev && !s.opt.Faults.CorruptAsValid:
		if s.tracing() {
			s.tracef(int(ev.node), "request %d refused: the stored record is corrupt", ev.op)
		}
		return resCorrupt
	case ev.opKind == opSwap && (ev.lease.Token > lease.MaxToken || ev.lease.Transitions > lease.MaxToken):
		if s.tracing() {
			s.tracef(int(ev.node), "request %d refused: token %d or transitions %d above lease.MaxToken", ev.op, ev.lease.Token, ev.lease.Transitions)
		}
		return resFailed
	}
	return 0
}

// madeUp reports whether l at rev is a record the adversary made up (a
// forged watch event, a restored backup) rather than the store's history.
func (s *Cluster) madeUp(rev lease.Revision, l fsm.Lease) bool {
	if s.adv.madeUp == nil {
		return false
	}
	for _, r := range s.adv.madeUp[rev] {
		if r == l {
			return true
		}
	}
	return false
}

// rewound reports whether a rollback or restore made rev current again.
func (s *Cluster) rewound(rev lease.Revision) bool { return s.adv.back[rev] }

// wentBackTo reports whether a machine may see the store go back to rev:
// a rollback or restore made rev current again; or, for absence (0), in
// a store that does not admit losing records, after an action of the
// adversary (absence where a record stood is a rollback to the machines
// there; in a store that may lose records it is a loss they expect).
func (s *Cluster) wentBackTo(rev lease.Revision) bool {
	if rev != 0 {
		return s.rewound(rev)
	}
	return !s.lossy && s.adv.backAt >= 0
}

// advString describes a fault of the adversary.
func advString(f Fault) string {
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	r := f.Record
	switch f.Kind {
	case FaultForge:
		return fmt.Sprintf("forge holder=%q token=%d transitions=%d lease=%dns for %v", r.Holder, r.Token, r.Transitions, int64(r.LeaseDuration), ms(f.Dur))
	case FaultForgeWatch:
		switch {
		case f.Released && f.Window > 0:
			return fmt.Sprintf("within %v: at the leader's next renewal, a forged watch event showing the revision it will get released, to nodes %b (0: the followers)", ms(f.Window), f.Mask)
		case f.Renewal && f.Window > 0:
			return fmt.Sprintf("within %v: at the leader's next renewal, a forged watch event showing the renewal after it, to nodes %b (0: the followers); the leader is cut off for %v at the renewal after that", ms(f.Window), f.Mask, ms(f.Dur))
		case f.Released:
			return fmt.Sprintf("a forged watch event showing the live lease released at its revision, to nodes %b (0: the followers)", f.Mask)
		}
		return fmt.Sprintf("forged watch event rev %d holder=%q token=%d lease=%v to nodes %b", f.Revision, r.Holder, r.Token, r.LeaseDuration, f.Mask)
	case FaultRollback:
		if f.Window > 0 {
			return fmt.Sprintf("within %v: when a quiet follower reads, roll the store back to the revision it last read", ms(f.Window))
		}
		reuse := ""
		if f.Reuse {
			reuse = ", the revision counter with it"
		}
		if f.Touch {
			return "roll the store back to the current term's first revision" + reuse
		}
		return fmt.Sprintf("roll the store back by %d revisions%s", f.Revision, reuse)
	case FaultRestore:
		if f.Reuse {
			return "restore a stale backup (revision 1, no holder), the revision counter with it"
		}
		return "restore a stale backup (revision 1, no holder)"
	case FaultForgeRelease:
		return "store the release of the live lease behind its holder's back"
	case FaultRenewCut:
		c := f.Config
		return fmt.Sprintf("within %v: at the leader's next renewal, reconfigure it (L=%v R=%v I=%v) and cut it off for %v", ms(f.Window), c.LeaseDuration, c.RenewDeadline, c.RetryInterval, ms(f.Dur))
	case FaultHold:
		what := "reply"
		if f.Requests {
			what = "request"
		}
		return fmt.Sprintf("within %v: hold a follower's %s for %v, then cut the leader off for %v", ms(f.Window), what, f.Dur, ms(f.Cut))
	case FaultJitter:
		return fmt.Sprintf("delay %.0f%% of messages by up to %v for %v", 100*f.Prob, f.Latency, ms(f.Dur))
	}
	return f.Kind.String()
}
