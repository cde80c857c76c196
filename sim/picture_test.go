package sim

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tenure-go/tenure/sim/internal/picturetest"
)

// elem is an element of a parsed page.
type elem struct {
	name  string
	attr  map[string]string
	kids  []*elem
	text  string
	under *elem
}

// parsePage parses an HTML page as XML, strictly: it fails t unless the
// page is well-formed.
func parsePage(t *testing.T, page []byte) *elem {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(page))
	d.Strict = true
	root := &elem{name: "#document"}
	cur := root
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the page is not well-formed: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			e := &elem{name: tok.Name.Local, attr: map[string]string{}, under: cur}
			for _, a := range tok.Attr {
				e.attr[a.Name.Local] = a.Value
			}
			cur.kids = append(cur.kids, e)
			cur = e
		case xml.EndElement:
			cur = cur.under
		case xml.CharData:
			cur.text += string(tok)
		}
	}
	if cur != root {
		t.Fatalf("the page leaves <%s> open", cur.name)
	}
	return root
}

// all returns the elements under e (e included) that match.
func (e *elem) all(match func(*elem) bool) []*elem {
	var out []*elem
	if match(e) {
		out = append(out, e)
	}
	for _, k := range e.kids {
		out = append(out, k.all(match)...)
	}
	return out
}

// class reports whether e has class c.
func (e *elem) class(c string) bool {
	return strings.Contains(" "+e.attr["class"]+" ", " "+c+" ")
}

// byClass returns the elements under e of class c.
func (e *elem) byClass(c string) []*elem {
	return e.all(func(k *elem) bool { return k.class(c) })
}

// byID returns the element under e with id, or fails t.
func (e *elem) byID(t *testing.T, id string) *elem {
	t.Helper()
	got := e.all(func(k *elem) bool { return k.attr["id"] == id })
	if len(got) != 1 {
		t.Fatalf("%d elements with id %q, want 1", len(got), id)
	}
	return got[0]
}

// num is an attribute as a number, or fails t.
func (e *elem) num(t *testing.T, name string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(e.attr[name], 64)
	if err != nil {
		t.Fatalf("<%s> %s=%q: %v", e.name, name, e.attr[name], err)
	}
	return v
}

// drawRun runs o recorded and returns its result and its page, parsed.
func drawRun(t *testing.T, o Options) (Result, *elem, []byte) {
	t.Helper()
	o.Record = true
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	res := c.Run()
	var b bytes.Buffer
	if err := c.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	return res, parsePage(t, b.Bytes()), b.Bytes()
}

// hiddenStopSchedule is a known-bad schedule: the leader's process and
// clock stop for 30s at 10s and nothing reveals it on resume (ρ = 1, past
// what any timings tolerate), so that it resumes believing it leads while
// another node has taken over. Revealed (hidden false), the same stop is
// counted and every check holds.
func hiddenStopSchedule(hidden bool) Options {
	return Options{Seed: 1, Nodes: 3, Duration: time.Minute,
		Schedule: []Fault{{At: 10 * time.Second, Kind: FaultClockStop, AtLeader: true, Hidden: hidden, Dur: 30 * time.Second}}}
}

// A picture is a well-formed page with one lane per node, each fault of
// the schedule, the store's accepted writes, the terms' tokens and the
// verdict at the end of a run that passed.
func TestWriteHTMLDrawsALanePerNodeTheFaultsAndTheWrites(t *testing.T) {
	o := sweepOptions(7)
	res, page, _ := drawRun(t, o)
	if res.Violation != nil {
		t.Fatalf("seed 7: %v, want a run that passes", res.Violation)
	}
	lanes := page.byClass("lane")
	if len(lanes) != o.Nodes {
		t.Fatalf("%d lanes, want %d", len(lanes), o.Nodes)
	}
	for i, l := range lanes {
		if id := l.attr["id"]; id != "lane-"+strconv.Itoa(i) {
			t.Errorf("lane %d has id %q", i, id)
		}
		if len(l.byClass("span")) == 0 {
			t.Errorf("lane %d draws no span", i)
		}
	}
	if n := len(page.byClass("leader")); n < res.Terms/2 || n == 0 {
		t.Errorf("%d leader spans for %d terms", n, res.Terms)
	}
	if len(page.byClass("token")) == 0 {
		t.Error("no token drawn")
	}
	c, _ := New(o)
	if got, want := len(page.byClass("fault")), len(c.Schedule()); got != want {
		t.Errorf("%d faults drawn, want the schedule's %d", got, want)
	}
	if len(page.byClass("write")) == 0 {
		t.Error("no store write drawn")
	}
	v := page.byID(t, "verdict-mark")
	if v.attr["class"] != "ok" || v.num(t, "data-at") != float64(o.Duration) {
		t.Errorf("verdict mark %v, want ok at the end (%d)", v.attr, int64(o.Duration))
	}
	if len(page.byClass("overlap")) != 0 {
		t.Error("a run that passed has an overlap outlined")
	}
}

