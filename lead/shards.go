package lead

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/internal/nilarg"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

// ErrInvalidShards is wrapped by NewShards' errors for a ShardsConfig it
// cannot run.
var ErrInvalidShards = errors.New("lead: invalid shards")

// DefaultMaxReplicas is the number of presence slots of a Shards when
// ShardsConfig.MaxReplicas is 0.
const DefaultMaxReplicas = 16

// DefaultMaxMoves is how many shards a replica moves at once when
// ShardsConfig.MaxMoves is 0.
const DefaultMaxMoves = 2

// ShardsConfig says what a Shards runs.
type ShardsConfig struct {
	// Name names the set of shards. The replicas' presence records are
	// Name+"-member-0", Name+"-member-1", ... in the same store (so Name
	// follows the store's rules for names: a Kubernetes Lease's, say); it must
	// not be the name of a shard.
	Name string
	// Shards are the shards to spread over the replicas; their names are
	// election names in the store, one each, and must be unique.
	Shards []Shard
	// MaxReplicas is how many replicas can take part at once: the number
	// of presence slots (default DefaultMaxReplicas, at most 1024). A
	// replica that finds every slot held waits, leading nothing, until
	// one frees.
	MaxReplicas int
	// Every is how often a replica reads the presence records and
	// rebalances (default the electors' RetryInterval; at most
	// lease.MaxDuration, and at least a millisecond and MaxReplicas reads
	// at lease.MaxRequestsPerSecond). A replica releases
	// a shard assigned elsewhere only once the assignment has said so for
	// three Every (the receiver sees the change at its next look, an
	// Every and the look's reads later, and follows a shard another
	// replica holds at once), so that the replica it goes to follows it
	// by then and takes it the moment the release is heard.
	Every time.Duration
	// Refresh is how often a replica reads the holders of the shards it
	// does not take part in, when membership does not change (default the
	// electors' LeaseDuration; at least a millisecond, at most
	// lease.MaxDuration); it reads them at once when membership changes.
	Refresh time.Duration
	// MaxMoves is how many shards a replica moves at once (default
	// DefaultMaxMoves): a move lasts from its step-down until the
	// replica sees the receiver's term (or falls back to a plain
	// release, see Elector.HandOver), and the next starts as soon as one
	// is over. On a store without watches a replica sees the receiver's
	// term at its next poll, so moves there take a poll each.
	// A store that serves hundreds of releases and takeovers at once
	// queues them, and each move's time without a leader grows with the
	// queue; two at a time keep it near one handover. More move shards
	// faster on a slow store, each with a longer time without a leader
	// (docs/benchmarks.md, "Shards over three replicas").
	MaxMoves int
}

// Shards runs a set of shards over every live replica: each replica makes
// a Shards with the same ShardsConfig and runs it, and once membership is
// stable each of M replicas leads ⌊N/M⌋ or ⌈N/M⌉ of N shards (with
// weights, within the heaviest shard's weight of an even load, see
// Shard). A replica joining or leaving moves only the shards needed to
// restore the balance: each replica computes the same target assignment
// from the live members and the shards' current holders, keeping shards
// where they are while the balance allows; it campaigns only for the
// shards assigned to it, and hands those it holds that are assigned
// elsewhere over to the replica they go to (Elector.HandOver), after that
// replica has had time to follow them (see ShardsConfig.Every) and a few
// at a time (ShardsConfig.MaxMoves); the receiver takes each on the
// release it hears. A
// replica follows a shard assigned to it that another replica holds at
// once, and campaigns for a free one once membership has not changed for
// an Every, so that replicas that start together do not first take each
// other's shards.
//
// Safety is each shard's election's, as in a Group: the assignment only
// decides who campaigns and who releases, and replicas that disagree on it
// (while membership settles) at worst both campaign, and one wins. A
// shard's body runs only while this replica leads the shard, with the
// term's fencing token.
//
// Membership lives in the same store, with no listing: a replica holds one
// of MaxReplicas presence slots, each an election of its own (the first
// it finds free, from one its identity picks), and reads the slots every Every. A slot whose
// record has not changed for a LeaseDuration plus an Every is taken for dead; a
// replica that stops renewing its presence drops out after its lease. The
// holders of the shards come from the replica's own electors and, for the
// others, from reads (see ShardsConfig.Refresh). These reads are reported
// to WithInstruments as reads of the names read, as the electors' are.
//
// Make one with NewShards; its methods are safe for concurrent use.
type Shards[M any] struct {
	st      store.Store[M]
	g       *Group[M]
	cfg     ShardsConfig
	lease   lease.Config
	id      string
	clock   Clock
	log     *slog.Logger
	slots   []string
	byName  map[string]Shard
	timeout time.Duration
	inst    Instruments // the electors' (WithInstruments): the looks' reads too

	// hook, set by tests only, changes the behaviour for the tests of
	// its unsafe variants.
	hook shardsHook

	mu       sync.Mutex
	ran      bool
	electors map[string]*Elector[M] // shards in the Group
	removing map[string]*Elector[M] // removed, not done yet
	moving   map[string]bool        // of removing, those released while leading
	moved    chan struct{}          // a move is over: start the next
	present  chan struct{}          // this replica's presence slot is led: look again
	since    map[string]shardMove   // shards held, assigned elsewhere: since when
	holders  map[string]string      // last seen holder of each shard
	seen     []slotSeen             // by slot
	members  []string
	target   map[string]string
	refresh  time.Time // holders last read
	slot     int       // this replica's slot, -1 if none
	slotE    *Elector[M]
	leaving  bool
	stable   time.Time // since when membership has not changed
}

