package oracle

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
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
	expected Rev
	live     Rev // the newest revision delivered to it that the store had not forgotten
}

// erasure is one act that made the store forget.
type erasure struct {
	at      Time
	target  Rev  // the store holds what it held at target (0: nothing); every later revision is forgotten
	release bool // a stored release: nothing forgotten, and no process can tell
	excuses bool // an erasure that excuses (a loss in a lossy store does not)
}

// termWrite is the first stored write of one term of an incarnation.
type termWrite struct {
	token   uint64
	applied Time
	last    Time // the last write of the term the store applied
	sn      Snapshot
	ahead   bool // its token lay above the store's clock
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
	// knownAt[k]: when it was first delivered a record erasure k made
	// the store forget (absent or 0 length: never).
	knownAt   []Time
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
	id    int
	gen   uint32
	token uint64
	at    Time
	ahead bool
}

// Oracle judges one election's history. The zero value is not usable:
// call New.
type Oracle struct {
	p       Params
	bound   Time
	now     Time
	nodes   []inc
	dense   []Rec // the record the store held at each small revision
	held    []bool
	extra   map[Rev][]Rec // every other (revision, record) the store held
	erased  []erasure
	lineage []Rev       // the revisions of the store's history, in order
	gone    map[Rev]int // revision → the erasure that made the store forget it
	terms   []term
	open    []excuse
	done    []judged
	viol    []Violation
	maxSeen bool // some violation has been recorded
}

// denseLimit bounds the revisions kept in a slice; larger ones go to a map.
const denseLimit = 1 << 20

// New returns an oracle for the model p.
func New(p Params) *Oracle {
	rho := min(max(p.Drift, 0), 0.999)
	b := float64(p.MaxRenewDeadline)/(1-rho) + float64(p.Slack) + 1
	if b > math.MaxInt64/4 {
		b = math.MaxInt64 / 4
	}
	return &Oracle{p: p, bound: Time(b), extra: map[Rev][]Rec{}, gone: map[Rev]int{}}
}

// Bound is how long after an erasure an excused overlap may last.
func (o *Oracle) Bound() time.Duration { return time.Duration(o.bound) }

func (o *Oracle) node(n Node) *inc {
	for len(o.nodes) <= n.ID {
		o.nodes = append(o.nodes, inc{})
	}
	return &o.nodes[n.ID]
}

// cur returns n's state if n is its process's current incarnation.
func (o *Oracle) cur(n Node) *inc {
	if n.ID < 0 {
		return nil
	}
	s := o.node(n)
	if !s.up || s.gen != n.Gen {
		return nil
	}
	return s
}

func (o *Oracle) tick(at Time) { o.now = max(o.now, at) }

func (o *Oracle) fail(at Time, check, format string, args ...any) {
	o.viol = append(o.viol, Violation{At: at, Check: check, Msg: fmt.Sprintf(format, args...)})
	o.maxSeen = true
}

// Boot starts incarnation n, which knows nothing. An earlier incarnation
// of the same process ends now.
func (o *Oracle) Boot(n Node, at Time) {
	o.tick(at)
	if n.ID < 0 {
		return
	}
	s := o.node(n)
	if s.up {
		o.end(s, at)
	}
	*s = inc{gen: n.Gen, up: true}
}

// Down ends incarnation n: it believes nothing from now on.
func (o *Oracle) Down(n Node, at Time) {
	o.tick(at)
	if s := o.cur(n); s != nil {
		o.end(s, at)
		s.up = false
		o.closeExcuses(n)
	}
}

// end closes s's belief at at.
func (o *Oracle) end(s *inc, at Time) {
	if s.leading {
		s.leading = false
		s.prev, s.hasPrev = s.cur, true
	}
}

