package tenureotel

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/tenure-go/tenure/internal/nilarg"
	"github.com/tenure-go/tenure/lead"
)

// ScopeName is the instrumentation scope of the meter and the tracer.
const ScopeName = "github.com/tenure-go/tenure/otel"

// Attribute keys of the metrics and spans.
const (
	// AttrName is the election's name.
	AttrName = attribute.Key("tenure.election.name")
	// AttrToken is the fencing token an operation wrote.
	AttrToken = attribute.Key("tenure.token")
	// AttrOutcome is an operation's outcome: lead.OutcomeOK,
	// lead.OutcomeConflict or lead.OutcomeError.
	AttrOutcome = attribute.Key("tenure.outcome")
	// AttrChange is started or stopped, on tenure.leadership.changes.
	AttrChange = attribute.Key("tenure.change")
	// AttrOperation is the store operation, on tenure.store.errors: one
	// of lead.OpRead, OpAcquire, OpRenew and OpRelease.
	AttrOperation = attribute.Key("tenure.store.operation")
)

// Errors of New.
var (
	// ErrNilArgument: an option was given a nil provider.
	ErrNilArgument = errors.New("tenureotel: nil argument")
	// ErrInstrument: the meter refused to make an instrument.
	ErrInstrument = errors.New("tenureotel: cannot make an instrument")
)

// Telemetry records what electors do through OpenTelemetry. It implements
// lead.Instruments, lead.EveryInstruments and lead.Tracer; Options gives
// the options that feed it. Make it with New.
type Telemetry struct {
	tracer trace.Tracer
	now    func() time.Time

	leader        metric.Int64Gauge
	token         metric.Int64Gauge
	changes       metric.Int64Counter
	renewDuration metric.Float64Histogram
	renewFailures metric.Int64Counter
	lastRenewal   metric.Float64Gauge
	storeErrors   metric.Int64Counter
	everyErrors   metric.Int64Counter
	claim         metric.Int64Gauge
	watch         metric.Int64Gauge
	leaseDur      metric.Float64Gauge
	batches       metric.Int64Counter
	batched       metric.Int64Counter
}

var (
	_ lead.Instruments      = (*Telemetry)(nil)
	_ lead.EveryInstruments = (*Telemetry)(nil)
	_ lead.Tracer           = (*Telemetry)(nil)
	_ lead.BatchInstruments = (*Telemetry)(nil)
)

type config struct {
	mp   metric.MeterProvider
	tp   trace.TracerProvider
	now  func() time.Time
	errs []error
}

// Option configures New.
type Option func(*config)

// WithMeterProvider sets where the metrics go (default
// otel.GetMeterProvider(), read when New is called). A nil mp makes New
// fail.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) {
		if nilarg.IsNil(mp) {
			c.errs = append(c.errs, fmt.Errorf("%w: WithMeterProvider: mp is nil", ErrNilArgument))
			return
		}
		c.mp = mp
	}
}

// WithTracerProvider sets where the spans go (default
// otel.GetTracerProvider(), read when New is called). A nil tp makes New
// fail.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) {
		if nilarg.IsNil(tp) {
			c.errs = append(c.errs, fmt.Errorf("%w: WithTracerProvider: tp is nil", ErrNilArgument))
			return
		}
		c.tp = tp
	}
}

// WithClock sets the clock that stamps tenure.last_renewal.timestamp (default
// time.Now). A nil now keeps the default.
func WithClock(now func() time.Time) Option {
	return func(c *config) {
		if now != nil {
			c.now = now
		}
	}
}

// renewalBuckets are the histogram's bounds, in seconds: those of package
// metrics, 0.5 ms doubling up to about 16 s.
func renewalBuckets() []float64 {
	b := make([]float64, 16)
	for i := range b {
		b[i] = 0.0005 * math.Pow(2, float64(i))
	}
	return b
}

