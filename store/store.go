package store

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/tenure-go/tenure/lease"
)

// Errors returned by stores. Implementations wrap them with %w so that callers
// match them with errors.Is.
var (
	// ErrNotFound: no record exists for the name.
	ErrNotFound = errors.New("store: record not found")
	// ErrConflict: the stored revision differs from the expected one.
	ErrConflict = errors.New("store: revision conflict")
	// ErrInvalidName: the name breaks the rules of ValidateName or of the
	// backend.
	ErrInvalidName = errors.New("store: invalid name")
	// ErrInvalidRecord: the record to write breaks a rule (a negative
	// LeaseDuration, an over-long holder, ...).
	ErrInvalidRecord = errors.New("store: invalid record")
	// ErrMetadataTooLarge: the encoded metadata exceeds MaxMetadataBytes or a
	// backend's own limit.
	ErrMetadataTooLarge = errors.New("store: metadata too large")
	// ErrEncode: the metadata could not be encoded.
	ErrEncode = errors.New("store: cannot encode metadata")
	// ErrCorruptRecord: the stored record cannot be read. It is reported,
	// never overwritten: Get and CompareAndSwap return it with a zero record
	// and a zero revision, and CompareAndSwap writes nothing.
	ErrCorruptRecord = errors.New("store: corrupt record")
	// ErrTokenExhausted: the next fencing token would exceed
	// lease.MaxToken. Nothing is written and no token is ever issued twice
	// or wrapped to a smaller one: the election cannot start a new term
	// until an operator intervenes.
	ErrTokenExhausted = errors.New("store: fencing tokens exhausted")
	// ErrWatchUnsupported: the store cannot watch (see Watch). It wraps
	// errors.ErrUnsupported.
	ErrWatchUnsupported = fmt.Errorf("store: watch not supported: %w", errors.ErrUnsupported)
	// ErrListUnsupported: the store cannot list its records (see Lister).
	// It wraps errors.ErrUnsupported.
	ErrListUnsupported = fmt.Errorf("store: listing not supported: %w", errors.ErrUnsupported)
	// ErrNilArgument: a nil context, store, codec or receiver was passed
	// where a usable one is needed. The error names the argument.
	ErrNilArgument = errors.New("store: nil argument")
)

// Limits shared by every store.
const (
	// MaxNameBytes is the longest election name, in bytes.
	MaxNameBytes = 253
	// MaxHolderBytes is the longest holder identity, in bytes.
	MaxHolderBytes = 253
	// MaxMetadataBytes is the largest encoded metadata, in bytes.
	MaxMetadataBytes = 64 << 10
	// MaxRevision is the largest revision a store issues, and the largest
	// it accepts from its backend: 2^63-1, which every backend's counter
	// holds (a PostgreSQL bigint, an etcd revision, a decimal string in
	// Redis). A stored revision above it is ErrCorruptRecord, and a record
	// stored at MaxRevision cannot be replaced (there is no later
	// revision): CompareAndSwap reports it as ErrCorruptRecord too. Real
	// revisions stay far below it: counted in microseconds, it lasts
	// 292,000 years.
	MaxRevision lease.Revision = 1<<63 - 1
)

// Store keeps lease records by name. It must be safe for concurrent use.
type Store[M any] interface {
	// Get returns the record stored under name and its revision, or an error
	// wrapping ErrNotFound.
	Get(ctx context.Context, name string) (lease.Record[M], lease.Revision, error)
	// CompareAndSwap stores next under name if the stored revision equals
	// expected (zero: only if no record exists). It returns the stored
	// record and its new revision. On mismatch it returns an error wrapping
	// ErrConflict with the record and revision it found (zero when absent).
	CompareAndSwap(ctx context.Context, name string, expected lease.Revision, next lease.Record[M]) (lease.Record[M], lease.Revision, error)
}

