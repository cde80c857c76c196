package lead

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/fsm"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

// Errors returned by this package.
var (
	// ErrNilArgument: a nil (or zero) argument was passed where a usable one
	// is needed: a nil context, function or option, a nil *Elector, an
	// Elector not made by New. The error names the argument.
	ErrNilArgument = errors.New("lead: nil argument")
	// ErrNilStore: New was given a nil store, a typed nil (a nil
	// *memstore.Store, say), a wrapper whose embedded store is nil, or a
	// zero store that its Validate method refuses (see store.Validate). It
	// wraps ErrNilArgument.
	ErrNilStore = fmt.Errorf("%w: store is nil", ErrNilArgument)
	// ErrInvalidIdentity: the identity breaks the rules of holder names,
	// or WithIdentity was given an empty one.
	ErrInvalidIdentity = errors.New("lead: invalid identity")
	// ErrInvalidOption: an option's value breaks its rule (WithMaxStoreOps
	// below 1, say). The error names the option and the rule.
	ErrInvalidOption = errors.New("lead: invalid option")
	// ErrAlreadyRunning: Run was called while another Run of the same
	// Elector is running, or after one returned.
	ErrAlreadyRunning = errors.New("lead: elector already ran")
	// ErrStopped: the elector's Run has returned, so it will not lead again.
	ErrStopped = errors.New("lead: elector stopped")
	// ErrLeadershipLost: the term ended before the work did.
	ErrLeadershipLost = errors.New("lead: leadership lost")
	// ErrNotLeader: this elector does not lead now (see Gate).
	ErrNotLeader = errors.New("lead: not the leader")
	// ErrRevisionRollback: the store showed a revision older than one this
	// elector had accepted, or no record after one (a restore from a
	// backup, a failover to a replica that lagged, a hand edit). The
	// elector stepped down if it led, and starts no term until it has
	// waited out a full lease of what it last saw; Err reports it until
	// then.
	ErrRevisionRollback = errors.New("lead: store revision went back")
	// ErrLongWait: the store showed a lease longer than this elector's
	// LeaseDuration (written by an elector configured with a longer one,
	// or by hand), and the elector waits it out in full before it may
	// take the election over; Err reports it until then, with the wait
	// and how to end it sooner.
	ErrLongWait = errors.New("lead: waiting out a longer lease")
	// ErrBodiesStillRunning: a term ended and some of its bodies (the fn
	// of Lead or Every) were still running at the term's deadline, the
	// last renewal sent plus RenewDeadline. The lease was not released
	// (a successor leads once it expires in the store, after
	// LeaseDuration) and Run, or Resign, returned without waiting
	// further. The error says how many bodies were still running.
	ErrBodiesStillRunning = errors.New("lead: bodies of the ended term still running")
	// ErrHandOverFailed: HandOver ended this elector's term, but the
	// successor it named did not take the lease over in time (or could
	// not be handed it). The error says what happened to the lease: given
	// back to every candidate with a plain release, taken by another, or
	// left to expire.
	ErrHandOverFailed = errors.New("lead: handover failed")
)

// Term is one period of leadership.
type Term struct {
	// Name is the election's name.
	Name string
	// Identity is this elector's identity.
	Identity string
	// Token is the term's fencing token: larger than the token of every
	// earlier term of this election.
	Token fence.Token
	// Start is when the request that won the term was sent (wall clock).
	Start time.Time
}

// ChangeKind says whether a term started or stopped.
type ChangeKind uint8

// The kinds of Change.
const (
	Started ChangeKind = iota + 1
	Stopped
)

func (k ChangeKind) String() string {
	if k == Started {
		return "started"
	}
	return "stopped"
}

// Change reports a leadership change of this elector.
type Change struct {
	Kind ChangeKind
	Term Term
	// Reason says why the term stopped: it wraps ErrLeadershipLost.
	Reason error
}

