package testcluster

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/internal/oracle"
	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
)

// Belief is what the Checker samples: whether an elector believes it leads,
// and in which term. *lead.Elector satisfies it.
type Belief interface {
	Term() (lead.Term, bool)
}

// FenceWriteFunc writes value to the fenced resource with token, and
// returns an error wrapping fence.ErrStaleToken when the resource refuses
// it (redisfence.Set or pgfence on a connection without faults).
type FenceWriteFunc func(ctx context.Context, token fence.Token, value string) error

// Checker watches the electors of one election from outside: it samples
// every elector's belief (Term), each with the real instant it was read,
// and while an elector believes it leads it writes through a fenced
// resource with the term's token. The samples are the history the
// independent oracle (internal/oracle) judges one leader and token order
// from: an elector's term is one interval from the first sample of it to
// the last, and two that overlap are a violation (with no store history,
// the oracle excuses none). It keeps a timeline of what it saw, of the
// notes of whoever injects faults, and of the electors' observer events.
//
// Its methods are safe for concurrent use.
type Checker struct {
	start  time.Time
	period time.Duration

	mu       sync.Mutex
	o        *oracle.Oracle
	last     oracle.Time // the instant of the last belief recorded, since start
	judged   int         // the oracle's violations already on the timeline
	ids      []string
	gens     []uint32 // per elector: how many times it was added again
	beliefs  []Belief
	open     []*TermSpan // per elector: its span while it leads, or nil
	spans    []TermSpan  // closed spans
	samples  int
	maxSpan  time.Duration // longest sample
	heals    []heal
	faults   []time.Time // when each fault began
	writes   []FenceWrite
	timeline []event
}

// TermSpan is a term as the Checker saw it: the elector ID believed it led
// with Token in every sample from First to Last.
type TermSpan struct {
	ID          string
	Token       fence.Token
	First, Last time.Time
}

// FenceWrite is one write an elector made through the fenced resource.
type FenceWrite struct {
	ID        string
	Token     fence.Token
	Call, Ret time.Time
	Accepted  bool
	Stale     bool // refused for a stale token
	Err       error
	// StillLeading: after the reply the elector still believed it led in
	// the same term.
	StillLeading bool
}

type heal struct {
	at   time.Time
	what string
}

type event struct {
	at   time.Time
	what string
}

// NewChecker returns a checker that samples every period, of electors
// that use the timings of cfgs.
func NewChecker(period time.Duration, cfgs ...lease.Config) *Checker {
	var rd time.Duration
	for _, cfg := range cfgs {
		rd = max(rd, cfg.RenewDeadline)
	}
	// The electors run on this machine's clock: no drift. The history
	// holds no store writes (Complete false), so no overlap is excused.
	o := oracle.New(oracle.Params{MaxRenewDeadline: rd, Slack: period})
	return &Checker{start: time.Now(), period: period, o: o}
}

// Add adds the elector id to the electors watched. A restarted elector is
// added again under the same id: a new process, which knows nothing of
// what the one before it was told.
func (c *Checker) Add(id string, b Belief) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.Index(c.ids, id)
	if i >= 0 {
		c.beliefs[i] = b
		c.gens[i]++
	} else {
		i = len(c.ids)
		c.ids = append(c.ids, id)
		c.gens = append(c.gens, 0)
		c.beliefs = append(c.beliefs, b)
		c.open = append(c.open, nil)
	}
	c.o.Boot(oracle.Node{ID: i, Gen: c.gens[i]}, c.stamp())
}

// stamp is the instant of a belief read just now, as time since start: it
// grows strictly, so that a belief read after another is stamped after it,
// whatever the clock's resolution. c.mu is held.
func (c *Checker) stamp() oracle.Time {
	c.last = max(oracle.Time(time.Since(c.start)), c.last+1)
	return c.last
}

// Note adds a line to the timeline.
func (c *Checker) Note(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.timeline = append(c.timeline, event{time.Now(), fmt.Sprintf(format, args...)})
}

// Observe is an observer of elector id (see lead.WithObserver): it adds its
// changes to the timeline.
func (c *Checker) Observe(id string) func(lead.Change) {
	return func(ch lead.Change) {
		c.Note("%s: observer: %v token %d %v", id, ch.Kind, ch.Term.Token, ch.Reason)
	}
}

// Fault records that a fault, what, begins now.
func (c *Checker) Fault(what string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	c.faults = append(c.faults, now)
	c.timeline = append(c.timeline, event{now, "fault: " + what})
}

// Heal records that every fault healed at t, what naming the fault:
// Report measures the time to a leader from it.
func (c *Checker) Heal(t time.Time, what string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.heals = append(c.heals, heal{t, what})
	c.timeline = append(c.timeline, event{t, "healed: " + what})
}

// Run samples until ctx ends.
func (c *Checker) Run(ctx context.Context) {
	tick := time.NewTicker(c.period)
	defer tick.Stop()
	for {
		c.sample()
		select {
		case <-ctx.Done():
			c.closeAll()
			return
		case <-tick.C:
		}
	}
}

