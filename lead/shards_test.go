package lead_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/memstore"
)

// shardRig is replicas of one Shards on one memstore, with the bodies
// they run checked for overlap.
type shardRig struct {
	t       *testing.T
	st      *memstore.Store[meta]
	cfg     lead.ShardsConfig
	reps    map[string]*shardRep
	mu      sync.Mutex
	running map[string]string // shard -> replica whose body runs
	starts  map[string]int    // bodies started per shard
	overlap []string
	hook    func(*lead.Shards[meta])
	cut     map[string]*atomic.Bool // replicas cut off from the store
	slow    *slowReleases           // when set, every replica's store
	takes   *slowTakeovers          // when set, every replica's store
	reads   time.Duration           // when set, every replica's reads take as long, on a store that may lose records
	noWatch bool                    // the replicas' stores hide Watch
	moves   int                     // shards that passed from one holder to another, in the store
	last    map[string]string       // each shard's last holder, in the store
}

// watchEach calls fn with every event of every shard's record in the
// store, each shard's in order, until ctx ends.
func (r *shardRig) watchEach(ctx context.Context, fn func(shard string, ev store.Event[meta])) {
	for _, sh := range r.cfg.Shards {
		ch, err := r.st.Watch(ctx, sh.Name)
		if err != nil {
			r.t.Fatal(err)
		}
		go func() {
			for ev := range ch {
				fn(sh.Name, ev)
			}
		}()
	}
}

// watchMoves counts, from the store's watch, the shards that pass from
// one holder to another (through a release or not).
func (r *shardRig) watchMoves(ctx context.Context) {
	r.watchEach(ctx, func(shard string, ev store.Event[meta]) {
		h := ev.Record.Holder
		r.mu.Lock()
		defer r.mu.Unlock()
		if h != "" && r.last[shard] != "" && r.last[shard] != h {
			r.moves++
		}
		if h != "" {
			r.last[shard] = h
		}
	})
}

// watchGaps watches the store for the gaps a move leaves, the time each
// shard spends released, until ctx ends. The function it returns gives
// the longest gap so far and the shards released and not taken again.
func (r *shardRig) watchGaps(ctx context.Context) func() (time.Duration, map[string]time.Time) {
	var mu sync.Mutex
	freed := map[string]time.Time{}
	var worst time.Duration
	r.watchEach(ctx, func(shard string, ev store.Event[meta]) {
		mu.Lock()
		defer mu.Unlock()
		if ev.Record.Holder == "" {
			freed[shard] = time.Now()
		} else if at, ok := freed[shard]; ok {
			worst = max(worst, time.Since(at))
			delete(freed, shard)
		}
	})
	return func() (time.Duration, map[string]time.Time) {
		mu.Lock()
		defer mu.Unlock()
		return worst, maps.Clone(freed)
	}
}

// takeMoves returns the moves counted since the last call.
func (r *shardRig) takeMoves() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.moves
	r.moves = 0
	return n
}

// cutStore is the store as one replica reaches it: every call fails while
// cut is set.
type cutStore struct {
	*memstore.Store[meta]
	cut *atomic.Bool
}

var errCut = errors.New("cut off from the store")

// pollStore hides the store's watch; it keeps its records.
type pollStore struct{ store.Store[meta] }

func (pollStore) MayLoseRecords() bool { return false }

func (c cutStore) Get(ctx context.Context, name string) (lease.Record[meta], lease.Revision, error) {
	if c.cut.Load() {
		return lease.Record[meta]{}, 0, errCut
	}
	return c.Store.Get(ctx, name)
}

func (c cutStore) CompareAndSwap(ctx context.Context, name string, expected lease.Revision, next lease.Record[meta]) (lease.Record[meta], lease.Revision, error) {
	if c.cut.Load() {
		return lease.Record[meta]{}, 0, errCut
	}
	return c.Store.CompareAndSwap(ctx, name, expected, next)
}

type shardRep struct {
	s      *lead.Shards[meta]
	cancel context.CancelFunc
	done   chan error
}