// shardsHook holds the unsafe variants the tests show fail.
type shardsHook struct {
	bodyOutlivesTerm bool // a shard's body keeps running after its term
	campaignAll      bool // every replica campaigns for every shard
	moveSlotKept     bool // a release that is over keeps its place among MaxMoves
	moveOnRelease    bool // a move gives its place among MaxMoves back once the release is stored, not once the receiver leads
	lookLate         bool // a replica that gets its presence slot looks again only an Every later
	followLate       bool // a shard another replica holds is followed only once membership has held for an Every
	countOnTerm      bool // a replica looks again when its presence slot's term begins, not when its record names it
	takeFreeAtOnce   bool // a free shard is taken without waiting for membership to hold for an Every
}

// shardMove is a shard held here and assigned to another: to whom, since
// when.
type shardMove struct {
	to string
	at time.Time
}

// slotSeen is what a replica last read of a presence slot.
type slotSeen struct {
	holder string
	rev    lease.Revision
	at     time.Time // when rev was first read
	ok     bool
	bad    bool // the slot's record is corrupt: no member, and no replica can take it
}

// NewShards returns the Shards of cfg kept in st. opts apply to every
// election it runs (the presence slots and the shards), as NewGroup's do;
// all of them run under one identity, this replica's (WithIdentity, or
// the default). It returns an error wrapping ErrInvalidShards for a cfg
// it cannot run, naming the field and the rule.
func NewShards[M any](st store.Store[M], cfg ShardsConfig, opts ...Option) (*Shards[M], error) {
	if nilarg.IsNil(st) {
		return nil, ErrNilStore
	}
	if cfg.MaxReplicas == 0 {
		cfg.MaxReplicas = DefaultMaxReplicas
	}
	if cfg.MaxMoves == 0 {
		cfg.MaxMoves = DefaultMaxMoves
	}
	switch {
	case cfg.MaxReplicas < 1 || cfg.MaxReplicas > 1024:
		return nil, fmt.Errorf("%w: ShardsConfig.MaxReplicas is %d, must lie in [1, 1024]", ErrInvalidShards, cfg.MaxReplicas)
	case cfg.Every < 0:
		return nil, fmt.Errorf("%w: ShardsConfig.Every is %v, must not be negative", ErrInvalidShards, cfg.Every)
	case cfg.Refresh < 0:
		return nil, fmt.Errorf("%w: ShardsConfig.Refresh is %v, must not be negative", ErrInvalidShards, cfg.Refresh)
	case cfg.MaxMoves < 0:
		return nil, fmt.Errorf("%w: ShardsConfig.MaxMoves is %d, must not be negative", ErrInvalidShards, cfg.MaxMoves)
	}
	s := &Shards[M]{st: st, byName: map[string]Shard{}, slot: -1, moved: make(chan struct{}, 1), present: make(chan struct{}, 1)}
	for i := range cfg.MaxReplicas {
		name := cfg.Name + "-member-" + strconv.Itoa(i)
		if err := store.ValidateName(name); err != nil {
			return nil, fmt.Errorf("%w: ShardsConfig.Name %q: %w", ErrInvalidShards, cfg.Name, err)
		}
		s.slots = append(s.slots, name)
	}
	for i, sh := range cfg.Shards {
		if err := store.ValidateName(sh.Name); err != nil {
			return nil, fmt.Errorf("%w: ShardsConfig.Shards[%d]: %w", ErrInvalidShards, i, err)
		}
		if sh.Weight < 0 {
			return nil, fmt.Errorf("%w: ShardsConfig.Shards[%d] (%q): Weight is %d, must not be negative", ErrInvalidShards, i, sh.Name, sh.Weight)
		}
		if _, dup := s.byName[sh.Name]; dup {
			return nil, fmt.Errorf("%w: ShardsConfig.Shards[%d]: the name %q is there twice", ErrInvalidShards, i, sh.Name)
		}
		if slices.Contains(s.slots, sh.Name) {
			return nil, fmt.Errorf("%w: ShardsConfig.Shards[%d]: %q is a presence slot of ShardsConfig.Name", ErrInvalidShards, i, sh.Name)
		}
		s.byName[sh.Name] = sh
	}
	cfg.Shards = slices.Clone(cfg.Shards)
	// An elector made with opts resolves the identity, the clock, the
	// logger and the timings as every election of the set will have them.
	probe, err := newElector(s.slots[0], st, opts)
	if err != nil {
		return nil, err
	}
	all := append(slices.Clip(opts), WithIdentity(probe.id), WithClock(probe.clock))
	g, err := NewGroup(st, all...)
	if err != nil {
		return nil, err
	}
	everySource, refreshSource := "", ""
	if cfg.Every == 0 {
		cfg.Every, everySource = probe.cfg.RetryInterval, " (the RetryInterval, by default)"
	}
	if cfg.Refresh == 0 {
		cfg.Refresh, refreshSource = probe.cfg.LeaseDuration, " (the LeaseDuration, by default)"
	}
	// A look reads every presence slot: at most lease.MaxRequestsPerSecond
	// reads a second, as an elector's requests. Below a millisecond or
	// above lease.MaxDuration, a wait would spin or its sums overflow.
	minEvery := max(lease.MinDuration, time.Duration(cfg.MaxReplicas)*time.Second/time.Duration(lease.MaxRequestsPerSecond))
	switch {
	case cfg.Every < minEvery || cfg.Every > lease.MaxDuration:
		return nil, fmt.Errorf("%w: ShardsConfig.Every is %v%s, must lie in [%v, %v] (a look reads all %d presence slots, at most %d reads a second)",
			ErrInvalidShards, cfg.Every, everySource, minEvery, lease.MaxDuration, cfg.MaxReplicas, lease.MaxRequestsPerSecond)
	case cfg.Refresh < lease.MinDuration || cfg.Refresh > lease.MaxDuration:
		return nil, fmt.Errorf("%w: ShardsConfig.Refresh is %v%s, must lie in [%v, %v]", ErrInvalidShards, cfg.Refresh, refreshSource, lease.MinDuration, lease.MaxDuration)
	}
	s.g, s.cfg, s.lease, s.id, s.clock, s.log = g, cfg, probe.cfg, probe.id, probe.clock, probe.log
	s.timeout = probe.cfg.BackendTimeout
	s.inst = probe.instruments
	s.seen = make([]slotSeen, len(s.slots))
	return s, nil
}

