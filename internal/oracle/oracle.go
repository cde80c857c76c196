package oracle

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/tenure-go/tenure/lease"
)

// Time is a real instant in nanoseconds.
type Time = int64

// Rev is a store revision; 0 is absence.
type Rev = lease.Revision

// Node is one incarnation of a process: a restart is a new Gen, which
// knows nothing of what an earlier one was told.
type Node struct {
	ID  int
	Gen uint32
}

// Rec is a record's content as the store holds it. A Holder of "" is a
// released record.
type Rec struct {
	Holder        string
	Token         uint64
	Transitions   uint64
	LeaseDuration time.Duration
}

// Params is the physical model the judgement rests on.
type Params struct {
	// Drift is ρ: every clock runs at a rate within [1−ρ, 1+ρ] of real
	// time. It must lie in [0, 1).
	Drift float64
	// MaxRenewDeadline is the largest RenewDeadline any process used.
	MaxRenewDeadline time.Duration
	// Complete says every store write is recorded (Send and Applied):
	// a term's token is then checked against its incarnation's writes,
	// and the excuses can be granted. Without it (a history taken from
	// outside real servers), no overlap is excused and tokens are checked
	// in the order terms were first sampled.
	Complete bool
	// LossyStore says the store may lose records: a loss is then what
	// every process expects, and no erasure.
	LossyStore bool
	// Slack is added to every bound: how late the caller may sample a
	// belief after an instant Pending returned.
	Slack time.Duration
	// Names names the processes in messages, by Node.ID ("node 3" for
	// an ID it does not cover).
	Names []string
}

// Violation is one property the history breaks.
type Violation struct {
	At    Time
	Check string // CheckOneLeader or CheckTokens
	Msg   string
}

// String formats the violation for a test log.
func (v Violation) String() string {
	return fmt.Sprintf("%s at %s: %s", v.Check, ts(v.At), v.Msg)
}

// The checks a Violation names.
const (
	CheckOneLeader = "one leader"
	CheckTokens    = "tokens"
)

// Snapshot is what a process knew when it sent a write; Send returns
// it and Applied takes it back.
type Snapshot struct {
	n        Node
	sent     Time
	seq      uint64 // its place in the history
	expected Rev
	live     Rev // the newest revision delivered to it that the store had not forgotten
}

// erasure is one act that made the store forget.
type erasure struct {
	at      Time
	seq     uint64
	target  Rev  // the store holds what it held at target (0: nothing); every later revision is forgotten
	release bool // a stored release: nothing forgotten, and no process can tell
	excuses bool // it may excuse an overlap (a loss in a lossy store does not)
}

// takesFloor reports whether e gives back a floor the store's data kept:
// a rollback, a restore, a loss in a store that keeps its records.
func (e erasure) takesFloor() bool { return e.excuses && !e.release }

// termWrite is the first stored write of one term of an incarnation.
// Writes and erasures are ordered by the order they were recorded in, not
// by their instants, which may tie.
type termWrite struct {
	token    uint64
	erasures int  // the erasures recorded before it
	last     Time // the last write of the term the store applied
	rev      Rev  // the revision of that write
	sn       Snapshot
	ahead    bool // its token lay above the store's clock
	ord      int  // its index in Oracle.terms
}

// span is a term as sampled: leading with token from first to last.
type span struct {
	token       uint64
	first, last Time
}

// inc is what the oracle keeps of one process's current incarnation.
type inc struct {
	gen uint32
	up  bool
	// The revisions of the store's history (not forgotten) delivered to
	// it, in increasing order.
	seen []Rev
	// knownAt[k]: the place in the history at which it was first
	// delivered a record erasure k made the store forget (0: never).
	knownAt   []uint64
	writes    []termWrite
	leading   bool
	cur       span // valid while leading
	prev      span // the last term that ended (valid if hasPrev)
	hasPrev   bool
	lastToken uint64
}

// excuse is an excused overlap: the term (id, gen, token) must stop
// leading by its deadline.
type excuse struct {
	id    int
	gen   uint32
	token uint64
	why   string
}

// judged is an overlap already judged, so that it is judged once.
type judged struct {
	a, b   int
	ga, gb uint32
	ta, tb uint64
}

