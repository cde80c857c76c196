package exhaust

import (
	"fmt"
	"time"

	"github.com/tenure-go/tenure/lease"
)

// Tick is the unit of the checker's discrete time: lease.MinDuration.
const Tick = lease.MinDuration

// Budget is how many of each fault a schedule may contain. Every field is
// a count; zero turns the fault off.
type Budget struct {
	Losses      int // a message lost: a request, a reply or a watch event
	Dups        int // a watch event delivered twice
	Reorders    int // a watch event delivered before an older one (the stream is FIFO otherwise)
	Crashes     int // a node crashes and restarts at once, knowing nothing
	DataLosses  int // the store loses its record (lossy stores only)
	Rollbacks   int // the store goes back to an earlier revision
	Restores    int // a stale backup: revision 1, holder cleared
	ForgedRels  int // someone else stores the release of the live lease
	ForgedShort int // someone else stores the live lease with LeaseDuration 1 tick
	ClockStops  int // a node's process and clock stop for 1..MaxStop ticks, revealed on resume
	Reconfigs   int // a node gets Bound.Config2 while its renewal is in flight
	Cuts        int // a node is cut off both ways for Bound.MaxCut ticks (what is in flight to it is lost)
	Resigns     int // a leader resigns
	Stops       int // a node stops gracefully (releasing) and restarts at the next tick
	// Faults caps the total of every field but Losses and Dups (0: no cap).
	Faults int
}

// Bound is one exhaustive search: its world and its limits.
type Bound struct {
	Name    string
	Nodes   int
	Horizon int // ticks of real time explored
	// Config is every node's timings at boot; Config2 is what a
	// reconfiguration gives.
	Config, Config2 lease.Config
	// The store's options (fsm.Options and the store's behaviour).
	Lossy, Authentic, Guarded bool
	// Watch gives every node a watch: each write is pushed to every node
	// that is up, and each boot gets the current record.
	Watch bool
	// MaxLatency is how many ticks a request or a reply may stay in
	// flight (0: it is applied or delivered, or lost, within the tick it
	// was sent in): time does not move on while one is older. A swap whose
	// driver timed out (an orphan) is not bound by it. -1: no bound (the
	// driver's BackendTimeout is then the only one).
	MaxLatency int
	// MaxWatchAge is the same bound for watch events (-1: none).
	MaxWatchAge int
	// WatchAtTick delivers every watch event in flight, in order, when
	// time next moves on (before the nodes' timers), rather than at any
	// point of the tick: a coarser interleaving that reaches longer
	// horizons. Events may still be lost within the budget.
	WatchAtTick bool
	// MaxOrphans is how many swaps whose driver timed out may stay in
	// flight, to be applied late (or never); the others are dropped.
	MaxOrphans int
	// MaxStop is the longest clock stop, in ticks.
	MaxStop int
	// MaxCut is how long a cut lasts, in ticks.
	MaxCut int
	Budget Budget
	// brokenCAS makes the store apply every swap, whatever revision it
	// expects: an unsafe store, for the checker's own test.
	brokenCAS bool
	// MaxStates stops the search (as a failure) past this many states
	// (0: no limit).
	MaxStates int
}

// ms is d ticks.
func ms(d int) time.Duration { return time.Duration(d) * Tick }

// smallConfig is the timings of the bounds: L=6, R=4, I=1, T=2 ticks.
func smallConfig() lease.Config {
	return lease.Config{LeaseDuration: ms(6), RenewDeadline: ms(4), RetryInterval: ms(1), BackendTimeout: ms(2), ErrorInterval: time.Second}
}

// longConfig is what a reconfiguration gives: L=12, R=9 (longer than the
// first LeaseDuration).
func longConfig() lease.Config {
	return lease.Config{LeaseDuration: ms(12), RenewDeadline: ms(9), RetryInterval: ms(1), BackendTimeout: ms(2), ErrorInterval: time.Second}
}

func (b Bound) String() string {
	return fmt.Sprintf("%s: %d nodes, horizon %d ticks, L=%d R=%d I=%d T=%d, lossy=%v authentic=%v guarded=%v watch=%v, budget %+v",
		b.Name, b.Nodes, b.Horizon, b.Config.LeaseDuration/Tick, b.Config.RenewDeadline/Tick, b.Config.RetryInterval/Tick,
		b.Config.BackendTimeout/Tick, b.Lossy, b.Authentic, b.Guarded, b.Watch, b.Budget)
}

func (b Bound) validate() error {
	for _, c := range []lease.Config{b.Config, b.Config2} {
		if c == (lease.Config{}) {
			continue
		}
		if err := c.Validate(); err != nil {
			return err
		}
		if c.RetryJitter != 0 || c.LeaseDuration%Tick != 0 || c.RenewDeadline%Tick != 0 || c.RetryInterval%Tick != 0 || c.BackendTimeout%Tick != 0 {
			return fmt.Errorf("exhaust: bound %s: timings must be whole ticks, without jitter", b.Name)
		}
	}
	if b.Nodes < 1 || b.Nodes > 8 {
		return fmt.Errorf("exhaust: bound %s: %d nodes", b.Name, b.Nodes)
	}
	if b.Budget.Reconfigs > 0 && b.Config2 == (lease.Config{}) {
		return fmt.Errorf("exhaust: bound %s: reconfigurations without Config2", b.Name)
	}
	return nil
}
