package simtest_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-go/tenure/internal/oracle"
	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/sim"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/memstore"
)

// The shards scenario: replicas of one lead.Shards, the real lead code, on
// a memstore behind a fault-injecting wrapper per replica, in a synctest
// bubble. Faults (crashes, partitions, a replica that flaps, lost records,
// lost replies, latency) come for the first minute; then the faults heal
// and the checks run:
//
//   - one leader per shard: judged by the oracle (internal/oracle), one per
//     shard, from the recorded history alone (every write with its send and
//     apply instants, every answer and watch event delivered, the losses,
//     and each replica's Term sampled at every change and every 100 ms);
//   - bodies in their terms: a shard's body whose context is live runs on
//     a replica that leads the shard with the body's token;
//   - balance: within shardsSettle of the faults healing, each live
//     replica holds ⌊N/M⌋ or ⌈N/M⌉ shards in the store, and every shard is
//     held;
//   - fewest moves: a replica that joins then, and one that leaves after,
//     move no more shards (store holders that change) than the assignment
//     needs, and balance again within shardsSettle;
//   - handovers: each shard moved then is released no longer than
//     shardsGap before its next holder takes it, in the store.
const (
	shardsN        = 9
	shardsFaultFor = time.Minute
	// shardsSettle: a crashed replica's presence is taken for dead after
	// its LeaseDuration plus an Every, its shards are taken over a
	// LeaseDuration after the others follow them, and a move takes up to
	// six Every (see lead's TestShardsBalanceAndMoveOnlyWhatIsNeeded).
	shardsSettle = 3*3*time.Second + 12*500*time.Millisecond
	// shardsGap: once the faults heal, a shard that moves is released
	// and taken by a replica that follows it, which hears the release and
	// swaps, or, when it has only just begun to follow, reads first: a
	// handover plus a round trip, at most 100 ms at 20 ms each way, and
	// the rest for the loops' scheduling.
	shardsGap = 150 * time.Millisecond
)

func shardsConfig() lease.Config {
	return lease.Config{
		LeaseDuration:  3 * time.Second,
		RenewDeadline:  2 * time.Second,
		RetryInterval:  500 * time.Millisecond,
		RetryJitter:    0.1,
		BackendTimeout: time.Second,
		ErrorInterval:  10 * time.Second,
	}
}

// shardWorld is one run: the shared store, the oracles, the replicas.
type shardWorld struct {
	t      *testing.T
	seed   uint64
	start  time.Time
	shared *memstore.Store[string]
	cfg    lead.ShardsConfig

	mu      sync.Mutex // guards what follows and the oracles
	rng     *rand.Rand
	oracles map[string]*oracle.Oracle // by shard
	reps    []*shardReplica
	trace   []string
	healed  bool                    // the faults are over: no more lost messages
	forge   bool                    // r0's swaps of shards succeed unstored (the judge's test)
	bodies  map[*shardBody]struct{} // bodies running
	late    []string                // bodies seen running outside their term
}

// shardBody is one run of a shard's body.
type shardBody struct {
	inc   *shardInc
	rep   string
	shard string
	token uint64
	ctx   context.Context
}

// shardReplica is one replica: a process that may restart (a new
// incarnation: a new Shards with the same identity).
type shardReplica struct {
	idx  int
	id   string
	gen  uint32
	cur  *shardInc
	incs []*shardInc // not yet down
}

type shardInc struct {
	node        oracle.Node
	s           *lead.Shards[string]
	cancel      context.CancelFunc
	done        chan struct{}
	cut         bool          // crashed: every call hangs (w.mu)
	partitioned time.Duration // calls hang until then (w.mu)
	lastMembers string        // w.mu
}

func (w *shardWorld) now() oracle.Time { return oracle.Time(time.Since(w.start)) }

func (w *shardWorld) logf(format string, args ...any) {
	w.trace = append(w.trace, fmt.Sprintf("%8.3fs ", time.Since(w.start).Seconds())+fmt.Sprintf(format, args...))
}

// faultStore is the store as one incarnation reaches it.
type faultStore struct {
	w   *shardWorld
	inc *shardInc
}