// New makes the instruments. Nil options are skipped.
func New(opts ...Option) (*Telemetry, error) {
	c := config{now: time.Now}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if len(c.errs) != 0 {
		return nil, errors.Join(c.errs...)
	}
	if c.mp == nil {
		c.mp = otel.GetMeterProvider()
	}
	if c.tp == nil {
		c.tp = otel.GetTracerProvider()
	}
	m := c.mp.Meter(ScopeName)
	t := &Telemetry{tracer: c.tp.Tracer(ScopeName), now: c.now}
	var errs []error
	gauge := func(name, unit, desc string) metric.Int64Gauge {
		g, err := m.Int64Gauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return g
	}
	counter := func(name, unit, desc string) metric.Int64Counter {
		ctr, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return ctr
	}
	t.leader = gauge("tenure.leader", "{leader}", "1 while this process leads the election, 0 otherwise.")
	t.token = gauge("tenure.term.token", "{token}", "Fencing token of this process's current or last term.")
	t.changes = counter("tenure.leadership.changes", "{change}", "Terms this process started and stopped.")
	t.renewFailures = counter("tenure.renewal.failures", "{failure}", "Renewals that failed or timed out (conflicts excluded).")
	t.storeErrors = counter("tenure.store.errors", "{error}", "Store operations that failed or timed out (conflicts and missing records excluded).")
	t.everyErrors = counter("tenure.every.errors", "{error}", "Runs of lead.Elector.Every that returned an error while their term was still going.")
	t.claim = gauge("tenure.claim.waiting", "{claim}", "1 while this process waits on a claim it created (a LeaseDuration during which nobody leads), 0 otherwise.")
	t.batches = counter("tenure.store.batches", "{request}", "Requests that carried a batch of a Group's store operations (store.Batcher), by operation.")
	t.batched = counter("tenure.store.batched_operations", "{operation}", "Store operations sent in batches, by operation: with tenure.store.batches, the operations per request.")
	t.watch = gauge("tenure.watch.up", "{watch}", "1 while this process's watch of the record is up, 0 while it polls after a watch failed or ended.")
	var err error
	t.renewDuration, err = m.Float64Histogram("tenure.renewal.duration", metric.WithUnit("s"),
		metric.WithDescription("Round trip of lease renewals, successful or not."),
		metric.WithExplicitBucketBoundaries(renewalBuckets()...))
	errs = append(errs, err)
	t.leaseDur, err = m.Float64Gauge("tenure.lease.duration", metric.WithUnit("s"),
		metric.WithDescription("Lease that this process's last successful acquire or renewal promised: how long others wait after it."))
	errs = append(errs, err)
	t.lastRenewal, err = m.Float64Gauge("tenure.last_renewal.timestamp", metric.WithUnit("s"),
		metric.WithDescription("Unix time when the last successful acquire or renewal returned."))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInstrument, err)
	}
	return t, nil
}

// Options returns the lead options that feed t: pass them to lead.New or
// lead.NewGroup. For a nil Telemetry, lead.New then fails with an error
// wrapping lead.ErrNilArgument.
func (t *Telemetry) Options() []lead.Option {
	if t == nil {
		// Typed nils, so that lead.New names what is missing.
		return []lead.Option{lead.WithInstruments(t)}
	}
	return []lead.Option{lead.WithInstruments(t), lead.WithObserver(t.Observe), lead.WithTracer(t)}
}

func (t *Telemetry) usable() bool { return t != nil && t.tracer != nil }

func named(name string) metric.MeasurementOption {
	return metric.WithAttributes(AttrName.String(name))
}

// saturated is token as an int64, at most math.MaxInt64.
func saturated(token uint64) int64 {
	if token > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(token)
}

