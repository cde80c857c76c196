package lead_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/memstore"
)

// groupRig is a few Groups on one store, each standing for a process, with
// one elector per name in each.
type groupRig struct {
	groups  []*lead.Group[meta]
	cancels []context.CancelFunc
	runs    []chan error
	els     [][]*lead.Elector[meta] // [group][name]
	names   []string
}

func newGroupRig(t *testing.T, st store.Store[meta], groups, names int, opts ...lead.Option) *groupRig {
	t.Helper()
	g := &groupRig{}
	for i := range names {
		g.names = append(g.names, fmt.Sprintf("job-%d", i))
	}
	for gi := range groups {
		grp, err := lead.NewGroup[meta](st, append([]lead.Option{lead.WithConfig(fastConfig()), lead.WithLookupEnv(nil), lead.WithIdentity(fmt.Sprintf("p%d", gi))}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		var els []*lead.Elector[meta]
		for _, n := range g.names {
			e, err := grp.Add(n)
			if err != nil {
				t.Fatal(err)
			}
			els = append(els, e)
		}
		ctx, cancel := context.WithCancel(context.Background())
		run := make(chan error, 1)
		go func() { run <- grp.Run(ctx) }()
		g.groups, g.cancels, g.runs, g.els = append(g.groups, grp), append(g.cancels, cancel), append(g.runs, run), append(g.els, els)
	}
	t.Cleanup(func() {
		for _, c := range g.cancels {
			c()
		}
		for _, r := range g.runs {
			<-r
		}
	})
	return g
}

// leaders returns, for each name, the groups whose elector leads it.
func (g *groupRig) leaders() [][]int {
	out := make([][]int, len(g.names))
	for gi, els := range g.els {
		for ni, e := range els {
			if e.IsLeader() {
				out[ni] = append(out[ni], gi)
			}
		}
	}
	return out
}

// oneLeaderEach fails unless each name has exactly one leader, among the
// groups allowed.
func (g *groupRig) oneLeaderEach(t *testing.T, when string, allowed func(gi int) bool) {
	t.Helper()
	for ni, ls := range g.leaders() {
		if len(ls) != 1 || !allowed(ls[0]) {
			t.Fatalf("%s: %s is led by groups %v", when, g.names[ni], ls)
		}
	}
}

func anyGroup(int) bool { return true }

// Three Groups (three processes) share 50 names: each name gets exactly one
// leader, whose term has a token; when one Group's Run ends, its electors
// release and the names it led move to the others, and its Run returns nil
// once all its electors are done.
func TestGroupElectsEveryNameAndHandsOverWhenRunEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New[meta]()
		g := newGroupRig(t, st, 3, 50)
		synctest.Wait()
		g.oneLeaderEach(t, "settled", anyGroup)
		for ni, ls := range g.leaders() {
			term, ok := g.els[ls[0]][ni].Term()
			if !ok || term.Token == 0 || term.Name != g.names[ni] {
				t.Fatalf("%s: leader's Term = %+v, %v", g.names[ni], term, ok)
			}
		}

		g.cancels[0]()
		if err := <-g.runs[0]; err != nil {
			t.Fatalf("Group.Run = %v, want nil", err)
		}
		g.runs[0] <- nil // for the cleanup
		for ni, e := range g.els[0] {
			select {
			case <-e.Done():
			default:
				t.Fatalf("%s: Done not closed after the Group's Run returned", g.names[ni])
			}
			if e.IsLeader() {
				t.Fatalf("%s: still leader after the Group's Run returned", g.names[ni])
			}
		}
		synctest.Wait() // the releases reach the other groups
		g.oneLeaderEach(t, "after group 0 stopped", func(gi int) bool { return gi != 0 })
	})
}

// Remove takes one name out: its elector releases, another Group's elector
// takes over at once, the others are untouched, and the name can be added
// again.
func TestGroupRemoveReleasesOneNameThatCanBeAddedAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New[meta]()
		g := newGroupRig(t, st, 2, 10)
		synctest.Wait()
		g.oneLeaderEach(t, "settled", anyGroup)
		ls := g.leaders()
		leader := ls[3][0]
		other := 1 - leader
		e := g.els[leader][3]
		if !g.groups[leader].Remove("job-3") {
			t.Fatal("Remove(job-3) = false")
		}
		<-e.Done()
		if e.IsLeader() {
			t.Fatal("removed elector still leads")
		}
		synctest.Wait()
		if !g.els[other][3].IsLeader() {
			t.Fatalf("job-3 not taken over by group %d after the release", other)
		}
		for ni, l := range g.leaders() {
			if ni != 3 && (len(l) != 1 || l[0] != ls[ni][0]) {
				t.Fatalf("%s: leaders %v, before %v: Remove of job-3 moved it", g.names[ni], l, ls[ni])
			}
		}
		if g.groups[leader].Remove("job-3") {
			t.Fatal("second Remove(job-3) = true")
		}
		again, err := g.groups[leader].Add("job-3")
		if err != nil {
			t.Fatalf("Add again: %v", err)
		}
		g.els[leader][3] = again
		synctest.Wait()
		g.oneLeaderEach(t, "after Add again", anyGroup)
		if again.IsLeader() {
			t.Fatal("the re-added elector took job-3 from a live leader")
		}
		if _, err := g.groups[leader].Add("job-3"); !errors.Is(err, lead.ErrAlreadyRunning) {
			t.Fatalf("Add of a name in the Group = %v, want ErrAlreadyRunning", err)
		}
	})
}