// Elector takes part in one election. Create it with New, drive it with Run.
// Its methods are safe for concurrent use. The zero Elector, like a nil
// *Elector, cannot take part in anything: the methods that return an error
// return one wrapping ErrNilArgument, and the others report that it does
// not lead.
type Elector[M any] struct {
	name          string
	id            string
	priority      uint64 // WithPriority; 0: off
	st            store.Store[M]
	clock         Clock
	stops         stopCounter // the clock, if it counts its stops; nil if not
	rand          fsm.Rand
	stamps        io.Reader // draws each write's Stamp (crypto/rand: nobody may tell it in advance)
	log           *slog.Logger
	releaseOnStop bool
	observers     []func(Change)
	lossy         bool
	authentic     bool // the store's watch events are authentic (store.WatchCapabilities)
	guarded       bool // the store guards swaps from a release (store.ReleaseGuard)
	immediate     bool // the store's operations never wait (store.Immediate): run on the loop
	instruments   Instruments
	tracer        Tracer          // nil: none
	environ       func() []string // lists the environment for logCapabilities; nil: none

	ready   chan struct{}
	stopped chan struct{}

	mu      sync.Mutex
	rerun   error      // what Run returns at once: set when Run starts, or by Group.Add
	run     *runner[M] // while running; Reconfigure posts to it
	cfg     lease.Config
	meta    M
	rec     lease.Record[M]
	rev     lease.Revision
	haveRec bool
	term    *activeTerm   // nil unless leading
	changed chan struct{} // closed at the next change; nil until changes asks
	// epoch is the clock's time at which the elector's time (sinceEpoch)
	// is zero: when Run started, moved back by every stop of the clock
	// counted since (countStopsLocked). seenStops is the clock's sum of
	// stops when the elector last looked.
	epoch     time.Time
	seenStops time.Duration
	unlogged  time.Duration // stops counted that Run's loop has not logged yet
	lastErr   error
	readyNow  bool
	state     fsm.State
	// runDone is closed when the elector stops leading for good: Done of
	// Run's ctx (endRun closes it for an elector of a Group); nil before.
	runDone <-chan struct{}
	// Conditions that keep this elector from leading while the store
	// answers fine (see errLocked).
	rollbackErr  error           // the last rollback seen, wrapping ErrRevisionRollback
	holdUntil    time.Duration   // rollbackErr stands until then (monotonic since epoch)
	longWaitErr  error           // the last long wait reported, wrapping ErrLongWait
	longUntil    time.Duration   // longWaitErr stands until then (monotonic since epoch)
	exhaustedErr error           // wraps store.ErrTokenExhausted once tokens ran out
	leaders      leaderFeed[M]   // see Leaders
	resignReq    *resignation[M] // a Resign (or HandOver) the loop has not taken yet
	// releaseEarly: releases do not wait for the bodies of the ended term
	// (the unsafe variant, for tests only).
	releaseEarly bool
	// metadataFromReadsOnly: MetadataChanges learns nothing from watch
	// events (metafeed.go), only from what the elector accepts (the
	// variant without it, for tests only).
	metadataFromReadsOnly bool
	// The claim last reported (fsm.ProblemClaim): its token, and when it
	// will have stood for its wait (monotonic since epoch). See Status.
	claimToken uint64
	claimUntil time.Duration
}

// New returns an Elector for the election name, keeping its record in st.
// It validates everything and returns an error instead of panicking: a nil
// store (also a typed nil, a wrapper around a nil store, or a store whose
// Validate method fails: see store.Validate), a nil option, a bad name, a
// bad identity, an invalid Config or an environment variable that cannot be
// parsed.
//
// The elector learns from st whether records can vanish (store.Lossy) and
// whether it can watch (store.Watcher). What st does not say, because it
// does not implement the interface or wraps a store that does and hides it,
// is taken in the conservative sense: st may lose records (the first leader
// of a name then waits a LeaseDuration) and cannot watch (followers poll).
// New logs that once, with what to do (forward the interface with
// store.MayLoseRecords and store.Watch), and logs at debug level what it
// found. It also logs a Warn for each TENURE_ variable of the environment
// that no part of Tenure reads, a misspelt one say (see WithEnviron).
func New[M any](name string, st store.Store[M], opts ...Option) (*Elector[M], error) {
	e, err := newElector(name, st, opts)
	if err != nil {
		return nil, err
	}
	e.logCapabilities()
	return e, nil
}

