package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tenure-go/tenure/lead"
)

// Collectors holds Tenure's metrics for any number of electors in one
// process. It implements prometheus.Collector, lead.Instruments,
// lead.EveryInstruments and lead.Tracer. Make it
// with New: a nil or zero Collectors records and reports nothing.
type Collectors struct {
	now          func() time.Time
	leader       *prometheus.GaugeVec
	token        *prometheus.GaugeVec
	changes      *prometheus.CounterVec
	renewLatency *prometheus.HistogramVec
	renewFails   *prometheus.CounterVec
	lastRenewal  *prometheus.GaugeVec
	storeErrors  *prometheus.CounterVec
	everyErrors  *prometheus.CounterVec
	claim        *prometheus.GaugeVec
	watch        *prometheus.GaugeVec
	leaseDur     *prometheus.GaugeVec
	batches      *prometheus.CounterVec
	batched      *prometheus.CounterVec
}

var (
	_ lead.Instruments      = (*Collectors)(nil)
	_ lead.EveryInstruments = (*Collectors)(nil)
	_ lead.Tracer           = (*Collectors)(nil)
	_ lead.BatchInstruments = (*Collectors)(nil)
)

// Option configures Collectors.
type Option func(*Collectors)

// WithClock sets the clock that stamps tenure_last_renewal_timestamp_seconds
// (default time.Now). A nil now keeps the default.
func WithClock(now func() time.Time) Option {
	return func(c *Collectors) {
		if now != nil {
			c.now = now
		}
	}
}

// New returns the collectors, not yet registered. Nil options are skipped.
func New(opts ...Option) *Collectors {
	name := []string{"name"}
	c := &Collectors{
		now: time.Now,
		leader: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tenure_leader", Help: "1 while this process leads the election, 0 otherwise.",
		}, name),
		token: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tenure_term_token", Help: "Fencing token of this process's current or last term.",
		}, name),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tenure_leadership_changes_total", Help: "Terms this process started and stopped.",
		}, []string{"name", "change"}),
		renewLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tenure_renewal_duration_seconds",
			Help:    "Round trip of lease renewals, successful or not.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, name),
		renewFails: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tenure_renewal_failures_total", Help: "Renewals that failed or timed out (conflicts excluded).",
		}, name),
		lastRenewal: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tenure_last_renewal_timestamp_seconds", Help: "Unix time when the last successful acquire or renewal returned.",
		}, name),
		storeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tenure_store_errors_total", Help: "Store operations that failed or timed out (conflicts and missing records excluded).",
		}, []string{"name", "op"}),
		everyErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tenure_every_errors_total", Help: "Runs of lead.Elector.Every that returned an error while their term was still going.",
		}, name),
		claim: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tenure_claim_waiting", Help: "1 while this process waits on a claim it created (a LeaseDuration during which nobody leads), 0 otherwise.",
		}, name),
		watch: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tenure_watch_up", Help: "1 while this process's watch of the record is up, 0 while it polls after a watch failed or ended.",
		}, name),
		leaseDur: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tenure_lease_duration_seconds", Help: "Lease that this process's last successful acquire or renewal promised: how long others wait after it.",
		}, name),
		batches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tenure_store_batches_total", Help: "Requests that carried a batch of a Group's store operations (store.Batcher), by operation.",
		}, []string{"op"}),
		batched: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tenure_store_batched_operations_total", Help: "Store operations sent in batches, by operation: with tenure_store_batches_total, the operations per request.",
		}, []string{"op"}),
	}
	for _, o := range opts {
		if o != nil {
			o(c)
		}
	}
	return c
}

// usable reports whether c was made by New: the methods of a nil or zero
// Collectors do nothing.
func (c *Collectors) usable() bool { return c != nil && c.leader != nil }

func (c *Collectors) all() []prometheus.Collector {
	if !c.usable() {
		return nil
	}
	return []prometheus.Collector{c.leader, c.token, c.changes, c.renewLatency, c.renewFails, c.lastRenewal, c.storeErrors, c.everyErrors, c.claim, c.watch, c.leaseDur, c.batches, c.batched}
}

