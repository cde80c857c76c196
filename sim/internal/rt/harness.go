package rt

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/internal/oracle"
	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/sim"
	"github.com/tenure-go/tenure/sim/internal/timeline"
	"github.com/tenure-go/tenure/store"
)

// harness is one runtime-mode run. Its main goroutine (run) owns the
// schedule and applies faults and checks: in a synctest bubble at instants
// when every other goroutine is idle (synctest.Wait), in real time when
// its timers fire. The electors, their bodies, observers and store calls
// run on their own goroutines and report to the checks under mu.
type harness[M any] struct {
	o            Options[M]
	drv          Driver
	tb           timebase
	ctx          context.Context // ends once the run has wound down
	cancel       context.CancelFunc
	rng          *rand.Rand // main goroutine only
	inner        store.Store[M]
	del          deleter
	lossInjected bool
	nodes        []*rnode[M]
	sched        []sim.Fault
	reg          fence.Register
	j            *judge
	wg           sync.WaitGroup // every goroutine the harness starts
	events       evHeap         // main goroutine only
	evSeq        int
	rho          float64

	storeMu sync.Mutex // in real time, serializes the shared store's writes with their checks

	mu       sync.Mutex               // guards what follows, and the rnode and incarnation fields marked so
	lag      time.Duration            // the largest scheduling delay measured (real time)
	suspects map[string]time.Duration // real time: disagreements seen, and since when
	net      netState
	watchSeq int
	chk      checker[M]
	res      Result
	tl       *timeline.Timeline
	buf      []byte
}

// netState is the faults of the network in force.
type netState struct {
	lossActive int
	lossP      float64
	slowActive int
	slowLat    time.Duration
}

// rnode is one machine: its clock rate and timings, the faults aimed at it,
// and the elector processes (incarnations) it has run.
type rnode[M any] struct {
	idx          int
	id           string
	incarnations int
	boots        int // processes started (main goroutine only)
	rate         float64
	cfg          lease.Config
	// Guarded by harness.mu.
	reqCut, respCut bool
	stallUntil      time.Duration
	stallTouched    bool              // a stall may have delayed its observers since
	paused          bool              // a pause has stalled it since the run began
	mutedUntil      time.Duration     // its watch silently delivers nothing until then (FaultMuteWatch)
	cur             *incarnation[M]   // the running process, nil while down
	live            []*incarnation[M] // processes whose Run has not returned
}

// incarnation is one elector process on a node.
type incarnation[M any] struct {
	n       *rnode[M]
	id      string
	node    oracle.Node // its node in the oracle's history
	seed    uint64
	release bool // lead.WithReleaseOnStop
	// inlineCalls counts the store calls in progress that the elector
	// runs on its loop (a lying store.Immediate); inlineTouched: such a
	// call may have delayed its observers since they last agreed with
	// Term. Under h.mu.
	inlineCalls   int
	inlineTouched bool
	e             *lead.Elector[M]
	cancel        context.CancelFunc
	started       time.Duration
	done          chan struct{} // Run, Lead and Every have returned
	bodyRng       *rand.Rand    // the Lead body's goroutine only
	// Guarded by harness.mu.
	stopped     bool // cancelled
	obsOpen     bool
	obsToken    fence.Token
	lastStarted fence.Token // the token of the last Started
	lastLed     fence.Token // the last token Term reported leading with
	ended       fence.Token // the largest token whose term Term reported ended
	bodies      map[*body]struct{}
	watches     map[int]context.CancelFunc
	leaders     *leadersSeen // what its Leaders channel reported
	// The elector's watch loop only.
	watchCount map[string]int // watches opened, by name
}

// body is a running Lead or Every body.
type body struct {
	ctx   context.Context
	token fence.Token
	kind  string
}

// hev is one event of the main goroutine's schedule.
type hev struct {
	at  time.Duration
	seq int
	fn  func()
}

type evHeap []hev

// Len, Less, Swap, Push and Pop make evHeap a container/heap ordered by
// time, then by order of scheduling.
func (h evHeap) Len() int { return len(h) }

// Less orders by time, then by order of scheduling.
func (h evHeap) Less(i, j int) bool {
	return h[i].at < h[j].at || h[i].at == h[j].at && h[i].seq < h[j].seq
}

// Swap swaps two events.
func (h evHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }

// Push appends an event (for container/heap).
func (h *evHeap) Push(x any) { *h = append(*h, x.(hev)) }