func rec(r lease.Record[string]) oracle.Rec {
	return oracle.Rec{Holder: r.Holder, Token: r.Token, Transitions: r.Transitions, LeaseDuration: r.LeaseDuration}
}

// cross is one way across the network: latency, and a hang while the
// incarnation is cut off. It reports false if the call never arrives.
func (f faultStore) cross(ctx context.Context) bool {
	f.w.mu.Lock()
	d := time.Duration(1+f.w.rng.IntN(20)) * time.Millisecond
	lost := !f.w.healed && f.w.rng.IntN(100) == 0
	f.w.mu.Unlock()
	select {
	case <-time.After(d):
	case <-ctx.Done():
		return false
	}
	f.w.mu.Lock()
	cut := f.inc.cut || time.Since(f.w.start) < f.inc.partitioned
	f.w.mu.Unlock()
	if cut || lost {
		<-ctx.Done()
		return false
	}
	return true
}

func (f faultStore) Get(ctx context.Context, name string) (lease.Record[string], lease.Revision, error) {
	if !f.cross(ctx) {
		return lease.Record[string]{}, 0, fmt.Errorf("sim: get %s: %w", name, ctx.Err())
	}
	r, rev, err := f.w.shared.Get(ctx, name)
	if !f.cross(ctx) {
		return lease.Record[string]{}, 0, fmt.Errorf("sim: get %s: reply lost: %w", name, ctx.Err())
	}
	f.w.deliver(f.inc, name, r, rev, err)
	return r, rev, err
}

func (f faultStore) CompareAndSwap(ctx context.Context, name string, expected lease.Revision, next lease.Record[string]) (lease.Record[string], lease.Revision, error) {
	if !f.cross(ctx) {
		return lease.Record[string]{}, 0, fmt.Errorf("sim: swap %s: %w", name, ctx.Err())
	}
	f.w.mu.Lock()
	if f.w.forge && f.inc.node.ID == 0 && f.w.oracles[name] != nil {
		// The broken store of the judge's own test: r0's swaps of the
		// shards succeed without being stored.
		f.w.mu.Unlock()
		cur, rev, err := f.w.shared.Get(ctx, name)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return lease.Record[string]{}, 0, err
		}
		next.Token = max(next.Token, cur.Token+1)
		return next, rev + 1000, nil
	}
	o := f.w.oracles[name]
	var sn oracle.Snapshot
	if o != nil {
		sn = o.Send(f.inc.node, f.w.now(), expected, rec(next))
	}
	r, rev, err := f.w.shared.CompareAndSwap(ctx, name, expected, next)
	if o != nil && err == nil {
		o.Applied(f.w.now(), sn, rev, rec(r), 0)
	}
	f.w.mu.Unlock()
	if !f.cross(ctx) {
		return lease.Record[string]{}, 0, fmt.Errorf("sim: swap %s: reply lost: %w", name, ctx.Err())
	}
	f.w.deliver(f.inc, name, r, rev, err)
	return r, rev, err
}