func newShardRig(t *testing.T, n int) *shardRig {
	var shards []lead.Shard
	for i := range n {
		shards = append(shards, lead.Shard{Name: fmt.Sprintf("shard-%02d", i)})
	}
	r := &shardRig{
		t: t, st: memstore.New[meta](), cfg: lead.ShardsConfig{Name: "work", Shards: shards, MaxReplicas: 8},
		reps: map[string]*shardRep{}, running: map[string]string{}, starts: map[string]int{}, cut: map[string]*atomic.Bool{}, last: map[string]string{},
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.watchMoves(ctx)
	t.Cleanup(func() {
		defer cancel()
		for _, rep := range r.reps {
			rep.cancel()
			<-rep.done
		}
	})
	return r
}

func (r *shardRig) start(id string) {
	r.t.Helper()
	r.cut[id] = new(atomic.Bool)
	var st store.Store[meta] = cutStore{r.st, r.cut[id]}
	if r.noWatch {
		st = pollStore{st} // a watch would outlive a cut
	}
	if r.slow != nil {
		st = r.slow
	}
	if r.takes != nil {
		st = r.takes
	}
	if r.reads > 0 {
		st = lateReads{Store: st, d: r.reads}
	}
	s, err := lead.NewShards[meta](st, r.cfg, lead.WithIdentity(id), lead.WithConfig(fastConfig()), lead.WithLookupEnv(nil))
	if err != nil {
		r.t.Fatal(err)
	}
	if r.hook != nil {
		r.hook(s)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rep := &shardRep{s: s, cancel: cancel, done: make(chan error, 1)}
	r.reps[id] = rep
	go func() { rep.done <- s.Run(ctx, r.body(id)) }()
}

// body is a shard's work: it marks the shard as run by id until its
// context ends.
func (r *shardRig) body(id string) func(context.Context, string, lead.Term) error {
	return func(ctx context.Context, shard string, t lead.Term) error {
		if tok, ok := fence.FromContext(ctx); !ok || tok != t.Token {
			r.t.Errorf("%s: body of %s: the context carries token %d (%v), the term %d", id, shard, tok, ok, t.Token)
		}
		r.mu.Lock()
		if o, busy := r.running[shard]; busy {
			r.overlap = append(r.overlap, fmt.Sprintf("%s runs %s while %s does", id, shard, o))
		}
		r.running[shard] = id
		r.starts[shard]++
		r.mu.Unlock()
		<-ctx.Done()
		r.mu.Lock()
		if r.running[shard] == id {
			delete(r.running, shard)
		}
		r.mu.Unlock()
		return nil
	}
}

func (r *shardRig) stop(id string) {
	r.t.Helper()
	rep := r.reps[id]
	rep.cancel()
	if err := <-rep.done; err != nil {
		r.t.Errorf("%s: Run: %v", id, err)
	}
	delete(r.reps, id)
}

// holders counts, from the store, the shards each identity holds.
func (r *shardRig) holders() (map[string]int, map[string]string) {
	count, who := map[string]int{}, map[string]string{}
	for _, sh := range r.cfg.Shards {
		rec, _, err := r.st.Get(context.Background(), sh.Name)
		if err == nil && rec.Holder != "" {
			count[rec.Holder]++
			who[sh.Name] = rec.Holder
		}
	}
	return count, who
}

// settle lets virtual time pass, then checks that each replica holds
// want shards, and that what each replica says it leads is what the store
// says.
func (r *shardRig) settle(want map[string]int) map[string]string {
	r.t.Helper()
	who, err := r.check(want, settleBound)
	if err != nil {
		r.t.Fatal(err)
	}
	return who
}

// settleBound is how long after membership changes the rig expects the
// shards to be balanced: the joiner's first look and presence, every
// replica's next look, an Every of stable membership, the grace of three
// Every before a release, and the handover, with an Every to spare (Every
// is fastConfig's RetryInterval, 500 ms).
const settleBound = 10 * 500 * time.Millisecond

// crashBound is settleBound after a crash: a LeaseDuration (3 s) before
// the presence is taken for dead, another before the shards' leases are.
const crashBound = 2*3*time.Second + settleBound

// check is settle's check after waiting d, reported.
func (r *shardRig) check(want map[string]int, d time.Duration) (map[string]string, error) {
	time.Sleep(d)
	synctest.Wait()
	count, who := r.holders()
	var errs []error
	if !maps.Equal(count, want) {
		errs = append(errs, fmt.Errorf("holders in the store: %v, want %v", count, want))
	}
	for id, rep := range r.reps {
		if got := len(rep.s.Leading()); got != want[id] {
			errs = append(errs, fmt.Errorf("%s leads %d shards, want %d", id, got, want[id]))
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.overlap) > 0 {
		errs = append(errs, fmt.Errorf("bodies overlapped: %v", r.overlap))
	}
	return who, errors.Join(errs...)
}

func TestShardsBalanceAndMoveOnlyWhatIsNeeded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newShardRig(t, 12)
		for _, id := range []string{"a", "b", "c"} {
			r.start(id)
		}
		r.settle(map[string]int{"a": 4, "b": 4, "c": 4})
		if m := r.takeMoves(); m != 0 {
			t.Errorf("a fresh start moved %d shards, want none", m)
		}

		r.start("d")
		r.settle(map[string]int{"a": 3, "b": 3, "c": 3, "d": 3})
		if m := r.takeMoves(); m != 3 {
			t.Errorf("a joiner moved %d shards, want 3", m)
		}

		r.stop("b")
		r.settle(map[string]int{"a": 4, "c": 4, "d": 4})
		if m := r.takeMoves(); m != 3 {
			t.Errorf("a leaver moved %d shards, want its 3", m)
		}
		for _, id := range []string{"a", "c", "d"} {
			r.stop(id)
		}
	})
}

