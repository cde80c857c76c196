package picture

import (
	"fmt"
	"html"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tenure-go/tenure/sim/internal/timeline"
)

// Bounds on what a page draws, whatever the run's length.
const (
	// Cols is the picture's resolution: a lane draws at most Cols+1
	// spans, and the store lane at most Cols marks of each kind.
	Cols = 1200
	// MaxRows is how many faults it draws, and how many rows each table
	// below the picture lists.
	MaxRows = 500
)

// Geometry of the SVG, in pixels at zoom 1.
const (
	left   = 96   // lane labels
	plotW  = Cols // the run
	right  = 24   // past the end: marks at the last instant
	top    = 34   // the faults row
	rowH   = 18   // the faults row's height
	laneH  = 30   // a node's lane
	storeH = 36   // the store's lane
)

// How each mark is named and coloured, and which one a merged span shows
// (the most telling: leader, then expiring, candidate, follower).
var (
	markName  = [...]string{"down", "follower", "candidate", "leader", "expiring"}
	markColor = [...]string{"none", "#d0d7de", "#f2cc60", "#2da44e", "#fb8f44"}
	markRank  = [...]int{0, 1, 2, 4, 3}
)

// Colours of the rest.
const (
	colFault    = "#8250df"
	colWrite    = "#0969da"
	colConflict = "#bf3989"
	colBad      = "#cf222e"
	colGood     = "#1a7f37"
)

// span is a stretch of a lane in one mark: exact, or several short ones
// merged (changes > 1).
type span struct {
	from, to int64
	mark     timeline.Mark
	changes  int
	tokens   []uint64 // the terms that start in it
}

// page is one rendering under way.
type page struct {
	tl    *timeline.Timeline
	end   int64 // the run's length, at least 1
	q     int64 // the shortest span drawn alone: end/Cols
	nodes int
	b     strings.Builder
}

// x is where time t is drawn at zoom 1.
func (p *page) x(t int64) float64 {
	return left + float64(plotW)*float64(min(max(t, 0), p.end))/float64(p.end)
}

// laneY is the top of node's lane.
func laneY(node int) int { return top + rowH + node*laneH }

// storeY is the top of the store's lane.
func (p *page) storeY() int { return laneY(p.nodes) }

// bottom is the bottom of the store's lane.
func (p *page) bottom() int { return p.storeY() + storeH }

// esc escapes s for HTML text and attributes.
func esc(s string) string { return html.EscapeString(s) }

// ts formats a time of the run.
func ts(t int64) string { return timeline.FmtTime(t) }

// Write writes tl as a self-contained HTML page to w.
func Write(w io.Writer, tl *timeline.Timeline) error {
	p := &page{tl: tl, end: max(tl.End, 1), nodes: len(tl.IDs)}
	p.q = max((p.end+Cols-1)/Cols, 1)
	p.head()
	p.svg()
	p.tables()
	p.b.WriteString("<script>//<![CDATA[\n" + script + "//]]></script>\n</body>\n</html>\n")
	_, err := io.WriteString(w, p.b.String())
	return err
}

// head writes the document's head and the lines above the picture.
func (p *page) head() {
	tl, b := p.tl, &p.b
	title := "tenure sim"
	if len(tl.Header) > 0 {
		title = tl.Header[0]
	}
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<link rel=\"icon\" href=\"data:,\"/>\n")
	fmt.Fprintf(b, "<title>%s</title>\n<style>%s</style>\n</head>\n<body>\n", esc(title), style)
	for _, h := range tl.Header {
		fmt.Fprintf(b, "<p class=\"hdr\">%s</p>\n", esc(h))
	}
	class := "ok"
	if tl.Failed {
		class = "fail"
	}
	fmt.Fprintf(b, "<p id=\"verdict\" class=\"%s\">%s</p>\n", class, esc(tl.Verdict))
	b.WriteString(`<p class="ctl"><button id="zin" type="button">zoom in</button> <button id="zout" type="button">zoom out</button> ` +
		`<button id="zfit" type="button">whole run</button> <span id="range"></span> <span id="cursor"></span> ` +
		"<span class=\"hint\">(shift+wheel zooms, drag pans, hover for details)</span></p>\n")
	b.WriteString(legend)
}

