package exhaust

import (
	"fmt"
	"strings"
	"time"

	"github.com/tenure-go/tenure/fsm"
	"github.com/tenure-go/tenure/lease"
)

// offset is where every node's local clock starts (offsets between clocks
// do not matter; a clock stop sets one behind).
const offset = time.Second

// judge is the safety property, fed the history as it happens: the
// oracle, behind the calls of its API.
type judge interface {
	boot(id int, gen uint32, at time.Duration)
	down(id int, gen uint32, at time.Duration)
	send(id int, gen uint32, at time.Duration, expected lease.Revision, next fsm.Lease) any
	applied(at time.Duration, snap any, rev lease.Revision, stored fsm.Lease, clock uint64)
	deliver(id int, gen uint32, at time.Duration, rev lease.Revision, rec fsm.Lease, present bool)
	rollback(at time.Duration, to lease.Revision)
	restore(at time.Duration, rev lease.Revision, rec fsm.Lease)
	lose(at time.Duration)
	forge(at time.Duration, rev lease.Revision, rec fsm.Lease)
	belief(id int, gen uint32, at time.Duration, leading bool, token uint64)
	violation() (string, bool)
	clone() judge
	appendKey(b []byte) []byte
	appendSnap(b []byte, snap any) []byte // the key of a snapshot send returned
}

type msgKind uint8

const (
	mReq   msgKind = iota + 1 // a request on its way to the store
	mReply                    // the store's answer on its way back
	mWatch                    // a watch event on its way to a node
)

// msg is a message in flight.
type msg struct {
	kind    msgKind
	node    uint8
	gen     uint32 // the incarnation that sent it (req) or that it is for
	orphan  bool   // req: a swap whose driver timed out (no reply will be taken)
	read    bool   // req: a read, else a swap
	guarded bool
	reply   fsm.EventKind // reply: ReadDone, SwapDone or SwapConflict
	absent  bool
	born    int32 // the tick it was sent
	swap    fsm.SwapKind
	exp     lease.Revision // req: the revision the swap expects; reply, watch: the revision shown
	lease   fsm.Lease      // req: the record the swap stores; reply, watch: the record shown
	was     fsm.Lease
	snap    any // req (swap): the oracle's snapshot
}

// node is one simulated process and its driver.
type node struct {
	m           fsm.Machine
	up          bool
	restart     bool   // stopped gracefully: boots at the next tick
	gen         uint32 // incarnation
	lag         int32  // ticks its clock is behind real time (clock stops)
	pausedUntil int32  // no event is handled before this tick
	cutUntil    int32  // its messages both ways are dropped before this tick
	opPending   bool
	opRead      bool
	opSwap      fsm.SwapKind
	deadline    time.Duration // local time at which the driver times the op out
	cfg         lease.Config  // what the next incarnation starts with
}

// store is a linearizable compare-and-swap register with store.Store's
// semantics, as sim's model store has them.
type store struct {
	present bool
	rec     fsm.Lease
	rev     lease.Revision
	counter lease.Revision // the last revision issued: never goes back
	floor   uint64         // the largest token the stored data keeps
	clock   uint64         // the store's token clock (ticks), never rewound
	forged  uint64         // bit r: revision r was written by the adversary
	history []fsm.Lease    // history[r] is what revision r stored (shared: append copies)
}

// world is one state of the search.
type world struct {
	t      int32
	nodes  []node
	st     store
	flight []msg
	budget Budget
	j      judge
}

func (w *world) clone() *world {
	c := *w
	c.nodes = append([]node(nil), w.nodes...)
	c.flight = append([]msg(nil), w.flight...)
	c.j = w.j.clone()
	return &c
}

// checker runs a bound.
type checker struct {
	b     Bound
	trace *strings.Builder // while replaying a schedule: what happened
	acts  []fsm.Action
	// progress, if set, is told after each level of the search.
	progress func(depth, frontier, states int, d time.Duration)
}

func (x *checker) logf(format string, args ...any) {
	if x.trace != nil {
		fmt.Fprintf(x.trace, "\t\t"+format+"\n", args...)
	}
}

func (x *checker) at(w *world) time.Duration { return ms(int(w.t)) }

func (x *checker) local(w *world, i int) time.Duration {
	return offset + ms(int(w.t-w.nodes[i].lag))
}

