package sim

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/tenure-go/tenure/lease"
)

// Errors returned by this package. Every error about Options wraps
// ErrInvalidOptions; match them with errors.Is.
var (
	// ErrInvalidOptions: New (or Check) was given options it cannot run:
	// a value out of range, an invalid Config, faults that contradict each
	// other or the store's nature, a schedule entry that names no node.
	ErrInvalidOptions = errors.New("sim: invalid options")
	// ErrInvalidSeeds: a list of seeds (ParseSeeds, TENURE_SIM_SEEDS)
	// cannot be parsed.
	ErrInvalidSeeds = errors.New("sim: invalid seed list")
	// ErrUnknownFault: ParseFaults was given a name that is no fault.
	ErrUnknownFault = errors.New("sim: unknown fault")
	// ErrNotRecorded: a timeline was asked of a run made without
	// Options.Record.
	ErrNotRecorded = errors.New("sim: the run was not recorded (set Options.Record)")
)

// Names of the checks, as a Violation reports them in Check.
const (
	// CheckOneLeader: two nodes believed they led at the same instant.
	CheckOneLeader = "one-leader"
	// CheckTokens: a term started with a token that is not larger than
	// every earlier term's, or stopped with a token not its own.
	CheckTokens = "tokens"
	// CheckFence: the fenced resource accepted a token lower than one it
	// had accepted, or one no term started with, or refused the write of a
	// leader that still believed it led.
	CheckFence = "fence"
	// CheckLiveness: no node led for longer than LivenessBound after the
	// faults healed.
	CheckLiveness = "liveness"
	// CheckHandover: after a release in calm times, no node led within
	// HandoverBound.
	CheckHandover = "handover"
	// CheckMonotonic: a node accepted a revision older than one it had
	// accepted, or a record the store never stored at that revision, or the
	// store's Transitions went down.
	CheckMonotonic = "monotonic"
	// CheckTransition: a state change the state machine's table does not
	// allow, or a term that started or stopped without the change of state.
	CheckTransition = "transition"
	// CheckLivelock: a model run processed more than Options.MaxEvents
	// events.
	CheckLivelock = "livelock"
	// CheckObserver (runtime mode): what an elector's observers were told
	// disagrees with what the elector reports (IsLeader, Term), or a
	// Started and a Stopped do not alternate, or its Leaders channel
	// reported the same holder twice in a row, or, once every goroutine is
	// idle, a holder other than the one Record shows.
	CheckObserver = "observer"
	// CheckBody (runtime mode): a Lead or Every body's context was still
	// live after its term ended.
	CheckBody = "body"
	// CheckTermEnds (runtime mode): an elector reported leading again with
	// the token of a term it had already stopped leading (a term ends for
	// good).
	CheckTermEnds = "term-ends"
	// CheckRun (runtime mode): an elector's Run, Lead or Every returned an
	// error it should not have, or the run did not wind down.
	CheckRun = "run"
)

