package sim

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/tenure-go/tenure/fsm"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/sim/internal/draw"
)

// FaultKind says what a Fault does.
type FaultKind uint8

// The kinds of Fault.
const (
	// FaultCrash kills Node's process; it restarts after Dur (with a new
	// identity if NewIdentity), or stays down if Dur is zero.
	FaultCrash FaultKind = iota + 1
	// FaultPause freezes Node's process for Dur.
	FaultPause
	// FaultPartition cuts Node's requests (Requests) and/or its responses
	// and watch events (Responses) for Dur.
	FaultPartition
	// FaultLoss drops every message with probability Prob for Dur.
	FaultLoss
	// FaultSlow adds up to Latency to every message for Dur.
	FaultSlow
	// FaultDataLoss makes the store lose the record.
	FaultDataLoss
	// FaultRelease stops Node gracefully (it releases the lease); it starts
	// again after Dur, or stays stopped if Dur is zero. With a Window it
	// waits up to Window for any node to send a create, and stops that
	// node while the create is in flight (see targeted.go).
	FaultRelease
	// FaultReconfigure gives Node the timings Config.
	FaultReconfigure
	// FaultForge is an outside writer: it stores Record (its zero fields
	// as stored) for Dur, then removes it if it still stands (see
	// adversary.go).
	FaultForge
	// FaultForgeWatch pushes Record (its zero fields as stored) at
	// Revision to the watch feeds of the nodes in Mask; the store does not
	// hold it. With Released it forges the release of a live lease
	// instead, aimed at the followers: the stored record with its holder
	// cleared, at its revision, to the nodes in Mask (every node that does
	// not lead if Mask is 0). With a Window as well, it waits up to Window
	// for the leader to send a renewal and forges the release of the
	// revision that renewal will be stored at. With Renewal and a Window
	// instead, it waits for the leader to send a renewal and tells the
	// followers, before the renewal after it is sent, that the stored
	// record was renewed at the revision that one will be stored at (the
	// stored record and its stamp: a forger knows everything but the
	// stamp of a write yet to come); when the leader sends the renewal
	// after that, it is cut off both ways for Dur, so that its last
	// renewal lands at the forged revision and it believes it leads for
	// RenewDeadline after sending it.
	FaultForgeWatch
	// FaultRollback rewinds the store by Revision revisions (Touch: to the
	// first revision of the current term), as a replica failover or an AOF
	// rollback does. With a Window it is aimed at a quiet follower: it
	// waits up to Window for a follower to send a read while the store
	// holds a renewal of the record the follower last accepted (it heard
	// the renewals instead of reading them), and rewinds the store to that
	// record's revision just before the read arrives.
	FaultRollback
	// FaultRestore restores a stale backup: revision 1, holder cleared.
	FaultRestore
	// FaultRenewCut waits up to Window for the leader to send a renewal,
	// reconfigures it with Config while the renewal is in flight, then cuts
	// it off both ways for Dur.
	FaultRenewCut
	// FaultHold waits up to Window for a follower's read or losing swap
	// while a node leads, holds that operation in flight for Dur (its
	// request if Requests, else its reply), then cuts the leader off both
	// ways for Cut.
	FaultHold
	// FaultJitter delays each message, with probability Prob, by up to
	// Latency more, for Dur.
	FaultJitter
	// FaultMuteWatch makes the watch feeds of the nodes in Mask (Node's
	// alone if Mask is 0) silently stop delivering for Dur: no event, no
	// error, as a dead connection nobody noticed does. It is no
	// disturbance: a leader must appear within the liveness bound anyway.
	FaultMuteWatch
	// FaultDataSwap replaces the whole dataset with a copy taken before
	// the last create, marker included, while the server stays the same
	// (SWAPDB with a database restored from a backup, DEBUG RELOAD of an
	// older file): the record vanishes, as in a data loss, and the marker
	// of StoreModel.CreateGate is the copy's.
	FaultDataSwap
	// FaultResend makes the store lose the record, marker included, and a
	// call that made the lost marker, resent by the client library with
	// its arguments unchanged, makes the marker anew (StoreModel.CreateGate).
	FaultResend
	// FaultForgeRelease is an outside writer storing the release of the
	// live lease: the stored record with its holder cleared, as the
	// holder's own release stores it. Nobody can tell the two apart: the
	// leader believes it leads until it next hears from the store (see
	// adversary.go).
	FaultForgeRelease
	// FaultClockStop stops Node's process and its monotonic clock together
	// for Dur, as a hypervisor's pause of the whole VM or a system suspend
	// does: real time passes, the node's clock does not, and it resumes
	// behind. Unless Hidden, the node's second clock (the boot time or the
	// wall clock, see lead's Clock) reveals the stop on resume, and the
	// node's driver counts it as lead does (see stopCounted); a Hidden stop
	// is one nothing reveals, which only fencing covers.
	FaultClockStop
	// FaultResign makes Node resign (fsm.Resign, lead's Elector.Resign):
	// a leader steps down, releases the lease and stays a follower that
	// takes no term until it has seen another holder or a LeaseDuration
	// has passed. A node that does not lead ignores it.
	FaultResign
	// FaultHandOver makes Node hand the lease over to Successor
	// (fsm.Resign with a Successor, lead's Elector.HandOver): a leader
	// steps down and releases naming Successor, which alone takes it at
	// once. Successor may be a node that is down or cut off, or an
	// identity no node has: the others then take the lease over once they
	// have waited it out, within LivenessBound (and, in runtime mode,
	// HandOver's fallback releases it to all sooner).
	FaultHandOver
)