func TestShardsHandOverWithoutAGap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newShardRig(t, 6)
		r.start("a")
		r.settle(map[string]int{"a": 6})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		gaps := r.watchGaps(ctx)
		r.start("b")
		r.settle(map[string]int{"a": 3, "b": 3})
		worst, freed := gaps()
		if len(freed) > 0 || worst > 0 {
			// memstore answers at once: a shard handed over is taken the
			// instant its release is heard.
			t.Errorf("shards went without a holder: longest gap %v, still free %v", worst, freed)
		}
	})
}

// slowReleases is a memstore on which every release (a swap to no
// holder) takes releaseTime; it counts the most releases in flight at
// once.
type slowReleases struct {
	st       *memstore.Store[meta]
	mu       sync.Mutex
	inFlight int
	most     int
}

const releaseTime = 50 * time.Millisecond

func (s *slowReleases) Get(ctx context.Context, name string) (lease.Record[meta], lease.Revision, error) {
	return s.st.Get(ctx, name)
}

func (s *slowReleases) CompareAndSwap(ctx context.Context, name string, expected lease.Revision, next lease.Record[meta]) (lease.Record[meta], lease.Revision, error) {
	if next.Holder != "" {
		return s.st.CompareAndSwap(ctx, name, expected, next)
	}
	s.mu.Lock()
	s.inFlight++
	s.most = max(s.most, s.inFlight)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inFlight--
		s.mu.Unlock()
	}()
	time.Sleep(releaseTime)
	return s.st.CompareAndSwap(ctx, name, expected, next)
}

func (s *slowReleases) Watch(ctx context.Context, name string) (<-chan store.Event[meta], error) {
	return s.st.Watch(ctx, name)
}

// slowTakeovers is a memstore on which the takeover of a released shard
// (a swap to a holder from a record a swap to no holder stored) takes
// takeoverTime, or d when set; it counts the most shards at once between
// their release and their takeover.
type slowTakeovers struct {
	st       *memstore.Store[meta]
	d        time.Duration
	mu       sync.Mutex
	released map[string]bool
	most     int
}

const takeoverTime = 50 * time.Millisecond

func (s *slowTakeovers) Get(ctx context.Context, name string) (lease.Record[meta], lease.Revision, error) {
	return s.st.Get(ctx, name)
}

