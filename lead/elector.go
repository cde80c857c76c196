package lead

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/fsm"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

// Errors returned by this package.
var (
	// ErrNilStore: New was given a nil store.
	ErrNilStore = errors.New("lead: store is nil")
	// ErrInvalidIdentity: the identity breaks the rules of holder names.
	ErrInvalidIdentity = errors.New("lead: invalid identity")
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
// Its methods are safe for concurrent use.
type Elector[M any] struct {
	name          string
	id            string
	st            store.Store[M]
	clock         Clock
	rand          fsm.Rand
	log           *slog.Logger
	releaseOnStop bool
	observers     []func(Change)
	lossy         bool
	instruments   Instruments

	ready   chan struct{}
	stopped chan struct{}
	reconf  chan struct{}

	mu       sync.Mutex
	ran      bool
	cfg      lease.Config
	meta     M
	rec      lease.Record[M]
	rev      lease.Revision
	haveRec  bool
	term     *activeTerm // nil unless leading
	changed  chan struct{}
	epoch    time.Time
	lastErr  error
	readyNow bool
	state    fsm.State
	// Conditions that keep this elector from leading while the store
	// answers fine (see errLocked).
	rollbackErr  error         // the last rollback seen, wrapping ErrRevisionRollback
	holdUntil    time.Duration // rollbackErr stands until then (monotonic since epoch)
	exhaustedErr error         // wraps store.ErrTokenExhausted once tokens ran out
}

// activeTerm is the term in progress, with the context that ends with it.
type activeTerm struct {
	term      Term
	ctx       context.Context
	cancel    context.CancelCauseFunc
	until     time.Duration // local belief deadline (monotonic since epoch)
	confirmed time.Duration // last successful renewal sent
	watchdog  Timer
}

// New returns an Elector for the election name, keeping its record in st.
// It validates everything and returns an error instead of panicking: a nil
// store, a bad name, a bad identity, an invalid Config or an environment
// variable that cannot be parsed.
func New[M any](name string, st store.Store[M], opts ...Option) (*Elector[M], error) {
	o := options{lookup: os.LookupEnv, releaseOnStop: true, hostname: os.Hostname}
	for _, opt := range opts {
		opt(&o)
	}
	if st == nil {
		return nil, ErrNilStore
	}
	if err := store.ValidateName(name); err != nil {
		return nil, fmt.Errorf("lead: election name: %w", err)
	}
	env, err := lease.Load(name, lease.DefaultConfig(), o.lookup)
	if err != nil {
		return nil, err
	}
	cfg := env.Config
	if o.config != nil {
		cfg = *o.config
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if o.rand == nil {
		var seed [16]byte
		_, _ = crand.Read(seed[:])
		o.rand = rand.New(rand.NewPCG(binary.LittleEndian.Uint64(seed[:8]), binary.LittleEndian.Uint64(seed[8:])))
	}
	id := o.identity
	if id == "" {
		id = env.Identity
	}
	if id == "" {
		host, err := o.hostname()
		if err != nil || host == "" {
			host = "tenure"
		}
		id = fmt.Sprintf("%s-%08x", host, uint32(o.rand.Float64()*(1<<32)))
	}
	if len(id) > store.MaxHolderBytes {
		return nil, fmt.Errorf("%w: %d bytes, the limit is %d", ErrInvalidIdentity, len(id), store.MaxHolderBytes)
	}
	if err := store.ValidateName(id); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidIdentity, err)
	}
	if o.clock == nil {
		o.clock = realClock{}
	}
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	lossy := false
	if l, ok := st.(store.Lossy); ok {
		lossy = l.MayLoseRecords()
	}
	e := &Elector[M]{
		name:          name,
		id:            id,
		st:            st,
		clock:         o.clock,
		rand:          o.rand,
		log:           o.logger.With("name", name, "identity", id),
		releaseOnStop: o.releaseOnStop,
		observers:     o.observers,
		lossy:         lossy,
		instruments:   o.instruments,
		ready:         make(chan struct{}),
		stopped:       make(chan struct{}),
		reconf:        make(chan struct{}, 1),
		cfg:           cfg,
		changed:       make(chan struct{}),
	}
	return e, nil
}

// Name returns the election's name.
func (e *Elector[M]) Name() string { return e.name }

// Identity returns this elector's identity.
func (e *Elector[M]) Identity() string { return e.id }

// Config returns the timings in force.
func (e *Elector[M]) Config() lease.Config {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cfg
}