// svg writes the picture.
func (p *page) svg() {
	b := &p.b
	width, height := left+plotW+right, p.bottom()+30
	fmt.Fprintf(b, "<div id=\"view\">\n<svg id=\"picture\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" data-left=\"%d\" data-width=\"%d\" data-end=\"%d\">\n",
		width, height, width, height, left, plotW, p.end)
	fmt.Fprintf(b, "<defs><clipPath id=\"plot\"><rect x=\"%d\" y=\"0\" width=\"%d\" height=\"%d\"/></clipPath></defs>\n", left-1, plotW+right, height)
	p.labels()
	b.WriteString("<g clip-path=\"url(#plot)\">\n")
	p.axis()
	p.lanes()
	p.faults()
	p.store()
	p.verdict()
	b.WriteString("</g>\n</svg>\n</div>\n")
}

// labels writes the lanes' names, outside the zoomed area.
func (p *page) labels() {
	tl, b := p.tl, &p.b
	fmt.Fprintf(b, "<text x=\"4\" y=\"%d\" class=\"lbl\">faults</text>\n", top+rowH-5)
	for i, id := range tl.IDs {
		y := laneY(i)
		fmt.Fprintf(b, "<text x=\"4\" y=\"%d\" class=\"lbl\">%s</text>\n", y+laneH/2, esc(id))
		if i < len(tl.Rates) && tl.Rates[i] != 1 {
			fmt.Fprintf(b, "<text x=\"4\" y=\"%d\" class=\"rate\">clock ×%.4f<title>%s's clock runs at %.4f of real time</title></text>\n",
				y+laneH/2+11, tl.Rates[i], esc(id), tl.Rates[i])
		}
	}
	fmt.Fprintf(b, "<text x=\"4\" y=\"%d\" class=\"lbl\">store</text>\n", p.storeY()+storeH/2+4)
}

// axisSteps are the spacings the time axis picks from.
var axisSteps = []time.Duration{
	time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond, time.Second, 2 * time.Second, 5 * time.Second,
	10 * time.Second, 15 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute,
	10 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour, 6 * time.Hour, 24 * time.Hour,
}

// axis writes the time axis: at most a dozen ticks.
func (p *page) axis() {
	b := &p.b
	step := axisSteps[len(axisSteps)-1]
	for _, s := range axisSteps {
		if p.end/int64(s) <= 12 {
			step = s
			break
		}
	}
	for t := int64(0); t <= p.end; t += int64(step) {
		x := p.x(t)
		fmt.Fprintf(b, "<line class=\"grid\" data-a=\"%d\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>", t, x, top-12, x, p.bottom())
		fmt.Fprintf(b, "<text class=\"tick\" data-a=\"%d\" data-dx=\"2\" x=\"%.1f\" y=\"%d\">%v</text>\n", t, x+2, top-14, time.Duration(t))
	}
}

// exactSpans returns node's lane as it was recorded: a span per mark,
// from 0 to the end; the last may be empty (a change at the very end).
func (p *page) exactSpans(node int) []span {
	var out []span
	cur := span{mark: timeline.Down}
	for _, c := range p.tl.Changes {
		if c.Node != node {
			continue
		}
		at := min(max(c.At, 0), p.end)
		if at > cur.from {
			cur.to = at
			out = append(out, cur)
		}
		cur = span{from: at, mark: c.Mark, changes: 1}
	}
	cur.to = p.end
	return append(out, cur)
}

// merge joins spans shorter than q to the ones after them, showing the
// most telling mark: every span it returns but the last lasts q or more.
func merge(in []span, q int64) []span {
	var out []span
	for _, s := range in {
		if n := len(out); n > 0 && out[n-1].to-out[n-1].from < q {
			m := &out[n-1]
			m.to = s.to
			m.changes += s.changes
			if markRank[s.mark] > markRank[m.mark] {
				m.mark = s.mark
			}
			continue
		}
		out = append(out, s)
	}
	return out
}