// usable returns an error wrapping ErrNilArgument for a nil Shards or
// one not made by NewShards, naming the method op.
func (s *Shards[M]) usable(op string) error {
	switch {
	case s == nil:
		return fmt.Errorf("%w: Shards.%s: the *Shards is nil (make one with NewShards)", ErrNilArgument, op)
	case s.g == nil:
		return fmt.Errorf("%w: Shards.%s: the Shards was not made by NewShards", ErrNilArgument, op)
	}
	return nil
}

// Config returns the ShardsConfig s runs, with its defaults filled in (the
// zero ShardsConfig for a Shards not made by NewShards).
func (s *Shards[M]) Config() ShardsConfig {
	if s.usable("Config") != nil {
		return ShardsConfig{}
	}
	c := s.cfg
	c.Shards = slices.Clone(c.Shards)
	return c
}

// Identity returns this replica's identity: the holder of its presence
// slot and of the shards it leads ("" for a Shards not made by
// NewShards).
func (s *Shards[M]) Identity() string {
	if s.usable("Identity") != nil {
		return ""
	}
	return s.id
}

// Elector returns the elector of shard name, if this replica takes part in
// its election now (it is assigned here, or was and has not released it
// yet): its Leaders, Term, Record and the rest work as on any elector.
func (s *Shards[M]) Elector(name string) (*Elector[M], bool) {
	if s.usable("Elector") != nil {
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.electors[name]; ok {
		return e, true
	}
	if e, ok := s.removing[name]; ok && !isDone(e) {
		return e, true // removed, still stepping down
	}
	return nil, false
}

// isDone reports whether e has stopped.
func isDone[M any](e *Elector[M]) bool {
	select {
	case <-e.Done():
		return true
	default:
		return false
	}
}

// Leading returns the names of the shards this replica leads now, sorted:
// those it is releasing too, until their terms end.
func (s *Shards[M]) Leading() []string {
	if s.usable("Leading") != nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, m := range []map[string]*Elector[M]{s.electors, s.removing} {
		for name, e := range m {
			if e.IsLeader() {
				out = append(out, name)
			}
		}
	}
	slices.Sort(out)
	return out
}

// Members returns the replicas this replica saw live at its last look,
// sorted: the holders of the presence slots it takes for live.
func (s *Shards[M]) Members() []string {
	if s.usable("Members") != nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.members)
}