// lastFaultKind is the largest FaultKind.
const lastFaultKind = FaultHandOver

var faultNames = [...]string{"", "crash", "pause", "partition", "loss", "slow", "dataloss", "release", "reconfigure",
	"forge", "forgewatch", "rollback", "restore", "renewcut", "hold", "jitter", "mutewatch", "dataswap", "resend", "forgerelease", "clockstop", "resign", "handover"}

// String returns the fault kind's name: crash, pause, partition, loss,
// slow, dataloss, release, reconfigure.
func (k FaultKind) String() string {
	if int(k) < len(faultNames) && k > 0 {
		return faultNames[k]
	}
	return fmt.Sprintf("FaultKind(%d)", uint8(k))
}

// Fault is one entry of a fault schedule.
type Fault struct {
	// At is the real time the fault starts, since the start of the run.
	At time.Duration
	// Kind says what the fault does.
	Kind FaultKind
	// Node is the node it hits (crash, pause, partition, release,
	// reconfigure), from 0.
	Node int
	// AtLeader aims the fault at the node that leads when the fault
	// starts; Node is hit when none leads.
	AtLeader bool
	// Dur is how long it lasts.
	Dur time.Duration
	// NewIdentity restarts a crashed node with a new identity.
	NewIdentity bool
	// Requests cuts a partitioned node's requests.
	Requests bool
	// Responses cuts a partitioned node's responses and watch events.
	Responses bool
	// Prob is the probability that FaultLoss drops a message.
	Prob float64
	// Latency is what FaultSlow adds to every message (up to).
	Latency time.Duration
	// Config is the timings FaultReconfigure gives the node.
	Config lease.Config
	// Record is the forged record (forge, forgewatch); a zero Holder,
	// Token or Transitions means the stored one.
	Record fsm.Lease
	// Touch makes a rollback go back to the first revision of the current
	// term (same holder and token).
	Touch bool
	// Revision is the revision of a forged watch event, or how many
	// revisions a rollback goes back.
	Revision lease.Revision
	// Window is how long a targeted fault waits for its trigger.
	Window time.Duration
	// Cut is how long a hold cuts the leader off.
	Cut time.Duration
	// Mask is the set of nodes (bit i for node i) that receive a forged
	// watch event, or whose watch a mutewatch silences.
	Mask uint64
	// Successor is who a FaultHandOver hands the lease to: an identity,
	// that of a node or of none.
	Successor string
	// Released makes a forgewatch forge the release of the live lease
	// (see FaultForgeWatch).
	Released bool
	// Renewal makes a forgewatch with a Window forge a renewal ahead of
	// the leader (see FaultForgeWatch).
	Renewal bool
	// Hidden makes a clock stop one that nothing reveals on resume (see
	// FaultClockStop).
	Hidden bool
	// Reuse makes a rollback or a restore take the store's revision
	// counter back with its data (Faults.ReuseRevisions): the next write
	// gets the revision after the one made current, which the lost
	// history had already given to another record.
	Reuse bool
}