// term is a term in the order its acquiring write was stored (or, without
// Complete, first sampled).
type term struct {
	id       int
	gen      uint32
	token    uint64
	erasures int // the erasures recorded before it was stored
	ahead    bool
}

// rule is a set of changes to the oracle's rules that tests make to show
// that the corpus in testdata pins each rule: each w rule widens an
// excuse or drops a check, each s rule narrows one. Never set otherwise.
type rule uint

const (
	wIgnoreKnew        rule = 1 << iota // an erasure excuses what the acquirer knew of
	wErasureAnywhere                    // an erasure before both terms excuses them
	wLossyLoss                          // a lossy store's loss is an erasure
	wAnyForge                           // any forged write is an erasure nobody can tell
	wLastDelivery                       // knowledge is the last revision delivered
	wFloorsAlwaysTaken                  // every erasure takes back every floor
	wSameInstant                        // terms overlap only at an instant both were sampled
	wNoOwnWrite                         // a believed token need not be its own write's
	wEqualTokens                        // two terms may share a token
	wNoopErasure                        // a rollback or restore that forgot nothing is an erasure
	sForgedKnowledge                    // a forged delivery is knowledge
	sBootKeeps                          // a restart keeps what it was told
	sNoExcuse                           // no erasure excuses an overlap
	sFloorsKept                         // no erasure takes back a floor
)

// Oracle judges one election's history. The zero value is not usable:
// call New.
type Oracle struct {
	p     Params
	bound Time
	now   Time
	seq   uint64 // events recorded so far
	nodes []inc
	// Every (revision, record) the store held: dense for small
	// revisions, extra for the others and for a second record at one.
	dense []Rec
	held  []bool
	extra map[Rev][]Rec
	// What the store holds now (its record, if topKnown).
	top      Rev
	topRec   Rec
	topKnown bool
	// The revisions of the store's history, in order, and for each one
	// it forgot, the erasure that made it.
	lineage []Rev
	gone    map[Rev]int
	erased  []erasure
	terms   []term
	open    []excuse
	done    []judged
	viol    []Violation
	failed  bool
	weaken  rule // rules changed, by tests only
}

// denseLimit bounds the revisions kept in a slice; larger ones go to a map.
const denseLimit = 1 << 16

// New returns an oracle for the model p.
func New(p Params) *Oracle {
	rho := min(max(p.Drift, 0), 0.999)
	b := float64(p.MaxRenewDeadline)/(1-rho) + float64(p.Slack) + 1
	if b > math.MaxInt64/4 {
		b = math.MaxInt64 / 4
	}
	return &Oracle{p: p, bound: Time(b), extra: map[Rev][]Rec{}, gone: map[Rev]int{}, topKnown: true}
}

// Bound is how long after its last stored write a term whose overlap was
// excused may still lead.
func (o *Oracle) Bound() time.Duration { return time.Duration(o.bound) }

func (o *Oracle) node(id int) *inc {
	for len(o.nodes) <= id {
		o.nodes = append(o.nodes, inc{})
	}
	return &o.nodes[id]
}

// cur returns n's state if n is its process's current incarnation.
func (o *Oracle) cur(n Node) *inc {
	if n.ID < 0 {
		return nil
	}
	s := o.node(n.ID)
	if !s.up || s.gen != n.Gen {
		return nil
	}
	return s
}

// event notes that an event happens at at.
func (o *Oracle) event(at Time) {
	o.now = max(o.now, at)
	o.seq++
}

func (o *Oracle) fail(at Time, check, format string, args ...any) {
	o.viol = append(o.viol, Violation{At: at, Check: check, Msg: fmt.Sprintf(format, args...)})
	o.failed = true
}

// Boot starts incarnation n, which knows nothing. An earlier incarnation
// of the same process ends now.
func (o *Oracle) Boot(n Node, at Time) {
	o.event(at)
	if n.ID < 0 {
		return
	}
	s := o.node(n.ID)
	if s.up {
		o.end(s)
	}
	old := *s
	*s = inc{gen: n.Gen, up: true}
	if o.weaken&sBootKeeps != 0 {
		s.seen, s.knownAt = old.seen, old.knownAt
	}
	o.closeExcuses(n)
}