// lanes writes a lane per node: its spans and its terms' tokens.
func (p *page) lanes() {
	tl, b := p.tl, &p.b
	for i, id := range tl.IDs {
		y := laneY(i)
		fmt.Fprintf(b, "<g class=\"lane\" id=\"lane-%d\" data-node=\"%s\">\n", i, esc(id))
		fmt.Fprintf(b, "<rect class=\"lanebg\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>\n", left, y+2, plotW, laneH-4)
		spans := merge(p.exactSpans(i), p.q)
		for _, t := range tl.Terms {
			if t.Node != i {
				continue
			}
			k, _ := slices.BinarySearchFunc(spans, t.At, func(s span, at int64) int {
				if s.from > at {
					return 1
				}
				return -1
			})
			if k > 0 {
				spans[k-1].tokens = append(spans[k-1].tokens, t.Token)
			}
		}
		lastLabel := -1e9
		for _, s := range spans {
			if s.mark == timeline.Down {
				continue
			}
			x0, x1 := p.x(s.from), p.x(s.to)
			fmt.Fprintf(b, "<rect class=\"span %s\" data-a=\"%d\" data-b=\"%d\" data-min=\"2\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"><title>%s</title></rect>\n",
				markName[s.mark], s.from, s.to, x0, y+4, max(x1-x0, 2), laneH-8, markColor[s.mark], esc(p.spanTitle(id, s)))
			if len(s.tokens) > 0 && x0-lastLabel >= 24 {
				lastLabel = x0
				fmt.Fprintf(b, "<text class=\"token\" data-a=\"%d\" data-dx=\"2\" x=\"%.1f\" y=\"%d\">%d</text>\n", s.from, x0+2, y+laneH-9, s.tokens[0])
			}
		}
		b.WriteString("</g>\n")
	}
}

// spanTitle describes a span for its tooltip.
func (p *page) spanTitle(id string, s span) string {
	var t string
	if s.changes > 1 {
		t = fmt.Sprintf("%s: %d changes from %s to %s, drawn as %s (the most telling)", id, s.changes, ts(s.from), ts(s.to), markName[s.mark])
	} else {
		t = fmt.Sprintf("%s %s from %s to %s (%v)", id, markName[s.mark], ts(s.from), ts(s.to), time.Duration(s.to-s.from).Round(time.Millisecond))
	}
	if len(s.tokens) > 0 {
		t += "; token " + joinTokens(s.tokens)
	}
	return t
}

// joinTokens lists at most ten tokens.
func joinTokens(toks []uint64) string {
	var parts []string
	for i, t := range toks {
		if i == 10 {
			parts = append(parts, fmt.Sprintf("and %d more", len(toks)-i))
			break
		}
		parts = append(parts, strconv.FormatUint(t, 10))
	}
	return strings.Join(parts, ", ")
}

// faults writes the faults: shaded on the lane they hit (all lanes for
// the store's and the network's), lettered on the faults row.
func (p *page) faults() {
	tl, b := p.tl, &p.b
	for i, f := range tl.Faults {
		if i == MaxRows {
			fmt.Fprintf(b, "<text class=\"more\" x=\"%d\" y=\"%d\">%d more faults not drawn</text>\n", left+4, top+rowH-5, len(tl.Faults)-i)
			break
		}
		y0, h := top+rowH, p.nodes*laneH
		if f.Node >= 0 && f.Node < p.nodes {
			y0, h = laneY(f.Node), laneH
		}
		x0, x1 := p.x(f.At), p.x(f.At+f.Dur)
		title := esc(fmt.Sprintf("%s: %s", ts(f.At), f.Text))
		fmt.Fprintf(b, "<rect class=\"fault\" data-kind=\"%s\" data-a=\"%d\" data-b=\"%d\" data-min=\"2\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\"><title>%s</title></rect>\n",
			esc(f.Kind), f.At, f.At+f.Dur, x0, y0, max(x1-x0, 2), h, title)
		fmt.Fprintf(b, "<text class=\"fletter\" data-a=\"%d\" x=\"%.1f\" y=\"%d\">%c<title>%s</title></text>\n", f.At, x0, top+rowH-5, f.Letter, title)
	}
}

// bin gathers the writes of one column of the store's lane.
type bin struct {
	n, first, last int
	by             []int
}

// add adds write i, by node, to the bin.
func (w *bin) add(i, node int) {
	if w.n == 0 {
		w.first = i
	}
	w.n++
	w.last = i
	if !slices.Contains(w.by, node) {
		w.by = append(w.by, node)
	}
}