// String describes the fault in words.
func (f Fault) String() string {
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	f.Dur, f.Latency = ms(f.Dur), ms(f.Latency)
	switch f.Kind {
	case FaultCrash:
		return fmt.Sprintf("crash n%d for %v (new identity: %v)", f.Node, f.Dur, f.NewIdentity)
	case FaultPause:
		return fmt.Sprintf("pause n%d for %v", f.Node, f.Dur)
	case FaultPartition:
		return fmt.Sprintf("partition n%d for %v (requests %v, responses %v)", f.Node, f.Dur, f.Requests, f.Responses)
	case FaultLoss:
		return fmt.Sprintf("lose %.0f%% of messages for %v", 100*f.Prob, f.Dur)
	case FaultSlow:
		return fmt.Sprintf("slow store (+%v) for %v", f.Latency, f.Dur)
	case FaultDataLoss:
		return "store loses the record"
	case FaultDataSwap:
		return "the dataset is swapped for a copy taken before the last create"
	case FaultResend:
		return "store loses the record, and a resent call makes the marker anew"
	case FaultRelease:
		if f.Window > 0 {
			return fmt.Sprintf("within %v: stop, releasing, whoever next sends a create, while it is in flight; back after %v", ms(f.Window), f.Dur)
		}
		return fmt.Sprintf("release n%d, back after %v", f.Node, f.Dur)
	case FaultResign:
		return fmt.Sprintf("n%d resigns", f.Node)
	case FaultHandOver:
		if f.Dur > 0 {
			return fmt.Sprintf("n%d hands over to %s, giving up after %v", f.Node, f.Successor, f.Dur)
		}
		return fmt.Sprintf("n%d hands over to %s", f.Node, f.Successor)
	case FaultReconfigure:
		c := f.Config
		return fmt.Sprintf("reconfigure n%d: L=%v R=%v I=%v J=%.2f T=%v", f.Node, ms(c.LeaseDuration), ms(c.RenewDeadline), ms(c.RetryInterval), c.RetryJitter, ms(c.BackendTimeout))
	case FaultMuteWatch:
		return fmt.Sprintf("the watch of nodes %b silently stops delivering for %v", f.muted(), f.Dur)
	case FaultClockStop:
		if f.Hidden {
			return fmt.Sprintf("stop n%d and its clock for %v (nothing reveals it)", f.Node, f.Dur)
		}
		return fmt.Sprintf("stop n%d and its clock for %v (revealed on resume)", f.Node, f.Dur)
	}
	if f.Kind > FaultReconfigure && f.Kind <= lastFaultKind {
		return advString(f)
	}
	return f.Kind.String()
}

// Text describes the fault as String does, noting a fault aimed at the
// leader.
func (f Fault) text() string {
	if f.AtLeader && f.Kind.Aimed() {
		return f.String() + " [aimed at the leader]"
	}
	return f.String()
}

// validate checks one fault of a schedule for a cluster of nodes nodes.
func (f Fault) validate(nodes int) error {
	switch {
	case f.Kind < FaultCrash || f.Kind > lastFaultKind:
		return fmt.Errorf("%w: unknown fault kind %d", ErrInvalidOptions, f.Kind)
	case f.Node < 0 || f.Node >= nodes:
		return fmt.Errorf("%w: fault %v: no node %d", ErrInvalidOptions, f.Kind, f.Node)
	case f.At < 0 || f.Dur < 0 || f.Latency < 0 || !(f.Prob >= 0 && f.Prob <= 1):
		return fmt.Errorf("%w: fault %v: negative time or probability out of [0, 1]", ErrInvalidOptions, f)
	case f.Kind == FaultReconfigure || f.Kind == FaultRenewCut:
		if err := f.Config.Validate(); err != nil {
			return fmt.Errorf("%w: fault %v: %w", ErrInvalidOptions, f.Kind, err)
		}
	}
	return nil
}

// muted is the set of nodes a mutewatch silences: Mask, or Node alone.
func (f Fault) muted() uint64 {
	if f.Mask != 0 {
		return f.Mask
	}
	return 1 << f.Node
}