// newElector is New without the logs about the store's capabilities.
func newElector[M any](name string, st store.Store[M], opts []Option) (*Elector[M], error) {
	o := options{lookup: os.LookupEnv, releaseOnStop: true, hostname: os.Hostname}
	for i, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("%w: New: option %d of %d is nil", ErrNilArgument, i+1, len(opts))
		}
		opt(&o)
	}
	if err := errors.Join(o.errs...); err != nil {
		return nil, err
	}
	if st == nil {
		return nil, ErrNilStore
	}
	if err := store.Validate(st); err != nil {
		if errors.Is(err, store.ErrNilArgument) {
			return nil, fmt.Errorf("%w: %w", ErrNilStore, err)
		}
		return nil, fmt.Errorf("lead: New: the store is not usable: %w", err)
	}
	if err := store.ValidateName(name); err != nil {
		return nil, fmt.Errorf("lead: election name: %w", err)
	}
	// With WithConfig the timing variables are not read at all (one that
	// cannot be parsed does not fail New); the identity variables are.
	var env lease.Settings
	if o.config != nil {
		env = lease.Settings{Config: *o.config, Identity: lease.LoadIdentity(name, o.lookup)}
	} else {
		var err error
		if env, err = lease.Load(name, lease.DefaultConfig(), o.lookup); err != nil {
			return nil, err
		}
	}
	cfg := env.Config
	if err := env.Validate(); err != nil { // names the variables that set a field
		return nil, err
	}
	if o.rand == nil {
		var seed [16]byte
		_, _ = crand.Read(seed[:])
		o.rand = rand.New(rand.NewPCG(binary.LittleEndian.Uint64(seed[:8]), binary.LittleEndian.Uint64(seed[8:])))
	}
	id, idFrom := o.identity, "WithIdentity"
	if id == "" {
		id, idFrom = env.Identity, identityVariable(name, o.lookup)
	}
	if id == "" {
		host, err := o.hostname()
		if err != nil || host == "" {
			host = "tenure"
		}
		id, idFrom = fmt.Sprintf("%s-%08x", host, uint32(o.rand.Float64()*(1<<32))), "the hostname plus a random suffix"
	}
	// Errors name where the identity came from and what it was.
	shown := id
	if len(shown) > 2*store.MaxHolderBytes {
		shown = shown[:2*store.MaxHolderBytes] + "..."
	}
	if len(id) > store.MaxHolderBytes {
		return nil, fmt.Errorf("%w: %q (from %s) is %d bytes, the limit is %d", ErrInvalidIdentity, shown, idFrom, len(id), store.MaxHolderBytes)
	}
	if err := store.ValidateName(id); err != nil {
		return nil, fmt.Errorf("%w: %q (from %s): %w", ErrInvalidIdentity, shown, idFrom, err)
	}
	environ := o.environ
	if !o.environSet && !o.lookupSet {
		environ = os.Environ
	}
	if o.clock == nil {
		o.clock = newSystemClock()
	}
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	// Capabilities are for speed, never for safety: what the store does not
	// say (a wrapper that hides it, say) is taken in the conservative sense.
	lossy := store.MayLoseRecords(st)
	e := &Elector[M]{
		name:          name,
		id:            id,
		st:            st,
		clock:         o.clock,
		stops:         stopsOf(o.clock),
		rand:          o.rand,
		stamps:        crand.Reader,
		log:           o.logger.With("name", name, "identity", id),
		releaseOnStop: o.releaseOnStop,
		priority:      o.priority,
		observers:     o.observers,
		lossy:         lossy,
		authentic:     store.WatchCapabilitiesOf(st).Authentic,
		guarded:       store.ReleaseGuardOf(st) != nil,
		immediate:     store.AnswersImmediately(st),
		instruments:   o.instruments,
		tracer:        o.tracer,
		environ:       environ,
		ready:         make(chan struct{}),
		stopped:       make(chan struct{}),
		cfg:           cfg,
	}
	return e, nil
}

// identityVariable names the variable that lease.LoadIdentity takes the
// identity of the election name from: the per-name one if it is set to
// something other than spaces, else the shared one.
func identityVariable(name string, lookup lease.LookupFunc) string {
	key := lease.EnvPrefix(name) + lease.EnvIdentity
	if lookup != nil {
		if v, ok := lookup(key); ok && strings.TrimSpace(v) != "" {
			return key
		}
	}
	return "TENURE_" + lease.EnvIdentity
}

