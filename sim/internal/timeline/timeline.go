package timeline

import (
	"fmt"
	"html"
	"io"
	"strconv"
	"strings"
	"time"
)

// Mark is what a lane shows for a node at some time.
type Mark uint8

// The marks a lane can show.
const (
	Down      Mark = iota // no process (blank)
	Follower              // F
	Candidate             // C
	Leader                // L
	Expiring              // E
)

// markChar and markColor show a mark in text and SVG; markRank orders
// marks when a text column holds several.
var (
	markChar  = [...]byte{' ', 'F', 'C', 'L', 'E'}
	markColor = [...]string{"", "#d0d7de", "#f2cc60", "#2da44e", "#fb8f44"}
	markRank  = [...]int{0, 1, 2, 4, 3}
)

// Change is a node's lane changing mark.
type Change struct {
	At   int64 // when
	Node int   // whose lane
	Mark Mark  // the new mark
}

// Term is a term starting.
type Term struct {
	At    int64  // when it started
	Node  int    // who leads
	Token uint64 // its fencing token
}

// Fault is one fault of the run.
type Fault struct {
	// At is when it starts, Dur how long it lasts.
	At, Dur int64
	// Node is the lane it hits, or -1 for faults of the store or network.
	Node int
	// Letter marks it on the faults row.
	Letter byte
	// Kind names it (sim.FaultKind's String).
	Kind string
	// Text describes it.
	Text string
}

// StoreLine is one change of the store worth showing.
type StoreLine struct {
	At   int64  // when
	Text string // what was stored
}

// Write is one swap that reached the store: accepted (a new revision) or
// refused with a conflict (nothing written).
type Write struct {
	At       int64  // when the store applied or refused it
	Node     int    // the writer's lane
	Rev      uint64 // the revision it made, or the one it expected (a conflict)
	Holder   string // the holder it wrote
	Token    uint64 // the token it wrote
	Conflict bool   // refused: the store held another revision
}

// Timeline is what a recorded run keeps for rendering. Times are
// nanoseconds of real (virtual) time since the start of the run.
type Timeline struct {
	// Header lines come first in the text rendering; the first one is the
	// SVG's title.
	Header  []string
	IDs     []string    // lane labels
	Rates   []float64   // each lane's clock rate (1: exact), if known
	End     int64       // the length of the run
	Changes []Change    // the lanes' changes of mark, in time order
	Terms   []Term      // the terms, in time order
	Faults  []Fault     // the faults, in time order
	Stores  []StoreLine // the store's changes worth showing
	Writes  []Write     // every swap the store applied or refused, in time order
	// Verdict is the checks' verdict; Failed colours it red.
	Verdict string
	Failed  bool  // a check failed
	FailAt  int64 // when it failed (with Failed)

	last []Mark
}

// FmtTime formats a time as seconds with millisecond precision.
func FmtTime(t int64) string {
	return strconv.FormatFloat(float64(t)/float64(time.Second), 'f', 3, 64) + "s"
}

// State sets the mark of node's lane from at on.
func (tl *Timeline) State(at int64, node int, m Mark) {
	for len(tl.last) <= node {
		tl.last = append(tl.last, Down)
	}
	if tl.last[node] == m {
		return
	}
	tl.last[node] = m
	tl.Changes = append(tl.Changes, Change{at, node, m})
}

// AddTerm notes a term starting.
func (tl *Timeline) AddTerm(at int64, node int, token uint64) {
	tl.Terms = append(tl.Terms, Term{At: at, Node: node, Token: token})
}

// AddFault notes a fault.
func (tl *Timeline) AddFault(f Fault) { tl.Faults = append(tl.Faults, f) }

// AddWrite notes a swap the store applied or refused.
func (tl *Timeline) AddWrite(w Write) { tl.Writes = append(tl.Writes, w) }

// AddStore notes a change of the store, unless it reads like the last one
// once "rev N " prefixes are dropped (a renewal).
func (tl *Timeline) AddStore(at int64, text string) {
	if n := len(tl.Stores); n > 0 && trimRev(tl.Stores[n-1].Text) == trimRev(text) {
		return
	}
	tl.Stores = append(tl.Stores, StoreLine{At: at, Text: text})
}

// trimRev drops what precedes "holder=" so that renewals compare equal.
func trimRev(s string) string {
	if i := strings.Index(s, "holder="); i >= 0 {
		return s[i:]
	}
	return s
}

// lanes returns, per node, the mark of each of width columns: the most
// important mark the node showed during the column.
func (tl *Timeline) lanes(width int) [][]byte {
	nodes := len(tl.IDs)
	out := make([][]byte, nodes)
	cur := make([]Mark, nodes)
	best := make([]Mark, nodes)
	for i := range out {
		out[i] = make([]byte, width)
	}
	ci := 0
	for b := range width {
		hi := tl.End * int64(b+1) / int64(width)
		if b == width-1 {
			hi = tl.End + 1 // the last column shows what happens at the end
		}
		copy(best, cur)
		for ci < len(tl.Changes) && tl.Changes[ci].At < hi {
			c := tl.Changes[ci]
			if c.Node < nodes {
				cur[c.Node] = c.Mark
				if markRank[c.Mark] > markRank[best[c.Node]] {
					best[c.Node] = c.Mark
				}
			}
			ci++
		}
		for i := range out {
			out[i][b] = markChar[best[i]]
		}
	}
	return out
}