func (s *slowTakeovers) CompareAndSwap(ctx context.Context, name string, expected lease.Revision, next lease.Record[meta]) (lease.Record[meta], lease.Revision, error) {
	s.mu.Lock()
	taking := next.Holder != "" && s.released[name]
	s.mu.Unlock()
	if taking {
		time.Sleep(cmp.Or(s.d, takeoverTime))
	}
	rec, rev, err := s.st.CompareAndSwap(ctx, name, expected, next)
	if err != nil {
		return rec, rev, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if next.Holder == "" {
		s.released[name] = true
		s.most = max(s.most, len(s.released))
	} else {
		delete(s.released, name)
	}
	return rec, rev, err
}

func (s *slowTakeovers) Watch(ctx context.Context, name string) (<-chan store.Event[meta], error) {
	return s.st.Watch(ctx, name)
}

// A move lasts until the receiver leads the shard, not until the release
// is stored: a replica has at most MaxMoves shards between their release
// and their takeover, so that a receiver whose takeovers are slow does
// not queue the moves of every releaser at once.
func TestShardsMoveLastsUntilTheReceiverLeads(t *testing.T) {
	moving := func(t *testing.T, variant string) (int, error) {
		var most int
		var err error
		synctest.Test(t, func(t *testing.T) {
			r := newShardRig(t, 12)
			r.cfg.MaxMoves = 2
			r.takes = &slowTakeovers{st: r.st, released: map[string]bool{}}
			if variant != "" {
				r.hook = func(s *lead.Shards[meta]) { lead.ShardsVariant(s, variant) }
			}
			r.start("a")
			if _, err = r.check(map[string]int{"a": 12}, settleBound); err != nil {
				return
			}
			r.start("b")
			_, err = r.check(map[string]int{"a": 6, "b": 6}, settleBound)
			r.takes.mu.Lock()
			most = r.takes.most
			r.takes.mu.Unlock()
			for _, id := range []string{"a", "b"} {
				r.stop(id)
			}
		})
		return most, err
	}
	most, err := moving(t, "")
	if err != nil {
		t.Fatal(err)
	}
	if most > 2 {
		t.Errorf("%d shards were released and not yet taken at once, want at most MaxMoves (2)", most)
	}
	t.Logf("at most %d shards between release and takeover at once", most)
	t.Run("move-on-release", func(t *testing.T) {
		most, err := moving(t, "move-on-release")
		if err == nil && most <= 2 {
			t.Fatal("the variant move-on-release passed the checks")
		}
		t.Logf("caught: %d shards between release and takeover at once (%v)", most, err)
	})
}

// A replica that stops hands every shard over before Run returns: it
// drains its moves, not only its terms, so that no handover falls back
// to a plain release (a write) after Run has returned.
func TestShardsStopHandsEveryShardOverBeforeRunReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newShardRig(t, 4)
		// Takeovers slower than an Every: a drain that ended with the
		// terms would end, at its next look, before them.
		r.takes = &slowTakeovers{st: r.st, d: 700 * time.Millisecond, released: map[string]bool{}}
		r.start("a")
		r.start("b")
		r.settle(map[string]int{"a": 2, "b": 2})
		r.stop("a")
		if count, who := r.holders(); count["b"] != 4 {
			t.Errorf("when a's Run returned, b held %d shards in the store, want 4 (holders %v)", count["b"], who)
		}
		r.stop("b")
	})
}

// movesAtOnce starts a with 12 shards and b beside it with MaxMoves 2,
// releases slowed to releaseTime, and returns the most releases in flight
// at once and what kept the two from balancing within settleBound.
func movesAtOnce(t *testing.T, variant string) (int, error) {
	r := newShardRig(t, 12)
	r.cfg.MaxMoves = 2
	r.slow = &slowReleases{st: r.st}
	if variant != "" {
		r.hook = func(s *lead.Shards[meta]) { lead.ShardsVariant(s, variant) }
	}
	r.start("a")
	if _, err := r.check(map[string]int{"a": 12}, settleBound); err != nil {
		return 0, err
	}
	r.start("b")
	_, err := r.check(map[string]int{"a": 6, "b": 6}, settleBound)
	r.slow.mu.Lock()
	most := r.slow.most
	r.slow.mu.Unlock()
	for _, id := range []string{"a", "b"} {
		r.stop(id)
	}
	return most, err
}

// A replica releases at most MaxMoves shards at once, and the next as soon
// as one is over: six moves, two at a time, of releases that take
// 50 ms each, balance within the bound of moves all at once.
func TestShardsReleaseAtMostMaxMovesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		most, err := movesAtOnce(t, "")
		if err != nil {
			t.Fatal(err)
		}
		if most != 2 {
			t.Errorf("at most %d releases were in flight at once, want MaxMoves (2)", most)
		}
	})
}

func TestShardsReplicaThatStopsRenewingDropsOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newShardRig(t, 6)
		r.noWatch = true
		r.start("a")
		r.start("b")
		r.settle(map[string]int{"a": 3, "b": 3})
		// b is cut off from the store for good: it renews nothing and
		// releases nothing, as after a crash.
		r.cut["b"].Store(true)
		if _, err := r.check(map[string]int{"a": 6}, crashBound); err != nil {
			t.Fatal(err)
		}
		r.stop("b")
	})
}

func TestNewShardsRefusesBadConfig(t *testing.T) {
	st := memstore.New[meta]()
	for _, tt := range []struct {
		name string
		cfg  lead.ShardsConfig
	}{
		{"a shard twice", lead.ShardsConfig{Name: "w", Shards: []lead.Shard{{Name: "x"}, {Name: "x"}}}},
		{"a negative weight", lead.ShardsConfig{Name: "w", Shards: []lead.Shard{{Name: "x", Weight: -1}}}},
		{"a shard named as a slot", lead.ShardsConfig{Name: "w", Shards: []lead.Shard{{Name: "w-member-0"}}}},
		{"too many replicas", lead.ShardsConfig{Name: "w", MaxReplicas: 2000}},
		{"a negative Every", lead.ShardsConfig{Name: "w", Every: -time.Second}},
		{"a negative MaxMoves", lead.ShardsConfig{Name: "w", MaxMoves: -1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := lead.NewShards[meta](st, tt.cfg); !errors.Is(err, lead.ErrInvalidShards) {
				t.Fatalf("NewShards: %v, want ErrInvalidShards", err)
			}
		})
	}
}