// Aimed reports whether the kind hits one node (and so may be aimed at
// the leader).
func (k FaultKind) Aimed() bool {
	switch k {
	case FaultCrash, FaultPause, FaultPartition, FaultRelease, FaultReconfigure, FaultClockStop, FaultResign, FaultHandOver:
		return true
	}
	return false
}

// applyFault starts a fault; faults with a duration schedule their end.
func (s *Cluster) applyFault(i int) {
	f := s.faults[i]
	if f.AtLeader && f.Kind.Aimed() {
		for _, n := range s.nodes {
			if n.up && n.m.Leading(n.local(s.now)) {
				f.Node = n.idx
				s.faults[i].Node = n.idx
				break
			}
		}
	}
	s.tracef(-1, "FAULT %s", f.text())
	n := s.nodes[f.Node]
	end := simEvent{at: s.now + int64(f.Dur), kind: evFaultEnd, node: int32(f.Node), count: i}
	c := &s.chk
	if f.Kind != FaultRelease && f.Kind != FaultResign && f.Kind != FaultHandOver && f.Kind != FaultMuteWatch {
		// A graceful release (or a resign) is no fault: the handover it
		// starts is checked. Nor is a silent watch: followers must notice
		// it.
		c.disturbed(s.now)
	}
	switch f.Kind {
	case FaultCrash:
		s.crash(n)
		if f.Dur > 0 {
			s.push(end)
		}
	case FaultPause:
		if !n.up || n.pausedUntil > s.now {
			return
		}
		n.pausedUntil = s.now + int64(f.Dur)
		end.gen = n.gen
		if tok, _, ok := n.m.Term(); ok && n.m.Leading(n.local(s.now)) {
			// It checked that it leads just before the pause, and its
			// write lands after it.
			s.fenceSend(n, tok, int64(f.Dur)+s.latency())
		}
		c.active++
		s.push(end)
	case FaultPartition:
		n.reqCut, n.respCut = f.Requests, f.Responses
		c.active++
		s.push(end)
	case FaultLoss:
		s.net.lossActive++
		s.net.lossP = f.Prob
		c.active++
		s.push(end)
	case FaultSlow:
		s.net.slow++
		s.net.slowLat = int64(f.Latency)
		c.active++
		s.push(end)
	case FaultDataLoss:
		s.loseData()
	case FaultDataSwap:
		s.swapData()
	case FaultResend:
		s.resend()
	case FaultRelease:
		if f.Window > 0 {
			s.adv.armed = append(s.adv.armed, i) // see targeted.go
			break
		}
		if n.up && n.pausedUntil <= s.now {
			s.step(n, fsm.Event{Kind: fsm.Stop, Release: true})
		}
		if f.Dur > 0 {
			s.push(end)
		}
	case FaultResign:
		if n.up && n.pausedUntil <= s.now {
			s.step(n, fsm.Event{Kind: fsm.Resign})
		}
	case FaultHandOver:
		if n.up && n.pausedUntil <= s.now {
			s.step(n, fsm.Event{Kind: fsm.Resign, Successor: f.Successor})
		}
	case FaultReconfigure:
		n.cfg = f.Config
		if n.up && n.pausedUntil <= s.now {
			s.step(n, fsm.Event{Kind: fsm.Reconfigure, Config: f.Config})
		}
	case FaultMuteWatch:
		for _, m := range s.nodes {
			if f.muted()&(1<<m.idx) != 0 {
				m.mutedUntil = max(m.mutedUntil, s.now+int64(f.Dur))
			}
		}
	case FaultClockStop:
		if !n.up || n.pausedUntil > s.now {
			return
		}
		s.stopClock(n, f)
		end.gen = n.gen
		c.active++
		s.push(end)
	default:
		s.applyAdv(i, &end)
	}
	if s.tl != nil {
		s.tl.AddFault(faultMark(s.now, f))
	}
}

