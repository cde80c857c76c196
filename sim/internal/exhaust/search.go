package exhaust

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tenure-go/tenure/fsm"
	"github.com/tenure-go/tenure/lease"
)

type trKind uint8

const (
	trAdvance trKind = iota + 1
	trApply
	trDeliver
	trLose
	trDup
	trCrash
	trDataLoss
	trRollback
	trRestore
	trForgeRelease
	trForgeShort
	trClockStop
	trReconfigure
	trResign
	trStop
	trCut
)

// tr is one transition: its kind, the message (index into flight) or node
// it applies to, and an argument (a revision, a number of ticks).
type tr struct {
	kind trKind
	k    int
	arg  int
}

// transitions lists every transition enabled in w.
func (x *checker) transitions(w *world, out []tr) []tr {
	out = out[:0]
	if x.canAdvance(w) {
		out = append(out, tr{kind: trAdvance})
	}
	bg := &w.budget
	for k := range w.flight {
		m := &w.flight[k]
		if slices.ContainsFunc(w.flight[:k], func(o msg) bool { return o == *m }) {
			continue // the same message again: the same successors
		}
		switch {
		case m.kind == mReq:
			out = append(out, tr{kind: trApply, k: k})
		case w.nodes[m.node].pausedUntil > w.t:
		case m.kind == mWatch && x.b.WatchAtTick:
			// Delivered when time moves on (advance).
		case m.kind == mWatch && !x.watchHead(w, k):
			// A watch stream is FIFO: an event overtakes another only
			// within the budget.
			if bg.Reorders > 0 {
				out = append(out, tr{kind: trDeliver, k: k, arg: 1})
			}
		default:
			out = append(out, tr{kind: trDeliver, k: k})
		}
		if bg.Losses > 0 || m.orphan {
			out = append(out, tr{kind: trLose, k: k})
		}
		if m.kind == mWatch && bg.Dups > 0 {
			out = append(out, tr{kind: trDup, k: k})
		}
	}
	if bg.Faults <= 0 && x.b.Budget.Faults > 0 {
		return out
	}
	st := &w.st
	for i := range w.nodes {
		n := &w.nodes[i]
		if !n.up {
			continue
		}
		if bg.Crashes > 0 {
			out = append(out, tr{kind: trCrash, k: i})
		}
		if n.pausedUntil > w.t {
			continue
		}
		for d := 1; d <= x.b.MaxStop && bg.ClockStops > 0; d++ {
			out = append(out, tr{kind: trClockStop, k: i, arg: d})
		}
		if bg.Reconfigs > 0 && n.opPending && !n.opRead && n.opSwap == fsm.Renew && n.cfg != x.b.Config2 {
			out = append(out, tr{kind: trReconfigure, k: i})
		}
		if bg.Resigns > 0 && n.m.Leading(x.local(w, i)) {
			// A plain resign (arg 0), or a handover naming node arg-1,
			// or (arg len(nodes)+1) an identity no node has: a
			// successor that never comes.
			for j := 0; j <= len(w.nodes)+1; j++ {
				if j != i+1 {
					out = append(out, tr{kind: trResign, k: i, arg: j})
				}
			}
		}
		if bg.Stops > 0 {
			out = append(out, tr{kind: trStop, k: i})
		}
		if bg.Cuts > 0 && n.cutUntil <= w.t {
			out = append(out, tr{kind: trCut, k: i})
		}
	}
	if bg.DataLosses > 0 && x.b.Lossy && st.present {
		out = append(out, tr{kind: trDataLoss})
	}
	if bg.Rollbacks > 0 {
		top := st.counter
		if st.present {
			top = st.rev - 1
		}
		for r := lease.Revision(1); r <= top; r++ {
			if !st.isForged(r) {
				out = append(out, tr{kind: trRollback, arg: int(r)})
			}
		}
	}
	if bg.Restores > 0 && st.counter >= 1 {
		out = append(out, tr{kind: trRestore})
	}
	if st.present && st.rec.Holder != "" {
		if bg.ForgedRels > 0 {
			out = append(out, tr{kind: trForgeRelease})
		}
		if bg.ForgedShort > 0 && st.rec.LeaseDuration != Tick {
			out = append(out, tr{kind: trForgeShort})
		}
	}
	return out
}

// watchHead reports whether watch event k is the oldest in flight to its
// node.
func (x *checker) watchHead(w *world, k int) bool {
	for _, o := range w.flight[:k] {
		if o.kind == mWatch && o.node == w.flight[k].node {
			return false
		}
	}
	return true
}