// Faults switches the fault kinds a random schedule draws from. A zero
// Faults runs a calm cluster; DefaultFaults is the set the tenure CLI
// runs when no fault is named.
type Faults struct {
	// Drift gives every node a clock rate within ±Rho of real time.
	Drift bool
	// DriftBeyond gives clock rates at ±BeyondRho, a drift larger than the
	// configuration tolerates ((L−R)/(L+R)); it can make two leaders. It
	// excludes Drift.
	DriftBeyond bool
	// Crash crashes nodes (local state lost; in runtime mode Run is
	// cancelled without releasing) and restarts them, with the same
	// identity or a new one.
	Crash bool
	// Pause freezes a process for longer than the lease: in model mode
	// nothing runs, its timers fire late and replies queue; in runtime mode
	// the elector's loop blocks in its log handler, its observers block and
	// its bodies stall before their next fenced write.
	Pause bool
	// Partition cuts a node's requests, its responses (and watch), or both.
	Partition bool
	// Loss drops requests (not applied) and responses (applied: the
	// outcome is unknown to the caller, who times out) at random for a
	// while.
	Loss bool
	// Slow makes the store answer later than BackendTimeout for a while.
	Slow bool
	// WatchChaos delays, duplicates and reorders watch events, beyond what
	// the store contract allows (a watch event is only a hint).
	WatchChaos bool
	// DataLoss makes the record vanish, as a Redis restart without
	// persistence does; revisions and the token floor survive. It needs a
	// store that may lose records (StoreModel.MayLoseRecords).
	DataLoss bool
	// DataSwap replaces the whole dataset with a copy taken before the
	// last create (FaultDataSwap), as SWAPDB with a restored database
	// does. It needs StoreModel.MayLoseRecords.
	DataSwap bool
	// Resend loses the record, and a call that made the lost marker,
	// resent with its arguments unchanged, makes it anew (FaultResend).
	// It needs StoreModel.CreateGate.
	Resend bool
	// Release stops a node gracefully (it releases the lease) and starts it
	// again later.
	Release bool
	// Reconfigure gives nodes other valid timings (lead's Reconfigure).
	Reconfigure bool
	// MuteWatch makes watches silently stop delivering for a while (one
	// node's, or every node's): followers that stopped polling because
	// the watch showed renewals must notice and read again. It is no
	// disturbance: the liveness check runs through it.
	MuteWatch bool
	// ForgeRelease lets an outside writer store the release of the live
	// lease (FaultForgeRelease), which nobody can tell from the holder's
	// own: a follower takes it over while the leader still believes it
	// leads, until its next renewal meets the new record. That overlap is
	// the one two leaders the check allows, and only for at most the
	// leader's RenewDeadline after the forged release (docs/design.md, the
	// threat model); it is off in AdversaryFaults, so that the seeds of
	// the adversary's sweep keep their schedules.
	ForgeRelease bool
	// ForgeRenewal lets the forger on the watch channel (ForgeWatch) also
	// forge renewals ahead: at the leader's next renewal, an event showing
	// the renewal after it, its revision and record exact and the stamp
	// the store held then, then the leader cut off (FaultForgeWatch with
	// Renewal). A follower must count no wait from it (docs/design.md,
	// "Quiet followers"). Off in AdversaryFaults, so that the seeds of the
	// adversary's sweep keep their schedules.
	ForgeRenewal bool
	// ClockStop stops a node's process and its monotonic clock together
	// for a while (a VM paused by its hypervisor, a system suspend): it
	// resumes with its clock behind, and its second clock reveals the stop
	// (FaultClockStop). Model mode only: runtime mode does not draw it.
	ClockStop bool
	// ClockStopHidden draws clock stops that nothing reveals on resume
	// (FaultClockStop with Hidden; with ClockStop as well, half of them):
	// the clock-rate bound is broken and only fencing covers it, so the
	// one-leader check may fail. Model mode only.
	ClockStopHidden bool
	// Resign makes the leader resign now and then (FaultResign): it steps
	// down, releases and stays in the election. Off in AllFaults and
	// AdversaryFaults, so that their sweeps' seeds keep their schedules.
	Resign bool
	// HandOver makes the leader hand the lease over now and then
	// (FaultHandOver) to a node, or to an identity no node has. Off in
	// AllFaults and AdversaryFaults, so that their sweeps' seeds keep their
	// schedules.
	HandOver bool

	// The adversary (adversary.go, targeted.go). While any of Forge,
	// ForgeWatch, Rollback, Restore, Targeted, Jitter or Extreme is on, the
	// random schedule is drawn by advSchedule, on a time scale set by the
	// lease, and every reconfiguration keeps the initial LeaseDuration.

	// Forge lets an outside writer store forged records for a while:
	// extreme LeaseDurations (math.MinInt64 to math.MaxInt64), tokens near
	// lease.MaxToken and beyond it, foreign and invalid holders. At the end
	// of its window it removes its record if it still stands.
	Forge bool
	// ForgeWatch pushes records the store does not hold, with huge
	// revisions, to some nodes' watch feeds.
	ForgeWatch bool
	// Rollback rewinds the store's record and revision to an earlier
	// revision (a replica failover, an AOF rollback).
	Rollback bool
	// Restore restores a stale backup: revision 1, holder cleared.
	Restore bool
	// ReuseRevisions makes half of the rollbacks and restores drawn take
	// the store's revision counter back with its data (Fault.Reuse), as
	// an etcd snapshot restore without --bump-revision does under
	// etcdstore and kubestore (their revisions are etcd's): the writes
	// after it are given again the revisions the lost history had, with
	// other records, so that a swap expecting a revision the store forgot
	// may succeed against a record its sender never saw. Off in
	// AdversaryFaults, so that their sweeps' seeds keep their schedules.
	ReuseRevisions bool
	// CorruptAsValid makes the store and the node driver hand records that
	// fail store.ValidateStored to the machine as valid observations, so
	// that the machine itself must defend against them. Otherwise the
	// simulation does what a validating store and lead do: a read or a
	// swap of such a record fails with ErrCorruptRecord (nothing written)
	// and the machine gets the answer with Event.Corrupt; a watch event
	// carrying it is a corrupt hint.
	CorruptAsValid bool
	// Targeted aims faults at the leader when events trigger them: a
	// reconfiguration while a renewal is in flight followed by a cut, and a
	// follower's operation held in flight before the leader goes silent.
	Targeted bool
	// Jitter delays single messages, each drawn on its own.
	Jitter bool
	// Extreme draws reconfigurations over the whole valid range of
	// lease.Config, keeping the initial LeaseDuration (advschedule.go).
	Extreme bool
}