// stopClock starts the clock stop f on n (up, not paused): its process is
// paused as by FaultPause, and its clock stands still for f.Dur unless the
// stop is counted (stopCounted), in which case the node's clock, as its
// driver reads it, runs on as if it had not stopped.
func (s *Cluster) stopClock(n *node, f Fault) {
	n.pausedUntil = s.now + int64(f.Dur)
	if tok, _, ok := n.m.Term(); ok && n.m.Leading(n.local(s.now)) {
		// As before a pause: it checked that it leads just before the
		// stop, and its write lands after it.
		s.fenceSend(n, tok, int64(f.Dur)+s.latency())
	}
	if stopCounted(n, f) {
		return
	}
	n.stops = append(n.stops, clockStop{from: s.now, until: s.now + int64(f.Dur)})
	if n.m.State() == fsm.Leader {
		// Its belief lasts as long on its own clock: later in real time.
		n.beliefEnd = n.realAt(n.m.LeaderUntil())
	}
}

// stopCounted reports whether n's driver counts the clock stop f as
// elapsed time when n resumes, as lead's elector does: when the node's
// second clock reveals it (f is not Hidden) and the machine is not a
// Follower (a follower's waits are longer by an uncounted stop, which is
// safe; lead does not count a second clock's jump for it, since a jump no
// stop caused would shorten them). The node is paused until the stop ends
// and its state cannot change meanwhile, so the decision is the one it
// makes on resume. Counted, the node's clock reads on resume what it would
// have read without the stop, and no query made after the resume sees
// anything else: so the clock is left running.
func stopCounted(n *node, f Fault) bool {
	return !f.Hidden && n.m.State() != fsm.Follower
}

// endFault ends a fault with a duration.
func (s *Cluster) endFault(ev *simEvent) {
	f := s.faults[ev.count]
	n := s.nodes[f.Node]
	c := &s.chk
	if f.Kind == FaultMuteWatch {
		return // mutedUntil ends it; nothing to heal
	}
	c.disturbed(s.now)
	switch f.Kind {
	case FaultCrash, FaultRelease:
		if !n.up {
			if f.NewIdentity {
				n.incarnation++
				n.id = fmt.Sprintf("n%d.%d", n.idx, n.incarnation)
			}
			s.boot(n)
		}
	case FaultPause:
		c.active--
		s.tracef(f.Node, "pause ends")
	case FaultClockStop:
		c.active--
		s.tracef(f.Node, "resumes from a clock stop")
	case FaultPartition:
		n.reqCut, n.respCut = false, false
		c.active--
		s.tracef(f.Node, "partition heals")
	case FaultLoss:
		s.net.lossActive--
		c.active--
	case FaultSlow:
		s.net.slow--
		c.active--
		// Messages sent during the spike still arrive late.
		c.disturbed(s.now + s.net.slowLat)
	default:
		s.endAdv(ev)
	}
}

// randomSchedule draws a fault schedule from the seed: faults start in the
// first 80% of the run, so that the rest is calm and liveness is checked.
func randomSchedule(s *Cluster) []Fault {
	f := s.opt.Faults
	if f.adversarial() {
		return advSchedule(s)
	}
	var kinds []FaultKind
	add := func(on bool, k FaultKind) {
		if on {
			kinds = append(kinds, k)
		}
	}
	add(f.Crash, FaultCrash)
	add(f.Pause, FaultPause)
	add(f.Partition, FaultPartition)
	add(f.Loss, FaultLoss)
	add(f.Slow, FaultSlow)
	add(f.DataLoss, FaultDataLoss)
	add(f.DataSwap, FaultDataSwap)
	add(f.Resend, FaultResend)
	add(f.Release, FaultRelease)
	add(f.Reconfigure, FaultReconfigure)
	add(f.MuteWatch, FaultMuteWatch)
	add(f.Resign, FaultResign)
	add(f.HandOver, FaultHandOver)
	stops := clockStops(s)
	if len(kinds) == 0 {
		return append([]Fault{}, stops...)
	}
	cfg := s.opt.Config
	l := int64(cfg.LeaseDuration)
	end := int64(s.opt.Duration) * 8 / 10
	var out []Fault
	for t := s.uniform(int64(5*time.Second), int64(20*time.Second)); t < end; t += s.uniform(int64(5*time.Second), int64(40*time.Second)) {
		fl := Fault{At: time.Duration(t), Kind: kinds[s.rng.IntN(len(kinds))], Node: s.rng.IntN(s.opt.Nodes)}
		switch fl.Kind {
		case FaultCrash:
			fl.Dur = time.Duration(s.uniform(int64(time.Second), 3*l))
			fl.NewIdentity = s.chance(0.5)
		case FaultPause:
			fl.Dur = time.Duration(s.uniform(l/2, 3*l))
		case FaultPartition:
			fl.Dur = time.Duration(s.uniform(int64(time.Second), 3*l))
			switch s.rng.IntN(3) {
			case 0:
				fl.Requests = true
			case 1:
				fl.Responses = true
			default:
				fl.Requests, fl.Responses = true, true
			}
		case FaultLoss:
			fl.Prob = 0.1 + 0.6*s.rng.Float64()
			fl.Dur = time.Duration(s.uniform(int64(time.Second), 2*l))
		case FaultSlow:
			bt := int64(cfg.BackendTimeout)
			fl.Latency = time.Duration(s.uniform(bt, 2*bt))
			fl.Dur = time.Duration(s.uniform(int64(time.Second), 2*l))
		case FaultRelease:
			fl.Dur = time.Duration(s.uniform(int64(time.Second), 2*l))
			if s.lossy && s.chance(0.5) {
				// Stop whoever next creates the record, while the create
				// is in flight: after a loss, that create is a claim.
				fl.Window = time.Duration(s.uniform(l, 4*l))
			}
		case FaultReconfigure:
			fl.Config = randomConfig(s)
		case FaultResign:
			fl.AtLeader = true
		case FaultHandOver:
			fl.AtLeader, fl.Successor = true, drawSuccessor(s.rng.IntN, s.opt.Nodes)
		case FaultMuteWatch:
			fl.Dur = time.Duration(s.uniform(int64(time.Second), 6*l))
			if s.chance(0.5) {
				fl.Mask = 1<<s.opt.Nodes - 1 // every node's watch
			}
		}
		out = append(out, fl)
	}
	return append(out, stops...)
}

