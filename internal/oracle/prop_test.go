package oracle

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// replica is an oracle with the snapshots of the writes sent to it.
type replica struct {
	o     *Oracle
	snaps map[string]Snapshot
}

func (r replica) clone() replica { return replica{r.o.Clone(), maps.Clone(r.snaps)} }

// step is one event of a random history.
type step struct {
	desc string
	do   func(replica)
}

var (
	propRevs    = []Rev{0, 1, 2, 3, 4, 5, denseLimit, denseLimit + 7}
	propHolders = []string{"", "a", "b", "c"}
)

func drawRec(t *rapid.T) Rec {
	return Rec{
		Holder:      rapid.SampledFrom(propHolders).Draw(t, "holder"),
		Token:       rapid.Uint64Range(0, 6).Draw(t, "token"),
		Transitions: rapid.Uint64Range(0, 2).Draw(t, "transitions"),
	}
}

// drawHistory draws the parameters and events of a history: often a
// prefix of a corpus history (to reach excused overlaps), then random
// events over few nodes, revisions and tokens, so that writes, deliveries
// and terms collide, and many at one instant.
func drawHistory(t *rapid.T, corpus []history) (p Params, steps []step, prefix int) {
	p = Params{
		Drift:            rapid.SampledFrom([]float64{0, 0.1}).Draw(t, "drift"),
		MaxRenewDeadline: time.Duration(rapid.IntRange(1, 5).Draw(t, "deadline")) * time.Millisecond,
		Complete:         rapid.Float64().Draw(t, "complete") < 0.8,
		LossyStore:       rapid.Bool().Draw(t, "lossy"),
	}
	var at Time
	if rapid.Float64().Draw(t, "fromCorpus") < 0.7 {
		h := rapid.SampledFrom(corpus).Draw(t, "prefix")
		p = h.params
		for _, ev := range h.events[:len(h.events)-rapid.IntRange(0, len(h.events)).Draw(t, "prefixCut")] {
			one := history{events: []event{ev}}
			steps = append(steps, step{fmt.Sprintf("%s:%d", h.name, ev.line), func(r replica) {
				if err := one.replay(r.o, r.snaps); err != nil {
					panic(err)
				}
			}})
			at = ev.at
		}
	}
	return p, append(steps, drawEvents(t, at, "r")...), len(steps)
}

// drawEvents draws random events from at on, naming its writes with
// prefix.
func drawEvents(t *rapid.T, at Time, prefix string) []step {
	sent := 0
	var steps []step
	for range rapid.IntRange(0, 50).Draw(t, "events") {
		at += Time(rapid.SampledFrom([]int{0, 0, 0, 1, 2}).Draw(t, "gap")) * ms
		now := at
		n := Node{ID: rapid.IntRange(-1, 2).Draw(t, "node"), Gen: uint32(rapid.IntRange(0, 1).Draw(t, "gen"))}
		rev := rapid.SampledFrom(propRevs).Draw(t, "rev")
		rec := drawRec(t)
		var s step
		switch kind := rapid.IntRange(0, 11).Draw(t, "kind"); kind {
		case 0:
			s = step{"boot", func(r replica) { r.o.Boot(n, now) }}
		case 1:
			s = step{"down", func(r replica) { r.o.Down(n, now) }}
		case 2:
			id := sent
			sent++
			s = step{fmt.Sprintf("send %s%d", prefix, id), func(r replica) { r.snaps[fmt.Sprint(prefix, id)] = r.o.Send(n, now, rev, rec) }}
		case 3, 4:
			if sent == 0 {
				continue
			}
			id := rapid.IntRange(0, sent-1).Draw(t, "op")
			clock := rapid.Uint64Range(0, 5).Draw(t, "clock")
			s = step{fmt.Sprintf("apply %s%d", prefix, id), func(r replica) { r.o.Applied(now, r.snaps[fmt.Sprint(prefix, id)], rev, rec, clock) }}
		case 5, 6:
			present := rapid.Float64().Draw(t, "present") < 0.9
			s = step{"deliver", func(r replica) { r.o.Deliver(n, now, rev, rec, present) }}
		case 7:
			s = step{"rollback", func(r replica) { r.o.Rollback(now, rev) }}
		case 8:
			s = step{"restore", func(r replica) { r.o.Restore(now, rev, rec) }}
		case 9:
			s = step{"lose", func(r replica) { r.o.Lose(now) }}
		case 10:
			s = step{"forge", func(r replica) { r.o.Forge(now, rev, rec) }}
		default:
			lead := rapid.Bool().Draw(t, "lead")
			s = step{"belief", func(r replica) { r.o.Belief(n, now, lead, rec.Token) }}
		}
		s.desc = fmt.Sprintf("@%v %s %+v rev=%d %+v", time.Duration(now), s.desc, n, rev, rec)
		steps = append(steps, s)
	}
	return steps
}