// DefaultFaults returns the faults every deployment meets, the set the
// tenure CLI runs when no fault is named: Drift (within the bound), Crash,
// Pause, Partition, Loss, Slow and Release. It leaves out WatchChaos
// (outside the store contract), DataLoss (needs a store that may lose
// records), Reconfigure (live changes of timings are opt-in) and
// DriftBeyond (it breaks the assumption that safety rests on).
func DefaultFaults() Faults {
	return Faults{Drift: true, Crash: true, Pause: true, Partition: true, Loss: true, Slow: true, Release: true}
}

// AllFaults returns every fault switched on, except DriftBeyond and
// ClockStopHidden. DataLoss needs StoreModel.MayLoseRecords.
func AllFaults() Faults {
	return Faults{Drift: true, Crash: true, Pause: true, Partition: true, Loss: true,
		Slow: true, WatchChaos: true, DataLoss: true, Release: true, Reconfigure: true, MuteWatch: true, ClockStop: true}
}

// fields lists every fault's name and field, in the order String writes
// them.
func (f *Faults) fields() []struct {
	name string
	on   *bool
} {
	return []struct {
		name string
		on   *bool
	}{
		{"drift", &f.Drift}, {"drift-beyond", &f.DriftBeyond}, {"crash", &f.Crash},
		{"pause", &f.Pause}, {"partition", &f.Partition}, {"loss", &f.Loss},
		{"slow", &f.Slow}, {"watch-chaos", &f.WatchChaos}, {"dataloss", &f.DataLoss},
		{"dataswap", &f.DataSwap}, {"resend", &f.Resend},
		{"release", &f.Release}, {"reconfigure", &f.Reconfigure}, {"mute-watch", &f.MuteWatch},
		{"clock-stop", &f.ClockStop}, {"clock-stop-hidden", &f.ClockStopHidden},
		{"resign", &f.Resign}, {"handover", &f.HandOver},
	}
}

// FaultNames returns the name of every fault, as ParseFaults and the
// tenure CLI's flags spell them.
func FaultNames() []string {
	var f Faults
	var out []string
	for _, x := range f.fields() {
		out = append(out, x.name)
	}
	return out
}

