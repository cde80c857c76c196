package fsm

import (
	"fmt"
	"math"
	"time"

	"github.com/tenure-go/tenure/lease"
)

// Never is the wake-up time of a machine that waits for no timer.
const Never time.Duration = math.MaxInt64

// State is the role a node plays in an election.
type State uint8

// The states of a Machine.
const (
	// Follower: another node leads, or nobody does yet.
	Follower State = iota
	// Candidate: an acquiring swap is in flight.
	Candidate
	// Leader: this node leads, until its renew deadline.
	Leader
	// Expiring: this node has stopped leading; it may still hold the lease
	// in the store and releases it if it can.
	Expiring
)

func (s State) String() string {
	switch s {
	case Follower:
		return "Follower"
	case Candidate:
		return "Candidate"
	case Leader:
		return "Leader"
	case Expiring:
		return "Expiring"
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// Lease is the part of a lease record the machine reasons about. The driver
// keeps the rest (times, metadata).
type Lease struct {
	Holder        string
	Token         uint64
	Transitions   uint64
	LeaseDuration time.Duration
	// Successor, on a released record, is the one identity that may take
	// it over at once (lease.Record's Successor); every other node waits
	// it out as a held record. A record with both a holder and a successor
	// is out of bounds.
	Successor string
}

// EventKind says what happened.
type EventKind uint8

// The kinds of Event.
const (
	// Tick: time has passed (a timer fired, or the driver just woke up).
	Tick EventKind = iota + 1
	// ReadDone: the pending read returned Lease at Revision, or Absent.
	ReadDone
	// ReadFailed: the pending read failed.
	ReadFailed
	// Watched: the store pushed Lease at Revision, or Absent.
	Watched
	// SwapDone: the pending swap succeeded; Lease and Revision are what the
	// store now holds.
	SwapDone
	// SwapConflict: the pending swap lost; Lease and Revision are what the
	// store holds (Absent if nothing).
	SwapConflict
	// SwapFailed: the pending swap failed or timed out; it may or may not
	// have been applied.
	SwapFailed
	// Stop: the driver is shutting down. Release says whether to release a
	// held lease.
	Stop
	// Reconfigure: Config replaces the timings from now on.
	Reconfigure
	// WatchLost: the watch broke or ended, so changes may have been missed
	// until the store's next watch event. The machine polls as if it had
	// no watch until a watch event shows a renewal again.
	WatchLost
	// Resign: a leader steps down (ReasonResigned), releases the lease
	// and stays in the election as a Follower that starts no term until
	// it has accepted a record held by another node, or until
	// LeaseDuration has passed, whichever comes first. A node that does
	// not lead, or is stopping, ignores it. With Successor set, the resign
	// is a handover (ReasonHandedOver): the release names Successor, who
	// alone may take it over at once.
	Resign
)

func (k EventKind) String() string {
	switch k {
	case Tick:
		return "Tick"
	case ReadDone:
		return "ReadDone"
	case ReadFailed:
		return "ReadFailed"
	case Watched:
		return "Watched"
	case SwapDone:
		return "SwapDone"
	case SwapConflict:
		return "SwapConflict"
	case SwapFailed:
		return "SwapFailed"
	case Stop:
		return "Stop"
	case Reconfigure:
		return "Reconfigure"
	case WatchLost:
		return "WatchLost"
	case Resign:
		return "Resign"
	}
	return fmt.Sprintf("EventKind(%d)", uint8(k))
}

// Event is one input to a Machine.
type Event struct {
	Kind EventKind
	// Now is the node's monotonic time when the event is handled. It must
	// never decrease from one Step to the next.
	Now time.Duration
	// Lease, Revision and Absent describe an observed or stored record
	// (ReadDone, Watched, SwapDone, SwapConflict).
	Lease    Lease
	Revision lease.Revision
	Absent   bool
	// Corrupt says that the store answered, but with a record that cannot
	// be read or breaks the bounds of a stored record (store.ValidateStored);
	// Lease is then ignored. The machine refuses such a record on its own
	// too: a Lease out of bounds (see InBounds), or a record at Revision 0,
	// counts as Corrupt.
	Corrupt bool
	// Stamp is the unpredictable value the store keeps with the record at
	// Revision (ReadDone, Watched, SwapDone, SwapConflict): drawn afresh
	// for every write, by the writer or the store, so that nobody can
	// tell it before the write exists (see store.Stamped). 0 means the
	// store keeps none. A follower whose read shows the revision and the
	// stamp a renewal event carried counts its wait from that event's
	// receipt (see docs/design.md, "Quiet followers").
	Stamp uint64
	// Vouched, on the SwapDone of a create (an acquire expecting no
	// record), says that the store vouched that it lost no record during
	// the created record's LeaseDuration before the create (see
	// store.CreateVoucher). On a store that may lose records the create is
	// then no mere claim: the node leads on it at once. Without it, such a
	// create is a claim (see Options.LossyStore). It means nothing on any
	// other event.
	Vouched bool
	// Release asks a stopping leader to release the lease (Stop).
	Release bool
	// Successor names who the release that follows a Resign hands the
	// lease to (Lease.Successor); "" (or the node's own identity) is a
	// plain release.
	Successor string
	// Config holds the new timings (Reconfigure).
	Config lease.Config
	// Err is the error behind ReadFailed or SwapFailed, for the record.
	Err error
}

// ActionKind says what the driver must do.
type ActionKind uint8

// The kinds of Action.
const (
	// Read: get the record. Report ReadDone or ReadFailed.
	Read ActionKind = iota + 1
	// Swap: compare-and-swap Next from Expected. Report SwapDone,
	// SwapConflict or SwapFailed.
	Swap
	// StartedLeading: a term with Token starts; it began at Since (the
	// time the acquiring request was sent).
	StartedLeading
	// StoppedLeading: the term with Token ended for Reason.
	StoppedLeading
	// Done: the machine has stopped; it ignores every later event.
	Done
	// Report: the machine met something its driver should tell the
	// operator about (Problem says what). It asks for no store operation.
	Report
)

func (k ActionKind) String() string {
	switch k {
	case Read:
		return "Read"
	case Swap:
		return "Swap"
	case StartedLeading:
		return "StartedLeading"
	case StoppedLeading:
		return "StoppedLeading"
	case Done:
		return "Done"
	case Report:
		return "Report"
	}
	return fmt.Sprintf("ActionKind(%d)", uint8(k))
}

// SwapKind says why a swap is made, so that the driver can fill in the
// record's times and metadata.
type SwapKind uint8

// The kinds of Swap.
const (
	// Acquire starts a new term with a new token.
	Acquire SwapKind = iota + 1
	// Renew extends the current term (or confirms one whose acquiring swap
	// had an unknown outcome).
	Renew
	// Release clears the holder, keeping Token and Transitions.
	Release
)

func (k SwapKind) String() string {
	switch k {
	case Acquire:
		return "Acquire"
	case Renew:
		return "Renew"
	case Release:
		return "Release"
	}
	return fmt.Sprintf("SwapKind(%d)", uint8(k))
}

// Reason says why a term ended.
type Reason uint8

// The reasons a term ends.
const (
	// ReasonDeadline: no renewal succeeded within RenewDeadline.
	ReasonDeadline Reason = iota + 1
	// ReasonLost: the store shows that someone else holds the lease, or
	// that the record is gone.
	ReasonLost
	// ReasonStopped: the driver is shutting down.
	ReasonStopped
	// ReasonResigned: the node resigned (Resign) and stays a follower.
	ReasonResigned
	// ReasonHandedOver: the node handed the lease over to a successor (a
	// Resign with Successor) and stays a follower.
	ReasonHandedOver
)

func (r Reason) String() string {
	switch r {
	case ReasonDeadline:
		return "renew deadline passed"
	case ReasonLost:
		return "lease lost"
	case ReasonStopped:
		return "stopped"
	case ReasonResigned:
		return "resigned"
	case ReasonHandedOver:
		return "handed over"
	}
	return fmt.Sprintf("Reason(%d)", uint8(r))
}

// Problem says what a Report is about.
type Problem uint8

// The problems a Machine reports.
const (
	// ProblemCorrupt: the store answered with a record the machine refused
	// (Event.Corrupt, or out of bounds). Revision is the record's. The
	// machine starts no term and waits for nothing on account of it: it
	// polls until the store holds a valid record or none.
	ProblemCorrupt Problem = iota + 1
	// ProblemRollback: the store showed a revision older than one the
	// machine had accepted (or, in a store that keeps its records, no record
	// after one), in a read or a swap's reply. Revision is what it shows
	// now (0: no record), Newest the newest revision accepted before. The
	// machine steps down if it leads and starts no term before Until: a full
	// lease of what it last saw, counted from now.
	ProblemRollback
	// ProblemTokensExhausted: the lease is free or expired, but the largest
	// token seen (Token) is lease.MaxToken, so no new term can start. The
	// machine keeps polling; see also Machine.TokensExhausted.
	ProblemTokensExhausted
	// ProblemLongWait: the machine waits Wait (longer than its own
	// LeaseDuration) before it may take over the record it observes, because
	// of a longer lease it saw; the wait ends at Until.
	ProblemLongWait
	// ProblemContradicted: a read (or a swap's conflict), sent after a
	// watch event showing revision Newest arrived, shows the older
	// revision Revision (or, in a store that keeps its records, no
	// record). Either the watch event was forged, or the store went back
	// in time and lost the writes the event announced (a failover to a
	// replica that missed writes, a restore), whose writer may still
	// believe it leads: the machine cannot tell which, so it starts no
	// term before Until (a full lease of what it last accepted, counted
	// from now, as after a rollback) and takes no watch event as a
	// renewal until a read shows the record move on.
	ProblemContradicted
	// ProblemClaim: the record this node just created is only a claim
	// (Options.LossyStore; the store did not vouch for it): the node does
	// not lead on it. It follows its own record, with Token, like anyone's,
	// and takes it over with a new token once it has stood for Wait, at
	// Until (if nothing else changes meanwhile). Nothing is wrong: it is
	// reported so that the wait can be told, since a leader whose record
	// the store lost may still believe it leads.
	ProblemClaim
)

// String names the problem for logs.
func (p Problem) String() string {
	switch p {
	case ProblemCorrupt:
		return "corrupt record"
	case ProblemRollback:
		return "revision rollback"
	case ProblemTokensExhausted:
		return "tokens exhausted"
	case ProblemLongWait:
		return "long wait"
	case ProblemContradicted:
		return "watch event contradicted"
	case ProblemClaim:
		return "claim"
	}
	return fmt.Sprintf("Problem(%d)", uint8(p))
}

// Action is one output of a Machine.
type Action struct {
	Kind ActionKind
	// Swap, Expected and Next describe a Swap.
	Swap     SwapKind
	Expected lease.Revision
	Next     Lease
	// Guarded asks for a guarded Swap (only with Options.GuardedRelease):
	// the store must write Next only if the record at Expected is
	// released and has Was's Token, Transitions and LeaseDuration
	// (store.ReleaseGuard), and otherwise answer with a conflict.
	Guarded bool
	Was     Lease
	// Claim says that the Swap, if it succeeds, creates only a claim (see
	// Options.LossyStore): the node will not lead on it unless the store
	// vouches for it (Event.Vouched). The driver marks the record it
	// writes (lease.Record's Claim) so that people can tell; the machine
	// never reads it back.
	Claim bool
	// Token is the term's token (StartedLeading, StoppedLeading), or the
	// largest token seen (ProblemTokensExhausted).
	Token uint64
	// Since is when the term began (StartedLeading).
	Since time.Duration
	// Reason is why the term ended (StoppedLeading).
	Reason Reason
	// Problem, Revision, Newest, Until and Wait describe a Report (see the
	// Problem constants for which fields each fills in).
	Problem  Problem
	Revision lease.Revision
	Newest   lease.Revision
	Until    time.Duration
	Wait     time.Duration
}

// InBounds reports whether l lies within the bounds of a stored record: its
// LeaseDuration in [0, lease.MaxDuration] and positive while l has a
// holder, its Token and Transitions at most lease.MaxToken, a Successor
// only while it has no holder. A Machine
// refuses an observed Lease out of these bounds, as store.ValidateStored
// does for whole records (which also checks the holder's spelling).
func InBounds(l Lease) bool {
	return l.LeaseDuration >= 0 && l.LeaseDuration <= lease.MaxDuration &&
		(l.Holder == "" || l.LeaseDuration > 0) &&
		l.Token <= lease.MaxToken && l.Transitions <= lease.MaxToken &&
		(l.Successor == "" || l.Holder == "")
}

// Rand is a source of uniform numbers in [0, 1). *math/rand/v2.Rand is one.
type Rand interface {
	Float64() float64
}

// Options configure a new Machine.
type Options struct {
	// Identity names this node in the lease record. It must not be empty.
	Identity string
	// Config holds the timings. It must be valid.
	Config lease.Config
	// Rand draws the retry jitter. Nil means no jitter.
	Rand Rand
	// LossyStore says that the store may lose records (a Redis restart
	// without persistence). A record this node creates is then only a
	// claim: it leads on it only after the claim has stood for
	// LeaseDuration, since a leader whose record vanished may still
	// believe it leads.
	LossyStore bool
	// AuthenticWatch says that the store's watch events are authentic
	// (store.WatchCapabilities.Authentic): each was produced by the store
	// after the revision it carries was committed, and shows the record as
	// stored then; nobody who cannot write the record can make one up.
	// Events may still come late, twice or not at all. A follower with no
	// request in flight then takes in an event showing the record released
	// at a revision newer than any it accepted as it would a read's answer
	// (received now), and swaps from that revision at once instead of
	// reading first. False (the conservative answer) makes every event a
	// hint. Never set it for a store others can publish events on: a
	// forged "released at revision r" while r is a live lease would have
	// the follower overwrite it.
	AuthenticWatch bool
	// GuardedRelease says that the store can guard a swap: write only if
	// the record at the expected revision is released and shows what the
	// machine was told (store.ReleaseGuard). A follower then takes over a
	// release a watch event shows with such a swap (Action.Guarded)
	// instead of reading the record first: a forged event makes the swap
	// fail, and the store's answer is taken in like a read's. False (the
	// conservative answer) reads first. Never set it for a store that
	// cannot guard its swaps: a forged "released at revision r" while r is
	// a live lease would have the follower overwrite it.
	GuardedRelease bool
}