// initial is the world at tick 0: every node booted.
func (x *checker) initial(j judge) *world {
	w := &world{nodes: make([]node, x.b.Nodes), budget: x.b.Budget, j: j, st: store{history: []fsm.Lease{{}}}}
	for i := range w.nodes {
		w.nodes[i].cfg = x.b.Config
		x.boot(w, i)
	}
	x.sample(w)
	return w
}

// boot starts a new incarnation on node i: a fresh machine.
func (x *checker) boot(w *world, i int) {
	n := &w.nodes[i]
	m, err := fsm.New(fsm.Options{Identity: nodeName(i), Config: n.cfg, Rand: zeroRand{},
		LossyStore: x.b.Lossy, AuthenticWatch: x.b.Authentic, GuardedRelease: x.b.Guarded})
	if err != nil {
		panic(err) // Run validated the bound's configs; nodeName is never empty
	}
	n.m, n.up, n.restart, n.gen = *m, true, false, n.gen+1
	n.opPending, n.pausedUntil = false, 0
	w.j.boot(i, n.gen, x.at(w))
	x.logf("n%d boots (gen %d)", i, n.gen)
	if x.b.Watch {
		// A watch opens with the current record.
		w.flight = append(w.flight, msg{kind: mWatch, node: uint8(i), gen: n.gen, born: w.t,
			exp: w.st.rev, lease: w.st.rec, absent: !w.st.present})
	}
	x.step(w, i, fsm.Event{Kind: fsm.Tick})
}

// down ends node i's incarnation; messages to it are dropped, its requests
// in flight may still reach the store (their replies are dropped).
func (x *checker) down(w *world, i int) {
	n := &w.nodes[i]
	w.j.down(i, n.gen, x.at(w))
	n.up, n.opPending, n.pausedUntil = false, false, 0
	out := w.flight[:0]
	for _, m := range w.flight {
		if int(m.node) == i {
			if m.kind != mReq || m.read {
				continue
			}
			m.orphan = true
		}
		out = append(out, m)
	}
	w.flight = out
}

// step feeds ev to node i's machine at its local time and performs the
// actions as lead's driver does.
func (x *checker) step(w *world, i int, ev fsm.Event) {
	n := &w.nodes[i]
	ev.Now = x.local(w, i)
	acts := n.m.Step(ev)
	x.acts = append(x.acts[:0], acts...) // Step's slice is the machine's buffer
	if x.trace != nil {
		x.logf("n%d %v -> %s", i, evString(ev), actsString(n.m.State(), x.acts))
	}
	for _, a := range x.acts {
		x.perform(w, i, a)
	}
}

func (x *checker) perform(w *world, i int, a fsm.Action) {
	n := &w.nodes[i]
	switch a.Kind {
	case fsm.Read, fsm.Swap:
		n.opPending, n.opRead, n.opSwap = true, a.Kind == fsm.Read, a.Swap
		n.deadline = x.local(w, i) + n.m.Config().BackendTimeout
		r := msg{kind: mReq, node: uint8(i), gen: n.gen, read: a.Kind == fsm.Read, born: w.t}
		if a.Kind == fsm.Swap {
			r.swap, r.exp, r.lease, r.guarded, r.was = a.Swap, a.Expected, a.Next, a.Guarded, a.Was
			r.snap = w.j.send(i, n.gen, x.at(w), a.Expected, a.Next)
		}
		if n.cutUntil <= w.t {
			w.flight = append(w.flight, r)
		}
	case fsm.Done:
		x.down(w, i)
		n.restart = true
	}
}

// sample feeds every live node's belief to the judge.
func (x *checker) sample(w *world) {
	for i := range w.nodes {
		n := &w.nodes[i]
		if !n.up {
			continue
		}
		leading := n.m.Leading(x.local(w, i))
		tok, _, _ := n.m.Term()
		w.j.belief(i, n.gen, x.at(w), leading, tok)
	}
}