// do performs t on w (a clone), then samples every belief.
func (x *checker) do(w *world, t tr) {
	bg := &w.budget
	fault := func(c *int) {
		*c--
		bg.Faults--
	}
	st := &w.st
	switch t.kind {
	case trAdvance:
		x.advance(w)
	case trApply:
		x.apply(w, t.k)
	case trDeliver:
		bg.Reorders -= t.arg
		x.deliver(w, t.k)
	case trLose:
		if !w.flight[t.k].orphan {
			bg.Losses--
		}
		w.flight = append(w.flight[:t.k:t.k], w.flight[t.k+1:]...)
	case trDup:
		bg.Dups--
		w.flight = append(w.flight, w.flight[t.k])
	case trCrash:
		fault(&bg.Crashes)
		x.down(w, t.k)
		x.boot(w, t.k)
	case trDataLoss:
		fault(&bg.DataLosses)
		st.present, st.rec, st.rev = false, fsm.Lease{}, 0
		w.j.lose(x.at(w))
		x.broadcast(w)
	case trRollback:
		fault(&bg.Rollbacks)
		r := lease.Revision(t.arg)
		st.present, st.rec, st.rev = true, st.history[r], r
		st.floor = st.restoredFloor(r)
		w.j.rollback(x.at(w), r)
	case trRestore:
		fault(&bg.Restores)
		first := lease.Revision(1)
		for int(first) < len(st.history)-1 && st.isForged(first) {
			first++
		}
		rec := st.history[first]
		rec.Holder = ""
		st.present, st.rec, st.rev = true, rec, 1
		st.floor = st.restoredFloor(first)
		w.j.restore(x.at(w), 1, rec)
	case trForgeRelease, trForgeShort:
		rec := st.rec
		if t.kind == trForgeRelease {
			fault(&bg.ForgedRels)
			rec.Holder = ""
		} else {
			fault(&bg.ForgedShort)
			rec.LeaseDuration = Tick
		}
		x.write(w, rec, true)
		w.j.forge(x.at(w), st.rev, rec)
	case trClockStop:
		fault(&bg.ClockStops)
		n := &w.nodes[t.k]
		n.pausedUntil = w.t + int32(t.arg)
		if n.m.State() == fsm.Follower {
			// The stop is revealed on resume and counted as elapsed by
			// the driver unless the node is a follower (sim's
			// stopCounted): a follower's clock stood still.
			n.lag += int32(t.arg)
		}
	case trReconfigure:
		fault(&bg.Reconfigs)
		w.nodes[t.k].cfg = x.b.Config2
		x.step(w, t.k, fsm.Event{Kind: fsm.Reconfigure, Config: x.b.Config2})
	case trResign:
		fault(&bg.Resigns)
		ev := fsm.Event{Kind: fsm.Resign}
		if t.arg > 0 {
			ev.Successor = nodeName(t.arg - 1)
		}
		x.step(w, t.k, ev)
	case trCut:
		fault(&bg.Cuts)
		w.nodes[t.k].cutUntil = w.t + int32(x.b.MaxCut)
		// What is in flight to it is lost; its requests are not.
		out := w.flight[:0]
		for _, m := range w.flight {
			if int(m.node) != t.k || m.kind == mReq {
				out = append(out, m)
			}
		}
		w.flight = out
	case trStop:
		fault(&bg.Stops)
		x.step(w, t.k, fsm.Event{Kind: fsm.Stop, Release: true})
	}
	x.sample(w)
}

