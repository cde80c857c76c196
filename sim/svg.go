package sim

import (
	"fmt"
	"html"
	"io"
	"strings"
	"time"
)

// SVG geometry.
const (
	svgLeft  = 70
	svgWidth = 1000
	svgLane  = 28
	svgTop   = 50
)

// WriteSVG writes a recorded run as an SVG timeline: one swimlane per node
// coloured by state (grey follower, yellow candidate, green leader, orange
// expiring, blank down), each term's token at its start, faults shaded red
// (on a node's lane, or across all lanes for store faults) and the checks'
// verdict below. The run must have been made with Options.Record.
func (s *Cluster) WriteSVG(w io.Writer) error {
	tl := s.tl
	if tl == nil {
		return fmt.Errorf("sim: the run was not recorded (set Options.Record)")
	}
	nodes := len(s.nodes)
	height := svgTop + nodes*svgLane + 60
	end := max(tl.end, 1)
	x := func(t int64) float64 { return svgLeft + float64(svgWidth)*float64(min(t, end))/float64(end) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="monospace" font-size="11">`+"\n", svgLeft+svgWidth+20, height)
	fmt.Fprintf(&b, `<text x="%d" y="16">tenure sim: seed %d, %d nodes, %v</text>`+"\n", svgLeft, s.opt.Seed, nodes, s.opt.Duration)
	// Time axis: about ten ticks.
	step := max(time.Duration(end)/10, time.Second).Round(time.Second)
	for t := time.Duration(0); int64(t) <= end; t += step {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eee"/><text x="%.1f" y="%d">%v</text>`+"\n",
			x(int64(t)), svgTop-12, x(int64(t)), svgTop+nodes*svgLane, x(int64(t))+2, svgTop-14, t)
	}
	// State segments.
	cur := make([]mark, nodes)
	from := make([]int64, nodes)
	seg := func(node int, to int64) {
		if m := cur[node]; m != stDown && to > from[node] {
			fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"/>`+"\n",
				x(from[node]), svgTop+node*svgLane+4, x(to)-x(from[node]), svgLane-8, markColor[m])
		}
	}
	for _, c := range tl.changes {
		seg(c.node, c.at)
		cur[c.node], from[c.node] = c.m, c.at
	}
	for i := range nodes {
		seg(i, end)
		fmt.Fprintf(&b, `<text x="4" y="%d">%s</text>`+"\n", svgTop+i*svgLane+svgLane/2+4, html.EscapeString(tl.ids[i]))
	}
	// Faults.
	for _, f := range tl.faults {
		x0, x1 := x(f.at), x(f.at+int64(f.f.Dur))
		y0, h := svgTop+f.f.Node*svgLane, svgLane
		switch f.f.Kind {
		case FaultLoss, FaultSlow, FaultDataLoss:
			y0, h = svgTop, nodes*svgLane
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="#cf222e" fill-opacity="0.2"><title>%s at %s</title></rect>`+"\n",
			x0, y0, max(x1-x0, 1.5), h, html.EscapeString(f.f.String()), fmtTime(f.at))
	}
	// Tokens.
	for _, t := range tl.terms {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="9">%d</text>`+"\n", x(t.at)+1, svgTop+t.node*svgLane+svgLane-6, t.token)
	}
	color := "#1a7f37"
	if s.res.Violation != nil {
		color = "#cf222e"
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="%s">checks: %s</text>`+"\n", svgLeft, svgTop+nodes*svgLane+24, color, html.EscapeString(tl.verdict))
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