// Remove ends the leadership of the elector it takes out at once, as the
// end of Run's ctx does for one: by the time it returns, IsLeader and
// Status say no, before the loop has heard of it; the term's work is
// cancelled as stopped; the other names keep their leader.
func TestGroupRemoveEndsLeadershipAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New[meta]()
		g := newGroupRig(t, st, 1, 3)
		synctest.Wait()
		e := g.els[0][1]
		if !e.IsLeader() {
			t.Fatal("job-1 not led by the only group")
		}
		work := make(chan context.Context, 1)
		led := make(chan error, 1)
		go func() {
			led <- e.Lead(context.Background(), func(ctx context.Context, _ lead.Term) error {
				work <- ctx
				<-ctx.Done()
				return nil
			})
		}()
		termCtx := <-work
		if !g.groups[0].Remove("job-1") {
			t.Fatal("Remove(job-1) = false")
		}
		// No synctest.Wait: the loop has not run since.
		if e.IsLeader() {
			t.Fatal("IsLeader = true right after Remove")
		}
		if s := e.Status(); s.Leading {
			t.Fatalf("Status().Leading = true right after Remove: %+v", s)
		}
		<-termCtx.Done()
		if cause := context.Cause(termCtx); !errors.Is(cause, lead.ErrLeadershipLost) || !strings.Contains(cause.Error(), "stopped") {
			t.Fatalf("cause = %v, want ErrLeadershipLost (stopped)", cause)
		}
		<-e.Done()
		if err := <-led; !errors.Is(err, lead.ErrLeadershipLost) {
			t.Fatalf("Lead = %v, want ErrLeadershipLost (the term ended before fn returned)", err)
		}
		synctest.Wait()
		for ni, other := range g.els[0] {
			if ni != 1 && !other.IsLeader() {
				t.Fatalf("%s lost its leader to the Remove of job-1", g.names[ni])
			}
		}
	})
}

// A name added while the Group runs takes part at once; Run of a Group's
// elector is refused; Add after Run's ctx ended is refused; a name removed
// before Run never runs.
func TestGroupStartsLateNamesAndRefusesRunAndAddsAfterItsEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New[meta]()
		grp, err := lead.NewGroup[meta](st, lead.WithConfig(fastConfig()), lead.WithLookupEnv(nil))
		if err != nil {
			t.Fatal(err)
		}
		early, err := grp.Add("early")
		if err != nil {
			t.Fatal(err)
		}
		gone, err := grp.Add("gone")
		if err != nil {
			t.Fatal(err)
		}
		if !grp.Remove("gone") {
			t.Fatal("Remove(gone) = false")
		}
		<-gone.Done()
		if err := early.Run(context.Background()); !errors.Is(err, lead.ErrAlreadyRunning) {
			t.Fatalf("Run of a Group's elector = %v, want ErrAlreadyRunning", err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		run := make(chan error, 1)
		go func() { run <- grp.Run(ctx) }()
		synctest.Wait()
		if err := grp.Run(ctx); !errors.Is(err, lead.ErrAlreadyRunning) {
			t.Fatalf("second Group.Run = %v, want ErrAlreadyRunning", err)
		}
		late, err := grp.Add("late")
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if !early.IsLeader() || !late.IsLeader() {
			t.Fatalf("early leads %v, late leads %v; want both", early.IsLeader(), late.IsLeader())
		}
		if _, _, err := st.Get(context.Background(), "gone"); err == nil {
			t.Fatal("a name removed before Run wrote a record")
		}
		cancel()
		if err := <-run; err != nil {
			t.Fatalf("Group.Run = %v", err)
		}
		if _, err := grp.Add("after"); !errors.Is(err, lead.ErrStopped) {
			t.Fatalf("Add after Run ended = %v, want ErrStopped", err)
		}
		for _, e := range []*lead.Elector[meta]{early, late} {
			rec, _, err := st.Get(context.Background(), e.Name())
			if err != nil || rec.Holder != "" {
				t.Fatalf("%s after Run: holder %q, %v; want released", e.Name(), rec.Holder, err)
			}
		}
	})
}

// Nil and zero arguments give errors, never panics.
func TestGroupNilArgumentsGiveErrorsNotPanics(t *testing.T) {
	var nilGroup *lead.Group[meta]
	var zero lead.Group[meta]
	for name, g := range map[string]*lead.Group[meta]{"nil": nilGroup, "zero": &zero} {
		if _, err := g.Add("x"); !errors.Is(err, lead.ErrNilArgument) {
			t.Errorf("%s: Add = %v", name, err)
		}
		if g.Remove("x") {
			t.Errorf("%s: Remove = true", name)
		}
		if err := g.Run(context.Background()); !errors.Is(err, lead.ErrNilArgument) {
			t.Errorf("%s: Run = %v", name, err)
		}
	}
	if _, err := lead.NewGroup[meta](nil); !errors.Is(err, lead.ErrNilStore) {
		t.Errorf("NewGroup(nil) = %v", err)
	}
	var nilStore *memstore.Store[meta]
	if _, err := lead.NewGroup[meta](nilStore); !errors.Is(err, lead.ErrNilStore) {
		t.Errorf("NewGroup(typed nil) = %v", err)
	}
	if _, err := lead.NewGroup[meta](memstore.New[meta](), nil); !errors.Is(err, lead.ErrNilArgument) {
		t.Errorf("NewGroup(st, nil) = %v", err)
	}
	g, err := lead.NewGroup[meta](memstore.New[meta]())
	if err != nil {
		t.Fatal(err)
	}
	//lint:ignore SA1012 a nil ctx is what is tested
	if err := g.Run(nil); !errors.Is(err, lead.ErrNilArgument) { //nolint:staticcheck
		t.Errorf("Run(nil) = %v", err)
	}
	if _, err := g.Add(""); err == nil {
		t.Error("Add of an empty name succeeded")
	}
	if _, err := g.Add("x", nil); !errors.Is(err, lead.ErrNilArgument) {
		t.Errorf("Add(x, nil) = %v", err)
	}
}