// WriteText writes the timeline as text, width columns wide: the header, a
// time axis, a faults row, one lane per node (F, C, L, E; blank while
// down), then the terms, the store's changes, the faults and the verdict.
func (tl *Timeline) WriteText(w io.Writer, width int) error {
	var b strings.Builder
	for _, h := range tl.Header {
		b.WriteString(h)
		b.WriteByte('\n')
	}
	end := max(tl.End, 1)
	fmt.Fprintf(&b, "one column = %v; F follower, C candidate, L leader, E expiring, blank down; faults row: first letter of the fault\n\n", time.Duration(end/int64(width)).Round(time.Millisecond))
	axis := []byte(strings.Repeat(" ", width))
	for col := 0; col < width; col += 20 {
		lbl := fmt.Sprintf("|%ds", int64(time.Duration(end*int64(col)/int64(width))/time.Second))
		copy(axis[col:], lbl)
	}
	fmt.Fprintf(&b, "%-7s %s\n", "time", strings.TrimRight(string(axis), " "))
	frow := []byte(strings.Repeat(" ", width))
	for _, f := range tl.Faults {
		col := min(int(f.At*int64(width)/end), width-1)
		frow[col] = f.Letter
	}
	fmt.Fprintf(&b, "%-7s %s\n", "faults", strings.TrimRight(string(frow), " "))
	for i, lane := range tl.lanes(width) {
		fmt.Fprintf(&b, "%-7s %s\n", fmt.Sprintf("n%d", i), lane)
	}
	fmt.Fprintf(&b, "\nterms (%d):\n", len(tl.Terms))
	for _, t := range tl.Terms {
		fmt.Fprintf(&b, "  %10s  n%d leads with token %d\n", FmtTime(t.At), t.Node, t.Token)
	}
	fmt.Fprintf(&b, "\nstore (writes that change holder or token):\n")
	for _, st := range tl.Stores {
		fmt.Fprintf(&b, "  %10s  %s\n", FmtTime(st.At), st.Text)
	}
	fmt.Fprintf(&b, "\nfaults (%d):\n", len(tl.Faults))
	for _, f := range tl.Faults {
		fmt.Fprintf(&b, "  %10s  %s\n", FmtTime(f.At), f.Text)
	}
	fmt.Fprintf(&b, "\nchecks: %s\n", tl.Verdict)
	_, err := io.WriteString(w, b.String())
	return err
}

// SVG geometry.
const (
	svgLeft  = 70
	svgWidth = 1000
	svgLane  = 28
	svgTop   = 50
)

// WriteSVG writes the timeline as an SVG: one swimlane per node coloured
// by state (grey follower, yellow candidate, green leader, orange
// expiring, blank down), each term's token at its start, faults shaded red
// (on a node's lane, or across all lanes for store faults) and the verdict
// below.
func (tl *Timeline) WriteSVG(w io.Writer) error {
	nodes := len(tl.IDs)
	height := svgTop + nodes*svgLane + 60
	end := max(tl.End, 1)
	x := func(t int64) float64 { return svgLeft + float64(svgWidth)*float64(min(t, end))/float64(end) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="monospace" font-size="11">`+"\n", svgLeft+svgWidth+20, height)
	title := ""
	if len(tl.Header) > 0 {
		title = tl.Header[0]
	}
	fmt.Fprintf(&b, `<text x="%d" y="16">%s</text>`+"\n", svgLeft, html.EscapeString(title))
	step := max(time.Duration(end)/10, time.Second).Round(time.Second)
	for t := time.Duration(0); int64(t) <= end; t += step {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eee"/><text x="%.1f" y="%d">%v</text>`+"\n",
			x(int64(t)), svgTop-12, x(int64(t)), svgTop+nodes*svgLane, x(int64(t))+2, svgTop-14, t)
	}
	cur := make([]Mark, nodes)
	from := make([]int64, nodes)
	seg := func(node int, to int64) {
		if m := cur[node]; m != Down && to > from[node] {
			fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"/>`+"\n",
				x(from[node]), svgTop+node*svgLane+4, x(to)-x(from[node]), svgLane-8, markColor[m])
		}
	}
	for _, c := range tl.Changes {
		if c.Node >= nodes {
			continue
		}
		seg(c.Node, c.At)
		cur[c.Node], from[c.Node] = c.Mark, c.At
	}
	for i := range nodes {
		seg(i, end)
		fmt.Fprintf(&b, `<text x="4" y="%d">%s</text>`+"\n", svgTop+i*svgLane+svgLane/2+4, html.EscapeString(tl.IDs[i]))
	}
	for _, f := range tl.Faults {
		x0, x1 := x(f.At), x(f.At+f.Dur)
		y0, h := svgTop+f.Node*svgLane, svgLane
		if f.Node < 0 || f.Node >= nodes {
			y0, h = svgTop, nodes*svgLane
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="#cf222e" fill-opacity="0.2"><title>%s at %s</title></rect>`+"\n",
			x0, y0, max(x1-x0, 1.5), h, html.EscapeString(f.Text), FmtTime(f.At))
	}
	for _, t := range tl.Terms {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="9">%d</text>`+"\n", x(t.At)+1, svgTop+t.Node*svgLane+svgLane-6, t.Token)
	}
	color := "#1a7f37"
	if tl.Failed {
		color = "#cf222e"
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="%s">checks: %s</text>`+"\n", svgLeft, svgTop+nodes*svgLane+24, color, html.EscapeString(tl.Verdict))
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