// Down ends incarnation n: it believes nothing from now on.
func (o *Oracle) Down(n Node, at Time) {
	o.event(at)
	if s := o.cur(n); s != nil {
		o.end(s)
		s.up = false
		o.closeExcuses(n)
	}
}

// end closes s's belief.
func (o *Oracle) end(s *inc) {
	if s.leading {
		s.leading = false
		s.prev, s.hasPrev = s.cur, true
	}
}

// Send records that n sent a write expecting revision expected (0: a
// create of an absent record) and storing next. Keep the Snapshot for
// Applied.
func (o *Oracle) Send(n Node, at Time, expected Rev, next Rec) Snapshot {
	o.event(at)
	sn := Snapshot{n: n, sent: at, seq: o.seq, expected: expected}
	if s := o.cur(n); s != nil && len(s.seen) > 0 {
		sn.live = s.seen[len(s.seen)-1]
	}
	return sn
}

// Applied records that the store applied the write of sn at revision rev,
// holding stored (the store may raise the token). clock is the store's
// clock at that instant in the unit it floors tokens at (0: it has none).
func (o *Oracle) Applied(at Time, sn Snapshot, rev Rev, stored Rec, clock uint64) {
	o.event(at)
	o.hold(rev, stored)
	o.top, o.topRec, o.topKnown = rev, stored, true
	o.extend(rev)
	if stored.Holder == "" || sn.n.ID < 0 {
		return
	}
	s := o.node(sn.n.ID)
	if s.gen != sn.n.Gen {
		return // an incarnation that is gone: its term can never be believed
	}
	// A write of a token the incarnation wrote before continues that
	// term: a renewal, or the renewal that confirms an acquire whose
	// outcome it did not learn, each from the term's last revision. But a
	// write of that token from another revision, while the incarnation
	// does not lead with it, starts a term of its own: the store issued
	// the token again after a restore or rollback took its floor back (an
	// acquire whose reply was lost, say, then another once the store went
	// back), and that write is the one the new term rests on.
	again := false
	for i := len(s.writes) - 1; i >= 0; i-- {
		if w := &s.writes[i]; w.token == stored.Token {
			if sn.expected == w.rev || s.leading && s.cur.token == stored.Token {
				w.last, w.rev = at, rev
				return
			}
			again = true
			break
		}
	}
	ahead := clock != 0 && stored.Token > clock
	s.writes = append(s.writes, termWrite{token: stored.Token, erasures: len(o.erased), last: at, rev: rev, sn: sn, ahead: ahead, ord: len(o.terms)})
	if again {
		// Its token was checked against every earlier term's when the
		// incarnation first wrote it.
		o.terms = append(o.terms, term{id: sn.n.ID, gen: sn.n.Gen, token: stored.Token, erasures: len(o.erased), ahead: ahead})
		return
	}
	o.termOrder(sn.n, stored.Token, at, ahead)
}

// termOrder checks that a term stored at at has a token above every
// earlier term's, but for lost floors.
func (o *Oracle) termOrder(n Node, token uint64, at Time, ahead bool) {
	for _, t := range o.terms {
		lost := (t.ahead || o.weaken&wFloorsAlwaysTaken != 0) && o.weaken&sFloorsKept == 0 && o.floorTakenSince(t.erasures)
		if token > t.token || token == t.token && o.weaken&wEqualTokens != 0 || lost {
			continue
		}
		o.fail(at, CheckTokens, "%s started a term with token %d, not above the token %d of an earlier term of %s",
			o.name(n.ID), token, t.token, o.name(t.id))
		break
	}
	o.terms = append(o.terms, term{id: n.ID, gen: n.Gen, token: token, erasures: len(o.erased), ahead: ahead})
}

// floorTakenSince reports whether an erasure recorded at index k or later
// gave back a floor.
func (o *Oracle) floorTakenSince(k int) bool {
	for _, e := range o.erased[min(k, len(o.erased)):] {
		if e.takesFloor() || o.weaken&wFloorsAlwaysTaken != 0 {
			return true
		}
	}
	return false
}

