package lead

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/tenure-go/tenure/fsm"
	"github.com/tenure-go/tenure/internal/nilarg"
	"github.com/tenure-go/tenure/lease"
)

// Option configures an Elector.
type Option func(*options)

type options struct {
	identity      string
	config        *lease.Config
	lookup        lease.LookupFunc
	lookupSet     bool            // WithLookupEnv was given
	environ       func() []string // WithEnviron; nil when not given
	environSet    bool
	clock         Clock
	setsClock     bool // an option set a clock (Group.Add: its own, not the Group's)
	rand          fsm.Rand
	logger        *slog.Logger
	releaseOnStop bool
	observers     []func(Change)
	hostname      func() (string, error)
	instruments   Instruments
	tracer        Tracer
	maxOps        int     // WithMaxStoreOps; 0 when not given
	errs          []error // arguments the options could not take
	priority      uint64  // WithPriority; 0: off
}

// refuse records that option took a nil argument.
func (o *options) refuse(option, arg string) {
	o.errs = append(o.errs, fmt.Errorf("%w: %s: %s is nil", ErrNilArgument, option, arg))
}

// WithIdentity sets the identity recorded as the lease holder. It wins over
// TENURE_<NAME>_IDENTITY and TENURE_IDENTITY. Two live electors must never
// share an identity; the default (hostname plus a random suffix) never does.
//
// An empty id makes New fail with an error wrapping both ErrInvalidOption
// and ErrInvalidIdentity, rather than fall back to the default: an empty
// id usually comes from a variable that is not set (POD_NAME, say), and an
// elector that silently took a random identity would hide it. To get the
// default, leave WithIdentity out.
func WithIdentity(id string) Option {
	return func(o *options) {
		if id == "" {
			o.errs = append(o.errs, fmt.Errorf("%w: WithIdentity(\"\"): %w: the identity must not be empty (is a variable such as POD_NAME unset?); "+
				"leave WithIdentity out for the default: TENURE_<NAME>_IDENTITY or TENURE_IDENTITY if set, else the hostname plus a random suffix",
				ErrInvalidOption, ErrInvalidIdentity))
			return
		}
		o.identity = id
	}
}

// WithConfig sets every timing explicitly: the timing variables
// (TENURE_LEASE_DURATION and the others of lease.Load) are then not read at
// all, so one that is set, even to something that cannot be parsed, neither
// changes a timing nor fails New. The identity variables
// (TENURE_<NAME>_IDENTITY, TENURE_IDENTITY; see lease.LoadIdentity) are
// still read, unless WithIdentity is given too. Without WithConfig the
// elector starts from lease.DefaultConfig and applies the TENURE_*
// variables (see lease.Load). To start from the environment and change some
// timings, pass lease.Load's result, changed, to WithConfig.
func WithConfig(c lease.Config) Option { return func(o *options) { o.config = &c } }

// WithLookupEnv sets how environment variables are read (default
// os.LookupEnv). A nil function reads none. Without WithEnviron, an
// elector given WithLookupEnv does not list the environment (see
// WithEnviron).
func WithLookupEnv(f lease.LookupFunc) Option {
	return func(o *options) { o.lookup, o.lookupSet = f, true }
}

// WithEnviron sets how the environment is listed, as os.Environ does
// ("KEY=value" strings), for one check: New logs a Warn for each TENURE_
// variable that no part of Tenure reads (a misspelt TENURE_LEASE_DURATIN,
// say; see lease.UnknownEnv), through the elector's logger, with the
// variable it is likely a misspelling of as did_you_mean when one is close
// (lease.SuggestEnv). The default is
// os.Environ, unless WithLookupEnv is given, which reads the variables from
// elsewhere: then nothing is listed unless WithEnviron is given too. A nil
// f lists nothing.
func WithEnviron(f func() []string) Option {
	return func(o *options) { o.environ, o.environSet = f, true }
}