// Assignment returns the target assignment this replica computed last:
// for each shard, the replica that should lead it.
func (s *Shards[M]) Assignment() map[string]string {
	if s.usable("Assignment") != nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]string, len(s.target))
	for k, v := range s.target {
		out[k] = v
	}
	return out
}

// Run takes part in the set until ctx ends: it holds a presence slot,
// campaigns for the shards assigned to this replica and hands the others
// over to the replicas they are assigned to, and runs fn (if not nil) in
// every term of a shard it leads, with a context that ends with the term
// and carries its fencing token (as Lead's). An error fn returns is logged; fn runs again in the shard's
// next term.
//
// When ctx ends, the replica leaves: it releases its presence, hands the
// shards it leads to the other live replicas, if any (as a move does,
// until none is led and no move is in flight, for five Every plus a
// RenewDeadline at most, as the look then under way ends), then stops as Group.Run does: a body still running at
// its term's deadline is not waited for, and Run returns an error
// wrapping ErrBodiesStillRunning. A ctx that never ends (Background) runs
// it for good. Run returns ErrAlreadyRunning when called a second time,
// and an error wrapping ErrNilArgument for a nil ctx or a Shards not made
// by NewShards.
func (s *Shards[M]) Run(ctx context.Context, fn func(ctx context.Context, shard string, t Term) error) error {
	if err := s.usable("Run"); err != nil {
		return err
	}
	if ctx == nil {
		return fmt.Errorf("%w: Shards.Run: ctx is nil", ErrNilArgument)
	}
	s.mu.Lock()
	if s.ran {
		s.mu.Unlock()
		return ErrAlreadyRunning
	}
	s.ran = true
	s.electors, s.removing, s.moving, s.since, s.holders = map[string]*Elector[M]{}, map[string]*Elector[M]{}, map[string]bool{}, map[string]shardMove{}, map[string]string{}
	s.mu.Unlock()

	gctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	w := &shardsWork{}
	w.bodies.cond.L = &w.bodies.mu
	done := make(chan error, 1)
	go func() { done <- s.g.Run(gctx) }()

	wake := make(chan struct{}, 1)
	tick := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	var drainUntil time.Time
	leaving := false
	ctxDone := ctx.Done() // nil for a ctx that never ends
	for {
		s.step(gctx, fn, w)
		if leaving {
			now := s.clock.Now()
			if drainUntil.IsZero() {
				drainUntil = now.Add(5*s.cfg.Every + s.lease.RenewDeadline)
				s.leave()
			}
			if len(s.Leading()) == 0 && s.movesInFlight() == 0 || len(s.Members()) == 0 || !now.Before(drainUntil) {
				break
			}
		}
		t := s.clock.AfterFunc(s.cfg.Every, tick)
	wait:
		for {
			select {
			case <-wake:
				break wait
			case <-s.moved:
				s.moveMore(gctx, fn, w)
			case <-s.present:
				// Counted among the members from now on: a look at once,
				// rather than an Every later, so that the membership this
				// replica waits to see stable is the one the others see.
				t.Stop()
				break wait
			case <-ctxDone:
				t.Stop()
				leaving = true
				ctxDone = nil
				break wait
			}
		}
	}
	stop()
	err := <-done
	w.handoffs.Wait()
	if n := w.bodies.waitUnlessStuck(); n > 0 && !errors.Is(err, ErrBodiesStillRunning) {
		err = errors.Join(err, fmt.Errorf("%w: %d shard bodies still run after their terms ended and their deadlines passed", ErrBodiesStillRunning, n))
	}
	return err
}