// Event is one observation delivered by a Watcher.
type Event[M any] struct {
	// Record is the record as of Revision; zero when Absent.
	Record lease.Record[M]
	// Revision is the record's revision; zero when Absent.
	Revision lease.Revision
	// Absent reports that no record exists (it was never written, or the
	// store lost it).
	Absent bool
	// Err is set when the record exists but cannot be read (wrapping
	// ErrCorruptRecord, say); Revision is then the unreadable record's
	// revision. The watch goes on.
	Err error
}

// Watcher is implemented by stores that push changes. WatchCapabilities is
// part of it: a store (or a wrapper) cannot deliver events without saying
// what they are worth, and its zero value is the conservative answer.
type Watcher[M any] interface {
	// WatchCapabilities says what the events of Watch are worth (see
	// WatchCapabilities). A wrapper that forwards Watch forwards it too
	// (store.WatchCapabilitiesOf), but only while it delivers the events
	// it receives unchanged; one that alters or makes up events returns
	// the zero value.
	WatchCapabilities() WatchCapabilities
	// Watch delivers the current state of name first, then every later
	// change, in revision order. It may skip intermediate revisions when the
	// receiver falls behind, but never delivers an older revision after a
	// newer one. Absent events carry no revision and are the exception: one
	// may follow a newer revision after the store lost its data, and
	// receivers cannot order them against what they read elsewhere. A
	// store whose events are not Authentic (see WatchCapabilities) makes a
	// second exception: after an event at a revision the store does not
	// hold (forged, or lost when the store went back), it reads the record
	// and delivers what it read, so that one forged event cannot silence
	// the watch. The channel is closed when ctx ends or the watch breaks;
	// the caller may watch again.
	Watch(ctx context.Context, name string) (<-chan Event[M], error)
}

// ValidateName checks the rules every store applies to election names: not
// empty, at most MaxNameBytes bytes, valid UTF-8, no control characters.
// Backends may add rules of their own.
func ValidateName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: name is empty", ErrInvalidName)
	case len(name) > MaxNameBytes:
		return fmt.Errorf("%w: name is %d bytes, the limit is %d", ErrInvalidName, len(name), MaxNameBytes)
	case !utf8.ValidString(name):
		return fmt.Errorf("%w: name %q is not valid UTF-8", ErrInvalidName, name)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return fmt.Errorf("%w: name %q contains control character %U", ErrInvalidName, name, r)
		}
	}
	return nil
}

// ValidateRecord checks the fields of a record about to be written: the
// holder follows the rules of names but may be empty, LeaseDuration lies in
// [0, lease.MaxDuration] and is positive while the record has a holder, and
// Transitions is at most lease.MaxToken; Successor, set only on a released
// record, follows the rules of holders. A Token above lease.MaxToken is
// ErrTokenExhausted. What it accepts, ValidateStored accepts once stored.
func ValidateRecord[M any](r lease.Record[M]) error {
	if r.Token > lease.MaxToken {
		return fmt.Errorf("%w: token %d is above lease.MaxToken (%d)", ErrTokenExhausted, r.Token, lease.MaxToken)
	}
	if r.Transitions > lease.MaxToken {
		return fmt.Errorf("%w: Transitions %d is above lease.MaxToken (%d)", ErrInvalidRecord, r.Transitions, lease.MaxToken)
	}
	if r.LeaseDuration > lease.MaxDuration {
		return fmt.Errorf("%w: LeaseDuration is %v, must be at most %v", ErrInvalidRecord, r.LeaseDuration, lease.MaxDuration)
	}
	if len(r.Holder) > MaxHolderBytes {
		return fmt.Errorf("%w: holder is %d bytes, the limit is %d", ErrInvalidRecord, len(r.Holder), MaxHolderBytes)
	}
	if r.Holder != "" {
		if err := ValidateName(r.Holder); err != nil {
			return fmt.Errorf("%w: holder: %w", ErrInvalidRecord, err)
		}
	}
	if r.LeaseDuration < 0 {
		return fmt.Errorf("%w: LeaseDuration is %v, must be >= 0", ErrInvalidRecord, r.LeaseDuration)
	}
	if r.LeaseDuration == 0 && r.Holder != "" {
		return fmt.Errorf("%w: LeaseDuration is 0, must be > 0 while the record has a holder (%q)", ErrInvalidRecord, r.Holder)
	}
	if err := checkSuccessor(r.Holder, r.Successor); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidRecord, err)
	}
	return nil
}

