package tenureotel_test

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/tenure-go/tenure/internal/testing/metricnames"
	"github.com/tenure-go/tenure/lead"
)

// instruments gives every instrument of a fresh Telemetry a data point
// and collects them.
func instruments(t *testing.T) []metricdata.Metrics {
	t.Helper()
	p := newProcess(t)
	p.tel.Observe(lead.Change{Kind: lead.Started, Term: lead.Term{Name: "job", Token: 1}})
	for _, op := range []string{lead.OpRead, lead.OpAcquire, lead.OpRenew, lead.OpRelease} {
		p.tel.StoreOp("job", op, time.Millisecond, nil)
		p.tel.StoreOp("job", op, time.Millisecond, errors.New("down"))
	}
	p.tel.EveryFailed("job", errors.New("boom"))
	p.tel.StoreBatch(lead.OpRenew, 2, time.Millisecond)
	p.tel.Claim("job", 1, true)
	p.tel.Watch("job", true)
	p.tel.LeaseOp(lead.Operation{Name: "job", Op: lead.OpRenew, Outcome: lead.OutcomeOK, LeaseDuration: 15 * time.Second})
	var rm metricdata.ResourceMetrics
	if err := p.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var out []metricdata.Metrics
	for _, sm := range rm.ScopeMetrics {
		out = append(out, sm.Metrics...)
	}
	return out
}

// counter reports whether m is a monotonic sum.
func counter(m metricdata.Metrics) bool {
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		return d.IsMonotonic
	case metricdata.Sum[float64]:
		return d.IsMonotonic
	}
	return false
}

// prometheusName is the name OpenTelemetry's Prometheus exporter gives m:
// dots become underscores, the unit s adds _seconds, a unit in braces
// adds nothing, and a counter ends in _total.
func prometheusName(m metricdata.Metrics) string {
	n := strings.ReplaceAll(m.Name, ".", "_")
	if m.Unit == "s" {
		n += "_seconds"
	}
	if counter(m) {
		n += "_total"
	}
	return n
}

var (
	otelName = regexp.MustCompile(`^tenure(\.[a-z][a-z0-9]*(_[a-z0-9]+)*)+$`)
	unitName = regexp.MustCompile(`^(s|\{[a-z]+\})$`)
)

// Every instrument follows OpenTelemetry's naming conventions (lowercase
// dot-separated namespaces under tenure., no unit or _total in the name, a
// UCUM unit or an annotation in braces, a description that is a sentence),
// and they are the facts package metrics exports: named as OpenTelemetry's
// Prometheus exporter names them, they are its metric names, one for one.
func TestInstrumentsFollowConventionsAndMatchPrometheus(t *testing.T) {
	var got []string
	for _, m := range instruments(t) {
		if !otelName.MatchString(m.Name) || strings.HasSuffix(m.Name, "_total") || strings.HasSuffix(m.Name, ".seconds") {
			t.Errorf("%s: want lowercase dot-separated namespaces under tenure., without a unit or _total", m.Name)
		}
		if !unitName.MatchString(m.Unit) {
			t.Errorf("%s: unit %q; want s or an annotation in braces", m.Name, m.Unit)
		}
		if d := m.Description; d == "" || !strings.HasSuffix(d, ".") || !(d[0] >= 'A' && d[0] <= 'Z' || d[0] >= '0' && d[0] <= '9') {
			t.Errorf("%s: description %q; want a sentence", m.Name, d)
		}
		got = append(got, prometheusName(m))
	}
	_, fams := metricnames.Gather(t)
	var want []string
	for _, f := range fams {
		want = append(want, f.Name)
	}
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("instruments as Prometheus names:\n%q\npackage metrics:\n%q", got, want)
	}
}