// String returns the names of the faults switched on, separated by
// commas ("calm" when none), as ParseFaults reads them.
func (f Faults) String() string {
	var on []string
	for _, x := range f.fields() {
		if *x.on {
			on = append(on, x.name)
		}
	}
	if len(on) == 0 {
		return "calm"
	}
	return strings.Join(on, ",")
}

// ParseFaults reads a comma-separated list of fault names (see
// FaultNames), or "calm" for none, "default" for DefaultFaults and "all"
// for AllFaults; they may be combined ("default,reconfigure"). An unknown
// name is an error wrapping ErrUnknownFault.
func ParseFaults(s string) (Faults, error) {
	var f Faults
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		switch name {
		case "", "calm", "none":
			continue
		case "default":
			f = f.union(DefaultFaults())
			continue
		case "all":
			f = f.union(AllFaults())
			continue
		}
		found := false
		for _, x := range f.fields() {
			if x.name == name {
				*x.on, found = true, true
			}
		}
		if !found {
			return Faults{}, fmt.Errorf("%w %q (known: %s)", ErrUnknownFault, name, strings.Join(FaultNames(), ", "))
		}
	}
	return f, nil
}

func (f Faults) union(g Faults) Faults {
	gf := g.fields()
	for i, x := range f.fields() {
		*x.on = *x.on || *gf[i].on
	}
	return f
}

// Latency is the distribution of one-way network latency between a node
// and the store in calm times: uniform in [Min, Max], except that with
// probability Tail a message takes uniform in [Max, TailMax] instead (a
// long tail). A zero Latency means Min 1ms, Max 20ms and no tail.
type Latency struct {
	// Min and Max bound the common case.
	Min, Max time.Duration
	// Tail is the probability, in [0, 1], of a message in the tail.
	Tail float64
	// TailMax bounds the tail (at least Max when Tail > 0).
	TailMax time.Duration
}

// Bound is the longest one-way latency the distribution draws.
func (l Latency) Bound() time.Duration {
	if l.Tail > 0 {
		return max(l.Max, l.TailMax)
	}
	return l.Max
}

func (l *Latency) setDefaults() {
	if *l == (Latency{}) {
		l.Min, l.Max = time.Millisecond, 20*time.Millisecond
	}
}

func (l Latency) validate() error {
	switch {
	case l.Min < 0 || l.Max < l.Min:
		return fmt.Errorf("%w: Latency needs 0 <= Min <= Max (Min %v, Max %v)", ErrInvalidOptions, l.Min, l.Max)
	case l.Tail < 0 || l.Tail > 1 || l.Tail != l.Tail:
		return fmt.Errorf("%w: Latency.Tail is %v, must be in [0, 1]", ErrInvalidOptions, l.Tail)
	case l.Tail > 0 && l.TailMax < l.Max:
		return fmt.Errorf("%w: Latency.TailMax (%v) must be at least Max (%v)", ErrInvalidOptions, l.TailMax, l.Max)
	case l.Bound() > time.Hour:
		return fmt.Errorf("%w: Latency bound %v is above an hour", ErrInvalidOptions, l.Bound())
	}
	return nil
}