// logCapabilities logs the TENURE_ variables that no part of Tenure reads,
// what the elector learnt from its store, and what it assumes because the
// store does not say (see New).
func (e *Elector[M]) logCapabilities() {
	st, cfg := e.st, e.cfg
	var unknownEnv []string
	if e.environ != nil {
		unknownEnv = lease.UnknownEnv(e.environ())
	}
	for _, key := range unknownEnv {
		attrs := []any{"variable", key, "env_prefix", lease.EnvPrefix(e.name)}
		if s := lease.SuggestEnv(key); s != "" {
			attrs = append(attrs, "did_you_mean", s)
		}
		e.log.Warn("the environment sets a TENURE_ variable that Tenure does not read: misspelt? "+
			"The timing and identity variables are TENURE_<SUFFIX> and TENURE_<NAME>_<SUFFIX>, SUFFIX one of "+
			strings.Join([]string{lease.EnvLeaseDuration, lease.EnvRenewDeadline, lease.EnvRetryInterval, lease.EnvRetryJitter, lease.EnvBackendTimeout, lease.EnvErrorInterval, lease.EnvIdentity}, ", "),
			attrs...)
	}
	_, saysLossy := st.(store.Lossy)
	_, watches := st.(store.Watcher[M])
	e.log.Debug("store capabilities", "store", fmt.Sprintf("%T", st), "may_lose_records", e.lossy, "says_lossy", saysLossy, "watch", watches, "authentic_watch", e.authentic, "release_guard", e.guarded)
	if !saysLossy {
		e.log.Warn("the store does not say whether it may lose records (store.Lossy), so the elector assumes it may: "+
			"the first leader of a name, and the first after the record vanishes, waits one LeaseDuration. "+
			"If the store wraps another, forward MayLoseRecords with store.MayLoseRecords",
			"store", fmt.Sprintf("%T", st), "lease_duration", cfg.LeaseDuration)
	}
	if _, half := st.(interface {
		Watch(context.Context, string) (<-chan store.Event[M], error)
	}); half && !watches {
		e.log.Warn("the store has a Watch method but not WatchCapabilities, so it is no store.Watcher and followers poll. "+
			"If the store wraps one that watches, forward WatchCapabilities with store.WatchCapabilitiesOf (or return the zero value if it alters events)",
			"store", fmt.Sprintf("%T", st))
	} else if !watches {
		e.log.Info("the store cannot watch (store.Watcher), so followers poll: a handover after a release takes up to one RetryInterval. "+
			"If the store wraps one that watches, forward Watch with store.Watch",
			"store", fmt.Sprintf("%T", st), "retry_interval", cfg.RetryInterval)
	}
}

// Name returns the election's name.
func (e *Elector[M]) Name() string {
	if e == nil {
		return ""
	}
	return e.name
}

// Identity returns this elector's identity.
func (e *Elector[M]) Identity() string {
	if e == nil {
		return ""
	}
	return e.id
}