// hold records that the store holds rec at rev from now on.
func (o *Oracle) hold(rev Rev, rec Rec) {
	if rev < denseLimit {
		for Rev(len(o.dense)) <= rev {
			o.dense = append(o.dense, Rec{})
			o.held = append(o.held, false)
		}
		if !o.held[rev] {
			o.dense[rev], o.held[rev] = rec, true
			return
		}
		if o.dense[rev] == rec {
			return
		}
	}
	if !slices.Contains(o.extra[rev], rec) {
		o.extra[rev] = append(o.extra[rev], rec)
	}
}

// genuine reports whether the store held rec at rev at some instant so far.
func (o *Oracle) genuine(rev Rev, rec Rec) bool {
	if rev < Rev(len(o.held)) && o.held[rev] && o.dense[rev] == rec {
		return true
	}
	return slices.Contains(o.extra[rev], rec)
}

// Deliver records that n was delivered rec at rev (present false: an
// absence): a read's or a write's answer, or a watch event.
func (o *Oracle) Deliver(n Node, at Time, rev Rev, rec Rec, present bool) {
	o.event(at)
	s := o.cur(n)
	if s == nil || !present || !o.genuine(rev, rec) && o.weaken&sForgedKnowledge == 0 {
		return
	}
	if k, ok := o.gone[rev]; ok {
		// A record the store has forgotten since, delivered late.
		o.learn(s, k)
		return
	}
	if o.weaken&wLastDelivery != 0 {
		s.seen = append(s.seen[:0], rev)
		return
	}
	if i, found := slices.BinarySearch(s.seen, rev); !found {
		s.seen = slices.Insert(s.seen, i, rev)
	}
}

// learn notes that s knows of erasure k from now on.
func (o *Oracle) learn(s *inc, k int) {
	for len(s.knownAt) <= k {
		s.knownAt = append(s.knownAt, 0)
	}
	if s.knownAt[k] == 0 {
		s.knownAt[k] = o.seq
	}
}

// knew reports whether s knew of erasure k before the event at seq.
func (s *inc) knew(k int, seq uint64) bool {
	return k < len(s.knownAt) && s.knownAt[k] != 0 && s.knownAt[k] < seq
}

// erase records an act that makes the store hold what it held at target
// (0: nothing), forgetting every revision of its history above it.
func (o *Oracle) erase(at Time, target Rev, excuses bool) {
	k := len(o.erased)
	o.erased = append(o.erased, erasure{at: at, seq: o.seq, target: target, excuses: excuses})
	for len(o.lineage) > 0 && o.lineage[len(o.lineage)-1] > target {
		o.gone[o.lineage[len(o.lineage)-1]] = k
		o.lineage = o.lineage[:len(o.lineage)-1]
	}
	for i := range o.nodes {
		s := &o.nodes[i]
		if j, _ := slices.BinarySearch(s.seen, target+1); j < len(s.seen) {
			// It had been delivered a record the store forgets now.
			o.learn(s, k)
			s.seen = s.seen[:j]
		}
	}
}

// Rollback records that the store holds again what it held at revision to
// (0: nothing), forgetting every later write. A rollback to what the store
// holds forgets nothing.
func (o *Oracle) Rollback(at Time, to Rev) {
	o.event(at)
	if to != o.top || o.weaken&wNoopErasure != 0 {
		o.erase(at, to, true)
	}
	o.top, o.topKnown = to, to == 0
	o.topRec = Rec{}
}

// Restore records that the store holds rec at rev, restored from a backup:
// it forgets every write since the backup. A backup of what the store
// holds forgets nothing.
func (o *Oracle) Restore(at Time, rev Rev, rec Rec) {
	o.event(at)
	if !o.topKnown || o.top != rev || o.topRec != rec || o.weaken&wNoopErasure != 0 {
		o.erase(at, rev, true)
	}
	o.hold(rev, rec)
	o.extend(rev)
	o.top, o.topRec, o.topKnown = rev, rec, true
}