// clockStops draws the clock stops of a random schedule (Faults.ClockStop,
// Faults.ClockStopHidden): one every 30 to 240 seconds (about one fault in
// eight when every fault is on), half of them aimed at the leader, each
// from half a lease to three. They come from a generator of their own,
// seeded by the seed, so that switching them on leaves the draws of the
// other faults as they were.
func clockStops(s *Cluster) []Fault {
	f := s.opt.Faults
	if !f.ClockStop && !f.ClockStopHidden {
		return nil
	}
	r := rand.New(rand.NewPCG(s.opt.Seed, s.opt.Seed^0xc10c5709))
	uniform := func(lo, hi int64) int64 { return lo + r.Int64N(hi-lo+1) }
	l := int64(s.opt.Config.LeaseDuration)
	end := int64(s.opt.Duration) * 8 / 10
	var out []Fault
	for t := uniform(int64(10*time.Second), int64(120*time.Second)); t < end; t += uniform(int64(30*time.Second), int64(240*time.Second)) {
		fl := Fault{At: time.Duration(t), Kind: FaultClockStop, Node: r.IntN(s.opt.Nodes), AtLeader: r.IntN(2) == 0,
			Dur: time.Duration(uniform(l/2, 3*l))}
		fl.Hidden = !f.ClockStop || (f.ClockStopHidden && r.IntN(2) == 0)
		out = append(out, fl)
	}
	return out
}

// randomConfig draws the timings of a reconfiguration (draw.Config). When
// the store may lose records, every node keeps the initial LeaseDuration:
// a vanished record takes its holder's promise with it, so the design
// requires (docs/design.md, "Stores that lose records") that every elector's LeaseDuration exceed every
// other's RenewDeadline there, which one shared LeaseDuration guarantees.
// The same holds when an adversary writes the store: a forged or
// rolled-back record replaces its holder's promise too. With Faults.Drift
// the timings tolerate Options.Rho, as every config a run uses must.
func randomConfig(s *Cluster) lease.Config {
	rho := 0.0
	if s.opt.Faults.Drift {
		rho = s.opt.Rho
	}
	return draw.Config(s.rng, s.opt.Config, s.lossy || s.opt.Faults.adversarial(), rho)
}

// drawSuccessor draws the successor of a FaultHandOver among nodes nodes
// (intn draws in [0, n)): a node's first identity, or now and then one no
// node has (a successor that never comes).
func drawSuccessor(intn func(int) int, nodes int) string {
	return fmt.Sprintf("n%d", intn(nodes+1))
}
