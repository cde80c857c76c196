package picture

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tenure-go/tenure/sim/internal/timeline"
)

// However many changes a lane has, merge returns at most Cols+1 spans
// that cover the run without gap, every one but the last lasting at least
// q, and a span that merged a leader shows it.
func TestMergeBoundsSpansAndKeepsLeaders(t *testing.T) {
	for _, changes := range []int{0, 1, 10, Cols, 50 * Cols} {
		r := rand.New(rand.NewPCG(uint64(changes), 1))
		tl := &timeline.Timeline{IDs: []string{"n0"}, End: 3600e9}
		at := int64(0)
		for range changes {
			at += r.Int64N(2 * tl.End / int64(changes+1))
			tl.State(min(at, tl.End), 0, timeline.Mark(1+r.IntN(4)))
		}
		p := &page{tl: tl, end: tl.End, nodes: 1}
		p.q = (p.end + Cols - 1) / Cols
		ex := p.exactSpans(0)
		got := merge(ex, p.q)
		if len(got) > Cols+1 {
			t.Errorf("%d changes: %d spans, want at most %d", changes, len(got), Cols+1)
		}
		if got[0].from != 0 || got[len(got)-1].to != p.end {
			t.Errorf("%d changes: spans cover %d to %d, want 0 to %d", changes, got[0].from, got[len(got)-1].to, p.end)
		}
		for i, s := range got {
			if i > 0 && s.from != got[i-1].to {
				t.Fatalf("%d changes: span %d starts at %d, the one before ends at %d", changes, i, s.from, got[i-1].to)
			}
			if i < len(got)-1 && s.to-s.from < p.q {
				t.Fatalf("%d changes: span %d lasts %d, shorter than %d", changes, i, s.to-s.from, p.q)
			}
		}
		for _, e := range ex {
			if e.mark != timeline.Leader {
				continue
			}
			for _, s := range got {
				if s.from <= e.from && e.from < s.to && s.mark != timeline.Leader {
					t.Fatalf("%d changes: the leader span at %d merged into a %s span", changes, e.from, markName[s.mark])
				}
			}
		}
	}
}

// A change at the very end of the run (a term starting at the instant of
// a violation) keeps a span of its own, empty, so that it can be drawn.
func TestExactSpansKeepAChangeAtTheEnd(t *testing.T) {
	tl := &timeline.Timeline{IDs: []string{"n0"}, End: 10e9}
	tl.State(0, 0, timeline.Follower)
	tl.State(10e9, 0, timeline.Leader)
	p := &page{tl: tl, end: tl.End, nodes: 1}
	ex := p.exactSpans(0)
	if len(ex) != 2 || ex[1].mark != timeline.Leader || ex[1].from != 10e9 || ex[1].to != 10e9 {
		t.Fatalf("spans %+v, want a follower span then an empty leader span at 10s", ex)
	}
}

// maxBytes is the most a page of a run of nodes takes, whatever the
// run's length, with the simulator's lengths of names and texts: what its
// bounded parts (Cols+1 spans and as many tokens a lane, Cols marks of
// each of three kinds on the store lane, MaxRows faults, MaxRows rows in
// each of three tables) take at 300 bytes each, and 64 KiB more.
func maxBytes(nodes int) int {
	return 300*(2*(Cols+1)*nodes+3*Cols+2*MaxRows+3*MaxRows) + 64<<10
}

// A run far longer and busier than any sweep's (16 nodes, 400,000 changes
// of state, 200,000 writes, 20,000 faults, terms and changes of holder)
// makes a page no larger than maxBytes.
func TestWriteStaysUnderTheBoundForHugeRuns(t *testing.T) {
	const nodes = 16
	r := rand.New(rand.NewPCG(1, 2))
	tl := &timeline.Timeline{End: 48 * 3600e9, Header: []string{"tenure sim: a huge run"}, Verdict: "OK"}
	for i := range nodes {
		tl.IDs = append(tl.IDs, "n"+string(rune('a'+i)))
		tl.Rates = append(tl.Rates, 1+0.1*r.Float64())
	}
	for i := range 400_000 {
		at := tl.End * int64(i) / 400_000
		node := r.IntN(nodes)
		m := timeline.Mark(1 + r.IntN(4))
		tl.State(at, node, m)
		if m == timeline.Leader {
			tl.AddTerm(at, node, uint64(i))
		}
	}
	for i := range 200_000 {
		tl.AddWrite(timeline.Write{At: tl.End * int64(i) / 200_000, Node: r.IntN(nodes), Rev: uint64(i), Holder: "na", Token: uint64(i), Conflict: i%2 == 0})
	}
	for i := range 20_000 {
		at := tl.End * int64(i) / 20_000
		tl.AddFault(timeline.Fault{At: at, Dur: 30e9, Node: r.IntN(nodes+1) - 1, Letter: 'p', Kind: "pause", Text: "pause nc for 30s"})
		tl.AddStore(at, "rev 12345 holder=\"nc\" token=12345 transitions=99 (written by nc)"+string(rune('a'+i%20)))
	}
	var b strings.Builder
	if err := Write(&b, tl); err != nil {
		t.Fatal(err)
	}
	if b.Len() > maxBytes(nodes) {
		t.Fatalf("the page takes %d bytes, want at most %d", b.Len(), maxBytes(nodes))
	}
	t.Logf("%d nodes, %d changes, %d writes: %d bytes (bound %d)", nodes, len(tl.Changes), len(tl.Writes), b.Len(), maxBytes(nodes))
}