// WithClock sets the clock (default: the system's, which detects the
// stops of the monotonic clock, see Clock; for an elector a Group adds, the
// Group's). A nil Clock changes nothing: the clock stays the one
// an earlier option set, or the default. A typed nil (a nil pointer in a
// Clock) makes New fail.
func WithClock(c Clock) Option {
	return func(o *options) {
		switch {
		case c == nil:
			// Not a reset to the real clock: Group.Add(name,
			// WithClock(nil)) would leave the elector on the real clock
			// while it shares the Group's wakes, timed on the Group's.
		case nilarg.IsNil(c):
			o.refuse("WithClock", "c")
		default:
			o.clock = c
			o.setsClock = true
		}
	}
}

// WithRand sets the source of retry jitter and of the default identity's
// suffix (default: a generator seeded from crypto/rand). A nil Rand keeps
// the default; a typed nil makes New fail.
func WithRand(r fsm.Rand) Option {
	return func(o *options) {
		if r != nil && nilarg.IsNil(r) {
			o.refuse("WithRand", "r")
			return
		}
		o.rand = r
	}
}

// WithLogger sets the logger (default: discard everything). A nil logger
// keeps the default.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithReleaseOnStop says whether Run releases a held lease when its context
// ends (default true), so that a successor leads without waiting for the
// lease to expire. With false, stopping looks like a crash to the others.
func WithReleaseOnStop(release bool) Option {
	return func(o *options) { o.releaseOnStop = release }
}

// WithObserver registers f to be told of every leadership change. Calls are
// made one at a time, in order, on a goroutine of their own, so a slow f
// never delays renewals: every Stopped follows the Started of the same term.
// Run delivers every change before it returns, so f must not wait for Run
// to return (Done) or for a term (Lead): that would deadlock. A nil f makes
// New fail.
func WithObserver(f func(Change)) Option {
	return func(o *options) {
		if f == nil {
			o.refuse("WithObserver", "f")
			return
		}
		o.observers = append(o.observers, f)
	}
}

// Instruments receives a measurement of every store operation an Elector
// makes. Package metrics implements it with Prometheus collectors.
type Instruments interface {
	// StoreOp reports one operation on the election name: op is OpRead,
	// OpAcquire, OpRenew or OpRelease; took is how long it took; err is
	// its error (nil on success; wrapping store.ErrConflict when the store
	// answered that someone else wrote first). It is called from the
	// operation's goroutine and must be quick and safe for concurrent use.
	StoreOp(name, op string, took time.Duration, err error)
}

// Names of store operations, as reported to Instruments.StoreOp.
const (
	OpRead    = "read"
	OpAcquire = "acquire"
	OpRenew   = "renew"
	OpRelease = "release"
)

// opName names the store operation of a swap of kind k, or a read for the
// zero kind.
func opName(k fsm.SwapKind) string {
	switch k {
	case fsm.Acquire:
		return OpAcquire
	case fsm.Renew:
		return OpRenew
	case fsm.Release:
		return OpRelease
	default:
		return OpRead
	}
}

// WithInstruments sets where measurements of store operations go. A nil
// Instruments measures nothing; a typed nil (a nil *metrics.Collectors, say)
// makes New fail.
func WithInstruments(i Instruments) Option {
	return func(o *options) {
		if i != nil && nilarg.IsNil(i) {
			o.refuse("WithInstruments", "i")
			return
		}
		o.instruments = i
	}
}

// WithMaxStoreOps bounds the store operations of a Group's electors that
// run at once to n (256 when not given): reads, swaps and watch starts
// (which on most stores read the record); the others wait their turn
// without a goroutine each (a leader's renewals and releases first, then
// the others, each in the order asked). It applies to NewGroup, and
// an elector (New, Group.Add) ignores it: one elector has an operation or
// two in flight. n must be at least 1 (ErrInvalidOption). Too small a
// bound delays renewals behind other names' operations, and a leader whose
// renewal waits past its RenewDeadline steps down. The stores of this
// module for Redis and PostgreSQL send the operations made while their
// round trips are busy together, in one round trip: with them a bound
// well above the client's pool of connections (the default) lets a round
// trip carry many; with a store that sends each operation alone, a bound
// near its pool saves the goroutines that would only wait for a
// connection.
func WithMaxStoreOps(n int) Option {
	return func(o *options) {
		if n < 1 {
			o.errs = append(o.errs, fmt.Errorf("%w: WithMaxStoreOps: n is %d, must be at least 1", ErrInvalidOption, n))
			return
		}
		o.maxOps = n
	}
}