// Send records that n sent a write expecting revision expected (0: a
// create of an absent record) and storing next. Keep the Snapshot for
// Applied.
func (o *Oracle) Send(n Node, at Time, expected Rev, next Rec) Snapshot {
	o.tick(at)
	sn := Snapshot{n: n, sent: at, expected: expected}
	if s := o.cur(n); s != nil && len(s.seen) > 0 {
		sn.live = s.seen[len(s.seen)-1]
	}
	return sn
}

// Applied records that the store applied the write of sn at revision rev,
// holding stored (the store may raise the token). clock is the store's
// clock at that instant in the unit it floors tokens at (0: it has none).
func (o *Oracle) Applied(at Time, sn Snapshot, rev Rev, stored Rec, clock uint64) {
	o.tick(at)
	o.hold(rev, stored)
	o.lineage = append(o.lineage, rev)
	if stored.Holder == "" || sn.n.ID < 0 {
		return
	}
	s := o.node(sn.n)
	if s.gen != sn.n.Gen {
		return // an incarnation that is gone: its term can never be believed
	}
	for i := range s.writes {
		if w := &s.writes[i]; w.token == stored.Token {
			w.last = at
			return
		}
	}
	ahead := clock != 0 && stored.Token > clock
	s.writes = append(s.writes, termWrite{token: stored.Token, applied: at, last: at, sn: sn, ahead: ahead})
	o.termOrder(sn.n, stored.Token, at, ahead)
}

// termOrder checks that a term stored at at has a token above every
// earlier term's, but for lost floors.
func (o *Oracle) termOrder(n Node, token uint64, at Time, ahead bool) {
	for _, t := range o.terms {
		if token > t.token || t.ahead && o.erasedBetween(t.at, at) {
			continue
		}
		o.fail(at, CheckTokens, "%s started a term with token %d, not above the token %d of an earlier term of %s",
			o.name(n.ID), token, t.token, o.name(t.id))
		break
	}
	o.terms = append(o.terms, term{id: n.ID, gen: n.Gen, token: token, at: at, ahead: ahead})
}