// The known-bad schedule's violation is marked at its instant: a red
// line at the violation's time, and the two leaders' spans that overlap
// there outlined, one on each of the two nodes the violation names. The
// same schedule with the stop revealed passes and marks no violation.
func TestWriteHTMLMarksTheViolationOfAKnownBadScheduleAtItsInstant(t *testing.T) {
	res, page, _ := drawRun(t, hiddenStopSchedule(true))
	v := res.Violation
	if v == nil || v.Check != CheckOneLeader {
		t.Fatalf("violation %v, want two leaders", v)
	}
	mark := page.byID(t, "verdict-mark")
	if mark.attr["class"] != "fail" || mark.num(t, "data-at") != float64(v.At) {
		t.Fatalf("verdict mark %v, want fail at %d", mark.attr, int64(v.At))
	}
	svg := page.byID(t, "picture")
	left, width, end := svg.num(t, "data-left"), svg.num(t, "data-width"), svg.num(t, "data-end")
	wantX := left + width*float64(v.At)/end
	lines := mark.byClass("vline")
	if len(lines) != 1 || lines[0].num(t, "x1") != float64(int(wantX*10+0.5))/10 {
		t.Fatalf("violation line %v, want one at x=%.1f", lines, wantX)
	}
	over := mark.byClass("overlap")
	var nodes []string
	for _, o := range over {
		nodes = append(nodes, o.attr["data-node"])
		if a, b := o.num(t, "data-a"), o.num(t, "data-b"); a > float64(v.At) || b < float64(v.At) {
			t.Errorf("outlined span of %s from %.0f to %.0f does not hold the violation's instant %d", o.attr["data-node"], a, b, int64(v.At))
		}
	}
	if len(nodes) != 2 {
		t.Fatalf("outlined spans of %v, want two", nodes)
	}
	for _, n := range nodes {
		if !strings.Contains(v.Msg, n+" ") {
			t.Errorf("outlined %s, which the violation %q does not name", n, v.Msg)
		}
	}
	if len(mark.byClass("overlapzone")) != 2 {
		t.Errorf("%d overlap zones, want one on each leader's lane", len(mark.byClass("overlapzone")))
	}
	if got := page.byID(t, "verdict").text; !strings.Contains(got, "one-leader check failed") {
		t.Errorf("verdict %q", got)
	}

	res, page, _ = drawRun(t, hiddenStopSchedule(false))
	if res.Violation != nil {
		t.Fatalf("stop revealed: %v", res.Violation)
	}
	if m := page.byID(t, "verdict-mark"); m.attr["class"] != "ok" || len(page.byClass("overlap")) != 0 {
		t.Errorf("stop revealed: verdict mark %v with %d overlaps, want ok and none", m.attr, len(page.byClass("overlap")))
	}
}

// A conflicting swap is drawn on the store's lane below the accepted ones.
func TestWriteHTMLDrawsConflictingSwaps(t *testing.T) {
	o := Options{Seed: 3, Nodes: 3, Duration: 2 * time.Minute,
		Schedule: []Fault{{At: 20 * time.Second, Kind: FaultPartition, AtLeader: true, Responses: true, Dur: 40 * time.Second}}}
	_, page, _ := drawRun(t, o)
	ok, bad := page.byClass("ok"), page.byClass("conflict")
	if len(ok) == 0 || len(bad) == 0 {
		t.Fatalf("%d accepted and %d conflicting writes drawn, want some of each", len(ok), len(bad))
	}
}

