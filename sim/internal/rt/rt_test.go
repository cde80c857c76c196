package rt

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/sim"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/memstore"
)

// watchless has neither Watch nor MayLoseRecords; lossyWatcher has both.
type watchless struct{ s *memstore.Store[struct{}] }

func (w watchless) Get(ctx context.Context, name string) (lease.Record[struct{}], lease.Revision, error) {
	return w.s.Get(ctx, name)
}

func (w watchless) CompareAndSwap(ctx context.Context, name string, exp lease.Revision, next lease.Record[struct{}]) (lease.Record[struct{}], lease.Revision, error) {
	return w.s.CompareAndSwap(ctx, name, exp, next)
}

type lossyWatcher struct{ *memstore.Store[struct{}] }

func (lossyWatcher) MayLoseRecords() bool { return true }

// hintsOnly claims nothing of its watch events.
type hintsOnly struct{ *memstore.Store[struct{}] }

func (hintsOnly) WatchCapabilities() store.WatchCapabilities { return store.WatchCapabilities{} }

// TestRuntimeWrapperCapabilities: the fault wrapper has Watch and
// MayLoseRecords exactly when the user's store does (or data loss is
// injected), so that electors see the store's real capabilities.
func TestRuntimeWrapperCapabilities(t *testing.T) {
	tests := []struct {
		name                          string
		st                            store.Store[struct{}]
		dataLoss                      bool
		watch, lossy, says, authentic bool
	}{
		{"memstore", memstore.New[struct{}](), false, true, true, false, true},
		{"memstore with data loss", memstore.New[struct{}](), true, true, true, true, true},
		{"no capabilities", watchless{memstore.New[struct{}]()}, false, false, false, false, false},
		{"lossy watcher", lossyWatcher{memstore.New[struct{}]()}, false, true, true, true, true},
		{"watch events are hints", hintsOnly{memstore.New[struct{}]()}, false, true, true, false, false},
	}
	for _, tt := range tests {
		o := Options[struct{}]{NewStore: func() store.Store[struct{}] { return tt.st }}.WithDefaults()
		o.Faults.DataLoss = tt.dataLoss
		var h *harness[struct{}]
		var err error
		if h, err = newHarness(o, Driver{}); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		for _, pipelined := range []bool{false, true} {
			w := h.wrap(&incarnation[struct{}]{n: h.nodes[0]}, pipelined, false)
			if store.AnswersImmediately(w) {
				t.Errorf("%s (batched: %v): the store says it never waits", tt.name, pipelined)
			}
			if lied := h.wrap(&incarnation[struct{}]{n: h.nodes[0]}, pipelined, true); !store.AnswersImmediately(lied) {
				t.Errorf("%s (batched: %v): a store that lies does not say it never waits", tt.name, pipelined)
			}
			_, watch := w.(store.Watcher[struct{}])
			l, lossy := w.(store.Lossy)
			if watch != tt.watch || lossy != tt.lossy || lossy && l.MayLoseRecords() != tt.says {
				t.Errorf("%s (batched: %v): watch %v, lossy %v; want %v, %v (says %v)", tt.name, pipelined, watch, lossy, tt.watch, tt.lossy, tt.says)
			}
			if got := store.WatchCapabilitiesOf(w).Authentic; got != tt.authentic {
				t.Errorf("%s (batched: %v): authentic watch %v, want %v", tt.name, pipelined, got, tt.authentic)
			}
		}
	}
}

func TestTimebaseScalesAndNeverWakesEarly(t *testing.T) {
	tests := []struct {
		speed   int64
		d, real time.Duration
	}{
		{1, time.Second, time.Second},
		{10, time.Second, 100 * time.Millisecond},
		{10, 1, 1}, // rounded up: never early
		{3, 10, 4},
		{10, -time.Second, -time.Second},
	}
	for _, tt := range tests {
		if got := (timebase{speed: tt.speed}).real(tt.d); got != tt.real {
			t.Errorf("speed %d: real(%v) = %v, want %v", tt.speed, tt.d, got, tt.real)
		}
	}
	if got := satMul(time.Duration(1<<62), 4); got != time.Duration(1<<63-1) {
		t.Errorf("satMul overflows: %v", got)
	}
}