// A Group's idle electors hold no goroutine: 200 names led in one Group on
// memstore (whose watch needs no goroutine) hold a handful, settled and a
// minute of renewals later.
func TestGroupHoldsNoGoroutinePerElector(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New[meta]()
		before := runtime.NumGoroutine()
		g := newGroupRig(t, st, 1, 200)
		synctest.Wait()
		g.oneLeaderEach(t, "settled", anyGroup)
		time.Sleep(time.Minute) // virtual: the leaders renew all along
		synctest.Wait()
		g.oneLeaderEach(t, "a minute later", anyGroup)
		if n := runtime.NumGoroutine() - before; n > 10 {
			t.Fatalf("%d goroutines for a Group of 200 idle electors, want at most 10", n)
		}
	})
}

// slowStore answers every operation after a delay (the time of a round
// trip to a server) and records the most operations in flight at once.
type slowStore struct {
	store.Store[meta]
	delay time.Duration

	mu                    sync.Mutex
	inFlight, most, swaps int
}

func (s *slowStore) enter(swap bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inFlight++
	s.most = max(s.most, s.inFlight)
	if swap {
		s.swaps++
	}
}

func (s *slowStore) leave() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inFlight--
}

func (s *slowStore) Get(ctx context.Context, name string) (lease.Record[meta], lease.Revision, error) {
	s.enter(false)
	defer s.leave()
	time.Sleep(s.delay) // the round trip (synctest's clock)
	return s.Store.Get(ctx, name)
}

func (s *slowStore) CompareAndSwap(ctx context.Context, name string, exp lease.Revision, next lease.Record[meta]) (lease.Record[meta], lease.Revision, error) {
	s.enter(true)
	defer s.leave()
	time.Sleep(s.delay)
	return s.Store.CompareAndSwap(ctx, name, exp, next)
}

// A Group of many names on a slow store runs at most 256 store operations
// at once, or the bound WithMaxStoreOps sets (the others wait their turn,
// holding no goroutine), and still elects every name; when its Run ends,
// the operations waiting (the releases) run, and Run returns once they
// are done.
func TestGroupBoundsStoreOperationsInFlight(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []lead.Option
		want int
	}{
		{"default", nil, 256},
		{"WithMaxStoreOps(10)", []lead.Option{lead.WithMaxStoreOps(10)}, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { groupBoundsStoreOperations(t, tc.want, tc.opts...) })
		})
	}
}

func groupBoundsStoreOperations(t *testing.T, want int, opts ...lead.Option) {
	const names = 1000
	st := &slowStore{Store: memstore.New[meta](), delay: 5 * time.Millisecond}
	g := newGroupRig(t, st, 1, names, opts...)
	els := g.els[0]

	// Every name asks at once: 1,000 reads, then 1,000 creates.
	synctest.Wait()
	for !allLead(els) {
		time.Sleep(fastConfig().RetryInterval)
		synctest.Wait()
	}
	if g := runtime.NumGoroutine(); g > want+50 {
		t.Errorf("%d goroutines with %d names led on a slow store, want at most %d operations and a handful more", g, names, want)
	}

	g.cancels[0]()
	if err := <-g.runs[0]; err != nil {
		t.Fatalf("Group.Run = %v, want nil", err)
	}
	g.runs[0] <- nil // for the cleanup
	for i, e := range els {
		select {
		case <-e.Done():
		default:
			t.Fatalf("%s: Done not closed after Run returned", g.names[i])
		}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.most > want {
		t.Errorf("%d store operations in flight at once, want at most %d", st.most, want)
	}
	if st.most < want {
		t.Errorf("at most %d store operations in flight at once: the test did not reach the bound of %d", st.most, want)
	}
	if st.swaps < 2*names {
		t.Errorf("%d swaps, want at least %d (a create and a release per name)", st.swaps, 2*names)
	}
	rec, _, err := st.Store.Get(context.Background(), g.names[names-1])
	if err != nil || rec.Holder != "" {
		t.Errorf("the last name after Run returned: %+v, %v; want released", rec, err)
	}
}

// WithMaxStoreOps below 1 is refused, by NewGroup and by New alike.
func TestWithMaxStoreOpsRefusesBelowOne(t *testing.T) {
	st := memstore.New[meta]()
	for _, n := range []int{0, -1, math.MinInt} {
		if _, err := lead.NewGroup[meta](st, lead.WithMaxStoreOps(n)); !errors.Is(err, lead.ErrInvalidOption) || !strings.Contains(err.Error(), "WithMaxStoreOps") {
			t.Errorf("NewGroup(WithMaxStoreOps(%d)) = %v, want ErrInvalidOption naming the option", n, err)
		}
		if _, err := lead.New[meta]("job", st, lead.WithMaxStoreOps(n), lead.WithLookupEnv(nil)); !errors.Is(err, lead.ErrInvalidOption) {
			t.Errorf("New(WithMaxStoreOps(%d)) = %v, want ErrInvalidOption", n, err)
		}
	}
	if _, err := lead.New[meta]("job", st, lead.WithMaxStoreOps(1), lead.WithLookupEnv(nil)); err != nil {
		t.Errorf("New(WithMaxStoreOps(1)) = %v, want nil (an elector ignores it)", err)
	}
}

func allLead(els []*lead.Elector[meta]) bool {
	for _, e := range els {
		if !e.IsLeader() {
			return false
		}
	}
	return true
}

// When a Group's store cannot keep up with its operations (hundreds of
// names starting at once, their reads queued behind a bound of one at a
// time), a leader's renewals go before the reads and claims waiting: the
// term that exists is kept. In the order asked, the renewal waited behind
// 600 reads of 5 ms, past the RenewDeadline of 2 s.
func TestGroupRenewalsGoFirstWhenTheStoreFallsBehind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &slowStore{Store: memstore.New[meta](), delay: 5 * time.Millisecond}
		grp, err := lead.NewGroup[meta](st, lead.WithConfig(fastConfig()), lead.WithLookupEnv(nil), lead.WithIdentity("p0"), lead.WithMaxStoreOps(1))
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var stopped []lead.Change
		kept, err := grp.Add("kept", lead.WithObserver(func(c lead.Change) {
			if c.Kind == lead.Stopped {
				mu.Lock()
				stopped = append(stopped, c)
				mu.Unlock()
			}
		}))
		if err != nil {
			t.Fatal(err)
		}
		stop := runGroup(t, grp)
		for !kept.IsLeader() {
			time.Sleep(fastConfig().RetryInterval)
			synctest.Wait()
		}
		for i := range 600 {
			if _, err := grp.Add(fmt.Sprintf("crowd-%d", i)); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if !kept.IsLeader() {
			t.Error("the leader lost its term while the other names started")
		}
		stop()
		mu.Lock()
		defer mu.Unlock()
		if len(stopped) != 1 || !strings.Contains(stopped[0].Reason.Error(), "stopped") {
			t.Fatalf("terms stopped: %v; want one, at the end of Run", stopped)
		}
	})
}