// sample reads every elector's belief, one after the other, each stamped
// with the instant after its read: a belief read later is stamped later,
// so a term is never taken to have lasted past a read that came after its
// end. It reads them all twice, so that two terms that both last through
// one sample are seen to overlap in it (each is read again after the
// other was read).
func (c *Checker) sample() {
	c.mu.Lock()
	defer c.mu.Unlock()
	t0 := time.Now()
	for k := range 2 * len(c.beliefs) {
		i, b := k%len(c.beliefs), c.beliefs[k%len(c.beliefs)]
		term, ok := b.Term()
		at := c.stamp()
		c.o.Belief(oracle.Node{ID: i, Gen: c.gens[i]}, at, ok, uint64(term.Token))
		now := c.start.Add(time.Duration(at))
		cur := c.open[i]
		switch {
		case ok && cur != nil && cur.Token == term.Token:
			cur.Last = now
		case ok:
			if cur != nil {
				c.spans = append(c.spans, *cur)
			}
			c.open[i] = &TermSpan{ID: c.ids[i], Token: term.Token, First: now, Last: now}
			c.timeline = append(c.timeline, event{now, fmt.Sprintf("%s: sampled leading, token %d", c.ids[i], term.Token)})
		case cur != nil:
			c.spans = append(c.spans, *cur)
			c.open[i] = nil
			c.timeline = append(c.timeline, event{now, fmt.Sprintf("%s: sampled not leading (token %d last seen %v before)", c.ids[i], cur.Token, now.Sub(cur.Last))})
		}
	}
	c.samples++
	c.maxSpan = max(c.maxSpan, time.Since(t0))
	if c.o.Failed() {
		v := c.o.Violations()
		for _, x := range v[c.judged:] {
			c.timeline = append(c.timeline, event{c.start.Add(time.Duration(x.At)), c.describe(x)})
		}
		c.judged = len(v)
	}
}

// describe is a violation of the oracle, naming the electors by id.
// c.mu is held.
func (c *Checker) describe(v oracle.Violation) string {
	return nodeRef.ReplaceAllStringFunc(v.String(), func(m string) string {
		i, err := strconv.Atoi(strings.TrimPrefix(m, "node "))
		if err != nil || i >= len(c.ids) {
			return m
		}
		return c.ids[i]
	})
}

// nodeRef matches the oracle's name of a node in its messages.
var nodeRef = regexp.MustCompile(`\bnode \d+\b`)

func (c *Checker) closeAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, cur := range c.open {
		if cur != nil {
			c.spans = append(c.spans, *cur)
			c.open[i] = nil
		}
	}
}

// FenceWriter writes through write every period while elector id believes
// it leads, until ctx ends. Each write gets its own timeout.
func (c *Checker) FenceWriter(ctx context.Context, id string, b Belief, period, timeout time.Duration, write FenceWriteFunc) {
	tick := time.NewTicker(period)
	defer tick.Stop()
	seq := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		term, ok := b.Term()
		if !ok {
			continue
		}
		seq++
		wctx, cancel := context.WithTimeout(ctx, timeout)
		call := time.Now()
		err := write(wctx, term.Token, fmt.Sprintf("%s/%d/%d", id, term.Token, seq))
		ret := time.Now()
		cancel()
		if ctx.Err() != nil {
			return
		}
		after, still := b.Term()
		w := FenceWrite{ID: id, Token: term.Token, Call: call, Ret: ret, Accepted: err == nil,
			Stale: errors.Is(err, fence.ErrStaleToken), Err: err,
			StillLeading: still && after.Token == term.Token}
		c.mu.Lock()
		c.writes = append(c.writes, w)
		if w.Stale {
			c.timeline = append(c.timeline, event{ret, fmt.Sprintf("%s: fenced write with token %d refused (still leading: %v): %v", id, term.Token, w.StillLeading, err)})
		}
		c.mu.Unlock()
	}
}

// CheckReport is what a Checker found.
type CheckReport struct {
	Electors int
	Observed time.Duration // from NewChecker to the report
	Samples  int
	// MaxSample is the longest sample: two beliefs read in one sample
	// were read at most this far apart.
	MaxSample time.Duration
	// Overlaps describes every violation the oracle found in the samples:
	// two electors' terms that overlapped, or a term whose token is not
	// above an earlier term's.
	Overlaps []string
	// Terms is the number of terms seen.
	Terms int
	// MinGap is the shortest time between the last sample that saw one
	// term and the first that saw the next (negative: they overlapped,
	// which Overlaps reports).
	// MinGapOther counts only a next term of another elector; a term of
	// the same elector may follow at once (it retook its own record). Both
	// are -1 when there were not two such terms.
	MinGap, MinGapOther time.Duration
	// MinGapOtherAt describes the two terms of MinGapOther.
	MinGapOtherAt string
	// Fenced writes: accepted, refused as stale, failed otherwise.
	FenceAccepted, FenceStale, FenceFailed int
	// FenceOutOfOrder describes accepted writes that came after an
	// accepted write with a larger token (by real time).
	FenceOutOfOrder []string
	// FenceRefusedWhileLeading describes stale refusals of a writer that
	// still believed it led in that term after the reply: a newer term had
	// written while the older was believed open.
	FenceRefusedWhileLeading []string
	// ToLeader holds, for each heal with nobody leading at it, the time to
	// the next sample that found a leader (-1 if none came), unless the
	// next fault began first.
	ToLeader []HealTime
	// Interrupted counts the heals with nobody leading at them after which
	// the next fault began before a leader came.
	Interrupted int
	// HealsWithLeader counts heals at which someone led already.
	HealsWithLeader int
}