// extend adds rev to the store's history, once.
func (o *Oracle) extend(rev Rev) {
	if len(o.lineage) == 0 || o.lineage[len(o.lineage)-1] != rev {
		o.lineage = append(o.lineage, rev)
	}
}

// Lose records that the store lost its record. In a store that keeps its
// records that is an erasure; in a lossy one, what every process expects.
func (o *Oracle) Lose(at Time) {
	o.event(at)
	if !o.topKnown || o.top != 0 || o.weaken&wNoopErasure != 0 {
		o.erase(at, 0, !o.p.LossyStore || o.weaken&wLossyLoss != 0)
	}
	o.top, o.topRec, o.topKnown = 0, Rec{}, true
}

// Forge records that someone other than the processes stored rec at rev.
// A released record stored that way over a held one is an erasure nobody
// can tell from a holder's release.
func (o *Oracle) Forge(at Time, rev Rev, rec Rec) {
	o.event(at)
	o.hold(rev, rec)
	took := !o.topKnown || o.topRec.Holder != "" || o.weaken&wNoopErasure != 0
	o.top, o.topRec, o.topKnown = rev, rec, true
	o.extend(rev)
	if rec.Holder == "" && took || o.weaken&wAnyForge != 0 {
		o.erased = append(o.erased, erasure{at: at, seq: o.seq, target: rev, release: true, excuses: true})
	}
}

// Belief records a sample of n's belief: whether it leads, and with which
// token.
func (o *Oracle) Belief(n Node, at Time, leading bool, token uint64) {
	o.event(at)
	s := o.cur(n)
	if s == nil {
		return
	}
	if !leading {
		o.end(s)
		o.closeExcuses(n)
		return
	}
	if s.leading && s.cur.token == token {
		s.cur.last = at
	} else {
		if s.leading {
			o.end(s)
			o.closeExcuses(n)
		}
		o.started(n, s, token, at)
	}
	o.overdue(n, token, at)
	o.overlaps(n, s, at)
}

// started checks a term first sampled at at.
func (o *Oracle) started(n Node, s *inc, token uint64, at Time) {
	s.leading = true
	s.cur = span{token: token, first: at, last: at}
	if token <= s.lastToken && s.lastToken != 0 && token != 0 {
		o.fail(at, CheckTokens, "%s leads with token %d after a term with token %d", o.name(n.ID), token, s.lastToken)
	}
	s.lastToken = max(s.lastToken, token)
	if o.p.Complete {
		if _, ok := s.write(token); !ok && o.weaken&wNoOwnWrite == 0 {
			o.fail(at, CheckTokens, "%s believes it leads with token %d, which no write of its own stored", o.name(n.ID), token)
		}
		return
	}
	for i := range o.nodes {
		m := &o.nodes[i]
		for k, sp := range []span{m.cur, m.prev} {
			if k == 0 && !m.leading || k == 1 && !m.hasPrev {
				continue
			}
			if i != n.ID && sp.token == token && o.weaken&wEqualTokens == 0 {
				o.fail(at, CheckTokens, "token %d is the token of a term of %s and of %s", token, o.name(i), o.name(n.ID))
			}
		}
	}
	o.termOrder(n, token, at, false)
}

// write returns the write that started s's latest term with token.
func (s *inc) write(token uint64) (termWrite, bool) {
	for i := len(s.writes) - 1; i >= 0; i-- {
		if w := s.writes[i]; w.token == token {
			return w, true
		}
	}
	return termWrite{}, false
}

// overlaps judges every other term that n's current term, sampled up to
// at, overlaps.
func (o *Oracle) overlaps(n Node, s *inc, at Time) {
	a := s.cur
	for i := range o.nodes {
		m := &o.nodes[i]
		if i == n.ID {
			continue
		}
		for k, b := range []span{m.cur, m.prev} {
			if k == 0 && !m.leading || k == 1 && !m.hasPrev {
				continue
			}
			if max(a.first, b.first) > min(a.last, b.last) {
				continue
			}
			// A term that ended at the instant n's began, and was not
			// judged when it began, ended before it in the history.
			if k == 1 && b.last == a.first || o.weaken&wSameInstant != 0 && b.last != at {
				continue
			}
			o.judge(n, s, Node{ID: i, Gen: m.gen}, m, a, b, at)
		}
	}
}

