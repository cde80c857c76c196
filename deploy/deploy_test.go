package deploy_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"

	"github.com/tenure-go/tenure/internal/testing/metricnames"
)

const (
	rulesFile     = "prometheus/tenure-alerts.yaml"
	rulesTestFile = "prometheus/tenure-alerts_test.yaml"
	dashboardFile = "grafana/tenure.json"
)

// exported returns the names of the series package metrics exports.
func exported(t *testing.T) map[string]bool {
	t.Helper()
	_, fams := metricnames.Gather(t)
	return metricnames.Series(fams)
}

var promql = parser.NewParser(parser.Options{})

// metricNames parses expr and returns the metric names it selects.
func metricNames(expr string) ([]string, error) {
	e, err := promql.ParseExpr(expr)
	if err != nil {
		return nil, err
	}
	var names []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		for _, m := range vs.LabelMatchers {
			if m.Name == model.MetricNameLabel {
				name = m.Value
			}
		}
		names = append(names, name)
		return nil
	})
	if len(names) == 0 {
		return nil, fmt.Errorf("%q selects no metric", expr)
	}
	return names, nil
}

// unknown returns the names expr uses that are not in known.
func unknown(expr string, known map[string]bool) ([]string, error) {
	names, err := metricNames(expr)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range names {
		if !known[n] {
			out = append(out, n)
		}
	}
	return out, nil
}

// ruleGroups is the rule file's format (Prometheus's rulefmt, alerting
// rules only).
type ruleGroups struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert       string            `json:"alert"`
			Expr        string            `json:"expr"`
			For         string            `json:"for,omitempty"`
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"rules"`
	} `json:"groups"`
}

// parseRules reads the rule file, refusing fields the format does not
// have.
func parseRules(t *testing.T) ruleGroups {
	t.Helper()
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var g ruleGroups
	if err := yaml.UnmarshalStrict(b, &g); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	return g
}

// The alert rules parse (the file's format and every PromQL expression;
// promtool check rules checks more where it is installed), there is one
// for each situation an operator must hear of, and they use only metrics
// package metrics exports.
func TestAlertRulesUseOnlyExportedMetrics(t *testing.T) {
	known := exported(t)
	var alerts []string
	for _, g := range parseRules(t).Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
			if r.For != "" {
				if _, err := time.ParseDuration(r.For); err != nil {
					t.Errorf("%s: for: %v", r.Alert, err)
				}
			}
			bad, err := unknown(r.Expr, known)
			if err != nil {
				t.Errorf("%s: %v", r.Alert, err)
			}
			if len(bad) != 0 {
				t.Errorf("%s uses %v, which package metrics does not export", r.Alert, bad)
			}
			if r.Annotations["summary"] == "" || r.Annotations["description"] == "" || r.Labels["severity"] == "" {
				t.Errorf("%s: want a summary, a description and a severity", r.Alert)
			}
		}
	}
	sort.Strings(alerts)
	want := []string{"TenureClaimWaiting", "TenureFollowerWatchDown", "TenureNoLeader", "TenureRenewalsFailing", "TenureTwoLeaders"}
	if !slices.Equal(alerts, want) {
		t.Errorf("alerts %v; want %v", alerts, want)
	}
}

// grafanaVar matches the interval variables Grafana puts in a query
// before Prometheus sees it.
var grafanaVar = regexp.MustCompile(`\$__(rate_interval|interval|range)`)

// labelValues matches Grafana's label_values(metric, label) query of a
// template variable.
var labelValues = regexp.MustCompile(`^label_values\(([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,\s*[a-zA-Z_][a-zA-Z0-9_]*\)$`)

// queries returns every "expr" of the dashboard (the panels' queries) and
// the templating variables' queries.
func queries(t *testing.T) (exprs, vars []string) {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
		Templating struct {
			List []struct {
				Name       string
				Definition string
			}
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		vars = append(vars, v.Definition)
	}
	return exprs, vars
}

// Every query of the dashboard parses as PromQL (once Grafana's interval
// variables are replaced as Grafana does) and uses only metrics package
// metrics exports.
func TestDashboardUsesOnlyExportedMetrics(t *testing.T) {
	known := exported(t)
	exprs, vars := queries(t)
	if len(exprs) == 0 {
		t.Fatal("no query in the dashboard")
	}
	for _, e := range exprs {
		bad, err := unknown(grafanaVar.ReplaceAllString(e, "5m"), known)
		if err != nil {
			t.Errorf("query %q: %v", e, err)
		}
		if len(bad) != 0 {
			t.Errorf("query %q uses %v, which package metrics does not export", e, bad)
		}
	}
	for _, v := range vars {
		m := labelValues.FindStringSubmatch(v)
		if m == nil || !known[m[1]] {
			t.Errorf("variable query %q: want label_values(<an exported metric>, <label>)", v)
		}
	}
}

// The check of names catches a query of a metric that does not exist,
// and one that does not parse.
func TestUnknownMetricsAreCaught(t *testing.T) {
	known := exported(t)
	for _, tc := range []struct {
		expr string
		want []string
		bad  bool
	}{
		{`sum by (name) (tenure_leader) > 1`, nil, false},
		{`sum by (name) (tenure_leaders) > 1`, []string{"tenure_leaders"}, false},
		{`rate(tenure_renewal_failures[5m]) > 0 unless tenure_leader`, []string{"tenure_renewal_failures"}, false},
		{`{__name__="tenure_watch_down"} == 1`, []string{"tenure_watch_down"}, false},
		{`histogram_quantile(0.99, rate(tenure_renewal_duration_seconds_bucket[5m]))`, nil, false},
		{`sum by (name) (tenure_leader > 1`, nil, true},
	} {
		got, err := unknown(tc.expr, known)
		if (err != nil) != tc.bad || !slices.Equal(got, tc.want) {
			t.Errorf("unknown(%q) = %v, %v; want %v (error: %v)", tc.expr, got, err, tc.want, tc.bad)
		}
	}
}

// promtool (Debian's prometheus package) checks the rules and runs their
// unit tests (prometheus/tenure-alerts_test.yaml): each alert fires in its
// situation and not in the others. Without promtool the test skips, or
// fails when TENURE_REQUIRE_BACKENDS=1.
func TestAlertRulesPassPromtool(t *testing.T) {
	path, err := exec.LookPath("promtool")
	if err != nil {
		msg := "promtool not found (make backends installs Debian's prometheus package, which has it)"
		if os.Getenv("TENURE_REQUIRE_BACKENDS") == "1" {
			t.Fatalf("%s (TENURE_REQUIRE_BACKENDS=1, so this is a failure)", msg)
		}
		t.Skipf("%s (skipping; set TENURE_REQUIRE_BACKENDS=1 to make this a failure)", msg)
	}
	for _, args := range [][]string{{"check", "rules", rulesFile}, {"test", "rules", rulesTestFile}} {
		out, err := exec.Command(path, args...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "SUCCESS") {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