// Pop removes the last event (for container/heap).
func (h *evHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Run runs one seed (o.Seed, options with their defaults, validated) with
// driver d: in a synctest bubble it must be called inside the bubble.
func Run[M any](o Options[M], d Driver) (Result, error) {
	h, err := newHarness(o, d)
	if err != nil {
		return Result{}, err
	}
	res := h.run()
	if h.interrupted() {
		return res, ErrInterrupted
	}
	return res, nil
}

// newHarness builds a run; in a synctest bubble it must be called inside
// the bubble. Its errors wrap sim.ErrInvalidOptions.
func newHarness[M any](o Options[M], d Driver) (*harness[M], error) {
	speed := int64(1)
	if d.Wait == nil {
		speed = int64(o.Speed)
	}
	h := &harness[M]{o: o, drv: d, tb: timebase{start: time.Now(), speed: speed}, tl: &timeline.Timeline{}, suspects: map[string]time.Duration{}}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	h.rng = rand.New(rand.NewPCG(o.Seed, o.Seed^0xda942042e4dd58b5))
	h.inner = o.NewStore()
	if h.inner == nil {
		return nil, fmt.Errorf("%w: NewStore returned nil", sim.ErrInvalidOptions)
	}
	h.del, _ = h.inner.(deleter)
	h.lossInjected = o.Faults.DataLoss
	for _, f := range o.Schedule {
		h.lossInjected = h.lossInjected || f.Kind == sim.FaultDataLoss
	}
	if h.lossInjected && h.del == nil {
		return nil, fmt.Errorf("%w: data loss needs a store with a Delete(name string) method (%T has none)", sim.ErrInvalidOptions, h.inner)
	}
	h.chk.terms = map[fence.Token]*incarnation[M]{}
	for i := range o.Nodes {
		n := &rnode[M]{idx: i, id: fmt.Sprintf("n%d", i), rate: 1, cfg: o.Config}
		switch {
		case o.Faults.DriftBeyond:
			if h.rng.Float64() < 0.5 {
				n.rate = 1 - o.BeyondRho
			} else {
				n.rate = 1 + o.BeyondRho
			}
		case o.Faults.Drift:
			n.rate = 1 + (2*h.rng.Float64()-1)*o.Rho
		}
		h.rho = max(h.rho, math.Abs(n.rate-1))
		h.nodes = append(h.nodes, n)
	}
	if o.Schedule != nil {
		h.sched = append([]sim.Fault{}, o.Schedule...)
	} else {
		h.sched = drawSchedule(h.rng, o, h.lossInjected)
	}
	cfgs := []lease.Config{o.Config}
	for _, f := range h.sched {
		if f.Kind == sim.FaultReconfigure {
			cfgs = append(cfgs, f.Config)
		}
	}
	h.chk.bound = sim.LivenessBound(cfgs, h.rho, o.Latency.Bound()) + 2*o.CheckEvery
	lossy, hasLossy := h.inner.(store.Lossy)
	var slack time.Duration
	if h.realTime() {
		slack = 2 * o.CheckEvery // how late a scheduled sample may run
	}
	h.j = newJudge(cfgs, h.rho, hasLossy && lossy.MayLoseRecords() || h.lossInjected, slack)
	if o.Faults.WatchChaos {
		// A renewal's watch event delayed by up to 3 retry intervals keeps
		// a follower quiet that much longer (as in model mode).
		h.chk.bound += time.Duration(float64(3*o.Config.RetryInterval) / (1 - h.rho))
	}
	return h, nil
}

// now is the run's time since it started.
func (h *harness[M]) now() time.Duration { return h.tb.since() }

// realTime reports whether the run is in real time, not in a bubble.
func (h *harness[M]) realTime() bool { return h.drv.Wait == nil }

// goRun starts f on a goroutine the run waits for.
func (h *harness[M]) goRun(f func()) { h.wg.Go(f) }

// push schedules fn on the main goroutine at virtual time at.
func (h *harness[M]) push(at time.Duration, fn func()) {
	h.evSeq++
	heap.Push(&h.events, hev{at: at, seq: h.evSeq, fn: fn})
}

// run runs the schedule to its end or to the first violation, then winds
// everything down.
func (h *harness[M]) run() Result {
	for _, n := range h.nodes {
		h.boot(n)
	}
	for i := range h.sched {
		h.push(h.sched[i].At, func() { h.applyFault(i) })
	}
	var poll func()
	poll = func() {
		h.poll()
		h.push(h.now()+h.o.CheckEvery, poll)
	}
	h.push(h.o.CheckEvery, poll)
	end := h.o.Duration
	for h.events.Len() > 0 && !h.failed() {
		ev := heap.Pop(&h.events).(hev)
		if ev.at > end {
			break
		}
		h.advance(ev.at)
		if h.interrupted() {
			break
		}
		ev.fn()
		if at, ok := h.resampleAt(); ok {
			h.push(at, h.sampleLive) // an excused overlap's bound
		}
	}
	if !h.failed() && !h.interrupted() {
		h.advance(end)
		h.poll()
	}
	h.windDown()
	h.closeTimeline()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.res.Seed = h.o.Seed
	if h.realTime() {
		h.res.Lag, h.res.Tolerance = h.lag, h.tolerance()
	}
	h.res.Schedule = append([]sim.Fault(nil), h.sched...)
	h.res.tl = h.tl
	return h.res
}

// advance lets time pass until at. In a bubble it then waits until every
// other goroutine is idle: what happens at an instant has happened before
// the main goroutine looks. In real time it measures how late it woke: the
// scheduling delay that the checks' tolerance allows for.
func (h *harness[M]) advance(at time.Duration) {
	d := at - h.now()
	if d > 0 {
		t := h.tb.newTimer(d) // time passing to the next event
		select {
		case <-t.C:
		case <-h.drv.Done: // nil in a bubble: never
			t.Stop()
			return
		}
	}
	if h.drv.Wait != nil {
		h.drv.Wait()
		return
	}
	// How late the timer fired: the scheduling delay. (An event already
	// due on entry is late because the previous one took long; that is
	// not counted.)
	if late := h.now() - at; d > 0 && late > 0 {
		h.mu.Lock()
		h.lag = max(h.lag, late)
		h.mu.Unlock()
	}
}

// interrupted reports whether Driver.Done ended the run.
func (h *harness[M]) interrupted() bool {
	select {
	case <-h.drv.Done:
		return true
	default:
		return false
	}
}

// tolerance is, in real time, how long a disagreement about an instant may
// last before the checks report it: 2×CheckEvery plus 4× the largest
// scheduling delay measured. Zero in a bubble. h.mu is held.
func (h *harness[M]) tolerance() time.Duration {
	if !h.realTime() {
		return 0
	}
	return 2*h.o.CheckEvery + 4*h.lag
}

// windDown heals every fault, stops every elector (releasing as each was
// built to), and waits for every goroutine of the run.
func (h *harness[M]) windDown() {
	h.mu.Lock()
	h.net = netState{}
	var live []*incarnation[M]
	for _, n := range h.nodes {
		n.reqCut, n.respCut, n.stallUntil = false, false, 0
		live = append(live, n.live...)
		n.cur = nil
	}
	for _, inc := range live {
		inc.stopped = true
	}
	h.mu.Unlock()
	for _, inc := range live {
		inc.cancel()
	}
	limit := h.tb.newTimer(10 * h.maxLease())
	for _, inc := range live {
		select {
		case <-inc.done:
		case <-limit.C:
			h.fail(sim.CheckRun, "%s did not return within %v of its context's end", inc.id, 10*h.maxLease())
		}
	}
	limit.Stop()
	h.cancel()
	h.wg.Wait()
}

func (h *harness[M]) maxLease() time.Duration {
	l := h.o.Config.LeaseDuration
	for _, f := range h.sched {
		if f.Kind == sim.FaultReconfigure {
			l = max(l, f.Config.LeaseDuration)
		}
	}
	return l
}

// releases says how the next process of n stops: by releasing (a graceful
// stop) or not (a crash). A crash or release of the schedule aimed at n
// itself decides; otherwise it is drawn.
func (h *harness[M]) releases(n *rnode[M]) bool {
	now := h.now()
	for _, f := range h.sched {
		if f.At >= now && f.Node == n.idx && !f.AtLeader && (f.Kind == sim.FaultCrash || f.Kind == sim.FaultRelease) {
			return f.Kind == sim.FaultRelease
		}
	}
	switch fl := h.o.Faults; {
	case fl.Crash && fl.Release:
		return h.rng.Float64() < 0.5
	case fl.Crash:
		return false
	}
	return true
}

// boot starts a new elector process on n: lead.New with the fault
// wrapper, a drifting clock, a log handler and observers that a pause
// blocks, then Run, a Lead body (Repeat) and an Every body.
func (h *harness[M]) boot(n *rnode[M]) {
	seed := h.rng.Uint64()
	h.mu.Lock()
	cfg := n.cfg
	h.mu.Unlock()
	inc := &incarnation[M]{
		n: n, id: n.id, seed: seed, release: h.releases(n), started: h.now(),
		done:       make(chan struct{}),
		bodyRng:    rand.New(rand.NewPCG(seed^0x2545f4914f6cdd1d, seed)),
		bodies:     map[*body]struct{}{},
		watches:    map[int]context.CancelFunc{},
		watchCount: map[string]int{},
	}
	// Half the incarnations (by their seed) run as the one elector of a
	// lead.Group, the others with Run: the Group's loop, its start and its
	// stop are proven under the same faults.
	grouped := seed&1 == 1
	// Half of those (by their seed again) share their Group with two
	// other elections (decoys, on the same store and network, unchecked)
	// and run one store operation at a time (lead.WithMaxStoreOps(1)): the
	// checked elector's renewals and reads then wait behind the decoys',
	// which the faults slow down as much as its own, a wait the machine
	// must survive as it would a slow network to the store.
	crowded := grouped && seed&2 != 0
	// Half of the other Groups (by their seed again) have the decoys too,
	// with no bound on their operations, and send their store calls in
	// batches, as the stores for Redis and PostgreSQL do (internal/batch):
	// a call made while a batch is out waits for the next, and each batch
	// meets the network's faults as one message.
	pipelined := grouped && !crowded && seed&4 != 0
	// A quarter of the others (by their seed again) see a store that says
	// its operations never wait (store.Immediate) and then waits for the
	// network, as a wrapper that forwards that capability and adds a wait
	// would: the elector runs each operation on its loop, which stalls
	// until the answer comes (or the operation's timeout passes), and a
	// leader's term must still end by its deadline (the watchdog's timer).
	lying := !crowded && !pipelined && seed&24 == 24
	// Half of all incarnations (by their seed again) prefer to lead
	// (lead.WithPriority, node i with priority i+1): they advertise, and a
	// leader that sees a higher priority advertised hands its lease over
	// to it, under the same faults.
	preferred := seed&32 != 0
	base := []lead.Option{
		lead.WithIdentity(n.id),
		lead.WithConfig(cfg),
		lead.WithLookupEnv(nil),
		lead.WithClock(newDriftClock(h.tb.speed, n.rate)),
		lead.WithReleaseOnStop(inc.release),
	}
	if crowded {
		base = append(base, lead.WithMaxStoreOps(1))
	}
	own := []lead.Option{
		lead.WithRand(rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))),
		lead.WithLogger(slog.New(logHandler[M]{h, inc})),
		lead.WithObserver(h.observer(inc)),
		lead.WithObserver(func(lead.Change) { h.stall(n) }),
	}
	if preferred {
		own = append(own, lead.WithPriority(uint64(n.idx+1)))
	}
	var decoys [][]lead.Option
	if crowded || pipelined {
		for i := range uint64(2) {
			decoys = append(decoys, []lead.Option{lead.WithRand(rand.New(rand.NewPCG(seed^0x7f4a7c159e3779b9, i)))})
		}
	}
	e, grp, err := h.newElector(grouped, h.wrap(inc, pipelined, lying), base, own, decoys)
	if err != nil {
		h.fail(sim.CheckRun, "lead.New for %s (in a Group: %v): %v", n.id, grouped, err)
		close(inc.done)
		return
	}
	inc.e = e
	n.boots++
	h.judgeBoot(inc)
	ctx, cancel := context.WithCancel(context.Background())
	inc.cancel = cancel
	h.mu.Lock()
	n.cur = inc
	n.live = append(n.live, inc)
	h.chk.disturbed(h.now())
	h.tl.State(int64(h.now()), n.idx, timeline.Follower)
	h.mu.Unlock()
	h.tracef(inc, "boot (releases on stop: %v, clock rate %.4f, in a Group: %v, with decoys and one store operation at a time: %v, with decoys and batched store calls: %v, told the store never waits: %v)", inc.release, n.rate, grouped, crowded, pipelined, lying)

	h.followLeaders(ctx, inc)
	var parts sync.WaitGroup
	parts.Go(func() {
		run := e.Run
		if grp != nil {
			run = grp.Run
		}
		err := run(ctx)
		h.mu.Lock()
		paused := n.paused
		h.mu.Unlock()
		// A pause stalls the bodies too: one may still run at its term's
		// deadline, and then Run leaves the lease to expire and says so.
		if err != nil && !(paused && errors.Is(err, lead.ErrBodiesStillRunning)) {
			h.fail(sim.CheckRun, "%s: Run returned %v", inc.id, err)
		}
	})
	parts.Go(func() {
		err := e.Lead(ctx, h.leadBody(inc), lead.Repeat())
		if ctx.Err() == nil || !errors.Is(err, context.Canceled) && !errors.Is(err, lead.ErrStopped) {
			h.fail(sim.CheckRun, "%s: Lead returned %v before the process stopped", inc.id, err)
		}
	})
	parts.Go(func() {
		err := e.Every(ctx, cfg.RetryInterval, h.everyBody(inc))
		if ctx.Err() == nil || !errors.Is(err, context.Canceled) {
			h.fail(sim.CheckRun, "%s: Every returned %v before the process stopped", inc.id, err)
		}
	})
	h.goRun(func() {
		parts.Wait()
		h.judgeDown(inc)
		h.mu.Lock()
		defer h.mu.Unlock()
		h.res.ElectorTime += h.now() - inc.started
		for i, x := range n.live {
			if x == inc {
				n.live = append(n.live[:i], n.live[i+1:]...)
				break
			}
		}
		if inc.obsOpen {
			h.failLocked(sim.CheckObserver, "%s: Run returned, and its observers were never told that the term with token %d stopped", inc.id, inc.obsToken)
		}
		close(inc.done)
	})
}