// immediateStore says whether it answers immediately (store.Immediate) and
// records, for each operation, whether it ran on the loop that steps the
// electors (inline) or on a goroutine of its own.
type immediateStore struct {
	store.Store[meta]
	immediate bool

	mu              sync.Mutex
	inline, spawned int
}

func (s *immediateStore) AnswersImmediately() bool { return s.immediate }
func (s *immediateStore) MayLoseRecords() bool     { return false }

func (s *immediateStore) where() {
	onLoop := strings.Contains(string(debug.Stack()), ").dispatch(")
	s.mu.Lock()
	defer s.mu.Unlock()
	if onLoop {
		s.inline++
	} else {
		s.spawned++
	}
}

func (s *immediateStore) Get(ctx context.Context, name string) (lease.Record[meta], lease.Revision, error) {
	s.where()
	return s.Store.Get(ctx, name)
}

func (s *immediateStore) CompareAndSwap(ctx context.Context, name string, expected lease.Revision, next lease.Record[meta]) (lease.Record[meta], lease.Revision, error) {
	s.where()
	return s.Store.CompareAndSwap(ctx, name, expected, next)
}

// A store that answers immediately (store.Immediate, memstore) has its
// operations run on the loop, without a goroutine each; any other (or one
// that says false) on goroutines of their own. Either way the names are
// led, renewed and released.
func TestGroupRunsImmediateStoresOnTheLoop(t *testing.T) {
	for _, immediate := range []bool{true, false} {
		t.Run(fmt.Sprint("immediate=", immediate), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := &immediateStore{Store: memstore.New[meta](), immediate: immediate}
				g := newGroupRig(t, st, 2, 5)
				synctest.Wait()
				time.Sleep(3 * fastConfig().RetryInterval) // renewals
				synctest.Wait()
				g.oneLeaderEach(t, "settled", anyGroup)
				st.mu.Lock()
				defer st.mu.Unlock()
				if immediate && (st.spawned != 0 || st.inline == 0) {
					t.Fatalf("%d operations on the loop, %d on goroutines of their own; want all on the loop", st.inline, st.spawned)
				}
				if !immediate && (st.inline != 0 || st.spawned == 0) {
					t.Fatalf("%d operations on the loop, %d on goroutines of their own; want none on the loop", st.inline, st.spawned)
				}
			})
		})
	}
}

