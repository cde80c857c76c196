package lead

import (
	"context"
	"errors"
	"time"

	"github.com/tenure-go/tenure/internal/nilarg"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

// Tracer is told what an Elector does with its lease as it happens: each
// acquire, renew and release, the claims it waits on, and whether its
// watch of the store is up. The module github.com/tenure-go/tenure/otel
// turns these into OpenTelemetry spans and metrics; package metrics into
// the gauges tenure_lease_duration_seconds, tenure_claim_waiting and
// tenure_watch_up. Its methods are
// called from the elector's goroutines, never under the elector's locks;
// they must be quick and safe for concurrent use. Set it with WithTracer.
type Tracer interface {
	// LeaseOp reports one acquire, renew or release (Operation.Op) once
	// the store answered or the operation timed out.
	LeaseOp(Operation)
	// HandOver reports a handover of a held lease to a named successor
	// (Operation.Op is OpHandOver).
	HandOver(Operation)
	// Claim reports that the elector began (waiting true) or stopped
	// (false) waiting on a claim it created with token (see
	// Status.Claim): it stops when it takes the claim over with a new
	// token, another elector takes the lease, or Run ends.
	Claim(name string, token uint64, waiting bool)
	// Watch reports that the elector's watch of the store came up (up
	// true), or failed to start or ended (false: the elector polls until
	// a new watch is up, a RetryInterval later). An elector whose store
	// cannot watch reports nothing.
	Watch(name string, up bool)
}

// Operation is one lease operation, as told to a Tracer.
type Operation struct {
	// Name is the election.
	Name string
	// Op is OpAcquire, OpRenew, OpRelease or OpHandOver.
	Op string
	// Token is the fencing token of the record the operation wrote: for
	// an acquire, the new term's token, whether or not the store took it.
	Token uint64
	// LeaseDuration is the lease the written record promises (see
	// lease.Record): how long others wait after its holder's last
	// renewal.
	LeaseDuration time.Duration
	// Start and End are when the operation began and when its answer
	// came, by the elector's clock.
	Start, End time.Time
	// Outcome is OutcomeOK, OutcomeConflict or OutcomeError.
	Outcome string
	// Err is the operation's error; nil when Outcome is OutcomeOK.
	Err error
}

// OpHandOver names a handover in Operation.Op.
const OpHandOver = "handover"

// Outcomes of an Operation.
const (
	// OutcomeOK: the store took the write.
	OutcomeOK = "ok"
	// OutcomeConflict: the store answered that the record is not the one
	// the write expected (someone else wrote first, or it is gone).
	OutcomeConflict = "conflict"
	// OutcomeError: the operation failed or timed out without an answer,
	// or the store holds a record it cannot read.
	OutcomeError = "error"
)

// OutcomeOf classifies an operation's error as an Operation's Outcome.
func OutcomeOf(err error) string {
	switch {
	case err == nil:
		return OutcomeOK
	case errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrNotFound):
		return OutcomeConflict
	default:
		return OutcomeError
	}
}

// WithTracer sets what is told of the elector's lease operations, claims
// and watch (see Tracer). Given to NewGroup, it applies to every elector of
// the Group. A nil Tracer is told nothing and costs nothing; a typed nil
// makes New fail.
func WithTracer(t Tracer) Option {
	return func(o *options) {
		if t != nil && nilarg.IsNil(t) {
			o.refuse("WithTracer", "t")
			return
		}
		o.tracer = t
	}
}

// traced wraps the swap op of kind op writing a record with token and
// lease duration leaseDur, to tell
// the elector's Tracer of it. Without a Tracer it returns op unchanged.
func (r *runner[M]) traced(op string, token uint64, leaseDur time.Duration, f func(context.Context) (lease.Record[M], lease.Revision, error)) func(context.Context) (lease.Record[M], lease.Revision, error) {
	e := r.e
	if e.tracer == nil {
		return f
	}
	return func(ctx context.Context) (lease.Record[M], lease.Revision, error) {
		start := e.clock.Now()
		rec, rev, err := f(ctx)
		e.tracer.LeaseOp(Operation{Name: e.name, Op: op, Token: token, LeaseDuration: leaseDur, Start: start, End: e.clock.Now(), Outcome: OutcomeOf(err), Err: err})
		return rec, rev, err
	}
}

// traceClaim tells the Tracer when the elector begins or stops waiting on
// its claim (as Status.Claim). The runner ending (finish) stops it.
func (r *runner[M]) traceClaim() {
	e := r.e
	if e.tracer == nil {
		return
	}
	var token uint64
	if !r.done {
		e.mu.Lock()
		token = e.claimLocked()
		e.mu.Unlock()
	}
	if token == r.claimTraced {
		return
	}
	if r.claimTraced != 0 {
		e.tracer.Claim(e.name, r.claimTraced, false)
	}
	if token != 0 {
		e.tracer.Claim(e.name, token, true)
	}
	r.claimTraced = token
}

// traceWatch tells the Tracer that the watch came up or went down.
func (r *runner[M]) traceWatch(up bool) {
	if t := r.e.tracer; t != nil {
		t.Watch(r.e.name, up)
	}
}