// newElector makes the elector of an incarnation, with the options of
// base and own: with lead.New, or as the checked elector of a new
// lead.Group (grp, whose Run runs it), made with base. The Group also runs
// one decoy election for each entry of decoys, with base and that entry.
func (h *harness[M]) newElector(grouped bool, st store.Store[M], base, own []lead.Option, decoys [][]lead.Option) (*lead.Elector[M], *lead.Group[M], error) {
	if !grouped {
		e, err := lead.New(h.o.Name, st, append(base, own...)...)
		return e, nil, err
	}
	grp, err := lead.NewGroup(st, base...)
	if err != nil {
		return nil, nil, err
	}
	e, err := grp.Add(h.o.Name, own...)
	if err != nil {
		return nil, nil, err
	}
	for i, opts := range decoys {
		if _, err := grp.Add(fmt.Sprintf("%s-decoy-%d", h.o.Name, i+1), opts...); err != nil {
			break // a name the store refuses (too long, say): fewer decoys, not a failure of the run
		}
	}
	return e, grp, nil
}

// stop stops n's running process: it releases or not as it was built to.
func (h *harness[M]) stop(n *rnode[M]) *incarnation[M] {
	h.mu.Lock()
	inc := n.cur
	if inc == nil {
		h.mu.Unlock()
		return nil
	}
	n.cur, inc.stopped = nil, true
	h.tl.State(int64(h.now()), n.idx, timeline.Down)
	h.mu.Unlock()
	inc.cancel()
	return inc
}

