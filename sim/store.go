package sim

import (
	"time"

	"github.com/tenure-go/tenure/fsm"
	"github.com/tenure-go/tenure/internal/oracle"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/sim/internal/timeline"
)

// simStore is a linearizable compare-and-swap register for one election
// name, with the semantics of store.Store: a conflict returns the current
// record, a zero expected revision creates the record only if it is absent,
// revisions grow by one per write and never repeat, not even after the
// record is lost. A new term's token is above the floor the stored data
// keeps (the largest token stored; a rollback or restore brings back the
// floor of the copy it restores, as a PostgreSQL, etcd or Kubernetes
// restore does) and at least the store's clock in microseconds (every
// store in the repository floors new terms' tokens at a clock, which no
// restore rolls back), so no two terms share a token across a restore.
type simStore struct {
	present bool
	rec     fsm.Lease
	rev     lease.Revision
	counter lease.Revision // the last revision issued
	floor   uint64         // the highest token the stored data keeps
	clock   uint64         // the store's clock at its last write, in µs (never rewound)
	// ahead holds the tokens the store issued above its clock, with the
	// real time it issued each: a new term over a floor someone else
	// raised past it (a forged token, seen by the node that proposed it or
	// stored), the only way a token gets there.
	ahead   map[uint64]int64
	history []fsm.Lease // history[rev] is what revision rev stored
	// issued is the highest revision ever issued, and replaced what
	// revisions issued again (Fault.Reuse) stored before.
	issued   lease.Revision
	replaced map[lease.Revision][]fsm.Lease
	// The stamp of the record (StoreModel.Stamped), drawn afresh for
	// every write (see newStamp), and stamps[rev] that of revision rev.
	stamp    uint64
	stamps   []uint64
	stampSeq uint64
	lostAt   lease.Revision // counter at the last data loss
	// The server's identity as the create gate reads it (redisstore's
	// ident: run_id, master_replid, evicted keys and the count of the
	// commands that move data between keys and databases): every data
	// loss changes it (a restart, a failover), and so does a dataset swap
	// (FaultDataSwap) unless swapKeepsIdentity.
	ident uint64
	marker
	// copy is the dataset as it stood before the last create (the
	// record absent), marker included: what FaultDataSwap swaps in.
	copy      marker
	copyTaken bool
	nonces    uint64 // the last marker nonce issued
}

// marker is the dataset-level state of StoreModel.CreateGate, all of it
// data: a copy of the dataset carries it.
type marker struct {
	// The marker: its nonce (what nodes remember and attest; never reused,
	// unless nonceFromOp), the server identity it was made under, whether
	// it exists, the longest age a node attested for it, and the real time
	// it came into being.
	markerID       uint64
	markerIdent    uint64
	markerPresent  bool
	markerAttested time.Duration
	markerBorn     int64
	// born: a record was written since the last data loss (redisstore's
	// per-name "born" key). A create is never vouched for while it
	// stands: the record was deleted, not lost with the marker.
	born bool
}

// network draws latencies and decides which messages get lost.
type network struct {
	min, max   int64
	tail       float64 // probability of a message in the long tail
	tailMax    int64
	slow       int   // slow-store windows in force
	slowLat    int64 // their latency
	lossP      float64
	lossActive int
}

// latency draws the one-way latency of a message sent now.
func (s *Cluster) latency() int64 {
	l := s.uniform(s.net.min, s.net.max)
	if s.net.tail > 0 && s.chance(s.net.tail) {
		l = s.uniform(s.net.max, s.net.tailMax)
	}
	if s.net.slow > 0 {
		l += s.uniform(s.net.slowLat/2, s.net.slowLat)
	}
	if s.adv.jitter > 0 {
		l += s.jitterDelay()
	}
	return l
}

// lost reports whether a message sent now is dropped by a loss window.
func (s *Cluster) lost() bool {
	return s.net.lossActive > 0 && s.chance(s.net.lossP)
}

// send sends node n's request for the op it just started.
func (s *Cluster) send(n *node, ev simEvent) {
	if n.markerID != 0 {
		ev.markerID, ev.markerAge = n.markerID, max(0, n.local(s.now)-n.markerSeen)
	}
	if n.reqCut || s.lost() {
		if s.tracing() {
			s.tracef(n.idx, "request %d lost", ev.op)
		}
		return
	}
	ev.kind, ev.node, ev.gen = evStoreReq, int32(n.idx), n.gen
	ev.at = s.now + s.latency() + s.heldRequest(n, &ev)
	s.push(ev)
}