// countingGroup returns a Group on memstore, on a countingClock.
func countingGroup(t *testing.T) (*countingClock, *lead.Group[meta]) {
	t.Helper()
	clock := &countingClock{}
	grp, err := lead.NewGroup[meta](memstore.New[meta](), lead.WithConfig(fastConfig()), lead.WithLookupEnv(nil),
		lead.WithIdentity("p0"), lead.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	return clock, grp
}

// countingClock is the real clock (the bubble's, under synctest),
// counting the timers asked of it.
type countingClock struct{ timers atomic.Int64 }

func (c *countingClock) Now() time.Time { return time.Now() }

func (c *countingClock) AfterFunc(d time.Duration, f func()) lead.Timer {
	c.timers.Add(1)
	return time.AfterFunc(d, f)
}

// The electors of a Group on the Group's clock share its wake timers, one
// per instant of their grid (20 ms here: a twentieth of RetryInterval,
// 25 ms, in steps of 10) that has any wake due, where electors with a
// clock of their own (given to Add) ask one timer per wake: 500 names
// leading and renewing for 5 s ask fewer timers of the Group's clock than
// of their own (about 5,600 against 10,000, of which about 5,000 are the
// terms' watchdogs, moved at each renewal either way). Both keep every
// name led.
func TestGroupSharesWakeTimers(t *testing.T) {
	timers := map[bool]int64{}
	for _, shared := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			clock, grp := countingGroup(t)
			var els []*lead.Elector[meta]
			for i := range 500 {
				var opts []lead.Option
				if !shared {
					opts = append(opts, lead.WithClock(clock))
				}
				e, err := grp.Add(fmt.Sprintf("job-%d", i), opts...)
				if err != nil {
					t.Fatal(err)
				}
				els = append(els, e)
			}
			stop := runGroup(t, grp)
			synctest.Wait()
			before := clock.timers.Load()
			time.Sleep(5 * time.Second)
			synctest.Wait()
			timers[shared] = clock.timers.Load() - before
			if !allLead(els) {
				t.Errorf("shared %v: not every name led after 5 s", shared)
			}
			stop()
		})
	}
	// Each renewal also moves the term's watchdog (a timer either way):
	// half of the timers with clocks of their own are those.
	if timers[true]*3 > timers[false]*2 {
		t.Fatalf("%d timers asked with the Group's clock, %d with clocks of their own: want two thirds at most", timers[true], timers[false])
	}
	t.Logf("timers asked in 5 s: %d shared, %d with clocks of their own", timers[true], timers[false])
}

// lateClock is the real clock (the bubble's) whose timers fire a
// microsecond late.
type lateClock struct{}

func (lateClock) Now() time.Time { return time.Now() }

func (lateClock) AfterFunc(d time.Duration, f func()) lead.Timer {
	return time.AfterFunc(d+time.Microsecond, f)
}

// stallingStore stalls every swap, once told to, until its context ends.
type stallingStore struct {
	store.Store[meta]
	stall atomic.Bool
}

func (s *stallingStore) CompareAndSwap(ctx context.Context, name string, expected lease.Revision, next lease.Record[meta]) (lease.Record[meta], lease.Revision, error) {
	if s.stall.Load() {
		<-ctx.Done()
		return lease.Record[meta]{}, 0, ctx.Err()
	}
	return s.Store.CompareAndSwap(ctx, name, expected, next)
}

// A Group's leader whose renewals stop getting through steps down at its
// deadline (within its clock's microsecond), as IsLeader turns false
// then: its wakes share the Group's timers, on a 20 ms grid, but not that
// one (observers told a grain late disagreed with Term, which the runtime
// sweep caught).
func TestGroupLeaderStepsDownAtItsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &stallingStore{Store: memstore.New[meta]()}
		stopped := make(chan time.Time, 1)
		cfg := fastConfig()
		cfg.BackendTimeout = 730 * time.Millisecond // failures off the deadline
		// Timers that fire a microsecond late, as a real one may: the
		// renewals are sent just past the grid's instants, and so is the
		// deadline.
		grp, err := lead.NewGroup[meta](st, lead.WithConfig(cfg), lead.WithLookupEnv(nil), lead.WithIdentity("p0"), lead.WithClock(lateClock{}))
		if err != nil {
			t.Fatal(err)
		}
		e, err := grp.Add("job", lead.WithObserver(func(c lead.Change) {
			if c.Kind == lead.Stopped {
				stopped <- time.Now()
			}
		}))
		if err != nil {
			t.Fatal(err)
		}
		stop := runGroup(t, grp)
		for !e.IsLeader() {
			time.Sleep(fastConfig().RetryInterval)
			synctest.Wait()
		}
		time.Sleep(1234 * time.Millisecond) // off the 20 ms grid
		synctest.Wait()
		st.stall.Store(true)
		deadline := e.Status().Deadline
		at := <-stopped
		// The clock's own microsecond is allowed; the grid's 20 ms is not.
		if late := at.Sub(deadline); late < 0 || late >= time.Millisecond {
			t.Errorf("observers told Stopped at %v, %v after the deadline %v", at, late, deadline)
		}
		stop()
	})
}

// runGroup runs grp until the function it returns is called, which waits
// for Run and checks that it returned nil.
func runGroup(t *testing.T, grp *lead.Group[meta]) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	run := make(chan error, 1)
	go func() { run <- grp.Run(ctx) }()
	return func() {
		cancel()
		if err := <-run; err != nil {
			t.Errorf("Group.Run = %v", err)
		}
	}
}

// An elector added with WithClock(nil) stays on the Group's clock: a nil
// Clock changes nothing. Were it a reset to the real clock, the elector,
// having no clock of its own in Add's options, would share the Group's
// wakes, timed on the Group's clock, while its own deadlines ran on
// another.
func TestGroupAddWithNilClockKeepsTheGroupsClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock, grp := countingGroup(t)
		e, err := grp.Add("job", lead.WithClock(nil))
		if err != nil {
			t.Fatal(err)
		}
		stop := runGroup(t, grp)
		time.Sleep(time.Second)
		synctest.Wait()
		if !allLead([]*lead.Elector[meta]{e}) {
			t.Error("the elector does not lead after 1 s")
		}
		if n := clock.timers.Load(); n == 0 {
			t.Error("the elector asked no timer of the Group's clock: WithClock(nil) replaced it")
		}
		stop()
	})
}

// swapTimes is a store that records the instant of every CompareAndSwap
// (the bubble's clock, under synctest).
type swapTimes struct {
	store.Store[meta]
	mu    sync.Mutex
	times []time.Time
}