// restart boots n again after a crash or a release, with a new identity
// when asked.
func (h *harness[M]) restart(n *rnode[M], newIdentity bool) {
	h.mu.Lock()
	up := n.cur != nil
	h.mu.Unlock()
	if up {
		return
	}
	if newIdentity {
		n.incarnations++
		n.id = fmt.Sprintf("n%d.%d", n.idx, n.incarnations)
	}
	h.boot(n)
}

// leader returns the node whose process leads now, if any.
func (h *harness[M]) leader() *rnode[M] {
	h.mu.Lock()
	var cur []*incarnation[M]
	for _, n := range h.nodes {
		if n.cur != nil {
			cur = append(cur, n.cur)
		}
	}
	h.mu.Unlock()
	for _, inc := range cur {
		if inc.e.IsLeader() {
			return inc.n
		}
	}
	return nil
}

// applyFault starts fault i of the schedule.
func (h *harness[M]) applyFault(i int) {
	f := &h.sched[i]
	if f.AtLeader && f.Kind.Aimed() {
		if n := h.leader(); n != nil {
			f.Node = n.idx
		}
	}
	n := h.nodes[f.Node]
	now := h.now()
	end := now + f.Dur
	switch f.Kind {
	case sim.FaultCrash, sim.FaultRelease:
		h.mu.Lock()
		if n.cur != nil {
			f.Kind = sim.FaultCrash
			if n.cur.release {
				f.Kind = sim.FaultRelease
			}
		}
		if f.Kind == sim.FaultCrash {
			h.chk.disturbed(now)
		}
		h.mu.Unlock()
		h.noteFault(*f)
		h.stop(n)
		if f.Dur > 0 {
			newID := f.NewIdentity
			h.push(end, func() { h.restart(n, newID) })
		}
		return
	case sim.FaultMuteWatch:
		// No disturbance: the electors must notice the silence.
		h.noteFault(*f)
		h.mu.Lock()
		for _, m := range h.nodes {
			if mask := f.Mask; mask&(1<<m.idx) != 0 || mask == 0 && m.idx == f.Node {
				m.mutedUntil = max(m.mutedUntil, end)
			}
		}
		h.mu.Unlock()
		return
	case sim.FaultDataLoss:
		h.noteFault(*f)
		if h.realTime() {
			h.storeMu.Lock() // between writes and their checks
			defer h.storeMu.Unlock()
		}
		h.mu.Lock()
		h.chk.lost = true
		h.chk.disturbed(now)
		h.tl.AddStore(int64(now), "DATA LOSS: the record vanishes")
		h.mu.Unlock()
		h.del.Delete(h.o.Name)
		h.judgeLose()
		return
	case sim.FaultResign:
		// No disturbance: the handover it starts is checked.
		h.noteFault(*f)
		h.mu.Lock()
		inc := n.cur
		h.mu.Unlock()
		if inc != nil {
			go func() {
				err := inc.e.Resign(h.ctx)
				if err != nil && !errors.Is(err, lead.ErrNotLeader) && !errors.Is(err, lead.ErrStopped) &&
					!errors.Is(err, lead.ErrBodiesStillRunning) && h.ctx.Err() == nil {
					h.fail(sim.CheckRun, "%s: Resign: %v", inc.id, err)
				}
			}()
		}
		return
	case sim.FaultHandOver:
		// No disturbance, as for a resign. A successor that is not
		// there makes HandOver fall back to a plain release.
		h.noteFault(*f)
		h.mu.Lock()
		inc := n.cur
		h.mu.Unlock()
		if inc != nil {
			go func() {
				ctx := h.ctx
				if f.Dur > 0 {
					// The caller's ctx ends after Dur (see the schedule).
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(h.ctx, f.Dur)
					defer cancel()
				}
				err := inc.e.HandOver(ctx, f.Successor)
				if err != nil && !errors.Is(err, lead.ErrNotLeader) && !errors.Is(err, lead.ErrStopped) && !errors.Is(err, lead.ErrInvalidIdentity) &&
					!errors.Is(err, lead.ErrBodiesStillRunning) && !errors.Is(err, lead.ErrHandOverFailed) && !errors.Is(err, context.DeadlineExceeded) && h.ctx.Err() == nil {
					h.fail(sim.CheckRun, "%s: HandOver: %v", inc.id, err)
				}
			}()
		}
		return
	case sim.FaultReconfigure:
		h.noteFault(*f)
		h.mu.Lock()
		n.cfg = f.Config
		inc := n.cur
		h.chk.disturbed(now)
		h.mu.Unlock()
		if inc != nil {
			if err := inc.e.Reconfigure(f.Config); err != nil {
				h.fail(sim.CheckRun, "%s: Reconfigure: %v", inc.id, err)
			}
		}
		return
	}
	// Faults with a duration.
	h.noteFault(*f)
	var heal func()
	h.mu.Lock()
	h.chk.disturbed(now)
	h.chk.active++
	switch f.Kind {
	case sim.FaultPause:
		n.stallUntil = max(n.stallUntil, end)
		n.paused = true
		n.stallTouched = true
		heal = func() {}
	case sim.FaultPartition:
		n.reqCut, n.respCut = n.reqCut || f.Requests, n.respCut || f.Responses
		if f.Responses && n.cur != nil {
			for _, cancel := range n.cur.watches {
				cancel() // the stream breaks
			}
		}
		heal = func() { n.reqCut, n.respCut = false, false }
	case sim.FaultLoss:
		h.net.lossActive++
		h.net.lossP = f.Prob
		heal = func() { h.net.lossActive-- }
	case sim.FaultSlow:
		h.net.slowActive++
		h.net.slowLat = f.Latency
		heal = func() {
			h.net.slowActive--
			h.chk.disturbed(h.now() + f.Latency) // messages sent in the spike arrive late
		}
	}
	h.mu.Unlock()
	h.push(end, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		heal()
		h.chk.active--
		h.chk.disturbed(h.now())
	})
}