// An Every or Refresh that would make a look spin, read faster than an
// elector may, or overflow the sums of its waits is refused, naming the
// field, its value (and where a default came from) and the range.
func TestNewShardsRefusesEveryAndRefreshOutOfRange(t *testing.T) {
	st := memstore.New[meta]()
	tiny := fastConfig()
	tiny.RetryInterval, tiny.BackendTimeout, tiny.RenewDeadline, tiny.LeaseDuration = time.Millisecond, time.Millisecond, 2*time.Millisecond, 3*time.Millisecond
	for _, tt := range []struct {
		name    string
		cfg     lead.ShardsConfig
		opts    []lead.Option
		mention string
	}{
		{"an Every of a nanosecond", lead.ShardsConfig{Name: "w", Every: 1}, nil, "ShardsConfig.Every is 1ns, must lie in [4ms, 168h0m0s]"},
		{"an Every faster than the slots may be read", lead.ShardsConfig{Name: "w", MaxReplicas: 1024, Every: 100 * time.Millisecond}, nil, "must lie in [256ms, 168h0m0s] (a look reads all 1024 presence slots"},
		{"a default Every faster than the slots may be read", lead.ShardsConfig{Name: "w"}, []lead.Option{lead.WithConfig(tiny)}, "ShardsConfig.Every is 1ms (the RetryInterval, by default), must lie in [4ms"},
		{"an Every beyond lease.MaxDuration", lead.ShardsConfig{Name: "w", Every: math.MaxInt64}, nil, "ShardsConfig.Every is 2562047h47m16.854775807s"},
		{"a Refresh of a nanosecond", lead.ShardsConfig{Name: "w", Refresh: 1}, nil, "ShardsConfig.Refresh is 1ns, must lie in [1ms, 168h0m0s]"},
		{"a Refresh beyond lease.MaxDuration", lead.ShardsConfig{Name: "w", Refresh: lease.MaxDuration + 1}, nil, "ShardsConfig.Refresh is 168h0m0.000000001s"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := lead.NewShards[meta](st, tt.cfg, append([]lead.Option{lead.WithLookupEnv(nil)}, tt.opts...)...)
			if !errors.Is(err, lead.ErrInvalidShards) || !strings.Contains(err.Error(), tt.mention) {
				t.Fatalf("NewShards: %v, want ErrInvalidShards mentioning %q", err, tt.mention)
			}
		})
	}
}

// Nil and zero Shards give errors or zero values, never panics.
func TestShardsNilAndZeroGiveErrorsNotPanics(t *testing.T) {
	var nilShards *lead.Shards[meta]
	var zero lead.Shards[meta]
	for name, s := range map[string]*lead.Shards[meta]{"nil": nilShards, "zero": &zero} {
		if err := s.Run(context.Background(), nil); !errors.Is(err, lead.ErrNilArgument) {
			t.Errorf("%s: Run = %v", name, err)
		}
		if _, ok := s.Elector("x"); ok {
			t.Errorf("%s: Elector found one", name)
		}
		if s.Leading() != nil || s.Members() != nil || s.Assignment() != nil || s.Identity() != "" || s.Config().Name != "" {
			t.Errorf("%s: not the zero values", name)
		}
	}
}