// shardsWork is what Run waits for before it returns: the handoffs of
// moves, whose fallback to a plain release is a write (never one after
// Run returns), and the goroutines that run the bodies.
type shardsWork struct {
	handoffs sync.WaitGroup
	bodies   shardBodies
}

// shardBodies counts the goroutines that run a Shards' bodies, and how
// many of them are inside fn.
type shardBodies struct {
	mu      sync.Mutex
	cond    sync.Cond // on mu; signalled at every change
	running int
	inFn    int
}

// add counts a goroutine that runs bodies, or (fn) one entering fn; a
// negative d counts one leaving.
func (b *shardBodies) add(d int, fn bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if fn {
		b.inFn += d
	} else {
		b.running += d
	}
	b.cond.Broadcast()
}

// waitUnlessStuck waits, once the Group has stopped, until every goroutine
// that runs bodies has returned, or until those left are all inside fn,
// and returns how many are. The Group waited for each term's bodies until
// the term's deadline, so a body still running now has outlived it: Run
// does not wait for it either, as Group.Run does not. No body starts once
// its term has ended.
func (b *shardBodies) waitUnlessStuck() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.running > b.inFn {
		b.cond.Wait()
	}
	return b.inFn
}

// leave releases this replica's presence: from now on it is no member,
// and every replica assigns its shards elsewhere.
func (s *Shards[M]) leave() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.leaving = true
	if s.slotE != nil {
		s.g.Remove(s.slots[s.slot])
		s.slotE, s.slot = nil, -1
	}
}