// noteFault traces a fault and puts it on the timeline.
func (h *harness[M]) noteFault(f sim.Fault) {
	h.tracef(nil, "FAULT %v", f)
	node := f.Node
	switch f.Kind {
	case sim.FaultLoss, sim.FaultSlow, sim.FaultDataLoss:
		node = -1
	}
	h.mu.Lock()
	h.tl.AddFault(timeline.Fault{At: int64(h.now()), Dur: int64(f.Dur), Node: node, Letter: f.Kind.String()[0], Kind: f.Kind.String(), Text: f.String()})
	h.mu.Unlock()
}

// stall blocks while a pause of n is in force: its log handler, its
// observers and its bodies wait, as they would behind a full pipe or a
// stopped process.
func (h *harness[M]) stall(n *rnode[M]) {
	for {
		h.mu.Lock()
		d := n.stallUntil - h.now()
		h.mu.Unlock()
		if d <= 0 || !h.tb.sleep(h.ctx, d) {
			return
		}
	}
}

// logHandler is the electors' slog.Handler: it traces what they log at
// Info and above, and blocks during a pause of its node.
type logHandler[M any] struct {
	h   *harness[M]
	inc *incarnation[M]
}

// Enabled takes every level: a pause blocks at any record.
func (l logHandler[M]) Enabled(context.Context, slog.Level) bool { return true }