// store writes the store's lane: its accepted writes above, its refused
// ones (conflicts) below, and its changes of holder as diamonds.
func (p *page) store() {
	tl, b := p.tl, &p.b
	y := p.storeY()
	fmt.Fprintf(b, "<g id=\"store\">\n<rect class=\"lanebg\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>\n", left, y+2, plotW, storeH-4)
	var ok, bad [Cols]bin
	col := func(at int64) int { return int(min(max(at, 0)/p.q, Cols-1)) }
	for i, w := range tl.Writes {
		if w.Conflict {
			bad[col(w.At)].add(i, w.Node)
		} else {
			ok[col(w.At)].add(i, w.Node)
		}
	}
	for c := range Cols {
		p.writes(&ok[c], "ok", colWrite, y+4)
		p.writes(&bad[c], "conflict", colConflict, y+storeH/2+1)
	}
	last := -1
	for _, s := range tl.Stores {
		if c := col(s.At); c == last {
			continue // one per column
		} else {
			last = c
		}
		fill := "#1f2328"
		if strings.HasPrefix(s.Text, "DATA") {
			fill = colBad
		}
		fmt.Fprintf(b, "<text class=\"holder\" data-a=\"%d\" data-dx=\"-3\" x=\"%.1f\" y=\"%d\" fill=\"%s\">◆<title>%s: %s</title></text>\n",
			s.At, p.x(s.At)-3, y+storeH/2+4, fill, ts(s.At), esc(s.Text))
	}
	b.WriteString("</g>\n")
}

// writes draws one column's writes of one kind.
func (p *page) writes(w *bin, kind, fill string, y int) {
	if w.n == 0 {
		return
	}
	ws := p.tl.Writes
	f, l := ws[w.first], ws[w.last]
	var title string
	if w.n == 1 {
		if f.Conflict {
			title = fmt.Sprintf("%s: %s's swap expecting rev %d (holder=%q token=%d) conflicted", ts(f.At), p.id(f.Node), f.Rev, f.Holder, f.Token)
		} else {
			title = fmt.Sprintf("%s: %s wrote rev %d: holder=%q token=%d", ts(f.At), p.id(f.Node), f.Rev, f.Holder, f.Token)
		}
	} else {
		var by []string
		for _, n := range w.by {
			by = append(by, p.id(n))
		}
		verb := "writes accepted, revs"
		if f.Conflict {
			verb = "swaps conflicted, expecting revs"
		}
		title = fmt.Sprintf("%s to %s: %d %s %d to %d, by %s", ts(f.At), ts(l.At), w.n, verb, f.Rev, l.Rev, strings.Join(by, ", "))
	}
	x0, x1 := p.x(f.At), p.x(l.At)
	fmt.Fprintf(&p.b, "<rect class=\"write %s\" data-n=\"%d\" data-a=\"%d\" data-b=\"%d\" data-min=\"1.5\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"><title>%s</title></rect>\n",
		kind, w.n, f.At, l.At, x0, y, max(x1-x0, 1.5), storeH/2-5, fill, esc(title))
}

// id names a lane.
func (p *page) id(node int) string {
	if node >= 0 && node < len(p.tl.IDs) {
		return p.tl.IDs[node]
	}
	return "n" + strconv.Itoa(node)
}