func bool01(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// Observe records a leadership change. It is a lead observer.
func (t *Telemetry) Observe(ch lead.Change) {
	if !t.usable() {
		return
	}
	ctx, name := context.Background(), ch.Term.Name
	switch ch.Kind {
	case lead.Started:
		t.leader.Record(ctx, 1, named(name))
		t.token.Record(ctx, saturated(uint64(ch.Term.Token)), named(name))
		t.changes.Add(ctx, 1, metric.WithAttributes(AttrName.String(name), AttrChange.String("started")))
	case lead.Stopped:
		t.leader.Record(ctx, 0, named(name))
		t.changes.Add(ctx, 1, metric.WithAttributes(AttrName.String(name), AttrChange.String("stopped")))
	}
}

// StoreOp records one store operation. It implements lead.Instruments.
func (t *Telemetry) StoreOp(name, op string, took time.Duration, err error) {
	if !t.usable() {
		return
	}
	ctx := context.Background()
	// A conflict or a missing record is an answer, not a failure.
	failed := lead.OutcomeOf(err) == lead.OutcomeError
	if op == lead.OpRenew {
		t.renewDuration.Record(ctx, took.Seconds(), named(name))
		if failed {
			t.renewFailures.Add(ctx, 1, named(name))
		}
	}
	if err == nil && (op == lead.OpRenew || op == lead.OpAcquire) {
		t.lastRenewal.Record(ctx, float64(t.now().UnixNano())/1e9, named(name))
	}
	if failed {
		t.storeErrors.Add(ctx, 1, metric.WithAttributes(AttrName.String(name), AttrOperation.String(op)))
	}
}

// EveryFailed counts a failed run of Every. It implements
// lead.EveryInstruments.
func (t *Telemetry) EveryFailed(name string, _ error) {
	if !t.usable() {
		return
	}
	t.everyErrors.Add(context.Background(), 1, named(name))
}

// StoreBatch counts a request that carried n of a Group's store
// operations of kind op. It implements lead.BatchInstruments.
func (t *Telemetry) StoreBatch(op string, n int, _ time.Duration) {
	if !t.usable() {
		return
	}
	attrs := metric.WithAttributes(AttrOperation.String(op))
	t.batches.Add(context.Background(), 1, attrs)
	t.batched.Add(context.Background(), int64(n), attrs)
}

// LeaseOp records the operation's span, tenure.<op>, and after a
// successful acquire or renewal tenure.lease.duration. It implements
// lead.Tracer.
func (t *Telemetry) LeaseOp(op lead.Operation) {
	if !t.usable() {
		return
	}
	if op.Outcome == lead.OutcomeOK && (op.Op == lead.OpAcquire || op.Op == lead.OpRenew) {
		t.leaseDur.Record(context.Background(), op.LeaseDuration.Seconds(), named(op.Name))
	}
	_, span := t.tracer.Start(context.Background(), "tenure."+op.Op,
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithTimestamp(op.Start),
		trace.WithAttributes(AttrName.String(op.Name), AttrToken.Int64(saturated(op.Token)), AttrOutcome.String(op.Outcome)))
	if op.Outcome == lead.OutcomeError {
		if op.Err != nil {
			span.RecordError(op.Err, trace.WithTimestamp(op.End))
			span.SetStatus(codes.Error, op.Err.Error())
		} else {
			span.SetStatus(codes.Error, op.Outcome)
		}
	}
	span.End(trace.WithTimestamp(op.End))
}

// HandOver records the handover's span, tenure.handover. It implements
// lead.Tracer.
func (t *Telemetry) HandOver(op lead.Operation) {
	op.Op = lead.OpHandOver
	t.LeaseOp(op)
}

// Claim sets tenure.claim.waiting. It implements lead.Tracer.
func (t *Telemetry) Claim(name string, _ uint64, waiting bool) {
	if !t.usable() {
		return
	}
	t.claim.Record(context.Background(), bool01(waiting), named(name))
}

// Watch sets tenure.watch.up. It implements lead.Tracer.
func (t *Telemetry) Watch(name string, up bool) {
	if !t.usable() {
		return
	}
	t.watch.Record(context.Background(), bool01(up), named(name))
}
