package browser

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/tenure-go/tenure/sim"
)

// drawRun runs o, recorded, and returns its result and its picture.
func drawRun(t *testing.T, o sim.Options) (sim.Result, []byte) {
	t.Helper()
	o.Record = true
	c, err := sim.New(o)
	if err != nil {
		t.Fatal(err)
	}
	res := c.Run()
	var b bytes.Buffer
	if err := c.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	return res, b.Bytes()
}

// box is an element's place on the page, in CSS pixels.
type box struct {
	X, Y, W, H float64
}

// pictureShown is what the page shows, as the browser laid it out.
type pictureShown struct {
	Picture box
	Lanes   []box  // each lane's background
	Spans   int    // the lanes' spans with an area
	Mark    box    // the verdict's line
	Class   string // the verdict mark's class: ok or fail
	OnTop   bool   // the verdict's line is what shows at its middle
	Overlap []box  // the outlined leader spans
	Nodes   []string
	ViewW   float64 // the window's width
}

// shown measures the picture loaded in the browser.
const shown = `(() => {
  const r = e => { const b = e.getBoundingClientRect(); return {X: b.x, Y: b.y, W: b.width, H: b.height}; };
  for (const d of document.querySelectorAll('details')) d.open = false;
  const line = document.querySelector('#verdict-mark .vline');
  const lb = line.getBoundingClientRect();
  const top = document.elementFromPoint(lb.x + lb.width / 2, lb.y + lb.height / 2);
  return {
    Picture: r(document.getElementById('picture')),
    Lanes: [...document.querySelectorAll('.lane .lanebg')].map(r),
    Spans: [...document.querySelectorAll('.lane .span')].filter(e => { const b = e.getBoundingClientRect(); return b.width > 0 && b.height > 0; }).length,
    Mark: r(line),
    Class: document.getElementById('verdict-mark').getAttribute('class'),
    OnTop: top === line,
    Overlap: [...document.querySelectorAll('#verdict-mark .overlap')].map(r),
    Nodes: [...document.querySelectorAll('#verdict-mark .overlap')].map(e => e.getAttribute('data-node')),
    ViewW: window.innerWidth,
  };
})()`

// load shows page in the browser and returns what it shows, and the
// browser's context.
func load(t *testing.T, page []byte) (*pictureShown, context.Context) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			t.Errorf("the picture fetched %s: it must fetch nothing", r.URL.Path)
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(page)
	}))
	t.Cleanup(srv.Close)
	ctx := New(t)
	// Navigate returns once the page has loaded; a page that hangs fails
	// the test rather than stalling it.
	tctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(tctx, chromedp.Navigate(srv.URL)); err != nil {
		t.Fatal(err)
	}
	got, err := chromedp.Run(tctx, chromedp.Evaluate[pictureShown](shown))
	if err != nil {
		t.Fatal(err)
	}
	return &got, ctx
}

// inside reports whether b has an area and lies within the window's width.
func (b box) inside(width float64) bool {
	return b.W > 0 && b.H > 0 && b.X >= 0 && b.X+b.W <= width
}

// lineInside reports whether b, a vertical line's box (no width), has a
// height and lies within the window's width.
func (b box) lineInside(width float64) bool {
	return b.H > 0 && b.X >= 0 && b.X <= width
}

// The picture of a run that passed renders: a lane per node, each with an
// area, spans drawn on them, and the verdict's green line at the end; its
// zoom redraws it.
func TestPictureOfAPassingRunRenders(t *testing.T) {
	o := sim.Options{Seed: 7, Nodes: 5, Duration: 10 * time.Minute, Faults: sim.AllFaults()}
	o.Store.MayLoseRecords = true
	res, page := drawRun(t, o)
	if res.Violation != nil {
		t.Fatalf("seed 7: %v", res.Violation)
	}
	got, ctx := load(t, page)
	if !got.Picture.inside(got.ViewW) {
		t.Fatalf("the picture lies at %+v, outside a window %.0f wide", got.Picture, got.ViewW)
	}
	if len(got.Lanes) != o.Nodes {
		t.Fatalf("%d lanes rendered, want %d", len(got.Lanes), o.Nodes)
	}
	for i, l := range got.Lanes {
		if !l.inside(got.ViewW) {
			t.Errorf("lane %d renders at %+v", i, l)
		}
	}
	if got.Spans < o.Nodes {
		t.Errorf("%d spans rendered on %d lanes", got.Spans, o.Nodes)
	}
	if got.Class != "ok" || !got.Mark.lineInside(got.ViewW) || len(got.Overlap) != 0 {
		t.Errorf("verdict %q at %+v with %d overlaps, want ok, shown, none", got.Class, got.Mark, len(got.Overlap))
	}
	Screenshot(ctx, t, "sim-picture-pass")

	// Zooming in redraws the middle half of the run across the picture.
	zoomed, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('zin').click(), document.getElementById('range').textContent`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "showing 150.000s to 450.000s"; zoomed != want {
		t.Errorf("zoomed in: %q, want %q", zoomed, want)
	}
}

// The picture of a known-bad schedule (the leader's process and clock
// stop for 30s and nothing reveals it) shows the violation: its red line
// is visible, on top at its middle, and the two leaders' spans are
// outlined, on the two lanes the violation names.
func TestPictureOfAKnownBadScheduleShowsTheViolation(t *testing.T) {
	o := sim.Options{Seed: 1, Nodes: 3, Duration: time.Minute,
		Schedule: []sim.Fault{{At: 10 * time.Second, Kind: sim.FaultClockStop, AtLeader: true, Hidden: true, Dur: 30 * time.Second}}}
	res, page := drawRun(t, o)
	if res.Violation == nil || res.Violation.Check != sim.CheckOneLeader {
		t.Fatalf("violation %v, want two leaders", res.Violation)
	}
	got, ctx := load(t, page)
	if len(got.Lanes) != o.Nodes {
		t.Fatalf("%d lanes rendered, want %d", len(got.Lanes), o.Nodes)
	}
	if got.Class != "fail" || !got.Mark.lineInside(got.ViewW) || !got.OnTop {
		t.Fatalf("verdict %q, line at %+v (on top: %v), want fail, inside the window, on top", got.Class, got.Mark, got.OnTop)
	}
	if got.Mark.H < float64(o.Nodes)*20 {
		t.Errorf("the violation's line is %.0f pixels high: it does not cross the lanes", got.Mark.H)
	}
	if len(got.Overlap) != 2 {
		t.Fatalf("%d leader spans outlined, want 2", len(got.Overlap))
	}
	for i, b := range got.Overlap {
		if !b.inside(got.ViewW + 10) {
			t.Errorf("the outline of %s renders at %+v", got.Nodes[i], b)
		}
		if !bytes.Contains([]byte(res.Violation.Msg), []byte(got.Nodes[i]+" ")) {
			t.Errorf("outlined %s, which the violation %q does not name", got.Nodes[i], res.Violation.Msg)
		}
	}
	Screenshot(ctx, t, "sim-picture-violation")
}