// step is one look: read the presence slots, keep this replica's own,
// read the holders if due, compute the assignment and campaign or release
// accordingly.
func (s *Shards[M]) step(ctx context.Context, fn func(context.Context, string, Term) error, w *shardsWork) {
	now := s.clock.Now()
	if err := s.readSlots(ctx, now); err != nil {
		// A look with holes would see members vanish: none this time.
		s.log.Warn("shards: cannot read the presence slots", "err", err)
		return
	}
	s.mu.Lock()
	s.keepSlotLocked(ctx, now)
	members := s.membersLocked(now)
	changed := !slices.Equal(members, s.members)
	s.members = members
	if changed || s.stable.IsZero() {
		s.stable = now
	}
	due := changed || now.Sub(s.refresh) >= s.cfg.Refresh
	var others []string
	if due {
		for _, sh := range s.cfg.Shards {
			if s.electors[sh.Name] == nil {
				others = append(others, sh.Name)
			}
		}
	}
	s.mu.Unlock()
	read := map[string]string{}
	complete := true
	for i, r := range s.readAll(ctx, others) {
		switch {
		case r.err == nil:
			read[others[i]] = r.holder
		case errors.Is(r.err, store.ErrNotFound), errors.Is(r.err, store.ErrCorruptRecord):
			read[others[i]] = "" // nobody leads a corrupt record
		default:
			complete = false
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, h := range read {
		s.holders[name] = h
	}
	if due && complete {
		s.refresh = now
	}
	for name, e := range s.electors {
		if rec, ok := e.Record(); ok {
			s.holders[name] = rec.Holder
		}
	}
	s.pruneRemovingLocked()
	for name, e := range s.electors {
		select {
		case <-e.Done():
			// Stopped on its own (a write the store refused for good,
			// logged by the Group): taken part in again if still assigned.
			delete(s.electors, name)
		default:
		}
	}
	s.target = s.assignFor(members)
	s.applyLocked(ctx, now, fn, w)
}

// moveMore releases the next shards due to move, once releases are over,
// with the assignment of the last look: no store request but the releases.
func (s *Shards[M]) moveMore(ctx context.Context, fn func(context.Context, string, Term) error, w *shardsWork) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneRemovingLocked()
	if s.target != nil {
		s.applyLocked(ctx, s.clock.Now(), fn, w)
	}
}

// pruneRemovingLocked forgets the removed electors that are done. s.mu is
// held.
func (s *Shards[M]) pruneRemovingLocked() {
	for name, e := range s.removing {
		if isDone(e) {
			if !s.hook.moveSlotKept {
				delete(s.moving, name)
			}
			delete(s.removing, name)
		}
	}
}

// assignFor is the assignment for members, with the holders seen.
func (s *Shards[M]) assignFor(members []string) map[string]string {
	return assign(s.cfg.Shards, members, s.holders)
}

// applyLocked campaigns for the shards assigned here and releases, after
// the grace of three Every, those held here and assigned elsewhere, at
// most MaxMoves of them at once. s.mu is held.
func (s *Shards[M]) applyLocked(ctx context.Context, now time.Time, fn func(context.Context, string, Term) error, w *shardsWork) {
	for _, sh := range s.cfg.Shards {
		name := sh.Name
		to := s.target[name]
		mine := to == s.id || s.hook.campaignAll && !s.leaving
		e := s.electors[name]
		switch {
		case mine && e == nil:
			// A shard another replica holds is followed at once: it
			// comes here only through its holder's release, after the
			// holder's grace, or once the holder's lease runs out, and
			// following it early is what lets this replica take it the
			// moment the release is heard. A free shard is taken only
			// once membership has held for an Every, so that replicas
			// starting together do not take each other's shards.
			held := s.holders[name] != "" && s.holders[name] != s.id && !s.hook.followLate || s.hook.takeFreeAtOnce
			if s.removing[name] != nil || !held && now.Sub(s.stable) < s.cfg.Every {
				// Added again once the release is over.
				continue
			}
			e, err := s.g.Add(name)
			if err != nil {
				s.log.Warn("shards: cannot campaign", "shard", name, "err", err)
				continue
			}
			s.electors[name] = e
			delete(s.since, name)
			if fn != nil {
				w.bodies.add(1, false)
				go func() {
					defer w.bodies.add(-1, false)
					s.runBodies(ctx, name, e, fn, &w.bodies)
				}()
			}
		case mine:
			delete(s.since, name)
		case e != nil:
			if e.IsLeader() {
				m, ok := s.since[name]
				if !ok || m.to != to {
					s.since[name] = shardMove{to: to, at: now}
					continue
				}
				if now.Sub(m.at) < 3*s.cfg.Every || len(s.moving) >= s.cfg.MaxMoves {
					continue
				}
				s.moving[name] = true
				delete(s.since, name)
				delete(s.electors, name)
				s.removing[name] = e
				// Run waits for it: a fallback to a plain release is a
				// write, never one after Run returns.
				w.handoffs.Go(func() { s.handOff(ctx, name, e, to) })
				continue
			}
			delete(s.since, name)
			delete(s.electors, name)
			s.removing[name] = e
			s.g.Remove(name)
		}
	}
}

// handOff moves shard name, which e leads, to the replica to: it hands
// the lease over to it (Elector.HandOver: the release names it, and it
// returns once e sees to lead, or after falling back to a plain release),
// then removes e. The move keeps its place among MaxMoves until e is
// done, so that a replica has at most MaxMoves shards between their
// step-down and the receiver's takeover: a receiver of many moves at once
// queues its takeovers, and each move's time without a leader grows with
// the queue.
func (s *Shards[M]) handOff(ctx context.Context, name string, e *Elector[M], to string) {
	// The variant moveOnRelease releases without naming to, and gives
	// the place back as soon as the release is stored.
	if !s.hook.moveOnRelease {
		// Not cut short by Run's stop: a HandOver whose ctx ends goes on
		// without its caller, and its fallback would then be a write
		// after Run returned. Its own timeout bounds it.
		switch err := e.HandOver(context.WithoutCancel(ctx), to); {
		case errors.Is(err, ErrBodiesStillRunning):
			s.log.Warn("shards: a body outlived its term: the lease is left to expire", "shard", name, "to", to, "err", err)
		case err != nil:
			s.log.Debug("shards: handover not taken", "shard", name, "to", to, "err", err)
		}
	}
	s.mu.Lock()
	if s.removing[name] == e {
		// Not an elector of the name added since e stopped on its own.
		s.g.Remove(name)
	}
	s.mu.Unlock()
	<-e.Done()
	select {
	case s.moved <- struct{}{}:
	default:
	}
}

// movesInFlight returns how many moves have not ended.
func (s *Shards[M]) movesInFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneRemovingLocked()
	return len(s.moving)
}