func (s *swapTimes) CompareAndSwap(ctx context.Context, name string, expected lease.Revision, next lease.Record[meta]) (lease.Record[meta], lease.Revision, error) {
	s.mu.Lock()
	s.times = append(s.times, time.Now())
	s.mu.Unlock()
	return s.Store.CompareAndSwap(ctx, name, expected, next)
}

// since returns the instants of the swaps made at or after t.
func (s *swapTimes) since(t time.Time) []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []time.Time
	for _, at := range s.times {
		if !at.Before(t) {
			out = append(out, at)
		}
	}
	return out
}

// awaitAllLead waits, in a synctest bubble, until every one of els leads,
// for 20 pauses at most.
func awaitAllLead(t *testing.T, els []*lead.Elector[meta], pause time.Duration) {
	t.Helper()
	for range 20 {
		if allLead(els) {
			return
		}
		time.Sleep(pause)
		synctest.Wait()
	}
	t.Fatalf("not every name led after 20 pauses of %v", pause)
}

// At the default timings (RetryInterval 2 s) a Group's shared wakes are
// rounded up to a 100 ms grid, a twentieth of RetryInterval: the renewals
// of its 300 names go to the store together, at instants 100 ms apart at
// least, where on the 10 ms grid they went at hundreds of instants
// (the loop woke, and the store was called, ten times as often).
func TestGroupRenewalsShareTheCoarseGrid(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &swapTimes{Store: memstore.New[meta]()}
		cfg := lease.DefaultConfig()
		grp, err := lead.NewGroup[meta](st, lead.WithConfig(cfg), lead.WithLookupEnv(nil), lead.WithIdentity("p0"))
		if err != nil {
			t.Fatal(err)
		}
		var els []*lead.Elector[meta]
		for i := range 300 {
			e, err := grp.Add(fmt.Sprintf("job-%d", i))
			if err != nil {
				t.Fatal(err)
			}
			els = append(els, e)
		}
		stop := runGroup(t, grp)
		defer stop()
		awaitAllLead(t, els, cfg.RetryInterval)
		from := time.Now()
		time.Sleep(10 * cfg.RetryInterval)
		synctest.Wait()
		swaps := st.since(from)
		// Each renews at most 2.3 s after the last (RetryInterval, its
		// jitter, a grain): 8 times at least in 20 s.
		if len(swaps) < 300*8 {
			t.Fatalf("%d swaps in 10 RetryIntervals of 300 leaders: want 8 renewals of each at least", len(swaps))
		}
		var instants []time.Time
		for _, at := range swaps {
			if len(instants) == 0 || !at.Equal(instants[len(instants)-1]) {
				instants = append(instants, at)
			}
		}
		for i := 1; i < len(instants); i++ {
			if gap := instants[i].Sub(instants[i-1]); gap < 100*time.Millisecond {
				t.Fatalf("swaps at %v and %v, %v apart: want the renewals on a 100 ms grid", instants[i-1].Sub(from), instants[i].Sub(from), gap)
			}
		}
		t.Logf("%d renewals at %d instants in %v", len(swaps), len(instants), 10*cfg.RetryInterval)
	})
}

// A Config whose renewals have little time to spare gets a grid fine
// enough to keep that margin, or none. With no jitter, each renewal is due
// RetryInterval after the one before and goes at the next instant of the
// grid at or after that:
//   - 40 ms to spare (RetryInterval 1.81 s): on a grid of a twentieth of
//     RetryInterval (90.5 ms, rounded to 90) renewals would go 1.89 s
//     apart, after the deadline; on the 10 ms grid they go on time;
//   - 4 ms to spare (RetryInterval 1.801 s): on the 10 ms grid they would
//     go 1.81 s apart, after the deadline; these wakes are not shared.
//
// 100 names keep their leader for a minute.
func TestGroupGridKeepsTheRenewalMargin(t *testing.T) {
	for _, tc := range []struct{ retry, deadline time.Duration }{
		{1810 * time.Millisecond, 1850 * time.Millisecond},
		{1801 * time.Millisecond, 1805 * time.Millisecond},
	} {
		t.Run(fmt.Sprint("spare=", tc.deadline-tc.retry), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := lease.Config{
					LeaseDuration:  3 * time.Second,
					RenewDeadline:  tc.deadline,
					RetryInterval:  tc.retry,
					BackendTimeout: time.Second,
					ErrorInterval:  10 * time.Second,
				}
				grp, err := lead.NewGroup[meta](memstore.New[meta](), lead.WithConfig(cfg), lead.WithLookupEnv(nil), lead.WithIdentity("p0"))
				if err != nil {
					t.Fatal(err)
				}
				var stops atomic.Int64
				var els []*lead.Elector[meta]
				for i := range 100 {
					e, err := grp.Add(fmt.Sprintf("job-%d", i), lead.WithObserver(func(c lead.Change) {
						if c.Kind == lead.Stopped {
							stops.Add(1)
						}
					}))
					if err != nil {
						t.Fatal(err)
					}
					els = append(els, e)
				}
				stop := runGroup(t, grp)
				time.Sleep(time.Minute)
				synctest.Wait()
				if n := stops.Load(); n != 0 || !allLead(els) {
					t.Errorf("%d terms ended in a minute (every name leads: %v): want none", n, allLead(els))
				}
				stop()
			})
		})
	}
}

// failingStore fails every swap at once, once told to.
type failingStore struct {
	store.Store[meta]
	fail atomic.Bool
}

