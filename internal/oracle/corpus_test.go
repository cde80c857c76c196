package oracle

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A history file (testdata/*.hist) holds one event a line; # starts a
// comment. A line may carry its instant as @12ms (any time.ParseDuration
// form, or @0); a line without one happens at the previous line's instant.
// A node is its id, with gen=K for an incarnation after the first; a
// record is holder=NAME (empty: released) tok=N and optionally trans=N,
// dur=D.
//
//	params deadline=4ms drift=0 slack=0 lossy incomplete
//	boot 0 [gen=1]
//	down 0 [gen=1]
//	send 1 op7 exp=3 holder=b tok=9    (node -1: a writer outside the election)
//	apply op7 rev=4 holder=b tok=9 clock=0
//	deliver 1 rev=4 holder=b tok=9     (deliver 1 absent: an absence)
//	rollback to=3
//	restore rev=1 holder= tok=0
//	lose
//	forge rev=5 holder= tok=0
//	belief 0 lead tok=9                (belief 0 none)
//	want: ok                           (or one leader, tokens, or both)
//
// The params line must come first and want last.
type history struct {
	name   string
	params Params
	events []event
	want   []string // the checks it must break, sorted; none: safe
}

// event is one parsed line.
type event struct {
	line int
	at   Time
	verb string
	node Node
	op   string
	kv   map[string]string
	flag string // a bare word after the node: lead, none, absent
}

func parseHistory(name, text string) (history, error) {
	h := history{name: name, params: Params{MaxRenewDeadline: 4 * time.Millisecond, Complete: true}}
	var at Time
	sawWant := false
	for i, raw := range strings.Split(text, "\n") {
		ln := i + 1
		line, _, _ := strings.Cut(raw, "#")
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if sawWant {
			return h, fmt.Errorf("%s:%d: an event after want", name, ln)
		}
		if w, ok := strings.CutPrefix(line, "want:"); ok {
			sawWant = true
			for c := range strings.SplitSeq(w, ",") {
				switch c = strings.TrimSpace(c); c {
				case "ok":
				case CheckOneLeader, CheckTokens:
					h.want = append(h.want, c)
				default:
					return h, fmt.Errorf("%s:%d: want %q: not ok, %q or %q", name, ln, c, CheckOneLeader, CheckTokens)
				}
			}
			slices.Sort(h.want)
			continue
		}
		f := strings.Fields(line)
		ev := event{line: ln, verb: f[0], kv: map[string]string{}}
		var rest []string
		for _, w := range f[1:] {
			if t, ok := strings.CutPrefix(w, "@"); ok {
				d, err := time.ParseDuration(t)
				if err != nil {
					return h, fmt.Errorf("%s:%d: instant %q: %w", name, ln, w, err)
				}
				if Time(d) < at {
					return h, fmt.Errorf("%s:%d: instant %v before the previous line's", name, ln, d)
				}
				at = Time(d)
				continue
			}
			if k, v, ok := strings.Cut(w, "="); ok {
				ev.kv[k] = v
				continue
			}
			rest = append(rest, w)
		}
		ev.at = at
		if ev.verb == "params" {
			if len(h.events) > 0 {
				return h, fmt.Errorf("%s:%d: params after an event", name, ln)
			}
			if err := parseParams(&h.params, ev, rest); err != nil {
				return h, fmt.Errorf("%s:%d: %w", name, ln, err)
			}
			continue
		}
		needNode := map[string]bool{"boot": true, "down": true, "send": true, "deliver": true, "belief": true}
		if needNode[ev.verb] {
			if len(rest) == 0 {
				return h, fmt.Errorf("%s:%d: %s needs a node", name, ln, ev.verb)
			}
			id, err := strconv.Atoi(rest[0])
			if err != nil {
				return h, fmt.Errorf("%s:%d: node %q: %w", name, ln, rest[0], err)
			}
			ev.node.ID = id
			if g, ok := ev.kv["gen"]; ok {
				n, err := strconv.ParseUint(g, 10, 32)
				if err != nil {
					return h, fmt.Errorf("%s:%d: gen %q: %w", name, ln, g, err)
				}
				ev.node.Gen = uint32(n)
			}
			rest = rest[1:]
		}
		switch ev.verb {
		case "send", "apply":
			if len(rest) != 1 {
				return h, fmt.Errorf("%s:%d: %s needs one operation name", name, ln, ev.verb)
			}
			ev.op = rest[0]
		case "belief":
			if len(rest) != 1 || rest[0] != "lead" && rest[0] != "none" {
				return h, fmt.Errorf("%s:%d: belief needs lead or none", name, ln)
			}
			ev.flag = rest[0]
		case "deliver":
			if len(rest) > 1 || len(rest) == 1 && rest[0] != "absent" {
				return h, fmt.Errorf("%s:%d: deliver takes only absent", name, ln)
			}
			if len(rest) == 1 {
				ev.flag = rest[0]
			}
		case "boot", "down", "rollback", "restore", "lose", "forge":
			if len(rest) != 0 {
				return h, fmt.Errorf("%s:%d: %s: unexpected %q", name, ln, ev.verb, rest)
			}
		default:
			return h, fmt.Errorf("%s:%d: unknown event %q", name, ln, ev.verb)
		}
		h.events = append(h.events, ev)
	}
	if !sawWant {
		return h, fmt.Errorf("%s: no want line", name)
	}
	return h, nil
}

func parseParams(p *Params, ev event, words []string) error {
	for _, w := range words {
		switch w {
		case "lossy":
			p.LossyStore = true
		case "incomplete":
			p.Complete = false
		default:
			return fmt.Errorf("params: unknown word %q", w)
		}
	}
	for k, v := range ev.kv {
		switch k {
		case "deadline", "slack":
			d, err := time.ParseDuration(v)
			if err != nil {
				return fmt.Errorf("params %s: %w", k, err)
			}
			if k == "deadline" {
				p.MaxRenewDeadline = d
			} else {
				p.Slack = d
			}
		case "drift":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return fmt.Errorf("params drift: %w", err)
			}
			p.Drift = f
		default:
			return fmt.Errorf("params: unknown key %q", k)
		}
	}
	return nil
}

func (ev event) uint(k string) (uint64, error) {
	v, ok := ev.kv[k]
	if !ok {
		return 0, fmt.Errorf("line %d: %s needs %s=", ev.line, ev.verb, k)
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("line %d: %s=%q: %w", ev.line, k, v, err)
	}
	return n, nil
}

func (ev event) rec() (Rec, error) {
	h, ok := ev.kv["holder"]
	if !ok {
		return Rec{}, fmt.Errorf("line %d: %s needs holder=", ev.line, ev.verb)
	}
	r := Rec{Holder: h}
	var err error
	if r.Token, err = ev.uint("tok"); err != nil {
		return r, err
	}
	if _, ok := ev.kv["trans"]; ok {
		if r.Transitions, err = ev.uint("trans"); err != nil {
			return r, err
		}
	}
	if v, ok := ev.kv["dur"]; ok {
		if r.LeaseDuration, err = time.ParseDuration(v); err != nil {
			return r, fmt.Errorf("line %d: dur: %w", ev.line, err)
		}
	}
	return r, nil
}

// run replays h into o and returns o.
func (h history) run(o *Oracle) (*Oracle, error) {
	return o, h.replay(o, map[string]Snapshot{})
}

// replay replays h into o, keeping the snapshots of the writes sent in ops.
func (h history) replay(o *Oracle, ops map[string]Snapshot) error {
	for _, ev := range h.events {
		var err error
		var rev uint64
		var r Rec
		switch ev.verb {
		case "boot":
			o.Boot(ev.node, ev.at)
		case "down":
			o.Down(ev.node, ev.at)
		case "send":
			if rev, err = ev.uint("exp"); err != nil {
				return err
			}
			if r, err = ev.rec(); err != nil {
				return err
			}
			if _, dup := ops[ev.op]; dup {
				return fmt.Errorf("line %d: operation %s sent twice", ev.line, ev.op)
			}
			ops[ev.op] = o.Send(ev.node, ev.at, Rev(rev), r)
		case "apply":
			sn, ok := ops[ev.op]
			if !ok {
				return fmt.Errorf("line %d: operation %s never sent", ev.line, ev.op)
			}
			if rev, err = ev.uint("rev"); err != nil {
				return err
			}
			if r, err = ev.rec(); err != nil {
				return err
			}
			var clock uint64
			if _, ok := ev.kv["clock"]; ok {
				if clock, err = ev.uint("clock"); err != nil {
					return err
				}
			}
			o.Applied(ev.at, sn, Rev(rev), r, clock)
		case "deliver":
			if ev.flag == "absent" {
				o.Deliver(ev.node, ev.at, 0, Rec{}, false)
				break
			}
			if rev, err = ev.uint("rev"); err != nil {
				return err
			}
			if r, err = ev.rec(); err != nil {
				return err
			}
			o.Deliver(ev.node, ev.at, Rev(rev), r, true)
		case "rollback":
			if rev, err = ev.uint("to"); err != nil {
				return err
			}
			o.Rollback(ev.at, Rev(rev))
		case "restore", "forge":
			if rev, err = ev.uint("rev"); err != nil {
				return err
			}
			if r, err = ev.rec(); err != nil {
				return err
			}
			if ev.verb == "restore" {
				o.Restore(ev.at, Rev(rev), r)
			} else {
				o.Forge(ev.at, Rev(rev), r)
			}
		case "lose":
			o.Lose(ev.at)
		case "belief":
			var tok uint64
			if ev.flag == "lead" {
				if tok, err = ev.uint("tok"); err != nil {
					return err
				}
			}
			o.Belief(ev.node, ev.at, ev.flag == "lead", tok)
		}
	}
	return nil
}

// verdict is the sorted set of checks o's violations name.
func verdict(o *Oracle) []string {
	var got []string
	for _, v := range o.Violations() {
		if !slices.Contains(got, v.Check) {
			got = append(got, v.Check)
		}
	}
	slices.Sort(got)
	return got
}

func loadCorpus(t testing.TB) []history {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "*.hist"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no histories in testdata: %v", err)
	}
	var hs []history
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		h, err := parseHistory(strings.TrimSuffix(filepath.Base(f), ".hist"), string(b))
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	return hs
}

func TestCorpusVerdicts(t *testing.T) {
	for _, h := range loadCorpus(t) {
		t.Run(h.name, func(t *testing.T) {
			o, err := h.run(New(h.params))
			if err != nil {
				t.Fatal(err)
			}
			if got := verdict(o); !slices.Equal(got, h.want) {
				t.Errorf("breaks %q, want %q; violations:\n%v", got, h.want, o.Violations())
			}
		})
	}
}

func TestCorpusHasBothKinds(t *testing.T) {
	safe, unsafe := 0, 0
	for _, h := range loadCorpus(t) {
		if len(h.want) == 0 {
			safe++
		} else {
			unsafe++
		}
	}
	if safe < 8 || unsafe < 11 {
		t.Fatalf("%d safe and %d unsafe histories; the corpus needs its safe and unsafe classes", safe, unsafe)
	}
}

func TestParseHistoryRejectsBadLines(t *testing.T) {
	for _, text := range []string{
		"boot 0\n",                             // no want
		"boot 0\nwant: maybe\n",                // unknown want
		"want: ok\nboot 0\n",                   // event after want
		"bogus 0\nwant: ok\n",                  // unknown verb
		"boot 0 @5ms\nboot 1 @1ms\nwant: ok\n", // time goes back
		"boot 0\nparams lossy\nwant: ok\n",     // params late
		"belief 0 maybe\nwant: ok\n",           // belief word
		"send 0\nwant: ok\n",                   // no operation
	} {
		if _, err := parseHistory("bad", text); err == nil {
			t.Errorf("parseHistory(%q) accepted it", text)
		}
	}
}