// Config returns the timings in force (the zero Config for a nil Elector).
func (e *Elector[M]) Config() lease.Config {
	if e == nil {
		return lease.Config{}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cfg
}

// Ready is closed once Run has finished its first round trip with the store,
// whatever its outcome. For a nil Elector, or one not made by New, it is
// closed already (Run returns at once).
func (e *Elector[M]) Ready() <-chan struct{} {
	if e.usable("Ready") != nil {
		return closed()
	}
	return e.ready
}

// Done is closed when Run has returned. For a nil Elector, or one not made
// by New, it is closed already (Run returns at once).
func (e *Elector[M]) Done() <-chan struct{} {
	if e.usable("Done") != nil {
		return closed()
	}
	return e.stopped
}

// IsLeader reports whether this elector leads now: it is in a term, its
// renew deadline has not passed, Run's context has not ended and Resign
// has not been called in the term (it turns false the moment either
// happens, without waiting for Run to step down). It is advisory: use the fencing token to make writes safe.
func (e *Elector[M]) IsLeader() bool {
	_, ok := e.Term()
	return ok
}

// Term returns the current term, if this elector leads now.
func (e *Elector[M]) Term() (Term, bool) {
	if e == nil {
		return Term{}, false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	t := e.leadingLocked()
	if t == nil {
		return Term{}, false
	}
	return t.term, true
}

// leadingLocked returns the open term if this elector leads now: the term's
// deadline has not passed, Run's ctx has not ended (runDone) and Resign
// did not end it (whether or not Run's loop has seen it yet). e.mu must be
// held.
func (e *Elector[M]) leadingLocked() *activeTerm {
	t := e.term
	if t == nil || t.resigned || e.sinceEpoch() >= t.until {
		return nil
	}
	select {
	case <-e.runDone: // a nil channel (before Run) never fires
		return nil
	default:
	}
	return t
}

// Status is a snapshot of an Elector, for health checks and dashboards.
type Status struct {
	// State is the state machine's state.
	State fsm.State
	// InTerm reports that the elector has an open term: it started leading
	// and has not yet processed the end of the term. It stays true past
	// Deadline only if the elector's loop is stuck.
	InTerm bool
	// Leading reports IsLeader: in a term, before Deadline, and Run's
	// context has not ended.
	Leading bool
	// Term is the open term (if InTerm).
	Term Term
	// LastRenewal is when the last successful renewal (or the acquisition)
	// of the open term was sent.
	LastRenewal time.Time
	// Deadline is when the open term's belief ends unless renewed.
	Deadline time.Time
	// Claim reports that the record in the store is this elector's claim:
	// a record it created in a store that may lose records (see
	// lease.Record's Claim). It does not lead on it; it takes it over, with
	// a new token, at ClaimEnds, unless another elector takes the lease
	// first.
	Claim bool
	// ClaimEnds is when the claim will have stood for its wait (if Claim).
	ClaimEnds time.Time
	// Err is what Elector.Err returns.
	Err error
}

// claimLocked returns the token of the claim the elector waits on (see
// Status.Claim), or 0 when it waits on none.
func (e *Elector[M]) claimLocked() uint64 {
	if e.term == nil && e.claimToken != 0 && e.haveRec && e.rec.Holder == e.id && e.rec.Token == e.claimToken {
		return e.claimToken
	}
	return 0
}

// Status returns a snapshot of the elector.
func (e *Elector[M]) Status() Status {
	if e == nil {
		return Status{}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	s := Status{State: e.state, Err: e.errLocked()}
	if t := e.term; t != nil {
		s.InTerm, s.Term = true, t.term
		s.Leading = e.leadingLocked() != nil
		s.LastRenewal, s.Deadline = e.epoch.Add(t.confirmed), e.epoch.Add(t.until)
	}
	if e.claimLocked() != 0 {
		s.Claim, s.ClaimEnds = true, e.epoch.Add(e.claimUntil)
	}
	return s
}

// ConfirmedWithin reports whether this elector leads and sent its last
// successful renewal (or the acquisition) no longer than d ago.
func (e *Elector[M]) ConfirmedWithin(d time.Duration) bool {
	if e == nil {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	t := e.leadingLocked()
	return t != nil && e.sinceEpoch()-t.confirmed <= d
}

// Record returns the last record this elector saw: who leads, since when,
// how many handovers, the leader's metadata. ok is false until a record has
// been seen, and while the store holds none. A record whose Claim is true
// is only a claim: its holder does not lead on it yet (see lease.Record).
func (e *Elector[M]) Record() (rec lease.Record[M], ok bool) {
	if e == nil {
		return rec, false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.rec, e.haveRec
}

// Err returns the last error met talking to the store, in a read, a write
// or a watch (an error wrapping store.ErrCorruptRecord when the store holds
// a record out of bounds or unreadable), until the store next answers a read
// or a write; or, when the last operation succeeded, what keeps this
// elector from starting a term: an error wrapping ErrRevisionRollback while
// it waits out a rollback of the store, one wrapping ErrLongWait while it
// waits out a lease longer than its own (and does not lead), or one wrapping
// store.ErrTokenExhausted once the largest token seen is lease.MaxToken.
// It returns nil otherwise. For a nil Elector, or one not made by New, it
// returns an error wrapping ErrNilArgument.
func (e *Elector[M]) Err() error {
	if err := e.usable("Err"); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.errLocked()
}

// errLocked is Err. e.mu must be held.
func (e *Elector[M]) errLocked() error {
	switch {
	case e.lastErr != nil:
		return e.lastErr
	case e.rollbackErr != nil && e.sinceEpoch() < e.holdUntil:
		return e.rollbackErr
	case e.longWaitErr != nil && e.term == nil && e.sinceEpoch() < e.longUntil:
		return e.longWaitErr
	}
	return e.exhaustedErr
}

// SetMetadata sets the metadata this elector writes when it acquires or
// renews the lease, from the next write on. It first asks the store whether
// it would take m (see store.CheckMetadata): if not, SetMetadata returns an
// error wrapping store.ErrEncode or store.ErrMetadataTooLarge and the
// metadata in force stays as it was, so a bad value never reaches a write.
//
// Every store of this module checks with its own codec. For a store that
// does not implement store.MetadataChecker (a wrapper that does not forward
// it, say), m is checked with store.JSONCodec and store.MaxMetadataBytes; if
// the store still refuses it at write time, Run steps down and returns that
// error (see Run).
func (e *Elector[M]) SetMetadata(m M) error {
	if err := e.usable("SetMetadata"); err != nil {
		return err
	}
	if err := store.CheckMetadata(e.st, m); err != nil {
		return fmt.Errorf("lead: SetMetadata: %w", err)
	}
	e.mu.Lock()
	e.meta = m
	e.mu.Unlock()
	return nil
}

// Reconfigure replaces the timings. The Config is validated first; it takes
// effect from the next step of the running elector. The identity never
// changes.
func (e *Elector[M]) Reconfigure(c lease.Config) error {
	if err := e.usable("Reconfigure"); err != nil {
		return err
	}
	if err := c.Validate(); err != nil {
		return err
	}
	e.mu.Lock()
	e.cfg = c
	r := e.run
	e.mu.Unlock()
	if r != nil {
		r.loop.post(r, msgReconf)
	}
	return nil
}

// changes returns a channel closed at the next change of state.
func (e *Elector[M]) changes() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.changed == nil {
		e.changed = make(chan struct{})
	}
	return e.changed
}

// notifyLocked wakes everyone waiting on changes. e.mu must be held.
func (e *Elector[M]) notifyLocked() {
	if e.changed != nil {
		// The next is made when asked for: most electors of a Group have
		// nobody waiting.
		close(e.changed)
		e.changed = nil
	}
	e.seeLeaderLocked(false)
}

// sinceEpoch is the time of the running elector: monotonic, since Run
// started, with the stops of its clock counted (countStopsLocked). e.mu
// must be held.
func (e *Elector[M]) sinceEpoch() time.Duration {
	return e.nowCountingStopsLocked().Sub(e.epoch)
}

// nowCountingStopsLocked counts the clock's stops (countStopsLocked) and
// returns the clock's time now, read no earlier than the stops counted:
// the default clock gives both from one reading, any other clock is read
// after. e.mu must be held.
func (e *Elector[M]) nowCountingStopsLocked() time.Time {
	if sc, ok := e.clock.(*systemClock); ok {
		now, total := sc.nowStopped()
		e.countStopsAtLocked(total)
		return now
	}
	e.countStopsLocked()
	return e.clock.Now()
}

// countStopsLocked counts, as elapsed time, the time the clock stood still
// since the elector last looked (a suspend, a paused VM: see
// systemClock), unless the machine is a Follower: it moves the epoch back
// by as much, so that every deadline (the term's, a swap's in flight) is
// judged on the time that really passed, and the term ends at once if its
// deadline is past; Run's loop is woken to tell the machine. A follower's
// waits (before it takes a lease over, a claim's) are only longer by an
// uncounted stop, which is safe; counted, a wall clock set forward with no
// stop would cut them short. e.mu must be held.
func (e *Elector[M]) countStopsLocked() {
	if e.stops == nil {
		return
	}
	e.countStopsAtLocked(e.stops.stoppedTotal())
}

// countStopsAtLocked is countStopsLocked, with total the clock's
// stoppedTotal, read now. e.mu must be held.
func (e *Elector[M]) countStopsAtLocked(total time.Duration) {
	gap := total - e.seenStops
	if gap <= 0 {
		return
	}
	e.seenStops = total
	if e.state == fsm.Follower {
		return
	}
	e.epoch = e.epoch.Add(-gap)
	e.unlogged += gap // logged by Run's loop, not under e.mu: a handler may block
	if r := e.run; r != nil {
		r.loop.post(r, msgWake)
	}
}

// stopsOf returns c as a stopCounter, or nil if it counts no stops.
func stopsOf(c Clock) stopCounter {
	s, _ := c.(stopCounter)
	return s
}

// currentTerm returns the term in progress and its context, if leading now.
func (e *Elector[M]) currentTerm() (Term, context.Context, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t := e.leadingLocked()
	if t == nil {
		return Term{}, nil, false
	}
	return t.term, t.ctx, true
}