// Watch forwards the shared store's events while the incarnation is not
// cut off; each event delivered is recorded.
func (f faultStore) Watch(ctx context.Context, name string) (<-chan store.Event[string], error) {
	in, err := f.w.shared.Watch(ctx, name)
	if err != nil {
		return nil, err
	}
	out := make(chan store.Event[string])
	go func() {
		defer close(out)
		for ev := range in {
			f.w.mu.Lock()
			cut := f.inc.cut || time.Since(f.w.start) < f.inc.partitioned
			f.w.mu.Unlock()
			if cut {
				return // the stream breaks; the elector watches again
			}
			if ev.Err == nil {
				f.w.deliver(f.inc, name, ev.Record, ev.Revision, nil)
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// WatchCapabilities forwards the shared store's: the events are its own,
// unchanged (a cut ends the stream).
func (f faultStore) WatchCapabilities() store.WatchCapabilities {
	return store.WatchCapabilitiesOf[string](f.w.shared)
}

// MayLoseRecords: the run loses records.
func (faultStore) MayLoseRecords() bool { return true }

func (w *shardWorld) deliver(inc *shardInc, name string, r lease.Record[string], rev lease.Revision, err error) {
	if err != nil && !errors.Is(err, store.ErrConflict) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if o := w.oracles[name]; o != nil {
		o.Deliver(inc.node, w.now(), rev, rec(r), rev != 0)
	}
}

// sample records every live incarnation's belief about every shard.
func (w *shardWorld) sample() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, rep := range w.reps {
		for _, inc := range rep.incs {
			if m := strings.Join(inc.s.Members(), ","); m != inc.lastMembers {
				inc.lastMembers = m
				w.logf("%s (process %d) sees members %s, leads %v", rep.id, inc.node.Gen, m, inc.s.Leading())
			}
			for _, sh := range w.cfg.Shards {
				var t lead.Term
				ok := false
				if e, in := inc.s.Elector(sh.Name); in {
					t, ok = e.Term()
				}
				w.oracles[sh.Name].Belief(inc.node, w.now(), ok, uint64(t.Token))
			}
		}
	}
	// A body whose context is live runs in its term: its replica leads
	// the shard with the body's token. The belief is read first: a
	// context still live after it was live when it was read (a context
	// never comes back), while a term may end between the two reads.
	for b := range w.bodies {
		var t lead.Term
		ok := false
		if e, in := b.inc.s.Elector(b.shard); in {
			t, ok = e.Term()
		}
		if b.ctx.Err() != nil {
			continue
		}
		if !ok || uint64(t.Token) != b.token {
			w.late = append(w.late, fmt.Sprintf("at %.3fs the body of %s with token %d runs on %s, which leads it: %v (token %d)",
				time.Since(w.start).Seconds(), b.shard, b.token, b.rep, ok, t.Token))
			delete(w.bodies, b)
		}
	}
}

// body is each shard's work on rep's incarnation inc: it runs until its
// context ends, and is checked meanwhile (sample).
func (w *shardWorld) body(rep *shardReplica, inc *shardInc) func(context.Context, string, lead.Term) error {
	return func(ctx context.Context, shard string, t lead.Term) error {
		b := &shardBody{inc: inc, rep: rep.id, shard: shard, token: uint64(t.Token), ctx: ctx}
		w.mu.Lock()
		w.bodies[b] = struct{}{}
		w.mu.Unlock()
		<-ctx.Done()
		w.mu.Lock()
		delete(w.bodies, b)
		w.mu.Unlock()
		return nil
	}
}

func (w *shardWorld) failed() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for name, o := range w.oracles {
		for _, v := range o.Violations() {
			out = append(out, fmt.Sprintf("%s: %s", name, v))
		}
	}
	slices.Sort(out)
	return out
}

// boot starts a new incarnation of rep.
func (w *shardWorld) boot(rep *shardReplica) {
	w.mu.Lock()
	rep.gen++
	inc := &shardInc{node: oracle.Node{ID: rep.idx, Gen: rep.gen}, done: make(chan struct{})}
	for _, o := range w.oracles {
		o.Boot(inc.node, w.now())
	}
	w.logf("%s boots (process %d)", rep.id, rep.gen)
	w.mu.Unlock()
	s, err := lead.NewShards[string](faultStore{w, inc}, w.cfg,
		lead.WithIdentity(rep.id), lead.WithConfig(shardsConfig()), lead.WithLookupEnv(nil),
		lead.WithObserver(func(c lead.Change) {
			if strings.Contains(c.Term.Name, "-member-") {
				w.mu.Lock()
				w.logf("%s (process %d): %v %s token %d (%v)", rep.id, inc.node.Gen, c.Kind, c.Term.Name, c.Term.Token, c.Reason)
				w.mu.Unlock()
			}
			w.sample()
		}))
	if err != nil {
		w.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	inc.s, inc.cancel = s, cancel
	w.mu.Lock()
	rep.cur = inc
	rep.incs = append(rep.incs, inc)
	w.mu.Unlock()
	go func() {
		defer close(inc.done)
		_ = s.Run(ctx, w.body(rep, inc))
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, o := range w.oracles {
			o.Down(inc.node, w.now())
		}
		rep.incs = slices.DeleteFunc(rep.incs, func(x *shardInc) bool { return x == inc })
	}()
}

// stop ends rep's incarnation: gracefully (it leaves), or as a crash (it
// is cut off from the store first, then its process ends).
func (w *shardWorld) stop(rep *shardReplica, crash bool) {
	w.mu.Lock()
	inc := rep.cur
	rep.cur = nil
	if inc == nil {
		w.mu.Unlock()
		return
	}
	inc.cut = crash
	w.logf("%s stops (crash: %v)", rep.id, crash)
	w.mu.Unlock()
	inc.cancel()
	<-inc.done
}

// aim partitions, for d, a replica that leads a shard another live
// replica takes part in, if there is one, and reports whether it did.
func (w *shardWorld) aim(d time.Duration) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, sh := range w.cfg.Shards {
		var leader *shardInc
		var rep string
		in := 0
		for _, r := range w.reps {
			if r.cur == nil {
				continue
			}
			if e, ok := r.cur.s.Elector(sh.Name); ok {
				in++
				if e.IsLeader() {
					leader, rep = r.cur, r.id
				}
			}
		}
		if in >= 2 && leader != nil && time.Since(w.start) >= leader.partitioned {
			leader.partitioned = time.Since(w.start) + d
			w.logf("%s, leading %s which another follows, partitioned for %v", rep, sh.Name, d)
			return true
		}
	}
	return false
}

// holders returns each shard's holder in the store.
func (w *shardWorld) holders() map[string]string {
	out := map[string]string{}
	for _, sh := range w.cfg.Shards {
		r, _, err := w.shared.Get(context.Background(), sh.Name)
		if err == nil && r.Holder != "" {
			out[sh.Name] = r.Holder
		}
	}
	return out
}

// balanced reports what keeps the live replicas from holding ⌊N/M⌋ or
// ⌈N/M⌉ shards each, with every shard held.
func (w *shardWorld) balanced() error {
	h := w.holders()
	count := map[string]int{}
	for _, id := range h {
		count[id]++
	}
	var live []string
	for _, rep := range w.reps {
		if rep.cur != nil {
			live = append(live, rep.id)
		}
	}
	n, m := len(w.cfg.Shards), len(live)
	var errs []error
	if len(h) != n {
		errs = append(errs, fmt.Errorf("%d of %d shards held", len(h), n))
	}
	for id, c := range count {
		if !slices.Contains(live, id) {
			errs = append(errs, fmt.Errorf("%s holds %d shards and is not live", id, c))
		}
	}
	for _, id := range live {
		if c := count[id]; c < n/m || c > (n+m-1)/m {
			errs = append(errs, fmt.Errorf("%s holds %d shards, want %d or %d", id, c, n/m, (n+m-1)/m))
		}
	}
	return errors.Join(errs...)
}

// fewestMoves is the fewest shards that must change hands for members
// to be balanced, with h their holders.
func fewestMoves(h map[string]string, members []string, n int) int {
	count := map[string]int{}
	leaving := 0
	for _, id := range h {
		if slices.Contains(members, id) {
			count[id]++
		} else {
			leaving++
		}
	}
	var cs []int
	for _, id := range members {
		cs = append(cs, count[id])
	}
	slices.SortFunc(cs, func(a, b int) int { return b - a })
	m := len(members)
	need := leaving
	for rank, c := range cs {
		share := n / m
		if rank < n%m {
			share++
		}
		need += max(0, c-share)
	}
	return need
}

// watchGaps watches every shard in the shared store and returns a
// function that stops watching and returns the longest time a shard was
// released before someone held it again.
func (w *shardWorld) watchGaps() func() time.Duration {
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var worst time.Duration
	var wg sync.WaitGroup
	for _, sh := range w.cfg.Shards {
		ch, err := w.shared.Watch(ctx, sh.Name)
		if err != nil {
			w.t.Fatal(err)
		}
		wg.Go(func() {
			var freed time.Time
			for ev := range ch {
				switch {
				case ev.Absent || ev.Record.Holder == "":
					if freed.IsZero() {
						freed = time.Now()
					}
				case !freed.IsZero():
					mu.Lock()
					worst = max(worst, time.Since(freed))
					mu.Unlock()
					w.mu.Lock()
					w.logf("%s released %v before %s took it", sh.Name, time.Since(freed), ev.Record.Holder)
					w.mu.Unlock()
					freed = time.Time{}
				}
			}
		})
	}
	return func() time.Duration {
		cancel()
		wg.Wait()
		return worst
	}
}

func changed(a, b map[string]string) int {
	n := 0
	for s, h := range a {
		if b[s] != h {
			n++
		}
	}
	return n
}

// runShards runs one seed and returns what failed.
func runShards(t *testing.T, seed uint64, forge bool) (errs []string, trace []string) {
	w := &shardWorld{forge: forge,
		t: t, seed: seed, start: time.Now(), shared: memstore.New[string](),
		rng: rand.New(rand.NewPCG(seed, 39)), oracles: map[string]*oracle.Oracle{}, bodies: map[*shardBody]struct{}{},
	}
	// A replica moves one, (the default) two or eight shards at once.
	w.cfg = lead.ShardsConfig{Name: "shards", MaxReplicas: 8, MaxMoves: []int{1, 0, 8}[seed%3]}
	for i := range shardsN {
		w.cfg.Shards = append(w.cfg.Shards, lead.Shard{Name: fmt.Sprintf("shard-%d", i)})
	}
	for _, sh := range w.cfg.Shards {
		w.oracles[sh.Name] = oracle.New(oracle.Params{MaxRenewDeadline: shardsConfig().RenewDeadline, Complete: true, LossyStore: true, Slack: 100 * time.Millisecond})
	}
	for i := range 4 {
		w.reps = append(w.reps, &shardReplica{idx: i, id: fmt.Sprintf("r%d", i)})
	}
	for _, rep := range w.reps[:3] {
		w.boot(rep)
	}
	sampling, stopSampling := context.WithCancel(context.Background())
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-sampling.Done():
				return
			case <-time.After(100 * time.Millisecond):
				w.sample()
			}
		}
	}()

	// Faults, drawn from the seed, for shardsFaultFor.
	for time.Since(w.start) < shardsFaultFor {
		w.mu.Lock()
		gap := time.Duration(1+w.rng.IntN(6)) * time.Second
		kind := w.rng.IntN(9)
		rep := w.reps[w.rng.IntN(len(w.reps))]
		name := w.cfg.Shards[w.rng.IntN(shardsN)].Name
		if w.rng.IntN(3) == 0 {
			name = fmt.Sprintf("%s-member-%d", w.cfg.Name, w.rng.IntN(w.cfg.MaxReplicas))
		}
		part := time.Duration(1+w.rng.IntN(8)) * time.Second
		w.mu.Unlock()
		if kind >= 5 {
			// Aimed at the worst moment: the leader of a shard another
			// replica follows (a move under way) is cut off, while the
			// follower's wait runs.
			for waited := time.Duration(0); waited < gap; waited += 10 * time.Millisecond {
				time.Sleep(10 * time.Millisecond)
				if w.aim(part) {
					break
				}
			}
			continue
		}
		time.Sleep(gap)
		switch kind {
		case 0: // crash, or start a replica that is down
			if rep.cur != nil {
				w.stop(rep, true)
			} else {
				w.boot(rep)
			}
		case 1: // partition
			if rep.cur != nil {
				w.mu.Lock()
				rep.cur.partitioned = time.Since(w.start) + part
				w.logf("%s partitioned for %v", rep.id, part)
				w.mu.Unlock()
			}
		case 2: // flap: stop and start, gracefully, a few times
			for range 3 {
				w.stop(rep, false)
				w.boot(rep)
				time.Sleep(part / 4)
			}
		case 3: // the store loses a record
			w.mu.Lock()
			w.shared.Delete(name)
			if o := w.oracles[name]; o != nil {
				o.Lose(w.now())
			}
			w.logf("the store loses %s", name)
			w.mu.Unlock()
		case 4: // a graceful stop, or a start
			if rep.cur != nil {
				w.stop(rep, false)
			} else {
				w.boot(rep)
			}
		}
	}
	// Heal: three replicas live, none cut off.
	for _, rep := range w.reps[:3] {
		if rep.cur == nil {
			w.boot(rep)
		}
	}
	if w.reps[3].cur != nil {
		w.stop(w.reps[3], false)
	}
	w.mu.Lock()
	for _, rep := range w.reps {
		if rep.cur != nil {
			rep.cur.partitioned = 0
		}
	}
	w.healed = true
	w.logf("faults heal")
	w.mu.Unlock()
	time.Sleep(shardsSettle)
	var problems []string
	if err := w.balanced(); err != nil {
		problems = append(problems, fmt.Sprintf("not balanced %v after the faults healed: %v", shardsSettle, err))
	}

	// From now on, each shard's time without a holder in the store is
	// measured: a move is a handover.
	gaps := w.watchGaps()

	// A replica joins: only the shards needed move.
	before := w.holders()
	members := []string{"r0", "r1", "r2", "r3"}
	need := fewestMoves(before, members, shardsN)
	w.boot(w.reps[3])
	time.Sleep(shardsSettle)
	after := w.holders()
	if err := w.balanced(); err != nil {
		problems = append(problems, fmt.Sprintf("not balanced %v after r3 joined: %v", shardsSettle, err))
	}
	if m := changed(before, after); m > need {
		problems = append(problems, fmt.Sprintf("r3 joining moved %d shards, %d were needed", m, need))
	}

	// A replica leaves: only its shards, and those needed, move.
	need = fewestMoves(after, []string{"r1", "r2", "r3"}, shardsN)
	w.stop(w.reps[0], false)
	time.Sleep(shardsSettle)
	final := w.holders()
	if err := w.balanced(); err != nil {
		problems = append(problems, fmt.Sprintf("not balanced %v after r0 left: %v", shardsSettle, err))
	}
	if m := changed(after, final); m > need {
		problems = append(problems, fmt.Sprintf("r0 leaving moved %d shards, %d were needed", m, need))
	}

	if g := gaps(); g > shardsGap {
		problems = append(problems, fmt.Sprintf("a moved shard went %v without a holder in the store, more than %v", g, shardsGap))
	}
	for _, rep := range w.reps {
		w.stop(rep, false)
	}
	stopSampling()
	<-sampled
	problems = append(problems, w.failed()...)
	w.mu.Lock()
	defer w.mu.Unlock()
	problems = append(problems, w.late...)
	return problems, slices.Clone(w.trace)
}