// storeRequest applies a request at the store (its linearization point)
// and sends the reply.
func (s *Cluster) storeRequest(ev *simEvent) {
	st := &s.store
	reply := simEvent{kind: evReply, node: ev.node, gen: ev.gen, op: ev.op, opKind: ev.opKind}
	kind := ev.opKind
	var snap oracle.Snapshot
	if kind == opSwap {
		snap = s.arrived(ev)
	}
	if r := s.refused(ev); r != 0 {
		kind, reply.result = 0, r
	}
	// Only a swap (redisstore's script) sees and attests the marker; a
	// read does not.
	gated := s.opt.Store.CreateGate && kind == opSwap
	if gated {
		s.attest(ev)
		reply.markerID = st.markerID
	}
	switch kind {
	case opRead:
		reply.result = resDone
		reply.lease, reply.rev, reply.absent, reply.stamp = st.rec, st.rev, !st.present, st.stamp
	case opSwap:
		need := ev.lease.LeaseDuration
		if s.opt.gateQuarter {
			need /= 4
		}
		if (st.present && st.rev == ev.expected || !st.present && ev.expected == 0) && s.guardHolds(ev) {
			if !st.present {
				// A create: the dataset as it stands is what a copy
				// taken now would hold.
				st.copy, st.copyTaken = st.marker, true
			}
			if gated && !st.present && st.markerIdent != st.ident {
				// A marker made under another identity of the server is
				// made anew.
				s.newMarker()
				reply.markerID = st.markerID
			}
			// The gate: a create is vouched for once the marker is known
			// to have stood for the new record's LeaseDuration.
			reply.vouched = !st.present && !st.born && gated && st.markerAttested >= need
			s.write(ev.lease, int(ev.node), snap)
			reply.result = resDone
		} else {
			reply.result = resConflict
			if s.tl != nil {
				s.tl.AddWrite(timeline.Write{At: s.now, Node: int(ev.node), Rev: uint64(ev.expected), Holder: ev.lease.Holder, Token: ev.lease.Token, Conflict: true})
			}
		}
		reply.lease, reply.rev, reply.absent, reply.stamp = st.rec, st.rev, !st.present, st.stamp
	}
	n := s.nodes[ev.node]
	if n.respCut && n.gen == ev.gen || s.lost() {
		if s.tracing() {
			s.tracef(int(ev.node), "reply %d lost", ev.op)
		}
		return
	}
	reply.at = s.now + s.latency() + s.heldReply(ev)
	s.push(reply)
}

// guardHolds reports whether a swap's guard (StoreModel.GuardedRelease)
// lets it write: always for an unguarded swap; for a guarded one, only
// over the released record it names. The broken variant (guardIgnored)
// ignores it.
func (s *Cluster) guardHolds(ev *simEvent) bool {
	st := &s.store
	if !ev.guarded || s.opt.Store.guardIgnored {
		return true
	}
	w := ev.was
	return st.present && st.rec.Holder == "" && st.rec.Token == w.Token && st.rec.Transitions == w.Transitions && st.rec.LeaseDuration == w.LeaseDuration
}

// write stores next as a new revision and tells every watcher.
func (s *Cluster) write(next fsm.Lease, by int, snap oracle.Snapshot) {
	st := &s.store
	clk := s.tokenClock()
	if !st.present || next.Token != st.rec.Token {
		// A new term: above the data's floor (a create after a data loss,
		// a forged lower token) and at least the store's clock, which a
		// rollback or restore does not take back.
		next.Token = max(next.Token, st.floor+1, clk)
		if next.Token > clk && !s.opt.noClockFloor {
			if st.ahead == nil {
				st.ahead = make(map[uint64]int64)
			}
			if _, ok := st.ahead[next.Token]; !ok {
				st.ahead[next.Token] = s.now
			}
		}
	}
	// A swap from a revision issued again (Fault.Reuse) may have been
	// computed from the record the store forgot at that revision: its
	// Transitions may be lower, as on a store restored that way.
	if st.present && next.Transitions < st.rec.Transitions && len(st.replaced[st.rev]) == 0 {
		s.fail(CheckMonotonic, "store Transitions went from %d to %d (written by %s)", st.rec.Transitions, next.Transitions, s.nodes[by].id)
	}
	st.present, st.rec, st.rev, st.born = true, next, s.issue(), true
	st.floor = max(st.floor, next.Token)
	st.keep(st.rev, next)
	s.stampWrite()
	s.or.Applied(s.now, snap, st.rev, orec(next), clk)
	s.judged()
	if s.tracing() {
		s.tracef(-1, "store rev %d holder=%q token=%d transitions=%d", st.rev, next.Holder, next.Token, next.Transitions)
	}
	if s.tl != nil {
		s.tl.AddStore(s.now, storeText(st.rev, next, s.nodes[by].id))
		s.tl.AddWrite(timeline.Write{At: s.now, Node: by, Rev: uint64(st.rev), Holder: next.Holder, Token: next.Token})
	}
	if next.Holder == "" {
		s.chk.released(by, next.Successor)
	}
	s.broadcast(simEvent{lease: next, rev: st.rev, stamp: st.stamp})
}