// checkSuccessor checks a record's Successor against the rules of holders:
// empty, or a valid holder on a released record.
func checkSuccessor(holder, successor string) error {
	switch {
	case successor == "":
		return nil
	case holder != "":
		return fmt.Errorf("successor %.64q is set while %.64q holds the lease; only a released record names a successor", successor, holder)
	case len(successor) > MaxHolderBytes:
		return fmt.Errorf("successor is %d bytes, the limit is %d", len(successor), MaxHolderBytes)
	}
	if err := ValidateName(successor); err != nil {
		return fmt.Errorf("successor: %w", err)
	}
	return nil
}

// Renews reports whether writing next over cur continues cur's term: the
// same Token, and the same holder or none (a renewal, a release, or a
// rewrite of a released record). Every other write starts a new term, whose
// token a store issues with NewToken.
func Renews[M, N any](cur lease.Record[M], next lease.Record[N]) bool {
	return next.Token == cur.Token && (next.Holder == "" || next.Holder == cur.Holder)
}

// NewToken returns the token a store issues to a new term that was
// proposed with token proposed, where floor is the highest token the name
// is known to have had (0 if none): the largest of proposed, floor+1 and 1.
// So a new term's token is never 0, never repeats, and never goes below a
// token stored before, whatever the caller proposed (a token that wrapped
// around, say). When that token would exceed lease.MaxToken, NewToken
// returns an error wrapping ErrTokenExhausted and the store must write
// nothing.
func NewToken(proposed, floor uint64) (uint64, error) {
	if floor >= lease.MaxToken {
		return 0, fmt.Errorf("%w: the name has had token %d; no token is left above it (lease.MaxToken is %d)", ErrTokenExhausted, floor, lease.MaxToken)
	}
	t := max(proposed, floor+1)
	if t > lease.MaxToken {
		return 0, fmt.Errorf("%w: token %d is above lease.MaxToken (%d)", ErrTokenExhausted, t, lease.MaxToken)
	}
	return t, nil
}

// ClockToken is the least token a store issues to a new term at wall-clock
// time now: the microseconds since the Unix epoch (0 before it, at most
// lease.MaxToken, which the clock reaches in the year 2255). A store passes
// it to NewToken as part of the floor, so that every new term's token is
// at least its clock:
//
//	token, err := store.NewToken(next.Token, max(floor, store.ClockToken(now)))
//
// A restore of the store's data (a PostgreSQL, etcd or Kubernetes backup, a
// failover to a replica that lags) takes the stored floor back, and the
// next term would otherwise reuse the token of a term the restore lost,
// which every fence accepts as the same term. The clock is not restored: a
// term issued after the restore gets a token above every token issued
// before it, as long as the clock that floors them has not gone back by
// more than the time between the two terms (redisstore and pgstore use the
// server's clock; kubestore and etcdstore the writer's, so the bound there
// is the clock offset between the machines that acquire), and no token
// was raised past the clock by hand. docs/design.md, "The threat model",
// says what follows when one is.
func ClockToken(now time.Time) uint64 {
	us := now.UnixMicro()
	if us <= 0 {
		return 0
	}
	return min(uint64(us), lease.MaxToken)
}