// judge decides an overlap of n's term a with m's term b, once.
func (o *Oracle) judge(n Node, s *inc, mn Node, m *inc, a, b span, at Time) {
	j := judged{a: n.ID, b: mn.ID, ga: n.Gen, gb: mn.Gen, ta: a.token, tb: b.token}
	if j.a > j.b {
		j = judged{a: mn.ID, b: n.ID, ga: mn.Gen, gb: n.Gen, ta: b.token, tb: a.token}
	}
	if slices.Contains(o.done, j) {
		return
	}
	o.done = append(o.done, j)
	if o.p.Complete {
		wa, okA := s.write(a.token)
		wb, okB := m.write(b.token)
		if okA && okB {
			first, fn, second, sec := wa, n, wb, m
			if wb.ord < wa.ord {
				first, fn, second, sec = wb, mn, wa, s
			}
			if x, ok := o.excuse(first, second, sec); ok {
				o.open = append(o.open, excuse{id: fn.ID, gen: fn.Gen, token: first.token, why: o.why(x)})
				// The earlier term may already be past its deadline, or
				// over.
				if fn == n {
					o.overdue(n, a.token, a.last)
				} else {
					o.overdue(mn, b.token, b.last)
				}
				o.closeExcuses(fn)
				return
			}
		}
	}
	o.fail(at, CheckOneLeader, "%s (token %d) and %s (token %d) both lead at %s",
		o.name(n.ID), a.token, o.name(mn.ID), b.token, ts(max(a.first, b.first)))
}

// ts formats an instant in messages.
func ts(t Time) string { return fmt.Sprintf("%.3fs", float64(t)/1e9) }

// name names process id in messages.
func (o *Oracle) name(id int) string {
	if id >= 0 && id < len(o.p.Names) {
		return o.p.Names[id]
	}
	return fmt.Sprintf("node %d", id)
}

func (o *Oracle) why(x erasure) string {
	if x.release {
		return fmt.Sprintf("a release stored by someone else at %s", ts(x.at))
	}
	return fmt.Sprintf("the store forgot its history at %s", ts(x.at))
}

// excuse returns the erasure that excuses an overlap of the term first
// with the term second, of incarnation sec, stored after it, if one does.
// Some erasure that excuses must lie between the two terms' acquiring
// writes. If the second's acquire rests on the state the last erasure
// before it made current (it expected that erasure's revision), its
// acquirer must not have known of that erasure when it sent it: it had
// been delivered no record the erasure made the store forget (before
// the erasure, or late). If it rests on a stored release, or on a write
// stored after the last erasure, nothing it was told showed what the
// store forgot.
func (o *Oracle) excuse(first, second termWrite, sec *inc) (erasure, bool) {
	lo, hi := first.erasures, second.erasures
	if o.weaken&wErasureAnywhere != 0 {
		lo = 0
	}
	if o.weaken&sNoExcuse != 0 || hi <= lo {
		return erasure{}, false
	}
	found := -1
	for i := hi - 1; i >= lo; i-- {
		if o.erased[i].excuses {
			found = i
			break
		}
	}
	if found < 0 {
		return erasure{}, false
	}
	x, sn := o.erased[hi-1], second.sn
	if x.release || sn.expected != x.target {
		return o.erased[found], true
	}
	if !x.excuses {
		return erasure{}, false
	}
	knew := sec.knew(hi-1, sn.seq) || sn.seq < x.seq && sn.live > sn.expected
	if knew && o.weaken&wIgnoreKnew == 0 {
		return erasure{}, false
	}
	return x, true
}

// overdue fails an excused term still believed past its deadline.
func (o *Oracle) overdue(n Node, token uint64, at Time) {
	for i := 0; i < len(o.open); i++ {
		x := o.open[i]
		if x.id != n.ID || x.gen != n.Gen || x.token != token {
			continue
		}
		d := o.deadline(x)
		if at <= d {
			continue
		}
		o.fail(at, CheckOneLeader, "%s still leads with token %d at %s, past the end of its excused overlap at %s (%s; the term's last stored write plus %v)",
			o.name(n.ID), token, ts(at), ts(d), x.why, time.Duration(o.bound))
		o.open = slices.Delete(o.open, i, i+1)
		i--
	}
}