// stampWrite gives the write just stored at st.rev a stamp of its own.
func (s *Cluster) stampWrite() {
	st := &s.store
	st.stamp = s.newStamp()
	for lease.Revision(len(st.stamps)) < st.rev {
		st.stamps = append(st.stamps, 0)
	}
	st.stamps = append(st.stamps[:st.rev], st.stamp)
}

// newStamp draws the stamp of a write at revision st.rev: a value nobody
// outside the store can tell before the write, as the 64 random bits a
// real writer draws (the adversary never guesses one: the 2^-64 a forger
// has is not modelled). It is drawn from a stream of its own, so stamps
// leave the rest of a seed's run as it was. With predictableStamp (the
// broken variant) it is the revision, which a forger can tell.
func (s *Cluster) newStamp() uint64 {
	st := &s.store
	if s.opt.Store.predictableStamp {
		return uint64(st.rev)
	}
	st.stampSeq++
	z := uint64(s.opt.Seed)*0x9e3779b97f4a7c15 + st.stampSeq*0xbf58476d1ce4e5b9
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31 | 1
}

// stampOf is the stamp a node is told: none unless the store keeps them.
func (s *Cluster) stampOf(stamp uint64) uint64 {
	if !s.opt.Store.Stamped {
		return 0
	}
	return stamp
}

// stampAt returns the stamp revision rev was written with.
func (st *simStore) stampAt(rev lease.Revision) uint64 {
	if int(rev) >= len(st.stamps) {
		return 0
	}
	return st.stamps[rev]
}

// tokenClock advances and returns the clock at which the store floors
// new terms' tokens: the real time in microseconds (redisstore's TIME,
// pgstore's clock_timestamp, the client's wall clock in kubestore and
// etcdstore), at least one microsecond past the last write's (no store
// writes one name twice within a microsecond). A rollback or restore does
// not take it back. Zero for the broken variant Options.noClockFloor,
// whose tokens rest on the stored data's floor alone.
func (s *Cluster) tokenClock() uint64 {
	if s.opt.noClockFloor {
		return 0
	}
	st := &s.store
	st.clock = max(st.clock+1, uint64(s.now/int64(time.Microsecond)))
	return st.clock
}

// restoredFloor is the token floor the data of revision r0 keeps: the
// largest token written up to it (a restored copy holds no later one).
func (st *simStore) restoredFloor(r0 lease.Revision) uint64 {
	var f uint64
	for _, l := range st.history[:min(int(r0)+1, len(st.history))] {
		if l.Token <= lease.MaxToken {
			f = max(f, l.Token)
		}
	}
	return f
}

// attest brings the marker into being if it is gone and records the age
// the request attests for it.
func (s *Cluster) attest(ev *simEvent) {
	st := &s.store
	if !st.markerPresent {
		s.newMarker()
	}
	if ev.markerID == st.markerID {
		st.markerAttested = max(st.markerAttested, ev.markerAge)
	}
	// Other names on the same server (a Store shares its marker among all
	// its names, and so do the other processes): at worst one of them saw
	// the marker the instant it came into being, has a clock as fast as
	// the drift allows, and attests it with every swap.
	sib := time.Duration(float64(s.now-st.markerBorn) * (1 + s.rho))
	st.markerAttested = max(st.markerAttested, sib)
}

// newMarker brings a new marker into being: a new nonce, the server's
// identity, attested by nobody yet.
func (s *Cluster) newMarker() {
	st := &s.store
	st.nonces++
	st.markerID, st.markerIdent = st.nonces, st.ident
	st.markerPresent, st.markerAttested, st.markerBorn = true, 0, s.now
}

// loseData makes the record vanish; revisions and the token floor survive.
// The marker of StoreModel.CreateGate vanishes with it.
func (s *Cluster) loseData() {
	st := &s.store
	s.or.Lose(s.now)
	st.present, st.rec, st.rev, st.stamp = false, fsm.Lease{}, 0, 0
	if !s.opt.lossKeepsMarker && !s.opt.handDelete {
		st.ident++ // a restart or a failover (FLUSHALL keeps it, and takes the marker)
	}
	st.born = st.born && s.opt.handDelete
	if s.opt.Store.CreateGate && !s.opt.lossKeepsMarker && !s.opt.handDelete {
		// Another name's swap recreates it at once, at worst (see attest).
		s.newMarker()
	}
	st.lostAt = st.counter
	s.tracef(-1, "store DATA LOSS")
	if s.tl != nil {
		s.tl.AddStore(s.now, "DATA LOSS: the record vanishes")
	}
	s.broadcast(simEvent{absent: true})
}