// verdict marks the checks' verdict at its instant: for a violation, a
// red line across every lane, and each span that leads at that instant
// outlined, with the stretch where they overlap shaded.
func (p *page) verdict() {
	tl, b := p.tl, &p.b
	at, class, color, label := p.end, "ok", colGood, "✓ every check held"
	if tl.Failed {
		at, class, color = min(max(tl.FailAt, 0), p.end), "fail", colBad
		label = "✗ " + strings.TrimPrefix(tl.Verdict, "VIOLATION ")
		if len(label) > 120 {
			label = label[:117] + "..."
		}
	}
	x := p.x(at)
	fmt.Fprintf(b, "<g id=\"verdict-mark\" class=\"%s\" data-at=\"%d\">\n", class, at)
	if tl.Failed {
		var lead []span
		var who []int
		for i := range p.nodes {
			ex := p.exactSpans(i)
			k, _ := slices.BinarySearchFunc(ex, at, func(s span, at int64) int {
				if s.from > at {
					return 1
				}
				return -1
			})
			if k > 0 && ex[k-1].mark == timeline.Leader {
				lead, who = append(lead, ex[k-1]), append(who, i)
			}
		}
		if len(lead) > 1 {
			from := lead[0].from
			for _, s := range lead {
				from = max(from, s.from)
			}
			for _, i := range who {
				fmt.Fprintf(b, "<rect class=\"overlapzone\" data-a=\"%d\" data-b=\"%d\" data-min=\"8\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\"/>\n",
					from, at, p.x(from), laneY(i)+2, max(x-p.x(from), 8), laneH-4)
			}
		}
		for k, s := range lead {
			i := who[k]
			fmt.Fprintf(b, "<rect class=\"overlap\" data-node=\"%s\" data-a=\"%d\" data-b=\"%d\" data-min=\"6\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\"><title>%s leads from %s to the violation at %s</title></rect>\n",
				esc(p.id(i)), s.from, s.to, p.x(s.from), laneY(i)+3, max(p.x(s.to)-p.x(s.from), 6), laneH-6, esc(p.id(i)), ts(s.from), ts(at))
		}
	}
	fmt.Fprintf(b, "<line class=\"vline\" data-a=\"%d\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"%s\"/>\n", at, x, top-4, x, p.bottom()+4, color)
	fmt.Fprintf(b, "<text class=\"vlabel\" data-a=\"%d\" data-dx=\"-4\" x=\"%.1f\" y=\"%d\" fill=\"%s\">%s</text>\n</g>\n", at, x-4, p.bottom()+18, color, esc(label))
}

// tables writes the faults, the terms and the store's changes below the
// picture, MaxRows of each at most.
func (p *page) tables() {
	tl, b := p.tl, &p.b
	row := func(i, n int) bool {
		if i == MaxRows {
			fmt.Fprintf(b, "<tr><td></td><td>... and %d more</td></tr>\n", n-i)
			return false
		}
		return true
	}
	fmt.Fprintf(b, "<details open=\"open\"><summary>faults (%d)</summary>\n<table id=\"faults\">\n", len(tl.Faults))
	for i, f := range tl.Faults {
		if !row(i, len(tl.Faults)) {
			break
		}
		fmt.Fprintf(b, "<tr><td>%s</td><td>%s</td></tr>\n", ts(f.At), esc(f.Text))
	}
	fmt.Fprintf(b, "</table></details>\n<details><summary>terms (%d)</summary>\n<table id=\"terms\">\n", len(tl.Terms))
	for i, t := range tl.Terms {
		if !row(i, len(tl.Terms)) {
			break
		}
		fmt.Fprintf(b, "<tr><td>%s</td><td>%s leads with token %d</td></tr>\n", ts(t.At), esc(p.id(t.Node)), t.Token)
	}
	fmt.Fprintf(b, "</table></details>\n<details><summary>store: writes that change holder or token (%d)</summary>\n<table id=\"stores\">\n", len(tl.Stores))
	for i, s := range tl.Stores {
		if !row(i, len(tl.Stores)) {
			break
		}
		fmt.Fprintf(b, "<tr><td>%s</td><td>%s</td></tr>\n", ts(s.At), esc(s.Text))
	}
	b.WriteString("</table></details>\n")
}

// style is the page's stylesheet.
const style = `
body{font:13px system-ui,sans-serif;margin:16px;color:#1f2328;background:#fff}
.hdr{font-family:monospace;margin:2px 0}
#verdict{font-family:monospace;font-weight:bold}
#verdict.ok{color:` + colGood + `}
#verdict.fail{color:` + colBad + `}
.hint{color:#656d76}
#view{border:1px solid #d0d7de;user-select:none;max-width:1340px}
#picture{display:block;width:100%;height:auto}
svg text{font:11px monospace;fill:#1f2328}
svg .lbl{font-weight:bold}
svg .rate,svg .tick{fill:#656d76;font-size:10px}
svg .grid{stroke:#eaeef2}
svg .lanebg{fill:#f6f8fa}
svg .token{font-size:9px;fill:#fff;font-weight:bold}
svg .fault{fill:` + colFault + `;fill-opacity:.18}
svg .fletter{fill:` + colFault + `;font-weight:bold}
svg .span:hover,svg .write:hover,svg .fault:hover{stroke:#000;stroke-width:1}
svg .overlap{fill:none;stroke:` + colBad + `;stroke-width:3}
svg .overlapzone{fill:` + colBad + `;fill-opacity:.45}
svg .vline{stroke-width:3}
svg .vlabel{text-anchor:end;font-weight:bold}
svg #verdict-mark.fail .vlabel{fill:` + colBad + `}
svg #verdict-mark.ok .vlabel{fill:` + colGood + `}
.legend span{display:inline-block;width:12px;height:10px;margin:0 4px 0 10px;vertical-align:middle}
table{border-collapse:collapse;font:12px monospace}
td{padding:1px 8px;vertical-align:top}
`