// advance moves real time on by one tick: paused nodes resume when due,
// stopped ones restart, and every node whose op timed out or whose
// NextWake has come gets its event.
func (x *checker) advance(w *world) {
	w.t++
	if x.b.WatchAtTick {
		// Every watch event in flight arrives now, in order, but to a
		// paused node.
		for k := 0; k < len(w.flight); {
			if m := w.flight[k]; m.kind == mWatch && w.nodes[m.node].pausedUntil <= w.t {
				x.deliver(w, k)
				continue
			}
			k++
		}
	}
	for i := range w.nodes {
		n := &w.nodes[i]
		if !n.up {
			if n.restart {
				x.boot(w, i)
			}
			continue
		}
		if n.pausedUntil > w.t {
			continue
		}
		now := x.local(w, i)
		if n.opPending && now >= n.deadline {
			x.timeout(w, i)
		}
		if n.up && n.m.NextWake() <= now {
			x.step(w, i, fsm.Event{Kind: fsm.Tick})
		}
	}
}

// timeout fails node i's op, as lead's context does after BackendTimeout:
// a later reply is dropped; a swap not yet applied may still be (an
// orphan, up to MaxOrphans), or never.
func (x *checker) timeout(w *world, i int) {
	n := &w.nodes[i]
	n.opPending = false
	orphans := 0
	for _, m := range w.flight {
		if m.kind == mReq && m.orphan {
			orphans++
		}
	}
	out := w.flight[:0]
	for _, m := range w.flight {
		if int(m.node) == i && m.gen == n.gen {
			switch {
			case m.kind == mReply:
				continue
			case m.kind == mReq && !m.orphan:
				if m.read || orphans >= x.b.MaxOrphans {
					continue
				}
				m.orphan = true
				orphans++
			}
		}
		out = append(out, m)
	}
	w.flight = out
	kind := fsm.SwapFailed
	if n.opRead {
		kind = fsm.ReadFailed
	}
	x.step(w, i, fsm.Event{Kind: kind, Err: errTimeout})
}

type simError string

func (e simError) Error() string { return string(e) }

const errTimeout = simError("BackendTimeout")

// canAdvance reports whether time may move on: within the horizon, and no
// message has been in flight for longer than its bound (MaxLatency,
// MaxWatchAge), but for a timed-out swap and a message to a paused node.
func (x *checker) canAdvance(w *world) bool {
	if int(w.t) >= x.b.Horizon {
		return false
	}
	for _, m := range w.flight {
		switch {
		case m.kind == mWatch && !x.b.WatchAtTick && x.b.MaxWatchAge >= 0 && w.t-m.born >= int32(x.b.MaxWatchAge) && w.nodes[m.node].pausedUntil <= w.t:
			return false
		case m.kind != mWatch && !m.orphan && x.b.MaxLatency >= 0 && w.t-m.born >= int32(x.b.MaxLatency) && (m.kind == mReq || w.nodes[m.node].pausedUntil <= w.t):
			return false
		}
	}
	return true
}

// broadcast pushes a watch event to every node that is up.
func (x *checker) broadcast(w *world) {
	if !x.b.Watch {
		return
	}
	for i := range w.nodes {
		if n := &w.nodes[i]; n.up && n.cutUntil <= w.t {
			w.flight = append(w.flight, msg{kind: mWatch, node: uint8(i), gen: n.gen, born: w.t,
				exp: w.st.rev, lease: w.st.rec, absent: !w.st.present})
		}
	}
}

// apply applies request k at the store and sends its reply (unless its
// driver has moved on).
func (x *checker) apply(w *world, k int) {
	r := w.flight[k]
	w.flight = append(w.flight[:k:k], w.flight[k+1:]...)
	st := &w.st
	rep := msg{kind: mReply, node: r.node, gen: r.gen, born: w.t}
	if r.read {
		rep.reply = fsm.ReadDone
	} else if (st.present && st.rev == r.exp || !st.present && r.exp == 0 || x.b.brokenCAS) && x.guardHolds(w, &r) {
		next := r.lease
		x.write(w, next, false)
		w.j.applied(x.at(w), r.snap, st.rev, st.rec, st.clock)
		rep.reply = fsm.SwapDone
		x.logf("store: rev %d := %s (swap by n%d)", st.rev, leaseString(st.rec), r.node)
	} else {
		rep.reply = fsm.SwapConflict
	}
	rep.exp, rep.lease, rep.absent = st.rev, st.rec, !st.present
	n := &w.nodes[r.node]
	if r.orphan || !n.up || n.gen != r.gen || !n.opPending || n.cutUntil > w.t {
		return
	}
	w.flight = append(w.flight, rep)
}