// describe says what t does in w (before it is done), for a schedule.
func (x *checker) describe(w *world, t tr) string {
	msgText := func(m msg) string {
		switch m.kind {
		case mReq:
			s := "read"
			if !m.read {
				s = fmt.Sprintf("%v swap from rev %d to %s", m.swap, m.exp, leaseString(m.lease))
				if m.guarded {
					s += " guarded"
				}
			}
			if m.orphan {
				s += " (timed out)"
			}
			return fmt.Sprintf("n%d's request %s", m.node, s)
		case mReply:
			if m.absent {
				return fmt.Sprintf("reply %v(absent) to n%d", m.reply, m.node)
			}
			return fmt.Sprintf("reply %v(rev %d %s) to n%d", m.reply, m.exp, leaseString(m.lease), m.node)
		}
		if m.absent {
			return fmt.Sprintf("watch event (absent) to n%d", m.node)
		}
		return fmt.Sprintf("watch event (rev %d %s) to n%d", m.exp, leaseString(m.lease), m.node)
	}
	switch t.kind {
	case trAdvance:
		return fmt.Sprintf("time %d -> %d", w.t, w.t+1)
	case trApply:
		return "store applies " + msgText(w.flight[t.k])
	case trDeliver:
		if t.arg == 1 {
			return "deliver OUT OF ORDER " + msgText(w.flight[t.k])
		}
		return "deliver " + msgText(w.flight[t.k])
	case trLose:
		return "LOSE " + msgText(w.flight[t.k])
	case trDup:
		return "DUPLICATE " + msgText(w.flight[t.k])
	case trCrash:
		return fmt.Sprintf("CRASH n%d (restarts at once)", t.k)
	case trDataLoss:
		return "store LOSES its record"
	case trRollback:
		return fmt.Sprintf("store ROLLS BACK to rev %d %s", t.arg, leaseString(w.st.history[t.arg]))
	case trRestore:
		return "store RESTORED from a backup (rev 1, holder cleared)"
	case trForgeRelease:
		return "someone else stores a RELEASE of the live lease"
	case trForgeShort:
		return "someone else stores the live lease with a 1-tick LeaseDuration"
	case trClockStop:
		return fmt.Sprintf("n%d's process and clock STOP for %d ticks", t.k, t.arg)
	case trReconfigure:
		return fmt.Sprintf("RECONFIGURE n%d: L=%d R=%d", t.k, x.b.Config2.LeaseDuration/Tick, x.b.Config2.RenewDeadline/Tick)
	case trResign:
		if t.arg > 0 {
			return fmt.Sprintf("n%d HANDS OVER to %s", t.k, nodeName(t.arg-1))
		}
		return fmt.Sprintf("n%d RESIGNS", t.k)
	case trCut:
		return fmt.Sprintf("n%d CUT OFF both ways for %d ticks", t.k, x.b.MaxCut)
	case trStop:
		return fmt.Sprintf("n%d STOPS (releasing; restarts at the next tick)", t.k)
	}
	return "?"
}

// key is a state's canonical encoding, hashed to 128 bits.
type key [16]byte