// closeExcuses drops the excuses of n's process that no longer lead.
func (o *Oracle) closeExcuses(n Node) {
	o.open = slices.DeleteFunc(o.open, func(x excuse) bool {
		if x.id != n.ID {
			return false
		}
		s := o.cur(Node{ID: x.id, Gen: x.gen})
		return s == nil || !s.leading || s.cur.token != x.token
	})
}

// Pending returns the earliest instant at which the belief of a term whose
// overlap was excused must be sampled again, to hold it to its bound.
func (o *Oracle) Pending() (Time, bool) {
	o.open = slices.DeleteFunc(o.open, func(x excuse) bool {
		s := o.cur(Node{ID: x.id, Gen: x.gen})
		return s == nil || !s.leading || s.cur.token != x.token
	})
	if len(o.open) == 0 {
		return 0, false
	}
	t := o.deadline(o.open[0])
	for _, x := range o.open[1:] {
		t = min(t, o.deadline(x))
	}
	return sat(t, 1), true
}

// deadline is when the excused term x must have stopped leading: a
// process leads only on a write it sent, for at most RenewDeadline of its
// own clock from the send, so for at most Bound after the last write of
// the term the store applied.
func (o *Oracle) deadline(x excuse) Time {
	if o.bound >= math.MaxInt64/4 {
		return math.MaxInt64
	}
	s := o.cur(Node{ID: x.id, Gen: x.gen})
	if s == nil {
		return math.MaxInt64
	}
	w, _ := s.write(x.token)
	return sat(w.last, o.bound)
}