// A random history never panics, and an oracle cloned part way through
// it, given the rest, ends as the original and as an oracle given the
// whole history do, whatever another clone of it is given meanwhile; and
// that other clone ends as an oracle given its history does.
func TestRandomHistoriesReplayTheSameOnAClone(t *testing.T) {
	corpus := loadCorpus(t)
	// Ten runs of rapid's hundred: aliasing between a clone and its
	// original shows only when a slice has room to grow at the cut.
	for range 10 {
		rapid.Check(t, replaysTheSame(corpus))
	}
}

func replaysTheSame(corpus []history) func(*rapid.T) {
	return func(t *rapid.T) {
		p, steps, prefix := drawHistory(t, corpus)
		cut := rapid.IntRange(0, len(steps)).Draw(t, "cut")
		if rapid.Bool().Draw(t, "cutAfterPrefix") {
			cut = prefix // where the corpus left excuses open
		}
		var last Time
		a := replica{New(p), map[string]Snapshot{}}
		c := replica{New(p), map[string]Snapshot{}}
		for _, s := range steps[:cut] {
			s.do(a)
			s.do(c)
			last = a.o.now
		}
		before := a.o.AppendKey(nil)
		b, d := a.clone(), a.clone()
		if !bytes.Equal(b.o.AppendKey(nil), before) {
			t.Fatal("a clone's key differs from its original's")
		}
		e := replica{New(p), map[string]Snapshot{}} // b's history, never cloned
		for _, s := range steps[:cut] {
			s.do(e)
		}
		for _, s := range drawEvents(t, last, "other") {
			s.do(b) // another future, on a clone
			s.do(e)
		}
		if !bytes.Equal(a.o.AppendKey(nil), before) {
			t.Fatal("events given to a clone changed its original")
		}
		for _, s := range steps[cut:] {
			t.Log(s.desc)
			for _, r := range []replica{a, c, d} {
				s.do(r)
			}
			at, ok := a.o.Pending()
			for _, r := range []replica{c, d} {
				if at2, ok2 := r.o.Pending(); at2 != at || ok2 != ok {
					t.Fatalf("Pending %v, %v on the original and %v, %v on another", at, ok, at2, ok2)
				}
			}
		}
		ka := a.o.AppendKey(nil)
		va := a.o.Violations()
		if a.o.Failed() != (len(va) > 0) {
			t.Fatalf("Failed %v with violations %v", a.o.Failed(), va)
		}
		if !bytes.Equal(b.o.AppendKey(nil), e.o.AppendKey(nil)) || !slices.Equal(b.o.Violations(), e.o.Violations()) {
			t.Fatal("events given to its original changed a clone")
		}
		for _, r := range []replica{c, d} {
			if !bytes.Equal(r.o.AppendKey(nil), ka) {
				t.Fatal("one history gave different keys")
			}
			if v := r.o.Violations(); !slices.Equal(v, va) {
				t.Fatalf("verdicts differ:\n%v\n%v", va, v)
			}
		}
	}
}