// Describe implements prometheus.Collector.
func (c *Collectors) Describe(ch chan<- *prometheus.Desc) {
	if ch == nil {
		return
	}
	for _, x := range c.all() {
		x.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (c *Collectors) Collect(ch chan<- prometheus.Metric) {
	if ch == nil {
		return
	}
	for _, x := range c.all() {
		x.Collect(ch)
	}
}

// Options returns the lead options that feed these collectors: pass them to
// lead.New. For a nil Collectors, lead.New then fails with an error wrapping
// lead.ErrNilArgument that names WithInstruments.
func (c *Collectors) Options() []lead.Option {
	return []lead.Option{lead.WithInstruments(c), lead.WithObserver(c.Observe), lead.WithTracer(c)}
}

// Observe records a leadership change. It is a lead observer.
func (c *Collectors) Observe(ch lead.Change) {
	if !c.usable() {
		return
	}
	name := ch.Term.Name
	switch ch.Kind {
	case lead.Started:
		c.leader.WithLabelValues(name).Set(1)
		c.token.WithLabelValues(name).Set(float64(ch.Term.Token))
		c.changes.WithLabelValues(name, "started").Inc()
	case lead.Stopped:
		c.leader.WithLabelValues(name).Set(0)
		c.changes.WithLabelValues(name, "stopped").Inc()
	}
}

// StoreOp records one store operation. It implements lead.Instruments.
func (c *Collectors) StoreOp(name, op string, took time.Duration, err error) {
	if !c.usable() {
		return
	}
	// A conflict or a missing record is an answer, not a failure.
	failed := lead.OutcomeOf(err) == lead.OutcomeError
	if op == lead.OpRenew {
		c.renewLatency.WithLabelValues(name).Observe(took.Seconds())
		if failed {
			c.renewFails.WithLabelValues(name).Inc()
		}
	}
	if err == nil && (op == lead.OpRenew || op == lead.OpAcquire) {
		c.lastRenewal.WithLabelValues(name).Set(float64(c.now().UnixNano()) / 1e9)
	}
	if failed {
		c.storeErrors.WithLabelValues(name, op).Inc()
	}
}

// EveryFailed counts a failed run of Every. It implements
// lead.EveryInstruments.
func (c *Collectors) EveryFailed(name string, _ error) {
	if !c.usable() {
		return
	}
	c.everyErrors.WithLabelValues(name).Inc()
}

// LeaseOp sets tenure_lease_duration_seconds after a successful acquire
// or renewal (StoreOp counts the operations). It implements lead.Tracer.
func (c *Collectors) LeaseOp(op lead.Operation) {
	if !c.usable() || op.Outcome != lead.OutcomeOK || (op.Op != lead.OpAcquire && op.Op != lead.OpRenew) {
		return
	}
	c.leaseDur.WithLabelValues(op.Name).Set(op.LeaseDuration.Seconds())
}

// HandOver implements lead.Tracer; it records nothing.
func (c *Collectors) HandOver(lead.Operation) {}

// Claim sets tenure_claim_waiting. It implements lead.Tracer.
func (c *Collectors) Claim(name string, _ uint64, waiting bool) {
	if !c.usable() {
		return
	}
	c.claim.WithLabelValues(name).Set(bool01(waiting))
}

// Watch sets tenure_watch_up. It implements lead.Tracer.
func (c *Collectors) Watch(name string, up bool) {
	if !c.usable() {
		return
	}
	c.watch.WithLabelValues(name).Set(bool01(up))
}

func bool01(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// StoreBatch counts a request that carried n of a Group's store
// operations of kind op. It implements lead.BatchInstruments. The
// renewals' requests are the renewals
// (tenure_renewal_duration_seconds_count) less those sent in batches
// (tenure_store_batched_operations_total) plus the batches
// (tenure_store_batches_total).
func (c *Collectors) StoreBatch(op string, n int, _ time.Duration) {
	if !c.usable() {
		return
	}
	c.batches.WithLabelValues(op).Inc()
	c.batched.WithLabelValues(op).Add(float64(n))
}