// ValidateStored checks a record read from a store, which anyone with
// access to the store may have written: the holder follows the rules of
// names (or is empty), LeaseDuration lies in [0, lease.MaxDuration] and is
// positive while the record has a holder, Token and Transitions are at
// most lease.MaxToken, and Successor is empty or, on a released record,
// follows the rules of holders. Every error wraps ErrCorruptRecord and names the
// field and the rule. Electors refuse such a record: they report it and
// never overwrite it or let it change what they wait for.
func ValidateStored[M any](r lease.Record[M]) error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrCorruptRecord}, args...)...))
	}
	if len(r.Holder) > MaxHolderBytes {
		bad("holder is %d bytes, the limit is %d", len(r.Holder), MaxHolderBytes)
	} else if r.Holder != "" {
		if err := ValidateName(r.Holder); err != nil {
			bad("holder: %v", err)
		}
	}
	switch {
	case r.LeaseDuration < 0 || r.LeaseDuration > lease.MaxDuration:
		bad("LeaseDuration is %v, must lie in [0, %v]", r.LeaseDuration, lease.MaxDuration)
	case r.LeaseDuration == 0 && r.Holder != "":
		bad("LeaseDuration is 0 while %q holds the lease", r.Holder)
	}
	if r.Token > lease.MaxToken {
		bad("token %d is above lease.MaxToken (%d)", r.Token, lease.MaxToken)
	}
	if r.Transitions > lease.MaxToken {
		bad("Transitions %d is above lease.MaxToken (%d)", r.Transitions, lease.MaxToken)
	}
	if err := checkSuccessor(r.Holder, r.Successor); err != nil {
		bad("%v", err)
	}
	return errors.Join(errs...)
}

// Lossy is implemented by stores that can lose records, such as Redis
// without persistence. Electors then wait out an absent record for a whole
// LeaseDuration instead of taking it at once, since a leader may still
// believe it holds the record that vanished.
//
// A store that does not implement Lossy is taken to lose records (see
// MayLoseRecords): a wrapper must forward it, or it hides its store's answer.
type Lossy interface {
	// MayLoseRecords reports whether a record can vanish without anyone
	// deleting it (a restart without persistence, a failover to a replica
	// that lags).
	MayLoseRecords() bool
}

// WatchCapabilities describes a Watcher's events. The zero value claims
// nothing: events are hints that anyone who can publish on the store's
// channel may have forged, and an elector reads the record before it acts
// on one. Each field is a claim an elector relies on for safety, so a store
// sets it only when it holds for every event its Watch delivers.
type WatchCapabilities struct {
	// Authentic claims that every event Watch delivers (other than Absent
	// ones and those with Err) was produced by the store itself, after
	// the revision it carries had been committed, and shows the record
	// exactly as stored at that revision: nobody who cannot write the
	// record can make one up, and a request sent after an event was
	// received is served at that revision or a later one. Events may
	// still come late, twice, or not at all. Electors then act on a
	// release shown by an event as on one shown by a read: they swap from
	// its revision at once. Kubernetes and etcd watches (served by the
	// server over the authenticated connection, in revision order) are
	// authentic; Redis Pub/Sub and PostgreSQL NOTIFY, which anyone who can
	// connect may publish on, are not.
	Authentic bool
}

// FuncWatcher is implemented by Watchers that can deliver a watch's events
// by calling a function instead of sending them on a channel, which needs no
// goroutine per watch: a process with many elections (lead.Group) then holds
// none per name. It is for speed and memory only: an elector uses WatchFunc
// (the function below) when the store offers it, and Watch, served by a
// goroutine, when it does not or a wrapper hides it.
//
// A wrapper that changes Watch (filters or alters its events) must not let
// an embedded store's WatchFunc be promoted past it: it implements
// WatchFunc too, with store.WatchFuncVia on its own Watch, say
// (store.WatchFunc on itself would call its own WatchFunc again).
type FuncWatcher[M any] interface {
	Watcher[M]
	// WatchFunc delivers what Watch would send on its channel, in the same
	// order and under the same rules, by calling fn(ev, true) for each
	// event, one call at a time. When the watch ends (ctx ended, or the
	// watch broke), it calls fn(Event{}, false) once, as a closed channel
	// would say, and never fn again. fn must return quickly: it must not
	// block, and must not call the store. fn may be called from any
	// goroutine, under the store's locks, and before WatchFunc returns
	// (with the current state, say): the caller must not hold, while it
	// calls WatchFunc, a lock that fn takes. A nil error means that fn will
	// be called, at least once with false; an error means that it never
	// will.
	WatchFunc(ctx context.Context, name string, fn func(ev Event[M], ok bool)) error
}