func (x *checker) key(w *world, buf []byte, scratch *[][]byte) ([]byte, key) {
	b := buf[:0]
	u := func(v uint64) { b = binary.AppendUvarint(b, v) }
	i := func(v int64) { b = binary.AppendVarint(b, v) }
	flag := func(f bool) {
		if f {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
	}
	rec := func(l fsm.Lease) {
		u(uint64(len(l.Holder)))
		b = append(b, l.Holder...)
		u(l.Token)
		u(l.Transitions)
		i(int64(l.LeaseDuration))
	}
	i(int64(w.t))
	for k := range w.nodes {
		n := &w.nodes[k]
		flag(n.up)
		flag(n.restart)
		u(uint64(n.gen))
		i(int64(n.lag))
		i(int64(n.pausedUntil))
		i(int64(max(n.cutUntil-w.t, 0)))
		flag(n.opPending)
		flag(n.opRead)
		u(uint64(n.opSwap))
		i(int64(n.deadline))
		flag(n.cfg == x.b.Config2)
		if n.up {
			b = appendMachine(b, &n.m)
		}
	}
	st := &w.st
	flag(st.present)
	rec(st.rec)
	u(uint64(st.rev))
	u(uint64(st.counter))
	u(st.floor)
	u(st.clock)
	u(st.forged)
	for _, l := range st.history {
		rec(l)
	}
	// The messages in flight, as a sorted multiset.
	ms := (*scratch)[:0]
	for k := range w.nodes {
		// Each node's watch stream, in order.
		for _, m := range w.flight {
			if m.kind == mWatch && int(m.node) == k {
				b = binary.AppendUvarint(b, uint64(m.exp))
				rec(m.lease)
				flag(m.absent)
				i(int64(min(w.t-m.born, 8)))
			}
		}
		b = append(b, 0xff)
	}
	for _, m := range w.flight {
		if m.kind == mWatch {
			continue
		}
		var e []byte
		e = append(e, byte(m.kind), m.node)
		e = binary.AppendUvarint(e, uint64(m.gen))
		flg := 0
		for bit, f := range []bool{m.orphan, m.read, m.guarded, m.absent} {
			if f {
				flg |= 1 << bit
			}
		}
		e = append(e, byte(flg), byte(m.reply), byte(m.swap))
		e = binary.AppendVarint(e, int64(min(w.t-m.born, 8)))
		e = binary.AppendUvarint(e, uint64(m.exp))
		for _, l := range []fsm.Lease{m.lease, m.was} {
			e = binary.AppendUvarint(e, uint64(len(l.Holder)))
			e = append(e, l.Holder...)
			e = binary.AppendUvarint(e, l.Token)
			e = binary.AppendUvarint(e, l.Transitions)
			e = binary.AppendVarint(e, int64(l.LeaseDuration))
		}
		if m.snap != nil {
			e = w.j.appendSnap(e, m.snap)
		}
		ms = append(ms, e)
	}
	slices.SortFunc(ms, bytes.Compare)
	u(uint64(len(ms)))
	for _, e := range ms {
		u(uint64(len(e)))
		b = append(b, e...)
	}
	*scratch = ms
	bg := w.budget
	for _, v := range []int{bg.Losses, bg.Dups, bg.Reorders, bg.Crashes, bg.DataLosses, bg.Rollbacks, bg.Restores, bg.ForgedRels,
		bg.ForgedShort, bg.ClockStops, bg.Reconfigs, bg.Cuts, bg.Resigns, bg.Stops, bg.Faults} {
		i(int64(v))
	}
	b = w.j.appendKey(b)
	sum := sha256.Sum256(b)
	var k key
	copy(k[:], sum[:16])
	return b, k
}

// Result is what a search found.
type Result struct {
	Bound       Bound
	States      int // distinct states reached
	Transitions int // transitions taken (edges, duplicates included)
	MaxDepth    int // transitions on the longest shortest path
	MaxTime     int // the latest tick reached
	Elapsed     time.Duration
	Truncated   bool // MaxStates was reached
	// Violation is the judge's first violation, and Schedule the shortest
	// schedule that reached it, step by step.
	Violation string
	Schedule  string
}

func (r Result) String() string {
	v := "no violation"
	if r.Violation != "" {
		v = "VIOLATION: " + r.Violation
	}
	rate := float64(r.States) / max(r.Elapsed.Seconds(), 1e-9)
	return fmt.Sprintf("%s: %d states, %d transitions, depth %d, %d ticks, %.1fs (%.0f states/s); %s",
		r.Bound.Name, r.States, r.Transitions, r.MaxDepth, r.MaxTime, r.Elapsed.Seconds(), rate, v)
}

// pathStep is one transition of the path to a state.
type pathStep struct {
	prev *pathStep
	t    tr
}

type entry struct {
	w    *world
	path *pathStep
}

// Run explores every state of b reachable within its horizon,
// breadth-first, and stops at the first violation the judge reports.
func Run(b Bound) (Result, error) {
	return run(b, newJudge)
}

func run(b Bound, mk func(Bound) judge, progress ...func(depth, frontier, states int, d time.Duration)) (Result, error) {
	if err := b.validate(); err != nil {
		return Result{}, err
	}
	start := time.Now()
	x := &checker{b: b}
	if len(progress) > 0 {
		x.progress = progress[0]
	}
	res := Result{Bound: b}
	w0 := x.initial(mk(b))
	seen := make(map[key]struct{}, 1<<16)
	var buf []byte
	var scratch [][]byte
	buf, k0 := x.key(w0, buf, &scratch)
	seen[k0] = struct{}{}
	res.States = 1
	if v, bad := w0.j.violation(); bad {
		res.Violation = v
		res.Elapsed = time.Since(start)
		return res, nil
	}
	frontier := []entry{{w: w0}}
	var trs []tr
	for depth := 0; len(frontier) > 0; depth++ {
		var next []entry
		for fi, e := range frontier {
			frontier[fi] = entry{}
			trs = x.transitions(e.w, trs)
			for _, t := range trs {
				c := e.w.clone()
				x.do(c, t)
				res.Transitions++
				var k key
				buf, k = x.key(c, buf, &scratch)
				if _, ok := seen[k]; ok {
					continue
				}
				seen[k] = struct{}{}
				res.States++
				res.MaxDepth = depth + 1
				res.MaxTime = max(res.MaxTime, int(c.t))
				p := &pathStep{prev: e.path, t: t}
				if v, bad := c.j.violation(); bad {
					res.Violation = v
					res.Schedule = x.replay(mk, p)
					res.Elapsed = time.Since(start)
					return res, nil
				}
				if b.MaxStates > 0 && res.States >= b.MaxStates {
					res.Truncated = true
					res.Elapsed = time.Since(start)
					return res, nil
				}
				next = append(next, entry{w: c, path: p})
			}
		}
		frontier = next
		if x.progress != nil {
			x.progress(depth+1, len(frontier), res.States, time.Since(start))
		}
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// replay runs the path from the initial state again, describing each
// transition and what every machine did.
func (x *checker) replay(mk func(Bound) judge, p *pathStep) string {
	var steps []tr
	for ; p != nil; p = p.prev {
		steps = append(steps, p.t)
	}
	slices.Reverse(steps)
	var out strings.Builder
	x.trace = &out
	defer func() { x.trace = nil }()
	fmt.Fprintf(&out, "schedule (%d steps) of bound %s:\n", len(steps), x.b)
	w := x.initial(mk(x.b))
	for i, t := range steps {
		fmt.Fprintf(&out, "%3d  t=%-3d %s\n", i+1, w.t, x.describe(w, t))
		x.do(w, t)
	}
	return out.String()
}