// A ctx that never ends (Background: its Done is nil) keeps the replica
// taking part; it does not read as a ctx that has ended. Run then never
// returns: the check runs in a process of its own, so that nothing of it
// is left running beside the other tests.
func TestShardsRunWithABackgroundContextTakesPart(t *testing.T) {
	if os.Getenv("SHARDS_BACKGROUND_CHILD") != "1" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestShardsRunWithABackgroundContextTakesPart$", "-test.count=1")
		cmd.Env = append(os.Environ(), "SHARDS_BACKGROUND_CHILD=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return
	}
	started := make(chan lead.Change, 10)
	s, err := lead.NewShards[meta](memstore.New[meta](), lead.ShardsConfig{Name: "w", Shards: []lead.Shard{{Name: "x"}}},
		lead.WithIdentity("a"), lead.WithConfig(fastConfig()), lead.WithLookupEnv(nil),
		lead.WithObserver(func(c lead.Change) {
			if c.Kind == lead.Started && c.Term.Name == "x" {
				started <- c
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background(), nil) }()
	select {
	case err := <-done:
		t.Fatalf("Run returned %v: it took a ctx that never ends for one that ended", err)
	case <-started:
	case <-time.After(time.Minute):
		t.Fatal("the replica does not lead its one shard a minute after Run began")
	}
}

// A body that ignores its context does not keep Run from returning: Run
// stops as Group.Run does, waiting for it until its term's deadline, and
// reports it with ErrBodiesStillRunning.
func TestShardsRunReturnsWhenABodyIgnoresItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := lead.NewShards[meta](memstore.New[meta](), lead.ShardsConfig{Name: "w", Shards: []lead.Shard{{Name: "x"}}},
			lead.WithIdentity("a"), lead.WithConfig(fastConfig()), lead.WithLookupEnv(nil))
		if err != nil {
			t.Fatal(err)
		}
		release := make(chan struct{})
		defer close(release)
		inBody := make(chan struct{}, 1)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() {
			done <- s.Run(ctx, func(context.Context, string, lead.Term) error {
				inBody <- struct{}{}
				<-release
				return nil
			})
		}()
		<-inBody
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, lead.ErrBodiesStillRunning) {
				t.Fatalf("Run = %v, want ErrBodiesStillRunning", err)
			}
		case <-time.After(time.Minute):
			t.Fatal("Run has not returned a minute after ctx ended, with a body that ignores its context")
		}
	})
}

// TestShardsUnsafeVariantsFail shows that the checks above catch each
// unsafe variant: a body that outlives its term, a replica that
// campaigns for every shard.
func TestShardsUnsafeVariantsFail(t *testing.T) {
	for _, variant := range []string{"body-outlives-term", "campaign-all"} {
		t.Run(variant, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newShardRig(t, 12)
				r.hook = func(s *lead.Shards[meta]) { lead.ShardsVariant(s, variant) }
				var errs []error
				for _, id := range []string{"a", "b", "c"} {
					r.start(id)
				}
				if _, err := r.check(map[string]int{"a": 4, "b": 4, "c": 4}, settleBound); err != nil {
					errs = append(errs, err)
				}
				if m := r.takeMoves(); m != 0 {
					errs = append(errs, fmt.Errorf("a fresh start moved %d shards", m))
				}
				r.start("d")
				if _, err := r.check(map[string]int{"a": 3, "b": 3, "c": 3, "d": 3}, settleBound); err != nil {
					errs = append(errs, err)
				}
				if m := r.takeMoves(); m != 3 {
					errs = append(errs, fmt.Errorf("a joiner moved %d shards, want 3", m))
				}
				if len(errs) == 0 {
					t.Fatalf("the variant %s passed the checks", variant)
				}
				t.Logf("caught: %v", errors.Join(errs...))
			})
		})
	}
	// A finished release that keeps its place among MaxMoves stops the
	// moves once MaxMoves have been made.
	t.Run("move-slot-kept", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			_, err := movesAtOnce(t, "move-slot-kept")
			if err == nil {
				t.Fatal("the variant move-slot-kept passed the checks")
			}
			t.Logf("caught: %v", err)
		})
	})
}

func TestShardsBalanceByWeight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newShardRig(t, 0)
		r.cfg.Shards = []lead.Shard{{Name: "heavy", Weight: 4}, {Name: "l1"}, {Name: "l2"}, {Name: "l3"}, {Name: "l4"}}
		r.start("a")
		r.start("b")
		time.Sleep(settleBound)
		synctest.Wait()
		_, who := r.holders()
		load := map[string]int{}
		for _, sh := range r.cfg.Shards {
			load[who[sh.Name]] += max(sh.Weight, 1)
		}
		if want := map[string]int{"a": 4, "b": 4}; !maps.Equal(load, want) {
			t.Errorf("loads %v (holders %v), want %v", load, who, want)
		}
	})
}

