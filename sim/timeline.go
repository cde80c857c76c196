package sim

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/tenure-go/tenure/fsm"
	"github.com/tenure-go/tenure/lease"
)

// mark is what a timeline lane shows for a node.
type mark uint8

const (
	stDown mark = iota // no process
	stUp               // booted, not stepped yet (shown as Follower)
	stF
	stC
	stL
	stE
)

func stateMark(s fsm.State) mark {
	switch s {
	case fsm.Candidate:
		return stC
	case fsm.Leader:
		return stL
	case fsm.Expiring:
		return stE
	}
	return stF
}

// markChar and markColor show a mark in text and SVG.
var (
	markChar  = [...]byte{' ', 'F', 'F', 'C', 'L', 'E'}
	markColor = [...]string{"", "#d0d7de", "#d0d7de", "#f2cc60", "#2da44e", "#fb8f44"}
	// markRank orders marks when a text bucket holds several.
	markRank = [...]int{0, 1, 1, 2, 4, 3}
)

type tlChange struct {
	at   int64
	node int
	m    mark
}

type tlTerm struct {
	at    int64
	node  int
	token uint64
}

type tlFault struct {
	at int64
	f  Fault
}

type tlStore struct {
	at     int64
	text   string
	holder bool
}

// timeline is what a recorded run keeps for rendering.
type timeline struct {
	changes []tlChange
	last    []mark
	terms   []tlTerm
	faults  []tlFault
	stores  []tlStore
	fenced  int
	end     int64
	ids     []string
	verdict string
}

func (tl *timeline) state(at int64, node int, m mark) {
	for len(tl.last) <= node {
		tl.last = append(tl.last, stDown)
	}
	if m == stUp {
		m = stF
	}
	if tl.last[node] == m {
		return
	}
	tl.last[node] = m
	tl.changes = append(tl.changes, tlChange{at, node, m})
}

func (tl *timeline) term(at int64, node int, token uint64) {
	tl.terms = append(tl.terms, tlTerm{at: at, node: node, token: token})
}

func (tl *timeline) fault(at int64, f Fault) { tl.faults = append(tl.faults, tlFault{at, f}) }

func (tl *timeline) fence(int64, int, uint64) { tl.fenced++ }

// storeEvent keeps the writes that change holder or token (not renewals).
func (tl *timeline) storeEvent(at int64, rev lease.Revision, l fsm.Lease, by string) {
	txt := fmt.Sprintf("rev %d holder=%q token=%d transitions=%d (written by %s)", rev, l.Holder, l.Token, l.Transitions, by)
	if n := len(tl.stores); n > 0 && trimRev(tl.stores[n-1].text) == trimRev(txt) {
		return
	}
	tl.stores = append(tl.stores, tlStore{at: at, text: txt, holder: l.Holder != ""})
}

// storeLoss notes a data loss.
func (tl *timeline) storeLoss(at int64) {
	tl.stores = append(tl.stores, tlStore{at: at, text: "DATA LOSS: the record vanishes"})
}

// trimRev drops the "rev N " prefix so that renewals compare equal.
func trimRev(s string) string {
	if i := strings.Index(s, "holder="); i >= 0 {
		return s[i:]
	}
	return s
}

func (tl *timeline) close(s *Cluster) {
	tl.end = int64(s.opt.Duration)
	if s.res.Violation != nil {
		tl.end = s.now
	}
	tl.ids = tl.ids[:0]
	for _, n := range s.nodes {
		tl.ids = append(tl.ids, n.id)
	}
	if v := s.res.Violation; v != nil {
		tl.verdict = "VIOLATION " + v.Error()
	} else {
		tl.verdict = fmt.Sprintf("OK: every check held (%d events, %d terms, %d fenced writes accepted, %d refused)",
			s.res.Events, s.res.Terms, s.res.FenceAccepted, s.res.FenceRejected)
	}
}