// StoreModel is the nature of the simulated store in model mode.
type StoreModel struct {
	// MayLoseRecords says the store may lose a record (Redis without
	// persistence): the nodes run as lead runs them on a store that
	// implements store.Lossy and says so. Faults.DataLoss needs it.
	MayLoseRecords bool
	// NoWatch says the store pushes no watch events: nodes only poll.
	NoWatch bool
	// AuthenticWatch says that only the store produces watch events
	// (kubestore, etcdstore: store.WatchCapabilities.Authentic): the nodes
	// run with fsm.Options.AuthenticWatch, and a follower takes a release
	// shown by an event over without reading it first. Events still come
	// late, twice, out of order (Faults.WatchChaos) or not at all (lost
	// messages, partitions, Faults.MuteWatch), so a stale release may
	// arrive after someone else acquired; what nobody can do is make one
	// up, so Faults.ForgeWatch (and a FaultForgeWatch in the schedule) is
	// an error with it, as is NoWatch.
	AuthenticWatch bool
	// trustForged, for the package's tests only, is the broken variant of
	// AuthenticWatch: the nodes take events as authentic while the
	// adversary forges them (Faults.ForgeWatch is allowed), and a forged
	// event shows the stored record released at its current revision. It
	// must make two leaders (TestSimAuthenticWatchTrustingForgedEvents).
	trustForged bool
	// Stamped says that the store keeps with each record a stamp nobody
	// can tell before the write (store.Stamped: a random value the writer
	// draws for each write), and shows it with reads and watch events. A
	// follower whose read shows the revision and stamp a renewal event
	// carried counts its wait from that event's receipt. Forged events
	// (Faults.ForgeWatch) carry the stored record's stamp at the
	// revision they predict, never the stamp of a write yet to come.
	Stamped bool
	// predictableStamp, for the package's tests only, is the broken
	// variant of Stamped: a write's stamp is its revision, which a forger
	// can tell in advance (TestSimForgedRenewalPredictableStamp).
	predictableStamp bool
	// GuardedRelease says that the store guards swaps from a release
	// (store.ReleaseGuard: pgstore, memstore): the nodes run with
	// fsm.Options.GuardedRelease, and a follower takes over a release a
	// watch event shows with a swap that writes only over that released
	// record at that revision, instead of reading first. Forged events
	// (Faults.ForgeWatch, FaultForgeWatch with Released) must then never
	// make it overwrite a live lease.
	GuardedRelease bool
	// guardIgnored, for the package's tests only, is the broken variant
	// of GuardedRelease: the nodes send guarded swaps and the store
	// ignores the guard. Forged releases must make two leaders
	// (TestSimGuardedReleaseIgnored).
	guardIgnored bool
	// CreateGate models redisstore's create gate (docs/design.md, "A faster
	// first leader"): a store that may lose records (MayLoseRecords is
	// needed) but tells a brand-new name from a lost record with a
	// dataset-level marker. The marker has a nonce, made anew with every
	// data loss (the marker is lost with the data), and carries the
	// server's identity it was made under, which every restart, failover
	// and dataset swap (FaultDataSwap) changes; a create under another
	// identity makes the marker anew. Every swap carries the nonce its
	// node last saw in a swap's reply and how long ago, by the node's own
	// clock, it first saw it; and the store keeps the longest such age
	// attested for the current nonce. A create is
	// vouched for (fsm.Event.Vouched, store.CreateVoucher) when that age is at
	// least the created record's LeaseDuration: its creator leads at once.
	// Any other create is a claim, as on any store that may lose records.
	// Other names on the same server attest the marker at worst from its
	// birth, with the fastest clock the drift allows.
	CreateGate bool
	// Latency is the one-way latency of every message.
	Latency Latency
}