// HealTime is the time from a heal to the next leader.
type HealTime struct {
	What string    // the fault healed
	At   time.Time // when it healed
	D    time.Duration
}

// Failed reports whether the report shows a safety failure.
func (r CheckReport) Failed() bool {
	return len(r.Overlaps) > 0 || len(r.FenceOutOfOrder) > 0 || len(r.FenceRefusedWhileLeading) > 0
}

// Report computes what the checker found so far. Call it after Run and the
// fence writers have returned.
func (c *Checker) Report() CheckReport {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := CheckReport{
		Electors: len(c.ids), Observed: time.Since(c.start), Samples: c.samples,
		MaxSample: c.maxSpan,
	}
	for _, v := range c.o.Violations() {
		r.Overlaps = append(r.Overlaps, c.describe(v))
	}
	spans := slices.Clone(c.spans)
	for _, o := range c.open {
		if o != nil {
			spans = append(spans, *o)
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].First.Before(spans[j].First) })
	r.Terms = len(spans)
	r.MinGap, r.MinGapOther = -1, -1
	first, firstOther := true, true
	for i := 1; i < len(spans); i++ {
		prev, next := spans[i-1], spans[i]
		gap := next.First.Sub(prev.Last)
		if first || gap < r.MinGap {
			r.MinGap, first = gap, false
		}
		if prev.ID != next.ID && (firstOther || gap < r.MinGapOther) {
			r.MinGapOther, firstOther = gap, false
			r.MinGapOtherAt = fmt.Sprintf("%s's term (token %d) last seen at %v, %s's (token %d) first seen at %v",
				prev.ID, prev.Token, prev.Last.Sub(c.start), next.ID, next.Token, next.First.Sub(c.start))
		}
	}
	// Fenced writes.
	var accepted []FenceWrite
	for _, w := range c.writes {
		switch {
		case w.Accepted:
			r.FenceAccepted++
			accepted = append(accepted, w)
		case w.Stale:
			r.FenceStale++
			if w.StillLeading {
				r.FenceRefusedWhileLeading = append(r.FenceRefusedWhileLeading,
					fmt.Sprintf("%s's write with token %d at %v refused while it still led: %v", w.ID, w.Token, w.Call.Sub(c.start), w.Err))
			}
		default:
			r.FenceFailed++
		}
	}
	byRet := slices.Clone(accepted)
	sort.Slice(byRet, func(i, j int) bool { return byRet[i].Ret.Before(byRet[j].Ret) })
	sort.Slice(accepted, func(i, j int) bool { return accepted[i].Call.Before(accepted[j].Call) })
	var top FenceWrite // the accepted write with the largest token among those done
	j := 0
	for _, w := range accepted {
		for ; j < len(byRet) && byRet[j].Ret.Before(w.Call); j++ {
			if byRet[j].Token > top.Token {
				top = byRet[j]
			}
		}
		if w.Token < top.Token {
			r.FenceOutOfOrder = append(r.FenceOutOfOrder, fmt.Sprintf("%s's write with token %d at %v accepted after %s's with token %d was", w.ID, w.Token, w.Call.Sub(c.start), top.ID, top.Token))
		}
	}
	// Time to a leader after each heal.
	for _, hl := range c.heals {
		h := hl.at
		led := false
		next := time.Time{}
		for _, s := range spans {
			if !s.First.After(h) && !s.Last.Before(h) {
				led = true
				break
			}
			if s.First.After(h) && (next.IsZero() || s.First.Before(next)) {
				next = s.First
			}
		}
		var nextFault time.Time
		for _, f := range c.faults {
			if f.After(h) {
				nextFault = f
				break
			}
		}
		switch {
		case led:
			r.HealsWithLeader++
		case !nextFault.IsZero() && (next.IsZero() || next.After(nextFault)):
			r.Interrupted++
		case next.IsZero():
			r.ToLeader = append(r.ToLeader, HealTime{hl.what, h, -1})
		default:
			r.ToLeader = append(r.ToLeader, HealTime{hl.what, h, next.Sub(h)})
		}
	}
	return r
}

// Timeline returns the timeline, times counted from NewChecker, one event a
// line; with last > 0 only the last events.
func (c *Checker) Timeline(last int) string {
	c.mu.Lock()
	evs := slices.Clone(c.timeline)
	c.mu.Unlock()
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].at.Before(evs[j].at) })
	if last > 0 && len(evs) > last {
		evs = evs[len(evs)-last:]
	}
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "%12v  %s\n", e.at.Sub(c.start).Round(time.Microsecond), e.what)
	}
	return b.String()
}