// sat is a+b, saturated.
func sat(a, b Time) Time {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// Erased reports whether the store forgot the term of n with token (an
// erasure was recorded after its acquiring write): a fenced resource may
// then refuse that term while it still believes it leads.
func (o *Oracle) Erased(n Node, token uint64) bool {
	s := o.cur(n)
	if s == nil {
		return false
	}
	w, ok := s.write(token)
	if !ok {
		return false
	}
	for _, e := range o.erased[min(w.erasures, len(o.erased)):] {
		if e.excuses {
			return true
		}
	}
	return false
}

// Failed reports whether some violation was recorded.
func (o *Oracle) Failed() bool { return o.failed }

// Violations returns the violations recorded so far, in order.
func (o *Oracle) Violations() []Violation { return slices.Clone(o.viol) }

// Clone returns an independent copy of o.
func (o *Oracle) Clone() *Oracle {
	c := *o
	c.nodes = slices.Clone(o.nodes)
	for i := range c.nodes {
		n := &c.nodes[i]
		n.writes, n.seen, n.knownAt = slices.Clone(n.writes), slices.Clone(n.seen), slices.Clone(n.knownAt)
	}
	c.dense, c.held = slices.Clone(o.dense), slices.Clone(o.held)
	c.extra = make(map[Rev][]Rec, len(o.extra))
	for k, v := range o.extra {
		c.extra[k] = slices.Clone(v)
	}
	c.lineage = slices.Clone(o.lineage)
	c.gone = make(map[Rev]int, len(o.gone))
	for k, v := range o.gone {
		c.gone[k] = v
	}
	c.erased, c.terms = slices.Clone(o.erased), slices.Clone(o.terms)
	c.open, c.done, c.viol = slices.Clone(o.open), slices.Clone(o.done), slices.Clone(o.viol)
	return &c
}

// AppendKey appends a canonical encoding of everything that can change a
// later verdict, for a search that deduplicates states: two oracles given
// histories that leave them alike get the same key. The places of events
// in the history are written relative to the current one.
func (o *Oracle) AppendKey(b []byte) []byte {
	u := func(v uint64) { b = binary.AppendUvarint(b, v) }
	i := func(v int64) { b = binary.AppendVarint(b, v) }
	str := func(s string) { u(uint64(len(s))); b = append(b, s...) }
	rec := func(r Rec) { str(r.Holder); u(r.Token); u(r.Transitions); i(int64(r.LeaseDuration)) }
	flag := func(f bool) {
		if f {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
	}
	sp := func(s span) { u(s.token); i(s.first); i(s.last) }
	// A place in the history matters only in its order against later
	// events: written as how far back it lies.
	seq := func(v uint64) { u(o.seq - v) }
	u(uint64(len(o.nodes)))
	for _, s := range o.nodes {
		u(uint64(s.gen))
		flag(s.up)
		u(uint64(len(s.seen)))
		for _, r := range s.seen {
			u(uint64(r))
		}
		u(uint64(len(s.knownAt)))
		for _, k := range s.knownAt {
			flag(k != 0)
			if k != 0 {
				seq(k)
			}
		}
		flag(s.leading)
		sp(s.cur)
		sp(s.prev)
		flag(s.hasPrev)
		u(s.lastToken)
		u(uint64(len(s.writes)))
		for _, w := range s.writes {
			u(w.token)
			u(uint64(w.erasures))
			u(uint64(w.ord))
			i(w.last)
			u(uint64(w.rev))
			u(uint64(w.sn.n.ID))
			u(uint64(w.sn.n.Gen))
			seq(w.sn.seq)
			u(uint64(w.sn.expected))
			u(uint64(w.sn.live))
			flag(w.ahead)
		}
	}
	// The records held at each revision, as a set.
	u(uint64(len(o.held)))
	for r, h := range o.held {
		switch {
		case !h:
			b = append(b, 0)
		case len(o.extra[Rev(r)]) > 0:
			b = append(b, 2)
		default:
			b = append(b, 1)
			rec(o.dense[r])
		}
	}
	keys := make([]Rev, 0, len(o.extra))
	for k := range o.extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	u(uint64(len(keys)))
	for _, k := range keys {
		rs := slices.Clone(o.extra[k])
		if k < Rev(len(o.held)) && o.held[k] {
			rs = append(rs, o.dense[k])
		}
		slices.SortFunc(rs, func(x, y Rec) int {
			return cmp.Or(strings.Compare(x.Holder, y.Holder), cmp.Compare(x.Token, y.Token),
				cmp.Compare(x.Transitions, y.Transitions), cmp.Compare(x.LeaseDuration, y.LeaseDuration))
		})
		u(uint64(k))
		u(uint64(len(rs)))
		for _, r := range rs {
			rec(r)
		}
	}
	u(uint64(o.top))
	flag(o.topKnown)
	rec(o.topRec)
	u(uint64(len(o.lineage)))
	for _, r := range o.lineage {
		u(uint64(r))
	}
	gone := make([]Rev, 0, len(o.gone))
	for r := range o.gone {
		gone = append(gone, r)
	}
	slices.Sort(gone)
	u(uint64(len(gone)))
	for _, r := range gone {
		u(uint64(r))
		u(uint64(o.gone[r]))
	}
	u(uint64(len(o.erased)))
	for _, e := range o.erased {
		i(e.at)
		seq(e.seq)
		u(uint64(e.target))
		flag(e.release)
		flag(e.excuses)
	}
	u(uint64(len(o.terms)))
	for _, t := range o.terms {
		u(uint64(t.id))
		u(uint64(t.gen))
		u(t.token)
		u(uint64(t.erasures))
		flag(t.ahead)
	}
	u(uint64(len(o.open)))
	for _, x := range o.open {
		u(uint64(x.id))
		u(uint64(x.gen))
		u(x.token)
	}
	done := slices.Clone(o.done) // a set: the order judged in is no state
	slices.SortFunc(done, func(x, y judged) int {
		return cmp.Or(cmp.Compare(x.a, y.a), cmp.Compare(x.b, y.b), cmp.Compare(x.ga, y.ga),
			cmp.Compare(x.gb, y.gb), cmp.Compare(x.ta, y.ta), cmp.Compare(x.tb, y.tb))
	})
	u(uint64(len(done)))
	for _, j := range done {
		u(uint64(j.a))
		u(uint64(j.b))
		u(uint64(j.ga))
		u(uint64(j.gb))
		u(j.ta)
		u(j.tb)
	}
	flag(o.failed)
	return b
}