// Handle traces the record and blocks while the node is paused.
func (l logHandler[M]) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelInfo {
		var attrs []any
		r.Attrs(func(a slog.Attr) bool {
			if a.Key != "name" && a.Key != "identity" {
				attrs = append(attrs, a.Key+"="+a.Value.String())
			}
			return true
		})
		l.h.tracef(l.inc, "log %s: %s %v", r.Level, r.Message, attrs)
	}
	l.h.stall(l.inc.n)
	return nil
}

// WithAttrs returns the handler itself: the trace drops the name and
// identity that lead adds.
func (l logHandler[M]) WithAttrs([]slog.Attr) slog.Handler { return l }

// WithGroup returns the handler itself.
func (l logHandler[M]) WithGroup(string) slog.Handler { return l }

// leadBody is the Lead body: it writes through the fenced register at
// random intervals for as long as its context lasts. After a pause it
// writes without looking at its context again, as a process that decided
// to write before it froze does: fencing must refuse that write if a
// newer term has written.
func (h *harness[M]) leadBody(inc *incarnation[M]) func(context.Context, lead.Term) error {
	return func(ctx context.Context, t lead.Term) error {
		b := h.addBody(inc, ctx, t, "Lead")
		defer h.removeBody(inc, b)
		for {
			d := uniform(inc.bodyRng, 50*time.Millisecond, time.Second)
			if !h.tb.sleep(ctx, d) {
				return nil
			}
			h.stall(inc.n)
			h.write(inc, ctx, t, "Lead")
		}
	}
}