func (s *failingStore) CompareAndSwap(ctx context.Context, name string, expected lease.Revision, next lease.Record[meta]) (lease.Record[meta], lease.Revision, error) {
	if s.fail.Load() {
		return lease.Record[meta]{}, 0, errors.New("failingStore: refused")
	}
	return s.Store.CompareAndSwap(ctx, name, expected, next)
}

// Leaders of a Group whose renewals fail at once (an error, not a hang)
// step down at their deadline, within the clock's microsecond: the
// retries before it go on the Group's grid, each a grain late at most, so
// one due within a grain of the deadline would wake the machine past it;
// such a wake is the elector's own. The default timings, with
// RenewDeadlines from 8.01 to 9.21 s, off their 100 ms grid.
func TestGroupLeadersStepDownAtTheirDeadlineWhenRenewalsFail(t *testing.T) {
	for d := 8010 * time.Millisecond; d < 9300*time.Millisecond; d += 100 * time.Millisecond {
		t.Run(fmt.Sprint("RenewDeadline=", d), func(t *testing.T) { leadersStepDownAtTheirDeadline(t, d) })
	}
}

func leadersStepDownAtTheirDeadline(t *testing.T, renewDeadline time.Duration) {
	synctest.Test(t, func(t *testing.T) {
		st := &failingStore{Store: memstore.New[meta]()}
		cfg := lease.DefaultConfig()
		cfg.RenewDeadline = renewDeadline
		grp, err := lead.NewGroup[meta](st, lead.WithConfig(cfg), lead.WithLookupEnv(nil), lead.WithIdentity("p0"))
		if err != nil {
			t.Fatal(err)
		}
		const n = 300
		els := make([]*lead.Elector[meta], n)
		stopped := make([]atomic.Int64, n) // UnixNano of the Stopped change
		for i := range n {
			e, err := grp.Add(fmt.Sprintf("job-%d", i), lead.WithObserver(func(c lead.Change) {
				if c.Kind == lead.Stopped {
					stopped[i].CompareAndSwap(0, time.Now().UnixNano())
				}
			}))
			if err != nil {
				t.Fatal(err)
			}
			els[i] = e
		}
		stop := runGroup(t, grp)
		defer stop()
		awaitAllLead(t, els, cfg.RetryInterval)
		time.Sleep(3 * cfg.RetryInterval) // renewals spread over the grid
		synctest.Wait()
		st.fail.Store(true)
		deadlines := make([]time.Time, n)
		for i, e := range els {
			deadlines[i] = e.Status().Deadline
		}
		time.Sleep(cfg.RenewDeadline + time.Second)
		synctest.Wait()
		late := 0
		var worst time.Duration
		for i := range n {
			at := stopped[i].Load()
			if at == 0 {
				t.Fatalf("job-%d: no Stopped %v after its renewals began to fail", i, cfg.RenewDeadline+time.Second)
			}
			d := time.Unix(0, at).Sub(deadlines[i])
			if d < 0 || d >= time.Millisecond {
				late++
				worst = max(worst, d)
			}
		}
		if late > 0 {
			t.Errorf("%d of %d leaders told Stopped off their deadline, up to %v after it; want each within its clock's microsecond", late, n, worst)
		}
	})
}

// opTimes is a store that records, for each name, the instants of its
// reads and swaps (the bubble's clock, under synctest).
type opTimes struct {
	store.Store[meta]
	mu    sync.Mutex
	reads map[string][]time.Time
	swaps map[string][]time.Time // successful ones
}

func newOpTimes(st store.Store[meta]) *opTimes {
	return &opTimes{Store: st, reads: map[string][]time.Time{}, swaps: map[string][]time.Time{}}
}

func (s *opTimes) Get(ctx context.Context, name string) (lease.Record[meta], lease.Revision, error) {
	s.mu.Lock()
	s.reads[name] = append(s.reads[name], time.Now())
	s.mu.Unlock()
	return s.Store.Get(ctx, name)
}

func (s *opTimes) CompareAndSwap(ctx context.Context, name string, expected lease.Revision, next lease.Record[meta]) (lease.Record[meta], lease.Revision, error) {
	rec, rev, err := s.Store.CompareAndSwap(ctx, name, expected, next)
	if err == nil {
		s.mu.Lock()
		s.swaps[name] = append(s.swaps[name], time.Now())
		s.mu.Unlock()
	}
	return rec, rev, err
}

// times returns a copy of name's instants in m.
func (s *opTimes) times(m map[string][]time.Time, name string) []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(m[name])
}