// A replica counts itself among the members as soon as it holds its
// presence slot, not a look later: the membership it waits to see stable
// before it campaigns is then the one the others see, and it follows a
// shard assigned to it before the holder's grace of three Every ends.
func TestShardsReplicaCountsItselfOnceItHoldsItsSlot(t *testing.T) {
	const every = 5 * time.Second
	counted := func(t *testing.T, variant string) time.Duration {
		var took time.Duration
		synctest.Test(t, func(t *testing.T) {
			r := newShardRig(t, 4)
			r.cfg.Every = every
			if variant != "" {
				r.hook = func(s *lead.Shards[meta]) { lead.ShardsVariant(s, variant) }
			}
			began := time.Now()
			r.start("r0")
			for !slices.Contains(r.reps["r0"].s.Members(), "r0") {
				if time.Since(began) > 3*every {
					t.Fatalf("r0 does not count itself %v after it started", time.Since(began))
				}
				time.Sleep(10 * time.Millisecond) // the simulated clock's resolution
			}
			took = time.Since(began)
		})
		return took
	}
	took := counted(t, "")
	t.Logf("r0 counted itself %v after it started", took)
	if took >= every/2 {
		t.Errorf("r0 counted itself %v after it started, want within a round trip of holding its slot (Every is %v)", took, every)
	}
	t.Run("look-late", func(t *testing.T) {
		took := counted(t, "look-late")
		t.Logf("with look-late: %v", took)
		if took < every/2 {
			t.Fatalf("the variant look-late passed the check: r0 counted itself after %v", took)
		}
	})
}

// lateReads is a store whose reads take d, and that may lose records: a
// create names its holder a LeaseDuration before the holder leads.
type lateReads struct {
	store.Store[meta]
	d time.Duration
}

func (lateReads) MayLoseRecords() bool { return true }

func (s lateReads) Get(ctx context.Context, name string) (lease.Record[meta], lease.Revision, error) {
	time.Sleep(s.d)
	return s.Store.Get(ctx, name)
}

func (s lateReads) Watch(ctx context.Context, name string) (<-chan store.Event[meta], error) {
	return store.Watch(ctx, s.Store, name)
}

func (s lateReads) WatchCapabilities() store.WatchCapabilities {
	return store.WatchCapabilitiesOf(s.Store)
}

// A joiner follows the shards assigned to it as soon as it sees the
// assignment, long before their holder's grace of three Every ends, on a
// store whose reads take as long as TestSimShards' round trips: it looks
// again once its presence slot's record names it (on a store that may
// lose records, a LeaseDuration before its term there), and follows at
// once a shard another replica holds. Every shard moved to it is then
// taken the moment its release is heard, with no time without a holder.
func TestShardsJoinerFollowsHeldShardsAtOnce(t *testing.T) {
	const every = 5 * time.Second
	follow := func(t *testing.T, variant string) (took, worst time.Duration) {
		synctest.Test(t, func(t *testing.T) {
			r := newShardRig(t, 6)
			r.cfg.Every = every
			r.reads = 40 * time.Millisecond
			if variant != "" {
				r.hook = func(s *lead.Shards[meta]) { lead.ShardsVariant(s, variant) }
			}
			r.start("a")
			if _, err := r.check(map[string]int{"a": 6}, 3*every); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			gaps := r.watchGaps(ctx)
			began := time.Now()
			r.start("b")
			for {
				n := 0
				for _, sh := range r.cfg.Shards {
					if _, in := r.reps["b"].s.Elector(sh.Name); in {
						n++
					}
				}
				if n == 3 {
					break
				}
				if time.Since(began) > 3*every {
					t.Fatalf("b follows %d shards %v after it started, want 3", n, time.Since(began))
				}
				time.Sleep(10 * time.Millisecond) // the simulated clock's resolution
			}
			took = time.Since(began)
			if _, err := r.check(map[string]int{"a": 3, "b": 3}, 5*every); err != nil {
				t.Fatal(err)
			}
			var freed map[string]time.Time
			worst, freed = gaps()
			if len(freed) > 0 {
				t.Fatalf("shards still free: %v", freed)
			}
		})
		return took, worst
	}
	took, worst := follow(t, "")
	t.Logf("b followed its shards %v after it started; longest gap %v", took, worst)
	if took >= every/2 {
		t.Errorf("b followed its shards %v after it started, want within two looks (Every is %v)", took, every)
	}
	if worst > 0 {
		t.Errorf("a shard moved to b went %v without a holder, want none", worst)
	}
	for _, variant := range []string{"follow-late", "count-on-term"} {
		t.Run(variant, func(t *testing.T) {
			took, _ := follow(t, variant)
			t.Logf("with %s: b followed its shards %v after it started", variant, took)
			if took < every/2 {
				t.Fatalf("the variant %s passed the check: b followed its shards %v after it started", variant, took)
			}
		})
	}
}