// Options configure a model-mode simulation (New, RunSeed, Check).
type Options struct {
	// Seed draws everything random: latencies, clock rates, faults. Check
	// ignores it and runs the seeds of Seeds.
	Seed uint64
	// Nodes is the number of nodes (default 5, at most 64).
	Nodes int
	// Duration is the simulated real time (default 10 minutes).
	Duration time.Duration
	// Config holds the timings every node starts with (default
	// lease.DefaultConfig()). To simulate the timings a deployment reads
	// from its environment, pass the Config of lease.Load(name,
	// lease.DefaultConfig(), os.LookupEnv), as lead.New does.
	Config lease.Config
	// Store is the store's nature: whether it may lose records, whether it
	// pushes watch events, its latency.
	Store StoreModel
	// Faults says which faults the random schedule draws (zero: none).
	Faults Faults
	// Rho is the clock drift bound of Faults.Drift (default 0.05). It must
	// stay within (L−R)/(L+R) of every config used.
	Rho float64
	// BeyondRho is the drift of Faults.DriftBeyond (default 0.4).
	BeyondRho float64
	// Schedule, if not nil, replaces the random fault schedule (an empty,
	// non-nil Schedule means no fault at all). Faults still sets the clock
	// drift and watch chaos.
	Schedule []Fault
	// Trace, if not nil, receives one line per simulated event.
	Trace io.Writer
	// Record keeps the timeline that WriteTimeline and WriteSVG render.
	Record bool
	// MaxEvents stops a run that processes more events (a livelock); zero
	// means 50 million.
	MaxEvents uint64

	// Seeds, for Check only: the seeds to run, as ParseSeeds reads them
	// ("1-2000", "7,42,100-110"). Empty: seeds 1, 2, 3, ... for as long as
	// Budget lasts. The environment variable TENURE_SIM_SEEDS overrides it.
	Seeds string
	// Budget, for Check only: when Seeds is empty, how long to keep
	// starting new seeds (default 5s of wall-clock time; TENURE_SIM_BUDGET
	// overrides it).
	Budget time.Duration
	// SVGDir, for Check only: a directory where the SVG timeline of every
	// failing seed is written as seed-N.svg (TENURE_SIM_SVG overrides it).
	SVGDir string

	// The flawed or hidden variants of StoreModel.CreateGate, for the
	// package's tests only (creategate_test.go).
	//
	// lossKeepsMarker makes a data loss keep the marker: a rollback the
	// marker's identity failed to reveal (a restart from a persisted file
	// on a server that kept its replication ID, say).
	lossKeepsMarker bool
	// handDelete makes a data loss a DEL of the record's key by hand: the
	// marker and the name's born key stay.
	handDelete bool
	// gateQuarter makes the gate let a create through once the marker has
	// stood a quarter of the record's LeaseDuration.
	gateQuarter bool
	// vouchLost drops the store's vouch on its way to the machine, as a
	// wrapper that does not pass the context on would: every create is a
	// claim again.
	vouchLost bool
	// markerAged starts the store with a marker attested long ago: a
	// healthy dataset on which a brand-new name is created.
	markerAged bool
	// swapKeepsIdentity leaves the server's identity as it was across a
	// dataset swap (FaultDataSwap): an identity of run_id and
	// master_replid alone, which SWAPDB, COPY, MOVE, RENAME, RESTORE and
	// DEBUG RELOAD leave as they were.
	swapKeepsIdentity bool
	// nonceFromOp gives a marker made anew by a resent call
	// (FaultResend) the nonce of that call, which the call's first attempt
	// gave the lost marker: a marker nonce taken from the op nonce.
	nonceFromOp bool

	// noClockFloor, for the package's tests only, is the broken variant of
	// the store's token floor: new terms' tokens rest on the stored data's
	// floor alone, which a rollback or restore takes back, so a term after
	// a restore can reuse the token of a term the restore lost
	// (TestSimRestoreReusesTokensWithoutClockFloor).
	noClockFloor bool

	// hideReports, for the package's tests only, keeps every Report
	// action of the machines from the simulator's checks, as a machine
	// that reports nothing would: the one-leader and token verdicts must
	// not change (TestSimJudgeIgnoresReports).
	hideReports bool
}

// withDefaults returns o with its zero fields set to their defaults.
func (o Options) withDefaults() Options {
	if o.Nodes == 0 {
		o.Nodes = 5
	}
	if o.Duration == 0 {
		o.Duration = 10 * time.Minute
	}
	if o.Config == (lease.Config{}) {
		o.Config = lease.DefaultConfig()
	}
	if o.Rho == 0 {
		o.Rho = 0.05
	}
	if o.BeyondRho == 0 {
		o.BeyondRho = 0.4
	}
	o.Store.Latency.setDefaults()
	if o.MaxEvents == 0 {
		o.MaxEvents = 50_000_000
	}
	return o
}