// When a Group's leaders crash, the followers of another Group take each
// name over a LeaseDuration after they first saw its last revision, on
// time: a follower's wakes are its own, not the grid's (which would come
// up to a grain, 100 ms at the default timings, late). Each takeover is
// checked to come a LeaseDuration (15.05 s: off the grid) after an
// instant at which the follower could have first seen the record: one of
// the dead leader's writes (heard on the watch) or one of the follower's
// reads. And the reads themselves go at the instants their jittered
// pauses give, not on a grid: a read that first shows the dead leader's
// last revision starts the wait, so its lateness would be the
// takeover's.
func TestGroupFollowersTakeOverOnTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := memstore.New[meta]()
		leaders, followers := newOpTimes(mem), newOpTimes(mem)
		cfg := lease.DefaultConfig()
		cfg.LeaseDuration = 15050 * time.Millisecond
		const n = 100
		start := func(st store.Store[meta], id string, opts ...lead.Option) (*lead.Group[meta], []*lead.Elector[meta], func()) {
			grp, err := lead.NewGroup[meta](st, append([]lead.Option{lead.WithConfig(cfg), lead.WithLookupEnv(nil), lead.WithIdentity(id)}, opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			var els []*lead.Elector[meta]
			for i := range n {
				e, err := grp.Add(fmt.Sprintf("job-%d", i))
				if err != nil {
					t.Fatal(err)
				}
				els = append(els, e)
			}
			return grp, els, runGroup(t, grp)
		}
		_, leadEls, crash := start(leaders, "p0", lead.WithReleaseOnStop(false))
		awaitAllLead(t, leadEls, cfg.RetryInterval)
		_, folEls, stop := start(followers, "p1")
		defer stop()
		time.Sleep(2 * cfg.LeaseDuration) // the followers settle: quiet, on the grid
		synctest.Wait()
		crash()
		crashed := time.Now()
		time.Sleep(2 * cfg.LeaseDuration)
		synctest.Wait()
		if !allLead(folEls) {
			t.Fatal("p1 does not lead every name two LeaseDurations after p0 crashed")
		}
		off := 0
		var example string
		for i := range n {
			name := fmt.Sprintf("job-%d", i)
			var took time.Time
			for _, at := range followers.times(followers.swaps, name) {
				if at.After(crashed) {
					took = at
					break
				}
			}
			seen := append(leaders.times(leaders.swaps, name), followers.times(followers.reads, name)...)
			onTime := slices.ContainsFunc(seen, func(at time.Time) bool {
				d := took.Sub(at) - cfg.LeaseDuration
				return d >= 0 && d < time.Millisecond
			})
			if !onTime {
				off++
				example = fmt.Sprintf("%s taken over %v after the crash", name, took.Sub(crashed))
			}
		}
		if off > 0 {
			t.Errorf("%d of %d takeovers came off a LeaseDuration after any instant the record could have been first seen (%s)", off, n, example)
		}
		// On a 100 ms grid every read would fall on one instant modulo
		// 100 ms (two, with the start's).
		residues := map[int64]bool{}
		for i := range n {
			for _, at := range followers.times(followers.reads, fmt.Sprintf("job-%d", i)) {
				residues[at.UnixNano()%int64(100*time.Millisecond)] = true
			}
		}
		if len(residues) < 10 {
			t.Errorf("the followers' reads fell on %d instants modulo 100 ms: want them at the instants their pauses give, not on a grid", len(residues))
		}
	})
}

// inFlight is a store whose reads, swaps and watch starts each take a
// millisecond (of the bubble's clock), counting how many run at once.
type inFlight struct {
	store.Store[meta]
	now, most atomic.Int64
}

func (s *inFlight) MayLoseRecords() bool { return store.MayLoseRecords(s.Store) }

func (s *inFlight) WatchCapabilities() store.WatchCapabilities {
	return store.WatchCapabilitiesOf(s.Store)
}

// enter counts one more operation running until the returned func.
func (s *inFlight) enter() func() {
	n := s.now.Add(1)
	for m := s.most.Load(); n > m && !s.most.CompareAndSwap(m, n); m = s.most.Load() {
	}
	time.Sleep(time.Millisecond)
	return func() { s.now.Add(-1) }
}

func (s *inFlight) Get(ctx context.Context, name string) (lease.Record[meta], lease.Revision, error) {
	defer s.enter()()
	return s.Store.Get(ctx, name)
}

func (s *inFlight) CompareAndSwap(ctx context.Context, name string, exp lease.Revision, next lease.Record[meta]) (lease.Record[meta], lease.Revision, error) {
	defer s.enter()()
	return s.Store.CompareAndSwap(ctx, name, exp, next)
}

func (s *inFlight) Watch(ctx context.Context, name string) (<-chan store.Event[meta], error) {
	defer s.enter()()
	return store.Watch(ctx, s.Store, name)
}

// A Group's watch starts count among its store operations: while 10,000
// names start at once (1,000 with a bound of 16), no more reads, swaps and
// watch starts run at once than the Group's bound (a watch start reads the record on most stores;
// started beside the bound, 10,000 of them ran at once).
func TestGroupBoundsWatchStarts(t *testing.T) {
	for _, tc := range []struct{ bound, names int }{{0, 10_000}, {16, 1_000}} { // bound 0: the default
		bound, names := tc.bound, tc.names
		t.Run(fmt.Sprint("bound=", bound), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := &inFlight{Store: memstore.New[meta]()}
				opts := []lead.Option{lead.WithConfig(fastConfig()), lead.WithLookupEnv(nil), lead.WithIdentity("p0")}
				want := 256
				if bound > 0 {
					opts, want = append(opts, lead.WithMaxStoreOps(bound)), bound
				}
				grp, err := lead.NewGroup[meta](st, opts...)
				if err != nil {
					t.Fatal(err)
				}
				els := make([]*lead.Elector[meta], 0, names)
				for i := range names {
					e, err := grp.Add(fmt.Sprintf("job-%d", i))
					if err != nil {
						t.Fatal(err)
					}
					els = append(els, e)
				}
				stop := runGroup(t, grp)
				time.Sleep(5 * time.Second)
				synctest.Wait()
				led := 0
				for _, e := range els {
					if e.IsLeader() {
						led++
					}
				}
				stop()
				if got := st.most.Load(); got > int64(want) {
					t.Errorf("%d store operations ran at once while %d names started, want at most %d", got, names, want)
				}
				if led != names {
					t.Errorf("%d of %d names led after 5 s", led, names)
				}
				t.Logf("at most %d operations at once (bound %d); %d names led", st.most.Load(), want, led)
			})
		})
	}
}