// erasedBetween reports whether an erasure came after from and at or
// before to.
func (o *Oracle) erasedBetween(from, to Time) bool {
	for i := len(o.erased) - 1; i >= 0; i-- {
		e := o.erased[i]
		if e.at <= from {
			return false
		}
		if e.at <= to && e.excuses && !e.release {
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
	o.tick(at)
	s := o.cur(n)
	if s == nil || !present || !o.genuine(rev, rec) {
		return
	}
	if k, ok := o.gone[rev]; ok {
		// A record the store has forgotten since, delivered late.
		s.learn(k, at)
		return
	}
	i, found := slices.BinarySearch(s.seen, rev)
	if !found {
		s.seen = slices.Insert(s.seen, i, rev)
	}
}

// learn notes that s knows of erasure k from at.
func (s *inc) learn(k int, at Time) {
	for len(s.knownAt) <= k {
		s.knownAt = append(s.knownAt, math.MaxInt64)
	}
	s.knownAt[k] = min(s.knownAt[k], at)
}

// known reports when s first knew of erasure k.
func (s *inc) known(k int) Time {
	if k < len(s.knownAt) {
		return s.knownAt[k]
	}
	return math.MaxInt64
}

// erase records an erasure that makes the store forget every revision of
// its history above target.
func (o *Oracle) erase(at Time, target Rev, excuses bool) {
	k := len(o.erased)
	o.erased = append(o.erased, erasure{at: at, target: target, excuses: excuses})
	for len(o.lineage) > 0 && o.lineage[len(o.lineage)-1] > target {
		o.gone[o.lineage[len(o.lineage)-1]] = k
		o.lineage = o.lineage[:len(o.lineage)-1]
	}
	for i := range o.nodes {
		s := &o.nodes[i]
		j, _ := slices.BinarySearch(s.seen, target+1)
		if j < len(s.seen) {
			// It had been delivered a record the store forgets now.
			s.learn(k, at)
			s.seen = s.seen[:j]
		}
	}
}

// Rollback records that the store holds again what it held at revision to
// (0: nothing), forgetting every later write.
func (o *Oracle) Rollback(at Time, to Rev) {
	o.tick(at)
	o.erase(at, to, true)
}

// Restore records that the store holds rec at rev, restored from a backup:
// it forgets every write since the backup.
func (o *Oracle) Restore(at Time, rev Rev, rec Rec) {
	o.tick(at)
	o.erase(at, rev, true)
	o.hold(rev, rec)
	if len(o.lineage) == 0 || o.lineage[len(o.lineage)-1] != rev {
		o.lineage = append(o.lineage, rev)
	}
}

// Lose records that the store lost its record. In a store that keeps its
// records that is an erasure; in a lossy one, what every process expects.
func (o *Oracle) Lose(at Time) {
	o.tick(at)
	o.erase(at, 0, !o.p.LossyStore)
}

// Forge records that someone other than the processes stored rec at rev.
// A released record stored that way is an erasure nobody can tell from a
// holder's release.
func (o *Oracle) Forge(at Time, rev Rev, rec Rec) {
	o.tick(at)
	o.hold(rev, rec)
	o.lineage = append(o.lineage, rev)
	if rec.Holder == "" {
		o.erased = append(o.erased, erasure{at: at, target: rev, release: true, excuses: true})
	}
}

// Belief records a sample of n's belief: whether it leads, and with which
// token.
func (o *Oracle) Belief(n Node, at Time, leading bool, token uint64) {
	o.tick(at)
	s := o.cur(n)
	if s == nil {
		return
	}
	if !leading {
		o.end(s, at)
		o.closeExcuses(n)
		return
	}
	if s.leading && s.cur.token == token {
		s.cur.last = at
	} else {
		if s.leading {
			o.end(s, at)
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
		if _, ok := s.write(token); !ok {
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
			if i != n.ID && sp.token == token {
				o.fail(at, CheckTokens, "token %d is the token of a term of %s and of %s", token, o.name(i), o.name(n.ID))
			}
		}
	}
	o.termOrder(n, token, at, false)
}

func (s *inc) write(token uint64) (termWrite, bool) {
	for _, w := range s.writes {
		if w.token == token {
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
			if wb.applied < wa.applied {
				first, fn, second, sec = wb, mn, wa, s
			}
			if x, ok := o.excuse(first, second, sec); ok {
				o.open = append(o.open, excuse{id: fn.ID, gen: fn.Gen, token: first.token, why: o.why(x)})
				// The earlier term may already be past its deadline.
				if fn == n {
					o.overdue(n, a.token, a.last)
				} else {
					o.overdue(mn, b.token, b.last)
				}
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
	var in erasure
	found, last := false, -1
	for i := len(o.erased) - 1; i >= 0; i-- {
		e := o.erased[i]
		if e.at > second.applied {
			continue
		}
		if last < 0 {
			last = i
		}
		if e.at <= first.applied {
			break
		}
		if e.excuses && !found {
			in, found = e, true
		}
	}
	if !found {
		return erasure{}, false
	}
	x, sn := o.erased[last], second.sn
	if x.release || sn.expected != x.target {
		return in, true
	}
	if !x.excuses || x.at <= first.applied {
		return erasure{}, false
	}
	knew := sec.known(last) <= sn.sent || sn.sent < x.at && sn.live > sn.expected
	return x, !knew
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

// closeExcuses drops the excuses of n's terms that ended.
func (o *Oracle) closeExcuses(n Node) {
	s := o.cur(n)
	o.open = slices.DeleteFunc(o.open, func(x excuse) bool {
		return x.id == n.ID && (x.gen != n.Gen || s == nil || !s.leading || s.cur.token != x.token)
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
	return t + 1, true
}

// deadline is when the excused term x must have stopped leading: a
// process leads only on a write it sent, for at most RenewDeadline of its
// own clock from the send, so for at most Bound after the last write of
// the term the store applied.
func (o *Oracle) deadline(x excuse) Time {
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

// Erased reports whether the store forgot the term of n with token (a
// write that erased it was stored after its acquiring write): a fenced
// resource may then refuse that term while it still believes it leads.
func (o *Oracle) Erased(n Node, token uint64) bool {
	s := o.cur(n)
	if s == nil {
		return false
	}
	w, ok := s.write(token)
	if !ok {
		return false
	}
	for i := len(o.erased) - 1; i >= 0 && o.erased[i].at > w.applied; i-- {
		if o.erased[i].excuses {
			return true
		}
	}
	return false
}

// Failed reports whether some violation was recorded.
func (o *Oracle) Failed() bool { return o.maxSeen }

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
	c.lineage = slices.Clone(o.lineage)
	c.gone = make(map[Rev]int, len(o.gone))
	for k, v := range o.gone {
		c.gone[k] = v
	}
	c.dense, c.held = slices.Clone(o.dense), slices.Clone(o.held)
	c.extra = make(map[Rev][]Rec, len(o.extra))
	for k, v := range o.extra {
		c.extra[k] = slices.Clone(v)
	}
	c.erased, c.terms = slices.Clone(o.erased), slices.Clone(o.terms)
	c.open, c.done, c.viol = slices.Clone(o.open), slices.Clone(o.done), slices.Clone(o.viol)
	return &c
}

// AppendKey appends a canonical encoding of everything that can change a
// later verdict, for a search that deduplicates states.
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
	u(uint64(len(o.nodes)))
	for _, s := range o.nodes {
		u(uint64(s.gen))
		flag(s.up)
		u(uint64(len(s.seen)))
		for _, r := range s.seen {
			u(uint64(r))
		}
		u(uint64(len(s.knownAt)))
		for _, t := range s.knownAt {
			i(t)
		}
		flag(s.leading)
		sp(s.cur)
		sp(s.prev)
		flag(s.hasPrev)
		u(s.lastToken)
		u(uint64(len(s.writes)))
		for _, w := range s.writes {
			u(w.token)
			i(w.applied)
			i(w.last)
			u(uint64(w.sn.n.ID))
			u(uint64(w.sn.n.Gen))
			i(w.sn.sent)
			u(uint64(w.sn.expected))
			u(uint64(w.sn.live))
			flag(w.ahead)
		}
	}
	u(uint64(len(o.held)))
	for r, h := range o.held {
		flag(h)
		if h {
			rec(o.dense[r])
		}
	}
	keys := make([]Rev, 0, len(o.extra))
	for k := range o.extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		u(uint64(k))
		u(uint64(len(o.extra[k])))
		for _, r := range o.extra[k] {
			rec(r)
		}
	}
	u(uint64(len(o.erased)))
	for _, e := range o.erased {
		i(e.at)
		u(uint64(e.target))
		flag(e.release)
		flag(e.excuses)
	}
	u(uint64(len(o.lineage)))
	for _, r := range o.lineage {
		u(uint64(r))
	}
	gone := make([]Rev, 0, len(o.gone))
	for r := range o.gone {
		gone = append(gone, r)
	}
	slices.Sort(gone)
	for _, r := range gone {
		u(uint64(r))
		u(uint64(o.gone[r]))
	}
	u(uint64(len(o.terms)))
	for _, t := range o.terms {
		u(uint64(t.id))
		u(uint64(t.gen))
		u(t.token)
		i(t.at)
		flag(t.ahead)
	}
	u(uint64(len(o.open)))
	for _, x := range o.open {
		u(uint64(x.id))
		u(uint64(x.gen))
		u(x.token)
	}
	u(uint64(len(o.done)))
	for _, j := range o.done {
		u(uint64(j.a))
		u(uint64(j.b))
		u(uint64(j.ga))
		u(uint64(j.gb))
		u(j.ta)
		u(j.tb)
	}
	flag(o.maxSeen)
	return b
}