// guardHolds: a guarded swap writes only over the released record it names.
func (x *checker) guardHolds(w *world, r *msg) bool {
	if !r.guarded {
		return true
	}
	st, was := &w.st, r.was
	return st.present && st.rec.Holder == "" && st.rec.Token == was.Token && st.rec.Transitions == was.Transitions && st.rec.LeaseDuration == was.LeaseDuration &&
		st.rec.Successor == was.Successor
}

// write stores next as a new revision (forged: by the adversary, with no
// token floor) and pushes it to the watchers. A new term's token is above
// the data's floor and at least the store's clock, as in sim's store.
func (x *checker) write(w *world, next fsm.Lease, forged bool) {
	st := &w.st
	if !forged {
		st.clock = max(st.clock+1, uint64(w.t))
		if !st.present || next.Token != st.rec.Token {
			next.Token = max(next.Token, st.floor+1, st.clock)
		}
	}
	st.counter++
	st.present, st.rec, st.rev = true, next, st.counter
	st.floor = max(st.floor, next.Token)
	h := st.history[:len(st.history):len(st.history)]
	for lease.Revision(len(h)) < st.rev {
		h = append(h, fsm.Lease{})
	}
	st.history = append(h, next)
	if forged && st.rev < 64 {
		st.forged |= 1 << st.rev
	}
	x.broadcast(w)
}

// restoredFloor is the token floor the data of revision r keeps.
func (st *store) restoredFloor(r lease.Revision) uint64 {
	var f uint64
	for _, l := range st.history[:min(int(r)+1, len(st.history))] {
		f = max(f, l.Token)
	}
	return f
}

func (st *store) isForged(r lease.Revision) bool { return r < 64 && st.forged&(1<<r) != 0 }

// deliver hands reply or watch event k to its node.
func (x *checker) deliver(w *world, k int) {
	m := w.flight[k]
	w.flight = append(w.flight[:k:k], w.flight[k+1:]...)
	i := int(m.node)
	n := &w.nodes[i]
	w.j.deliver(i, n.gen, x.at(w), m.exp, m.lease, !m.absent)
	ev := fsm.Event{Lease: m.lease, Revision: m.exp, Absent: m.absent}
	if m.kind == mReply {
		n.opPending = false
		ev.Kind = m.reply
	} else {
		ev.Kind = fsm.Watched
	}
	x.step(w, i, ev)
}

func leaseString(l fsm.Lease) string {
	h := l.Holder
	if h == "" {
		h = "-"
	}
	return fmt.Sprintf("{%s tok=%d tr=%d L=%d}", h, l.Token, l.Transitions, l.LeaseDuration/Tick)
}

func evString(ev fsm.Event) string {
	switch ev.Kind {
	case fsm.ReadDone, fsm.SwapDone, fsm.SwapConflict, fsm.Watched:
		if ev.Absent {
			return fmt.Sprintf("%v(absent)@%d", ev.Kind, ev.Now/Tick)
		}
		return fmt.Sprintf("%v(rev %d %s)@%d", ev.Kind, ev.Revision, leaseString(ev.Lease), ev.Now/Tick)
	case fsm.Reconfigure:
		return fmt.Sprintf("Reconfigure(L=%d R=%d)@%d", ev.Config.LeaseDuration/Tick, ev.Config.RenewDeadline/Tick, ev.Now/Tick)
	}
	return fmt.Sprintf("%v@%d", ev.Kind, ev.Now/Tick)
}

func actsString(s fsm.State, acts []fsm.Action) string {
	var b strings.Builder
	b.WriteString(s.String())
	for _, a := range acts {
		switch a.Kind {
		case fsm.Swap:
			fmt.Fprintf(&b, ", %v swap from rev %d to %s", a.Swap, a.Expected, leaseString(a.Next))
			if a.Guarded {
				b.WriteString(" guarded")
			}
		case fsm.StartedLeading:
			fmt.Fprintf(&b, ", STARTED LEADING token %d", a.Token)
		case fsm.StoppedLeading:
			fmt.Fprintf(&b, ", stopped leading token %d (%v)", a.Token, a.Reason)
		case fsm.Report:
			fmt.Fprintf(&b, ", report %v", a.Problem)
		default:
			fmt.Fprintf(&b, ", %v", a.Kind)
		}
	}
	return b.String()
}

func nodeName(i int) string { return fmt.Sprintf("n%d", i) }