// everyBody is the Every body: one fenced write per tick.
func (h *harness[M]) everyBody(inc *incarnation[M]) func(context.Context, lead.Term) error {
	return func(ctx context.Context, t lead.Term) error {
		b := h.addBody(inc, ctx, t, "Every")
		defer h.removeBody(inc, b)
		h.write(inc, ctx, t, "Every")
		return nil
	}
}

// addBody registers a running body and checks what it was given.
func (h *harness[M]) addBody(inc *incarnation[M], ctx context.Context, t lead.Term, kind string) *body {
	b := &body{ctx: ctx, token: t.Token, kind: kind}
	h.mu.Lock()
	defer h.mu.Unlock()
	if tok, ok := fence.FromContext(ctx); !ok || tok != t.Token {
		h.failLocked(sim.CheckBody, "%s: the %s body's context carries token %d (ok %v), its term has %d", inc.id, kind, tok, ok, t.Token)
	}
	if t.Identity != inc.id {
		h.failLocked(sim.CheckBody, "%s: the %s body's term names identity %q", inc.id, kind, t.Identity)
	}
	h.termSeen(inc, t.Token)
	inc.bodies[b] = struct{}{}
	return b
}

func (h *harness[M]) removeBody(inc *incarnation[M], b *body) {
	h.mu.Lock()
	delete(inc.bodies, b)
	h.mu.Unlock()
}

// write is a body's fenced write.
func (h *harness[M]) write(inc *incarnation[M], ctx context.Context, t lead.Term, kind string) {
	err := h.reg.DoContext(ctx, func() error {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.res.FenceAccepted++
		c := &h.chk
		if t.Token < c.lastAccepted {
			h.failLocked(sim.CheckFence, "the resource accepted token %d of %s after token %d", t.Token, inc.id, c.lastAccepted)
		}
		if _, ok := c.terms[t.Token]; !ok {
			h.failLocked(sim.CheckFence, "the resource accepted token %d of %s, which no term started with", t.Token, inc.id)
		}
		c.lastAccepted = t.Token
		return nil
	})
	if err == nil {
		h.tracef(inc, "%s body: fenced write token %d accepted", kind, t.Token)
		return
	}
	live := ctx.Err() == nil
	cur, leads := inc.e.Term()
	// A store that forgot the term's history may let a newer term write
	// while this one still believes it leads: the oracle says whether it
	// did, from the history alone.
	erased := h.judgeErased(inc, t.Token)
	h.mu.Lock()
	h.res.FenceRejected++
	if errors.Is(err, fence.ErrStaleToken) && live && leads && cur.Token == t.Token && !erased {
		h.failLocked(sim.CheckFence, "the resource refused token %d of %s (%v), which still leads with a live context: a newer term wrote meanwhile", t.Token, inc.id, err)
	}
	h.mu.Unlock()
	h.tracef(inc, "%s body: fenced write token %d refused (context live: %v)", kind, t.Token, live)
}

// observer is the checks' observer of inc: Started and Stopped must
// alternate with matching tokens; and since a term may start between two
// polls, every live elector's belief is sampled for the oracle when one
// is told that a term started.
func (h *harness[M]) observer(inc *incarnation[M]) func(lead.Change) {
	return func(c lead.Change) {
		tok := c.Term.Token
		h.tracef(inc, "observer: %v token %d", c.Kind, tok)
		if c.Kind == lead.Started {
			h.sampleLive()
		}
		h.mu.Lock()
		switch c.Kind {
		case lead.Started:
			if inc.obsOpen {
				h.failLocked(sim.CheckObserver, "%s: Started (token %d) while the term with token %d was not Stopped", inc.id, tok, inc.obsToken)
			}
			if tok <= inc.lastStarted {
				h.failLocked(sim.CheckTermEnds, "%s: observers told Started (token %d) after a term with token %d", inc.id, tok, inc.lastStarted)
			}
			inc.obsOpen, inc.obsToken, inc.lastStarted = true, tok, tok
			h.res.Terms++
			h.termSeen(inc, tok)
			h.tl.AddTerm(int64(h.now()), inc.n.idx, uint64(tok))
			if inc.n.cur == inc {
				h.tl.State(int64(h.now()), inc.n.idx, timeline.Leader)
			}
		case lead.Stopped:
			if !inc.obsOpen || inc.obsToken != tok {
				h.failLocked(sim.CheckObserver, "%s: Stopped (token %d) without a Started of that token (open %v, token %d)", inc.id, tok, inc.obsOpen, inc.obsToken)
			}
			if !errors.Is(c.Reason, lead.ErrLeadershipLost) {
				h.failLocked(sim.CheckObserver, "%s: Stopped (token %d) with a reason that is not ErrLeadershipLost: %v", inc.id, tok, c.Reason)
			}
			inc.obsOpen = false
			if inc.n.cur == inc {
				h.tl.State(int64(h.now()), inc.n.idx, timeline.Follower)
			}
		}
		h.mu.Unlock()
	}
}