// runBodies runs fn in each term of shard name's elector e, until ctx
// ends or e stops.
func (s *Shards[M]) runBodies(ctx context.Context, name string, e *Elector[M], fn func(context.Context, string, Term) error, b *shardBodies) {
	var last fence.Token
	for {
		t, termCtx, err := e.awaitTerm(ctx, last)
		if err != nil {
			return
		}
		last = t.Token
		body := func(c context.Context, t Term) error {
			b.add(1, true)
			defer b.add(-1, true)
			return fn(c, name, t)
		}
		if s.hook.bodyOutlivesTerm {
			// Unsafe variant: the body's context does not end with the
			// term, and the release does not wait for it.
			bodyCtx := fence.WithToken(ctx, t.Token)
			if err := fn(bodyCtx, name, t); err != nil {
				s.log.Warn("shards: body failed", "shard", name, "token", t.Token, "err", err)
			}
			continue
		}
		if lost, err := runInTerm(ctx, termCtx, t, body); err != nil && !lost {
			s.log.Warn("shards: body failed", "shard", name, "token", t.Token, "err", err)
		}
	}
}

// lookReads is how many reads a look has in flight at once: a look reads
// every presence slot, and on a change of membership the holder of every
// shard it does not take part in, which one at a time would take a
// thousand round trips for a thousand shards.
const lookReads = 16

// lookRead is the answer to one of a look's reads.
type lookRead struct {
	holder string
	rev    lease.Revision
	err    error
}

// readAll reads names, at most lookReads at once, each read within the
// BackendTimeout, and returns the answer to each at its index. A look of
// a thousand slots is many round trips long, so each read has its own
// timeout, not the look as a whole: a store that answers every read in
// time is never a look that fails. Once one read fails (other than
// store.ErrNotFound), or ctx ends, the reads in flight end and those not
// yet started fail with that error: a store that does not answer fails
// the look within about one BackendTimeout. A record that is not found or
// corrupt is an answer, not a failure.
func (s *Shards[M]) readAll(ctx context.Context, names []string) []lookRead {
	res := make([]lookRead, len(names))
	ctx, abort := context.WithCancelCause(ctx)
	defer abort(nil)
	sem := make(chan struct{}, lookReads)
	var wg sync.WaitGroup
	for i, name := range names {
		if ctx.Err() == nil {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
			}
		}
		if ctx.Err() != nil {
			res[i].err = context.Cause(ctx)
			continue
		}
		wg.Go(func() {
			defer func() { <-sem }()
			rctx, cancel := context.WithTimeout(ctx, s.timeout)
			defer cancel()
			rec, rev, err := s.get(rctx, name)
			switch {
			case err == nil, errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrCorruptRecord):
				// An answer: a corrupt record is one no one can take.
			case ctx.Err() != nil:
				err = context.Cause(ctx) // ended by another read's failure
			default:
				abort(err)
			}
			res[i] = lookRead{holder: rec.Holder, rev: rev, err: err}
		})
	}
	wg.Wait()
	return res
}

// get reads name for a look, and reports the read to the instruments.
func (s *Shards[M]) get(ctx context.Context, name string) (lease.Record[M], lease.Revision, error) {
	began := s.clock.Now()
	rec, rev, err := s.st.Get(ctx, name)
	if s.inst != nil {
		s.inst.StoreOp(name, OpRead, s.clock.Now().Sub(began), err)
	}
	return rec, rev, err
}