// Ready is closed once Run has finished its first round trip with the store,
// whatever its outcome.
func (e *Elector[M]) Ready() <-chan struct{} { return e.ready }

// Done is closed when Run has returned.
func (e *Elector[M]) Done() <-chan struct{} { return e.stopped }

// IsLeader reports whether this elector leads now: it is in a term and its
// renew deadline has not passed. It is advisory: use the fencing token to
// make writes safe.
func (e *Elector[M]) IsLeader() bool {
	_, ok := e.Term()
	return ok
}

// Term returns the current term, if this elector leads now.
func (e *Elector[M]) Term() (Term, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.term == nil || e.sinceEpoch() >= e.term.until {
		return Term{}, false
	}
	return e.term.term, true
}

// Status is a snapshot of an Elector, for health checks and dashboards.
type Status struct {
	// State is the state machine's state.
	State fsm.State
	// InTerm reports that the elector has an open term: it started leading
	// and has not yet processed the end of the term. It stays true past
	// Deadline only if the elector's loop is stuck.
	InTerm bool
	// Leading reports IsLeader: in a term, and before Deadline.
	Leading bool
	// Term is the open term (if InTerm).
	Term Term
	// LastRenewal is when the last successful renewal (or the acquisition)
	// of the open term was sent.
	LastRenewal time.Time
	// Deadline is when the open term's belief ends unless renewed.
	Deadline time.Time
	// Err is what Elector.Err returns.
	Err error
}

// Status returns a snapshot of the elector.
func (e *Elector[M]) Status() Status {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := Status{State: e.state, Err: e.errLocked()}
	if t := e.term; t != nil {
		s.InTerm, s.Term = true, t.term
		s.Leading = e.sinceEpoch() < t.until
		s.LastRenewal, s.Deadline = e.epoch.Add(t.confirmed), e.epoch.Add(t.until)
	}
	return s
}

// ConfirmedWithin reports whether this elector leads and sent its last
// successful renewal (or the acquisition) no longer than d ago.
func (e *Elector[M]) ConfirmedWithin(d time.Duration) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.term == nil {
		return false
	}
	now := e.sinceEpoch()
	return now < e.term.until && now-e.term.confirmed <= d
}

// Record returns the last record this elector saw: who leads, since when,
// how many handovers, the leader's metadata. ok is false until a record has
// been seen, and while the store holds none.
func (e *Elector[M]) Record() (rec lease.Record[M], ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.rec, e.haveRec
}

// Err returns the last error met talking to the store (an error wrapping
// store.ErrCorruptRecord when the store holds a record out of bounds or
// unreadable), or, when the last operation succeeded, what keeps this
// elector from starting a term: an error wrapping ErrRevisionRollback while
// it waits out a rollback of the store, or one wrapping
// store.ErrTokenExhausted once the largest token seen is lease.MaxToken.
// It returns nil otherwise.
func (e *Elector[M]) Err() error {
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
	}
	return e.exhaustedErr
}

// SetMetadata sets the metadata this elector writes when it acquires or
// renews the lease, from the next write on.
func (e *Elector[M]) SetMetadata(m M) {
	e.mu.Lock()
	e.meta = m
	e.mu.Unlock()
}

// Reconfigure replaces the timings. The Config is validated first; it takes
// effect from the next step of the running elector. The identity never
// changes.
func (e *Elector[M]) Reconfigure(c lease.Config) error {
	if err := c.Validate(); err != nil {
		return err
	}
	e.mu.Lock()
	e.cfg = c
	e.mu.Unlock()
	select {
	case e.reconf <- struct{}{}:
	default:
	}
	return nil
}

// changes returns a channel closed at the next change of state.
func (e *Elector[M]) changes() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.changed
}

// notifyLocked wakes everyone waiting on changes. e.mu must be held.
func (e *Elector[M]) notifyLocked() {
	close(e.changed)
	e.changed = make(chan struct{})
}

// sinceEpoch is the monotonic time of the running elector. e.mu must be
// held, or the caller must be Run's goroutine.
func (e *Elector[M]) sinceEpoch() time.Duration { return e.clock.Now().Sub(e.epoch) }

// currentTerm returns the term in progress and its context, if leading now.
func (e *Elector[M]) currentTerm() (Term, context.Context, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.term == nil || e.sinceEpoch() >= e.term.until {
		return Term{}, nil, false
	}
	return e.term.term, e.term.ctx, true
}