// closeTimeline ends the timeline: lanes, header, verdict.
func (h *harness[M]) closeTimeline() {
	h.mu.Lock()
	defer h.mu.Unlock()
	tl := h.tl
	tl.End = int64(h.o.Duration)
	if v := h.res.Violation; v != nil {
		tl.End = int64(v.At)
	}
	for _, n := range h.nodes {
		tl.IDs, tl.Rates = append(tl.IDs, n.id), append(tl.Rates, n.rate)
	}
	_, watch := h.inner.(store.Watcher[M])
	o, c := h.o, h.o.Config
	tl.Header = []string{
		fmt.Sprintf("tenure sim (runtime mode): seed %d, %d electors, %v, store %T (watch %v, data loss %v), drift %.3f", o.Seed, o.Nodes, o.Duration, h.inner, watch, h.lossInjected, h.rho),
		fmt.Sprintf("timings: L=%v R=%v I=%v J=%.2f T=%v; liveness bound %v; faults %v",
			c.LeaseDuration, c.RenewDeadline, c.RetryInterval, c.RetryJitter, c.BackendTimeout, h.chk.bound, o.Faults),
	}
	if v := h.res.Violation; v != nil {
		tl.Verdict, tl.Failed, tl.FailAt = "VIOLATION "+v.Error(), true, int64(v.At)
	} else {
		tl.Verdict = fmt.Sprintf("OK: every check held (%d terms, %d store operations, %d fenced writes accepted, %d refused, %v elector-time)",
			h.res.Terms, h.res.StoreOps, h.res.FenceAccepted, h.res.FenceRejected, h.res.ElectorTime)
	}
}

// countOp counts a store operation.
func (h *harness[M]) countOp() {
	h.mu.Lock()
	h.res.StoreOps++
	h.mu.Unlock()
}

// tracef writes one trace line: the virtual time, the process (or "-"),
// the message.
func (h *harness[M]) tracef(inc *incarnation[M], format string, args ...any) {
	if h.o.Trace == nil {
		return
	}
	who := "-"
	if inc != nil {
		who = inc.id
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.buf[:0]
	b = fmt.Appendf(b, "%12s %-6s ", timeline.FmtTime(int64(h.now())), who)
	b = fmt.Appendf(b, format, args...)
	b = append(b, '\n')
	h.buf = b
	h.o.Trace.Write(b) //nolint:errcheck // a trace is best effort
}

// fail records the first violation.
func (h *harness[M]) fail(check, format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.failLocked(check, format, args...)
}

func (h *harness[M]) failLocked(check, format string, args ...any) {
	if h.res.Violation != nil {
		return
	}
	h.res.Violation = &sim.Violation{At: h.now(), Check: check, Msg: fmt.Sprintf(format, args...)}
	if h.o.Trace != nil {
		b := fmt.Appendf(nil, "%12s %-6s VIOLATION %s: %s\n", timeline.FmtTime(int64(h.now())), "-", check, h.res.Violation.Msg)
		h.o.Trace.Write(b) //nolint:errcheck // a trace is best effort
	}
}

func (h *harness[M]) failed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.res.Violation != nil
}

// uniform draws a duration in [lo, hi].
func uniform(r *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(r.Int64N(int64(hi-lo)+1))
}

// latency draws a one-way latency from l.
func latency(r *rand.Rand, l sim.Latency) time.Duration {
	d := uniform(r, l.Min, l.Max)
	if l.Tail > 0 && r.Float64() < l.Tail {
		d = uniform(r, l.Max, l.TailMax)
	}
	return d
}

// storeText describes a write of the store for the timeline.
func storeText(rev lease.Revision, holder string, token, transitions uint64, by string) string {
	return fmt.Sprintf("rev %d holder=%q token=%d transitions=%d (written by %s)", rev, holder, token, transitions, by)
}
