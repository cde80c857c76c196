// Package metricnames gathers what package metrics exports, for the tests
// that check the metrics' names and the queries that use them (the alert
// rules and the dashboard of deploy/): from the collectors themselves,
// registered and gathered, not from a list kept by hand.
package metricnames

import (
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/metrics"
)

// Family is one exported metric.
type Family struct {
	// Name is the metric's name.
	Name string
	// Type is its type as Prometheus's text format names it: COUNTER,
	// GAUGE, HISTOGRAM, ...
	Type string
	// Help is its help text.
	Help string
}

// Gather registers a fresh metrics.Collectors in a pedantic registry,
// gives each of its metrics a series, and gathers them. It fails tb
// unless every metric the collectors describe was gathered (a metric
// added to package metrics needs a series here).
func Gather(tb testing.TB) (*prometheus.Registry, []Family) {
	tb.Helper()
	c := metrics.New()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	c.Observe(lead.Change{Kind: lead.Started, Term: lead.Term{Name: "job", Token: 1}})
	c.Observe(lead.Change{Kind: lead.Stopped, Term: lead.Term{Name: "job", Token: 1}})
	for _, op := range []string{lead.OpRead, lead.OpAcquire, lead.OpRenew, lead.OpRelease} {
		c.StoreOp("job", op, time.Millisecond, nil)
		c.StoreOp("job", op, time.Millisecond, errors.New("down"))
	}
	c.EveryFailed("job", errors.New("boom"))
	c.StoreBatch(lead.OpRenew, 2, time.Millisecond)
	c.Claim("job", 1, true)
	c.Watch("job", true)
	c.LeaseOp(lead.Operation{Name: "job", Op: lead.OpRenew, Outcome: lead.OutcomeOK, LeaseDuration: 15 * time.Second})
	fams, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	descs := make(chan *prometheus.Desc, 100)
	c.Describe(descs)
	close(descs)
	if len(descs) != len(fams) {
		tb.Fatalf("%d metrics described, %d gathered: give every metric a series in metricnames.Gather", len(descs), len(fams))
	}
	out := make([]Family, 0, len(fams))
	for _, f := range fams {
		out = append(out, Family{Name: f.GetName(), Type: f.GetType().String(), Help: f.GetHelp()})
	}
	return reg, out
}

// Series returns the names of the series that fams export, as a query
// selects them: a histogram's _bucket, _sum and _count included.
func Series(fams []Family) map[string]bool {
	names := map[string]bool{}
	for _, f := range fams {
		names[f.Name] = true
		if f.Type == "HISTOGRAM" {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				names[f.Name+s] = true
			}
		}
	}
	return names
}