// A picture's size is bounded: a run of six hours, every fault on, draws
// at most 1201 spans a lane and 1200 marks of each kind on the store lane,
// in under 2 MiB (sim/internal/picture's own test bounds any run).
func TestWriteHTMLStaysBoundedForLongRuns(t *testing.T) {
	o := sweepOptions(5)
	o.Duration = 6 * time.Hour
	o.MaxEvents = 1 << 30
	res, page, raw := drawRun(t, o)
	if res.Violation != nil {
		t.Fatalf("seed 5 for 6h: %v", res.Violation)
	}
	for _, l := range page.byClass("lane") {
		if n := len(l.byClass("span")); n > 1201 {
			t.Errorf("%s draws %d spans, want at most 1201", l.attr["id"], n)
		}
	}
	if n := len(page.byClass("ok")); n > 1200 {
		t.Errorf("%d accepted-write marks, want at most 1200", n)
	}
	if len(raw) > 2<<20 {
		t.Errorf("a picture of %v takes %d bytes, want at most 2 MiB", o.Duration, len(raw))
	}
	t.Logf("%v, %d nodes: %d events, %d terms, picture %d bytes", o.Duration, o.Nodes, res.Events, res.Terms, len(raw))
}

// A run made without Options.Record has no picture.
func TestWriteHTMLNeedsARecordedRun(t *testing.T) {
	c, err := New(hiddenStopSchedule(true))
	if err != nil {
		t.Fatal(err)
	}
	c.Run()
	if err := c.WriteHTML(io.Discard); !errors.Is(err, ErrNotRecorded) {
		t.Fatalf("WriteHTML: %v, want ErrNotRecorded", err)
	}
}

// Check keeps the picture of a failing seed where it says, with
// -artifacts and without.
func TestCheckWritesThePictureOfAFailingSeed(t *testing.T) {
	bad := hiddenStopSchedule(true)
	bad.Seeds = "1"
	picturetest.KeptOnFailure(t, 1, func() { Check(t, bad) })
}

// Check with a TB that keeps no artifacts (not a *testing.T) writes a
// failing seed's picture under os.TempDir and names it in the failure.
func TestCheckNamesThePictureInTheFailure(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Setenv(EnvSeeds, "")
	tb := &fakeTB{}
	bad := hiddenStopSchedule(true)
	bad.Seeds = "1-3"
	Check(tb, bad)
	if len(tb.errs) == 0 {
		t.Fatal("the known-bad schedule passed")
	}
	path := filepath.Join(tmp, "tenure-sim", "TestX_sub", "seed-1.html")
	if !strings.Contains(tb.errs[0], "picture: "+path+"\n") {
		t.Fatalf("failure does not name %s:\n%s", path, tb.errs[0])
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
}

// A fault of the store (a rollback) shades every lane; a fault of a node
// (a crash) shades its lane alone.
func TestWriteHTMLShadesStoreFaultsAcrossEveryLane(t *testing.T) {
	o := Options{Seed: 2, Nodes: 3, Duration: time.Minute, Store: StoreModel{MayLoseRecords: true},
		Schedule: []Fault{
			{At: 20 * time.Second, Kind: FaultRollback, Revision: 2},
			{At: 30 * time.Second, Kind: FaultCrash, Node: 1, Dur: 10 * time.Second},
		}}
	_, page, _ := drawRun(t, o)
	lane := page.byID(t, "lane-0").byClass("lanebg")[0]
	laneH := page.byID(t, "lane-1").byClass("lanebg")[0].num(t, "y") - lane.num(t, "y")
	want := map[string]float64{"rollback": 3 * laneH, "crash": laneH}
	faults := page.byClass("fault")
	if len(faults) != 2 {
		t.Fatalf("%d faults drawn, want 2", len(faults))
	}
	for _, f := range faults {
		if k := f.attr["data-kind"]; f.num(t, "height") != want[k] {
			t.Errorf("the %s is %.0f high, want %.0f", k, f.num(t, "height"), want[k])
		}
	}
}