// TestSuspectIsAViolationOnlyPastTheTolerance: in a bubble a disagreement is a violation at once; in real
// time it is one once it has lasted beyond the tolerance (2×CheckEvery +
// 4×lag), and one that stops being seen is forgotten.
func TestSuspectIsAViolationOnlyPastTheTolerance(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name   string
		bubble bool
		lag    time.Duration
		seen   []time.Duration // polls at which the disagreement is seen
		gap    time.Duration   // a poll without it before the last one, if not zero
		fails  bool
	}{
		{"bubble: at once", true, 0, []time.Duration{100 * ms}, 0, true},
		{"real: one sighting", false, 0, []time.Duration{100 * ms}, 0, false},
		{"real: within the tolerance", false, 50 * ms, []time.Duration{100 * ms, 500 * ms}, 0, false},
		{"real: beyond the tolerance", false, 50 * ms, []time.Duration{100 * ms, 500 * ms, 501 * ms}, 0, true},
		{"real: healed in between", false, 0, []time.Duration{100 * ms, 200 * ms, 400 * ms}, 300 * ms, false},
	}
	for _, tt := range tests {
		d := Driver{}
		if tt.bubble {
			d.Wait = func() {}
		}
		o := Options[struct{}]{}.WithDefaults()
		h, err := newHarness(o, d)
		if err != nil {
			t.Fatal(err)
		}
		h.lag = tt.lag
		for i, at := range tt.seen {
			if tt.gap != 0 && i == len(tt.seen)-1 {
				h.forget(map[string]bool{})
			}
			seen := map[string]bool{}
			h.suspectLocked(seen, "k", at, "check", "disagreement")
			h.forget(seen)
		}
		if got := h.res.Violation != nil; got != tt.fails {
			t.Errorf("%s: violation %v, want %v", tt.name, h.res.Violation, tt.fails)
		}
	}
}

// TestOracleVerdictFailsTheRun: what the oracle finds in the recorded
// history fails the run through the harness's checks, under the check of
// the same name, naming the processes: here two processes' writes stored
// one token for two terms.
func TestOracleVerdictFailsTheRun(t *testing.T) {
	h, err := newHarness(Options[struct{}]{}.WithDefaults(), Driver{Wait: func() {}})
	if err != nil {
		t.Fatal(err)
	}
	var incs []*incarnation[struct{}]
	for i := range 2 {
		n := h.nodes[i]
		n.boots++
		inc := &incarnation[struct{}]{n: n, id: n.id}
		h.judgeBoot(inc)
		incs = append(incs, inc)
	}
	for i, inc := range incs {
		r := lease.Record[struct{}]{Holder: inc.id, Token: 5, LeaseDuration: time.Second}
		sn := h.judgeSend(inc, lease.Revision(i), r)
		h.judgeApplied(sn, lease.Revision(i+1), r)
		h.judgeAnswer(inc, r, lease.Revision(i+1), nil)
		if i == 0 && h.res.Violation != nil {
			t.Fatalf("one term: %v", h.res.Violation)
		}
	}
	v := h.res.Violation
	if v == nil || v.Check != sim.CheckTokens || !strings.Contains(v.Msg, "n1 (process 1 of n1)") || !strings.Contains(v.Msg, "not above the token 5") {
		t.Fatalf("violation %v, want the oracle's verdict on tokens naming n1", v)
	}
}

// Half the handovers a schedule draws have their caller give up (a ctx
// that ends after Dur), so that the sweeps reach a handover that goes on
// without its caller.
func TestScheduleDrawsHandOversWhoseCallerGivesUp(t *testing.T) {
	o := Options[struct{}]{Nodes: 3, Config: lease.DefaultConfig(), Duration: 10 * time.Minute, Faults: sim.Faults{HandOver: true}}
	var bounded, unbounded int
	for seed := range uint64(50) {
		for _, f := range drawSchedule(rand.New(rand.NewPCG(seed, 0)), o, false) {
			switch {
			case f.Kind != sim.FaultHandOver:
			case f.Dur > 0:
				bounded++
			default:
				unbounded++
			}
		}
	}
	if bounded == 0 || unbounded == 0 {
		t.Fatalf("%d handovers whose caller gives up and %d whose caller waits, want some of each", bounded, unbounded)
	}
}