// TestSimShards runs the shards scenario on seeds 1, 2, ... for the
// simulator's budget (sim.DefaultBudget; TENURE_SIM_SEEDS picks seeds and
// ranges, as the other sweeps' do).
func TestSimShards(t *testing.T) {
	var seeds []uint64
	if s := os.Getenv(sim.EnvSeeds); s != "" {
		ranges, err := sim.ParseSeeds(s)
		if err != nil {
			t.Fatalf("%s: %v", sim.EnvSeeds, err)
		}
		for _, r := range ranges {
			for n := r.First; n <= r.Last && n >= r.First; n++ {
				seeds = append(seeds, n)
			}
		}
	}
	began := time.Now()
	for i := uint64(1); ; i++ {
		seed := i
		if seeds != nil {
			if int(i) > len(seeds) {
				break
			}
			seed = seeds[i-1]
		} else if i > 2 && time.Since(began) > sim.DefaultBudget {
			break
		}
		synctest.Test(t, func(t *testing.T) {
			problems, trace := runShards(t, seed, false)
			aimed := 0
			for _, l := range trace {
				if strings.Contains(l, "which another follows") {
					aimed++
				}
			}
			t.Logf("seed %d: %d events, %d faults aimed at a move", seed, len(trace), aimed)
			if len(problems) > 0 {
				t.Errorf("seed %d (TENURE_SIM_SEEDS=%d to replay):\n%s\ntrace:\n%s", seed, seed, strings.Join(problems, "\n"), strings.Join(trace, "\n"))
			}
		})
		if t.Failed() {
			return
		}
	}
}

// TestSimShardsJudgeCatchesTwoLeaders shows that the shards scenario's
// judge catches a leader the store never chose: r0's store says its swaps
// of shards succeeded without storing them, so r0 leads shards beside
// the holders the store has.
func TestSimShardsJudgeCatchesTwoLeaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		problems, _ := runShards(t, 1, true)
		for _, p := range problems {
			if strings.HasPrefix(p, "shard-") {
				t.Logf("caught: %s", p)
				return
			}
		}
		t.Fatalf("no shard's judge found a violation; problems: %v", problems)
	})
}