// validate checks options that have their defaults.
func (o *Options) validate() error {
	switch {
	case o.Nodes < 1 || o.Nodes > 64:
		return fmt.Errorf("%w: Nodes is %d, must be in [1, 64]", ErrInvalidOptions, o.Nodes)
	case o.Duration < 0:
		return fmt.Errorf("%w: Duration is negative", ErrInvalidOptions)
	case o.Rho < 0 || o.Rho >= 1 || o.BeyondRho < 0 || o.BeyondRho >= 1 || o.Rho != o.Rho || o.BeyondRho != o.BeyondRho:
		return fmt.Errorf("%w: Rho and BeyondRho must be in [0, 1)", ErrInvalidOptions)
	case o.Faults.Drift && o.Faults.DriftBeyond:
		return fmt.Errorf("%w: Faults.Drift and Faults.DriftBeyond exclude each other", ErrInvalidOptions)
	case o.Store.CreateGate && !o.Store.MayLoseRecords:
		return fmt.Errorf("%w: Store.CreateGate models a store that may lose records (Store.MayLoseRecords)", ErrInvalidOptions)
	case o.Faults.DataLoss && !o.Store.MayLoseRecords:
		return fmt.Errorf("%w: Faults.DataLoss needs a store that may lose records (Store.MayLoseRecords)", ErrInvalidOptions)
	case o.Faults.DataSwap && !o.Store.MayLoseRecords:
		return fmt.Errorf("%w: Faults.DataSwap needs a store that may lose records (Store.MayLoseRecords)", ErrInvalidOptions)
	case o.Faults.Resend && !o.Store.CreateGate:
		return fmt.Errorf("%w: Faults.Resend needs a store with the create gate (Store.CreateGate)", ErrInvalidOptions)
	case o.Store.AuthenticWatch && o.Store.NoWatch:
		return fmt.Errorf("%w: Store.AuthenticWatch needs a store that watches (Store.NoWatch is set)", ErrInvalidOptions)
	case o.Store.AuthenticWatch && o.Faults.ForgeWatch && !o.Store.trustForged:
		return fmt.Errorf("%w: Faults.ForgeWatch forges watch events, which nobody can do on a store with Store.AuthenticWatch", ErrInvalidOptions)
	case o.Store.trustForged && !o.Store.AuthenticWatch:
		return fmt.Errorf("%w: Store.trustForged is a variant of Store.AuthenticWatch", ErrInvalidOptions)
	}
	if err := o.Store.Latency.validate(); err != nil {
		return err
	}
	if err := o.Config.Validate(); err != nil {
		return fmt.Errorf("%w: Config: %w", ErrInvalidOptions, err)
	}
	if o.Faults.Drift {
		if lim := Tolerance(o.Config); o.Rho > lim {
			return fmt.Errorf("%w: Rho %v exceeds the config's tolerance (L−R)/(L+R) = %.3f; use Faults.DriftBeyond to go past it", ErrInvalidOptions, o.Rho, lim)
		}
	}
	for i, f := range o.Schedule {
		if err := f.validate(o.Nodes); err != nil {
			return fmt.Errorf("schedule entry %d: %w", i, err)
		}
		if (f.Kind == FaultDataLoss || f.Kind == FaultDataSwap) && !o.Store.MayLoseRecords {
			return fmt.Errorf("%w: Schedule[%d] loses data, which needs Store.MayLoseRecords", ErrInvalidOptions, i)
		}
		if f.Kind == FaultResend && !o.Store.CreateGate {
			return fmt.Errorf("%w: Schedule[%d] resends a call that made the marker, which needs Store.CreateGate", ErrInvalidOptions, i)
		}
		if f.Kind == FaultForgeWatch && o.Store.AuthenticWatch && !o.Store.trustForged {
			return fmt.Errorf("%w: Schedule[%d] forges a watch event, which nobody can do on a store with Store.AuthenticWatch", ErrInvalidOptions, i)
		}
	}
	return nil
}

// Tolerance is the largest clock drift the config's timings absorb:
// (L−R)/(L+R) for LeaseDuration L and RenewDeadline R.
func Tolerance(c lease.Config) float64 {
	l, r := float64(c.LeaseDuration), float64(c.RenewDeadline)
	return (l - r) / (l + r)
}