// swapData replaces the whole dataset with the copy taken before the last
// create (FaultDataSwap: SWAPDB with a database restored from a backup,
// DEBUG RELOAD of an older file): the record is absent, and the marker is
// the copy's, with its nonce, its identity, its attested age and no born
// key. The server's identity changes (redisstore counts the commands that
// move data) unless swapKeepsIdentity. Revisions and the token floor
// survive, as after a data loss.
func (s *Cluster) swapData() {
	st := &s.store
	if !st.copyTaken {
		s.tracef(-1, "data swap: no copy taken yet")
		return
	}
	st.present, st.rec, st.rev, st.stamp = false, fsm.Lease{}, 0, 0
	s.or.Lose(s.now)
	st.marker = st.copy
	if !s.opt.swapKeepsIdentity {
		st.ident++
	}
	st.lostAt = st.counter
	s.tracef(-1, "store DATASET SWAPPED for a copy: marker %d attested %v", st.markerID, st.markerAttested)
	if s.tl != nil {
		s.tl.AddStore(s.now, "DATASET SWAP: the record vanishes, an older marker is back")
	}
	s.broadcast(simEvent{absent: true})
}

// resend makes the store lose its data, after which a call that made the
// lost marker, resent by the client library with the same arguments,
// makes the marker anew (FaultResend). With nonceFromOp the new marker
// takes the call's op nonce, which was the lost marker's; otherwise it
// gets a nonce of its own.
func (s *Cluster) resend() {
	st := &s.store
	old, had := st.markerID, st.markerPresent
	s.loseData()
	if !s.opt.Store.CreateGate || !had {
		return
	}
	if !st.markerPresent {
		s.newMarker()
	}
	if s.opt.nonceFromOp {
		st.markerID = old
	}
	s.tracef(-1, "a resent call made the marker anew: nonce %d", st.markerID)
}

// broadcast sends a watch event to every node that watches.
func (s *Cluster) broadcast(w simEvent) {
	if s.opt.Store.NoWatch {
		return
	}
	w.kind = evWatch
	for _, n := range s.nodes {
		if !n.up || n.respCut || n.mutedUntil > s.now || s.lost() {
			continue
		}
		w.node, w.gen = int32(n.idx), n.gen
		if !s.opt.Store.Stamped {
			w.stamp = 0
		}
		w.at = s.now + s.latency()
		if !s.opt.Faults.WatchChaos {
			// A watch stream is FIFO: later events never overtake.
			w.at = max(w.at, n.watchLast)
			n.watchLast = w.at
		} else {
			if s.chance(0.2) {
				w.at += s.uniform(0, int64(3*s.opt.Config.RetryInterval)) // delayed, so reordered
			}
			if s.chance(0.1) {
				dup := w
				dup.at += s.uniform(0, int64(s.opt.Config.RetryInterval))
				s.push(dup)
			}
		}
		w.orig = 0
		s.push(w)
	}
}

// storedAt returns what revision rev stored.
func (st *simStore) storedAt(rev lease.Revision) (fsm.Lease, bool) {
	if rev == 0 || int(rev) >= len(st.history) {
		return fsm.Lease{}, false
	}
	return st.history[rev], true
}

// storedOnce reports whether revision rev stored l at some time: now, or
// before a restore that took the revision counter back (Fault.Reuse) gave
// rev to another record.
func (st *simStore) storedOnce(rev lease.Revision, l fsm.Lease) bool {
	if now, ok := st.storedAt(rev); ok && now == l {
		return true
	}
	for _, r := range st.replaced[rev] {
		if r == l {
			return true
		}
	}
	return false
}

// issue returns the next revision of the counter. One issued before (the
// counter went back with a restore, Fault.Reuse) is marked as the store
// going back: a node that accepted the record it stored before sees the
// store go back to it.
func (s *Cluster) issue() lease.Revision {
	st := &s.store
	st.counter++
	if st.counter <= st.issued {
		if s.adv.back == nil {
			s.adv.back = make(map[lease.Revision]bool)
		}
		s.adv.back[st.counter] = true
		if s.tracing() {
			s.tracef(-1, "store issues revision %d again", st.counter)
		}
	}
	st.issued = max(st.issued, st.counter)
	return st.counter
}

// keep records that revision rev stores l: history[rev], the revisions
// after it forgotten (they are issued again later), what they stored kept
// in replaced.
func (st *simStore) keep(rev lease.Revision, l fsm.Lease) {
	for lease.Revision(len(st.history)) < rev {
		st.history = append(st.history, fsm.Lease{})
	}
	if lease.Revision(len(st.history)) > rev {
		if st.replaced == nil {
			st.replaced = make(map[lease.Revision][]fsm.Lease)
		}
		for r := rev; r < lease.Revision(len(st.history)); r++ {
			st.replaced[r] = append(st.replaced[r], st.history[r])
		}
		st.history = st.history[:rev]
	}
	st.history = append(st.history, l)
}
