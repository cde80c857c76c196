package metrics_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tenure-go/tenure/internal/testing/metricnames"
)

var (
	snakeName = regexp.MustCompile(`^tenure_[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	// Units other than the base ones Prometheus and OpenTelemetry's
	// Prometheus names use (seconds, bytes, ratios).
	nonBaseUnit = regexp.MustCompile(`_(milliseconds|microseconds|nanoseconds|ms|us|ns|minutes|hours|days|kilobytes|megabytes|gigabytes|percent)(_|$)`)
)

// nameProblems lists how a metric's name, type and help break the
// Prometheus and OpenTelemetry naming conventions.
func nameProblems(name string, typ string, help string) []string {
	var p []string
	if !snakeName.MatchString(name) {
		p = append(p, "not snake_case under tenure_")
	}
	if nonBaseUnit.MatchString(name) {
		p = append(p, "a unit that is not a base unit")
	}
	counter := typ == "COUNTER"
	if counter != strings.HasSuffix(name, "_total") {
		p = append(p, "_total on a counter and only on a counter")
	}
	timed := strings.Contains(name, "duration") || strings.Contains(name, "timestamp") || strings.Contains(name, "latency")
	if (timed || typ == "HISTOGRAM" || typ == "SUMMARY") && !strings.HasSuffix(name, "_seconds") && !strings.HasSuffix(name, "_bytes") {
		p = append(p, "a histogram, duration or time ends in its unit (_seconds, _bytes)")
	}
	if help == "" {
		p = append(p, "no help")
	} else if first := help[0]; !(first >= 'A' && first <= 'Z' || first >= '0' && first <= '9') || !strings.HasSuffix(help, ".") {
		p = append(p, "help is a sentence: a capital or a digit first, a full stop last")
	}
	return p
}

// Every metric the package exports has a snake_case name under tenure_
// with its unit in base units, _total on counters only, and help text
// that is a sentence; and promlint finds nothing.
func TestMetricNamesAndHelpFollowConventions(t *testing.T) {
	reg, fams := metricnames.Gather(t)
	for _, f := range fams {
		if p := nameProblems(f.Name, f.Type, f.Help); len(p) != 0 {
			t.Errorf("%s (%s): %s", f.Name, f.Type, strings.Join(p, "; "))
		}
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}

// The convention check fails names and help that break the conventions.
func TestNameProblemsFindsBrokenConventions(t *testing.T) {
	for _, tc := range []struct {
		name string
		typ  string
		help string
		want string
	}{
		{"tenure_renewal_failures", "COUNTER", "Failures.", "_total"},
		{"tenure_leader_total", "GAUGE", "Leads.", "_total"},
		{"tenure_renewalDuration_seconds", "HISTOGRAM", "Round trips.", "snake_case"},
		{"tenure_renewal_duration_milliseconds", "HISTOGRAM", "Round trips.", "base unit"},
		{"tenure_renewal_duration", "HISTOGRAM", "Round trips.", "ends in its unit"},
		{"tenure_last_renewal_timestamp", "GAUGE", "When.", "ends in its unit"},
		{"tenure_leader", "GAUGE", "", "no help"},
		{"tenure_leader", "GAUGE", "leads", "sentence"},
		{"leader", "GAUGE", "Leads.", "under tenure_"},
	} {
		got := strings.Join(nameProblems(tc.name, tc.typ, tc.help), "; ")
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s %s %q: problems %q; want one about %q", tc.name, tc.typ, tc.help, got, tc.want)
		}
	}
	if p := nameProblems("tenure_renewal_duration_seconds", "HISTOGRAM", "Round trips."); len(p) != 0 {
		t.Errorf("a conforming name: problems %v", p)
	}
}