// readSlots reads every presence slot and notes, for each, when its
// revision last changed. It returns the first error of a read that did
// not answer, if any (and notes nothing then).
func (s *Shards[M]) readSlots(ctx context.Context, now time.Time) error {
	res := s.readAll(ctx, s.slots)
	for i, r := range res {
		if r.err != nil && !errors.Is(r.err, store.ErrNotFound) && !errors.Is(r.err, store.ErrCorruptRecord) {
			return fmt.Errorf("lead: shards: reading %q: %w", s.slots[i], r.err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, r := range res {
		p := &s.seen[i]
		if r.err != nil || r.holder == "" {
			// A corrupt slot (written by someone else) holds no member,
			// and no replica can take it: it is skipped, and the looks go
			// on without it.
			*p = slotSeen{bad: errors.Is(r.err, store.ErrCorruptRecord)}
			continue
		}
		if !p.ok || p.rev != r.rev || p.holder != r.holder {
			*p = slotSeen{holder: r.holder, rev: r.rev, at: now, ok: true}
		}
	}
	return nil
}

// liveLocked reports whether slot i's holder is live: its record changed
// within the last LeaseDuration plus Every. s.mu is held.
func (s *Shards[M]) liveLocked(i int, now time.Time) bool {
	p := s.seen[i]
	return p.ok && now.Sub(p.at) < s.lease.LeaseDuration+s.cfg.Every
}

// keepSlotLocked keeps this replica in one presence slot: it gives up a
// slot another live replica holds, and campaigns for the first slot not
// held by a live replica when it has none, probing from a slot drawn from
// its identity; once the slot's elector leads, Run looks again at once
// (present). s.mu is held.
func (s *Shards[M]) keepSlotLocked(ctx context.Context, now time.Time) {
	if s.leaving {
		return
	}
	if s.slotE != nil {
		select {
		case <-s.slotE.Done(): // stopped on its own: another slot
			s.slotE, s.slot = nil, -1
		default:
		}
	}
	if s.slotE != nil {
		if s.holdsSlotLocked() {
			return
		}
		if p := s.seen[s.slot]; p.holder != s.id && s.liveLocked(s.slot, now) {
			s.g.Remove(s.slots[s.slot])
			s.slotE, s.slot = nil, -1
		}
		return
	}
	// Replicas start probing at a slot of their own, so that replicas
	// starting together rarely contend for one.
	h := fnv.New32a()
	h.Write([]byte(s.id))
	first := int(h.Sum32() % uint32(len(s.slots)))
	for k := range s.slots {
		i := (first + k) % len(s.slots)
		if s.seen[i].bad || s.liveLocked(i, now) && s.seen[i].holder != s.id {
			continue
		}
		e, err := s.g.Add(s.slots[i])
		if err != nil {
			continue // still being released: another
		}
		s.slotE, s.slot = e, i
		if !s.hook.lookLate {
			go s.awaitPresence(ctx, e)
		}
		return
	}
}

// awaitPresence tells Run to look again (present) once e, the elector
// of this replica's presence slot, holds it as holdsSlotLocked counts it:
// it leads, or the record it accepted names this replica. On a store that
// may lose records the record names it a LeaseDuration before it leads,
// and the others count it from the record. It gives up when e stops or
// ctx ends.
func (s *Shards[M]) awaitPresence(ctx context.Context, e *Elector[M]) {
	for {
		changed := e.changes()
		if rec, ok := e.Record(); e.IsLeader() || ok && rec.Holder == s.id && !s.hook.countOnTerm {
			select {
			case s.present <- struct{}{}:
			default:
			}
			return
		}
		select {
		case <-changed:
		case <-e.Done():
			return
		case <-ctx.Done():
			return
		}
	}
}

// holdsSlotLocked reports whether this replica holds its presence slot
// as the others see it: its elector leads it, or the record it last
// accepted names it (a claim, on a store that may lose records, names
// its holder a LeaseDuration before it leads on it; the others count it
// from the record, and so must it). s.mu is held.
func (s *Shards[M]) holdsSlotLocked() bool {
	if s.slotE == nil {
		return false
	}
	if s.slotE.IsLeader() {
		return true
	}
	rec, ok := s.slotE.Record()
	return ok && rec.Holder == s.id
}

// membersLocked returns the live members, sorted: the live holders of the
// slots, this replica while it holds its own. s.mu is held.
func (s *Shards[M]) membersLocked(now time.Time) []string {
	var ms []string
	for i, p := range s.seen {
		if p.holder != s.id && s.liveLocked(i, now) {
			ms = append(ms, p.holder)
		}
	}
	if s.holdsSlotLocked() {
		ms = append(ms, s.id)
	}
	slices.Sort(ms)
	return slices.Compact(ms)
}