// legend says what the colours mean.
var legend = `<p class="legend">` +
	`<span style="background:` + markColor[timeline.Follower] + `"></span>follower` +
	`<span style="background:` + markColor[timeline.Candidate] + `"></span>candidate` +
	`<span style="background:` + markColor[timeline.Leader] + `"></span>leader (white: its token)` +
	`<span style="background:` + markColor[timeline.Expiring] + `"></span>expiring` +
	`<span style="background:` + colFault + `;opacity:.4"></span>fault (blank lane: down)` +
	`<span style="background:` + colWrite + `"></span>store write accepted` +
	`<span style="background:` + colConflict + `"></span>swap conflicted` +
	`<span style="background:` + colBad + `"></span>violation</p>` + "\n"

// script zooms and pans the picture: every element placed in time carries
// data-a (and data-b for a stretch) in nanoseconds.
const script = `(function(){
var s=document.getElementById('picture'),L=+s.dataset.left,W=+s.dataset.width,E=+s.dataset.end,a=0,b=E;
var els=s.querySelectorAll('[data-a]'),rng=document.getElementById('range'),cur=document.getElementById('cursor');
function X(t){return L+(t-a)*W/(b-a);}
function fmt(t){return (t/1e9).toFixed(3)+'s';}
function draw(){
 for(var i=0;i<els.length;i++){
  var e=els[i],d=e.dataset,x0=X(+d.a);
  if(e.tagName==='line'){e.setAttribute('x1',x0);e.setAttribute('x2',x0);continue;}
  if(d.b!==undefined){e.setAttribute('x',x0);e.setAttribute('width',Math.max(X(+d.b)-x0,+(d.min||0)));continue;}
  e.setAttribute('x',x0+(+(d.dx||0)));
 }
 rng.textContent='showing '+fmt(a)+' to '+fmt(b);
}
function clamp(){if(a<0){b-=a;a=0;}if(b>E){a-=b-E;b=E;}if(a<0){a=0;}}
function zoom(f,c){var w=Math.min(Math.max((b-a)*f,1e6),E);a=c-(c-a)*w/(b-a);b=a+w;clamp();draw();}
function tAt(ev){var p=s.createSVGPoint();p.x=ev.clientX;p.y=ev.clientY;var q=p.matrixTransform(s.getScreenCTM().inverse());return a+(q.x-L)*(b-a)/W;}
document.getElementById('zin').onclick=function(){zoom(0.5,(a+b)/2);};
document.getElementById('zout').onclick=function(){zoom(2,(a+b)/2);};
document.getElementById('zfit').onclick=function(){a=0;b=E;draw();};
s.addEventListener('wheel',function(ev){if(!ev.shiftKey&&!ev.ctrlKey){return;}ev.preventDefault();zoom(ev.deltaY<0?0.8:1.25,Math.min(Math.max(tAt(ev),a),b));},{passive:false});
var drag=null;
s.addEventListener('mousedown',function(ev){drag={x:ev.clientX,a:a,b:b};});
window.addEventListener('mouseup',function(){drag=null;});
s.addEventListener('mousemove',function(ev){
 var t=tAt(ev);cur.textContent=(t>=0&&t<=E)?'cursor at '+fmt(t):'';
 if(drag){var k=s.viewBox.baseVal.width/s.getBoundingClientRect().width,dt=(ev.clientX-drag.x)*k*(drag.b-drag.a)/W;a=drag.a-dt;b=drag.b-dt;clamp();draw();}
});
rng.textContent='showing '+fmt(a)+' to '+fmt(b);
})();
`