// Replicas that start a little apart, on a store whose reads take a
// while, each see the others come in over a few looks: they take a free
// shard only once membership has held for an Every, so each shard is
// taken once, by the replica it stays with.
func TestShardsStartingApartTakeEachShardOnce(t *testing.T) {
	moves := func(t *testing.T, variant string) (n int) {
		synctest.Test(t, func(t *testing.T) {
			r := newShardRig(t, 12)
			r.reads = 10 * time.Millisecond
			if variant != "" {
				r.hook = func(s *lead.Shards[meta]) { lead.ShardsVariant(s, variant) }
			}
			for _, id := range []string{"a", "b", "c"} {
				r.start(id)
				time.Sleep(150 * time.Millisecond)
			}
			if _, err := r.check(map[string]int{"a": 4, "b": 4, "c": 4}, crashBound); err != nil {
				t.Fatal(err)
			}
			n = r.takeMoves()
		})
		return n
	}
	if m := moves(t, ""); m != 0 {
		t.Errorf("a start moved %d shards, want none", m)
	}
	t.Run("take-free-at-once", func(t *testing.T) {
		m := moves(t, "take-free-at-once")
		t.Logf("with take-free-at-once: %d moves", m)
		if m == 0 {
			t.Fatal("the variant take-free-at-once passed the check: no shard moved")
		}
	})
}

// A look reads every presence slot, a few at a time: with 512 slots and
// reads of 40 ms, one look takes about 1.3 s, longer than fastConfig's
// BackendTimeout of 1 s, though every read answers well within it. The
// looks still succeed and the shards are balanced.
func TestShardsLookLongerThanABackendTimeoutStillBalances(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newShardRig(t, 4)
		r.cfg.MaxReplicas = 512
		r.reads = 40 * time.Millisecond
		r.start("a")
		r.start("b")
		if _, err := r.check(map[string]int{"a": 2, "b": 2}, 4*settleBound); err != nil {
			t.Fatal(err)
		}
		r.stop("a")
		r.stop("b")
	})
}

// A store that stops answering fails a look within about one
// BackendTimeout, however many slots the look has left to read: once a
// read fails, the reads in flight end and the rest are not started, so a
// look of 1,024 slots starts a few dozen reads, not every one.
func TestShardsLookOfAStoreThatDoesNotAnswerStopsAtTheFirstFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hung := &hungReads{Store: memstore.New[meta](), prefix: "work-member-"}
		cfg := lead.ShardsConfig{Name: "work", Shards: []lead.Shard{{Name: "s"}}, MaxReplicas: 1024}
		s, err := lead.NewShards[meta](hung, cfg, lead.WithIdentity("a"), lead.WithConfig(fastConfig()), lead.WithLookupEnv(nil))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- s.Run(ctx, func(ctx context.Context, _ string, _ lead.Term) error { <-ctx.Done(); return nil })
		}()
		time.Sleep(10 * time.Second)
		synctest.Wait()
		cancel()
		<-done
		hung.mu.Lock()
		defer hung.mu.Unlock()
		// The first slot's reads start each look.
		looks, most, n := 0, 0, 0
		for _, name := range hung.names {
			if name == "work-member-0" {
				looks++
				n = 0
			}
			n++
			most = max(most, n)
		}
		if looks < 2 || most > 64 {
			t.Errorf("in 10 s of a store that does not answer: %d looks, at most %d slot reads started in one; want several looks of a few dozen reads", looks, most)
		}
	})
}

// hungReads is a store whose reads of names with prefix never answer: each
// waits for its context to end. It records the names read.
type hungReads struct {
	store.Store[meta]
	prefix string
	mu     sync.Mutex
	names  []string
}

func (h *hungReads) Get(ctx context.Context, name string) (lease.Record[meta], lease.Revision, error) {
	if !strings.HasPrefix(name, h.prefix) {
		return h.Store.Get(ctx, name)
	}
	h.mu.Lock()
	h.names = append(h.names, name)
	h.mu.Unlock()
	<-ctx.Done()
	return lease.Record[meta]{}, 0, ctx.Err()
}

// A presence slot whose record someone else made corrupt (which no
// replica can take, and the store never overwrites) holds no member and
// is skipped: the looks go on without it, and the shards are balanced
// over the replicas, each in a slot of its own.
func TestShardsCorruptPresenceSlotIsSkipped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newShardRig(t, 4)
		r.cfg.MaxReplicas = 3
		for _, slot := range []string{"work-member-0", "work-member-1"} {
			if _, err := r.st.PutRaw(slot, lease.Record[[]byte]{Holder: "x", Token: lease.MaxToken + 1, LeaseDuration: time.Second, Metadata: []byte("{}")}); err != nil {
				t.Fatal(err)
			}
		}
		r.start("a")
		r.settle(map[string]int{"a": 4})
		r.stop("a")
	})
}