// lanes returns, per node, the mark of each of width buckets: the most
// important mark the node showed during the bucket.
func (tl *timeline) lanes(nodes, width int) [][]byte {
	out := make([][]byte, nodes)
	cur := make([]mark, nodes)
	best := make([]mark, nodes)
	for i := range out {
		out[i] = make([]byte, width)
	}
	ci := 0
	for b := 0; b < width; b++ {
		hi := tl.end * int64(b+1) / int64(width)
		copy(best, cur)
		for ci < len(tl.changes) && tl.changes[ci].at < hi {
			c := tl.changes[ci]
			cur[c.node] = c.m
			if markRank[c.m] > markRank[best[c.node]] {
				best[c.node] = c.m
			}
			ci++
		}
		for i := range out {
			out[i][b] = markChar[best[i]]
		}
	}
	return out
}

// WriteTimeline writes a recorded run as text: a fault row, one lane per
// node (F, C, L, E; blank while down), then the terms, the store's changes of
// holder, the faults and the verdict of the checks. The run must have been
// made with Options.Record.
func (s *Cluster) WriteTimeline(w io.Writer, width int) error {
	tl := s.tl
	if tl == nil {
		return fmt.Errorf("sim: the run was not recorded (set Options.Record)")
	}
	var b strings.Builder
	o := s.opt
	fmt.Fprintf(&b, "tenure sim: seed %d, %d nodes, %v, lossy store %v, drift %.3f\n", o.Seed, o.Nodes, o.Duration, s.lossy, s.rho)
	c := o.Config
	fmt.Fprintf(&b, "timings: L=%v R=%v I=%v J=%.2f T=%v; liveness bound %v, handover bound %v\n",
		c.LeaseDuration, c.RenewDeadline, c.RetryInterval, c.RetryJitter, c.BackendTimeout,
		time.Duration(s.chk.bound), time.Duration(s.chk.handoverIn))
	fmt.Fprintf(&b, "one column = %v; F follower, C candidate, L leader, E expiring, blank down; faults row: first letter of the fault\n\n", time.Duration(tl.end/int64(width)))
	// Time axis.
	axis := []byte(strings.Repeat(" ", width))
	for col := 0; col < width; col += 20 {
		lbl := fmt.Sprintf("|%ds", int64(time.Duration(tl.end*int64(col)/int64(width))/time.Second))
		copy(axis[col:], lbl)
	}
	fmt.Fprintf(&b, "%-7s %s\n", "time", strings.TrimRight(string(axis), " "))
	frow := []byte(strings.Repeat(" ", width))
	for _, f := range tl.faults {
		col := int(f.at * int64(width) / max(tl.end, 1))
		if col >= width {
			col = width - 1
		}
		frow[col] = f.f.Kind.String()[0]
	}
	fmt.Fprintf(&b, "%-7s %s\n", "faults", strings.TrimRight(string(frow), " "))
	for i, lane := range tl.lanes(len(s.nodes), width) {
		fmt.Fprintf(&b, "%-7s %s\n", fmt.Sprintf("n%d", i), lane)
	}
	fmt.Fprintf(&b, "\nterms (%d):\n", len(tl.terms))
	for _, t := range tl.terms {
		fmt.Fprintf(&b, "  %10s  n%d leads with token %d\n", fmtTime(t.at), t.node, t.token)
	}
	fmt.Fprintf(&b, "\nstore (writes that change holder or token):\n")
	for _, st := range tl.stores {
		fmt.Fprintf(&b, "  %10s  %s\n", fmtTime(st.at), st.text)
	}
	fmt.Fprintf(&b, "\nfaults (%d):\n", len(tl.faults))
	for _, f := range tl.faults {
		fmt.Fprintf(&b, "  %10s  %v\n", fmtTime(f.at), f.f)
	}
	fmt.Fprintf(&b, "\nchecks: %s\n", tl.verdict)
	_, err := io.WriteString(w, b.String())
	return err
}
