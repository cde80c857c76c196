package tenureotel_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
	tenureotel "github.com/tenure-go/tenure/otel"
	"github.com/tenure-go/tenure/store/memstore"
)

func fastConfig() lease.Config {
	return lease.Config{
		LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryInterval: 500 * time.Millisecond,
		RetryJitter: 0, BackendTimeout: time.Second, ErrorInterval: 10 * time.Second,
	}
}

// process is one elector's telemetry, read through the SDK's in-memory
// reader and span recorder.
type process struct {
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
	tel    *tenureotel.Telemetry
}

func newProcess(t *testing.T) *process {
	t.Helper()
	p := &process{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	tel, err := tenureotel.New(
		tenureotel.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(p.reader))),
		tenureotel.WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(p.spans))))
	if err != nil {
		t.Fatal(err)
	}
	p.tel = tel
	return p
}

// metrics reads every data point, as "metric{attr=value,...} value"
// lines, sorted; a histogram's value is its count, and units follow the
// metric's name in brackets.
func (p *process) metrics(t *testing.T) map[string]string {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := p.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != tenureotel.ScopeName {
			t.Errorf("scope %q; want %q", sm.Scope.Name, tenureotel.ScopeName)
		}
		for _, m := range sm.Metrics {
			key := func(s attribute.Set) string { return fmt.Sprintf("%s[%s]{%s}", m.Name, m.Unit, attrs(s)) }
			switch d := m.Data.(type) {
			case metricdata.Gauge[int64]:
				for _, dp := range d.DataPoints {
					out[key(dp.Attributes)] = fmt.Sprint(dp.Value)
				}
			case metricdata.Gauge[float64]:
				for _, dp := range d.DataPoints {
					out[key(dp.Attributes)] = fmt.Sprint(dp.Value)
				}
			case metricdata.Sum[int64]:
				if !d.IsMonotonic {
					t.Errorf("%s is not monotonic", m.Name)
				}
				for _, dp := range d.DataPoints {
					out[key(dp.Attributes)] = fmt.Sprint(dp.Value)
				}
			case metricdata.Histogram[float64]:
				for _, dp := range d.DataPoints {
					out[key(dp.Attributes)] = fmt.Sprintf("count %d", dp.Count)
				}
			default:
				t.Errorf("%s: unexpected data %T", m.Name, m.Data)
			}
		}
	}
	return out
}

func attrs(s attribute.Set) string {
	var kv []string
	for _, a := range s.ToSlice() {
		kv = append(kv, fmt.Sprintf("%s=%s", a.Key, a.Value.String()))
	}
	sort.Strings(kv)
	return strings.Join(kv, ",")
}

// spanLines lists the ended spans as "name {attrs} status", with
// "@start-end" after, counted from t0, unless t0 is zero.
func (p *process) spanLines(t0 time.Time) []string {
	var out []string
	for _, s := range p.spans.Ended() {
		l := fmt.Sprintf("%s {%s} %s", s.Name(), attrs(attribute.NewSet(s.Attributes()...)), s.Status().Code)
		if !t0.IsZero() {
			l += fmt.Sprintf(" @%v-%v", s.StartTime().Sub(t0), s.EndTime().Sub(t0))
		}
		out = append(out, l)
	}
	return out
}

// start runs an elector of "job" on st with p's options.
func start(t *testing.T, st *memstore.Store[struct{}], id string, p *process) (*lead.Elector[struct{}], context.CancelFunc, chan lead.Change) {
	t.Helper()
	changes := make(chan lead.Change, 10)
	opts := append(p.tel.Options(), lead.WithIdentity(id), lead.WithConfig(fastConfig()), lead.WithLookupEnv(nil),
		lead.WithObserver(func(c lead.Change) { changes <- c }))
	e, err := lead.New("job", st, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go e.Run(ctx)
	t.Cleanup(func() { cancel(); <-e.Done() })
	return e, cancel, changes
}

func wantMetrics(t *testing.T, who string, got map[string]string, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s = %q; want %q (all: %v)", who, k, got[k], v, got)
		}
	}
}

// An election on memstore hands over from a to b: a acquires and renews
// with token 1 and releases on stopping, b acquires with token 2; each
// process's metrics and spans say so, with the election's name, the token
// and the outcome.
func TestElectionAndHandoverAreMeasuredAndTraced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New[struct{}]()
		pa, pb := newProcess(t), newProcess(t)
		began := time.Now()
		a, stopA, changesA := start(t, st, "a", pa)
		if c := <-changesA; c.Kind != lead.Started || c.Term.Token != 1 {
			t.Fatalf("a: %+v", c)
		}
		_, _, changesB := start(t, st, "b", pb)
		time.Sleep(1100 * time.Millisecond) // a renews at 0.5 s and 1 s
		synctest.Wait()

		stopA()
		<-a.Done()
		if c := <-changesB; c.Kind != lead.Started || c.Term.Token != 2 {
			t.Fatalf("b: %+v", c)
		}
		synctest.Wait()

		gotA := pa.metrics(t)
		wantMetrics(t, "a", gotA, map[string]string{
			"tenure.leader[{leader}]{tenure.election.name=job}":                                   "0",
			"tenure.term.token[{token}]{tenure.election.name=job}":                                "1",
			"tenure.leadership.changes[{change}]{tenure.change=started,tenure.election.name=job}": "1",
			"tenure.leadership.changes[{change}]{tenure.change=stopped,tenure.election.name=job}": "1",
			"tenure.last_renewal.timestamp[s]{tenure.election.name=job}":                          fmt.Sprint(float64(began.Add(time.Second).UnixNano()) / 1e9),
			"tenure.watch.up[{watch}]{tenure.election.name=job}":                                  "1",
			"tenure.lease.duration[s]{tenure.election.name=job}":                                  "3",
		})
		gotB := pb.metrics(t)
		wantMetrics(t, "b", gotB, map[string]string{
			"tenure.leader[{leader}]{tenure.election.name=job}":                                   "1",
			"tenure.term.token[{token}]{tenure.election.name=job}":                                "2",
			"tenure.leadership.changes[{change}]{tenure.change=started,tenure.election.name=job}": "1",
			"tenure.watch.up[{watch}]{tenure.election.name=job}":                                  "1",
		})
		for k := range gotB {
			if strings.Contains(k, "errors") || strings.Contains(k, "failures") || strings.Contains(k, "claim") {
				t.Errorf("b: %s = %s; want no failure and no claim", k, gotB[k])
			}
		}

		// The store answers at once (the bubble's clock stands still
		// meanwhile): a renews every RetryInterval, and may renew once
		// right after the create, as the watch's event of it comes;
		// likewise b after its acquire.
		linesA := pa.spanLines(began)
		renewals := 0
		for _, l := range linesA {
			if strings.HasPrefix(l, "tenure.renew ") {
				renewals++
			}
		}
		wantA := []string{
			"tenure.acquire {tenure.election.name=job,tenure.outcome=ok,tenure.token=1} Unset @0s-0s",
			"tenure.renew {tenure.election.name=job,tenure.outcome=ok,tenure.token=1} Unset @0s-0s",
			"tenure.renew {tenure.election.name=job,tenure.outcome=ok,tenure.token=1} Unset @500ms-500ms",
			"tenure.renew {tenure.election.name=job,tenure.outcome=ok,tenure.token=1} Unset @1s-1s",
			"tenure.release {tenure.election.name=job,tenure.outcome=ok,tenure.token=1} Unset @1.1s-1.1s",
		}
		if renewals == 2 {
			wantA = append(wantA[:1], wantA[2:]...)
		}
		if strings.Join(linesA, "\n") != strings.Join(wantA, "\n") {
			t.Errorf("a's spans:\n%s\nwant:\n%s", strings.Join(linesA, "\n"), strings.Join(wantA, "\n"))
		}
		wantMetrics(t, "a", gotA, map[string]string{
			"tenure.renewal.duration[s]{tenure.election.name=job}": fmt.Sprintf("count %d", renewals),
		})
		linesB := pb.spanLines(began)
		if len(linesB) == 0 || linesB[0] != "tenure.acquire {tenure.election.name=job,tenure.outcome=ok,tenure.token=2} Unset @1.1s-1.1s" {
			t.Errorf("b's spans: %q; want its acquire with token 2 first", linesB)
		}
		for _, l := range linesB[min(1, len(linesB)):] {
			if l != "tenure.renew {tenure.election.name=job,tenure.outcome=ok,tenure.token=2} Unset @1.1s-1.1s" {
				t.Errorf("b's span after the acquire: %q; want a renewal", l)
			}
		}
	})
}

// A Group's electors, given the options through lead.NewGroup, are each
// measured and traced under their own name.
func TestGroupElectorsAreMeasuredAndTraced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newProcess(t)
		g, err := lead.NewGroup(memstore.New[struct{}](), append(p.tel.Options(), lead.WithIdentity("a"), lead.WithConfig(fastConfig()), lead.WithLookupEnv(nil))...)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = g.Run(ctx) }()
		defer func() { cancel(); <-done }()
		for _, n := range []string{"x", "y"} {
			if _, err := g.Add(n); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		got := p.metrics(t)
		for _, n := range []string{"x", "y"} {
			wantMetrics(t, n, got, map[string]string{
				"tenure.leader[{leader}]{tenure.election.name=" + n + "}":    "1",
				"tenure.term.token[{token}]{tenure.election.name=" + n + "}": "1",
			})
		}
		acquired := map[string]bool{}
		for _, l := range p.spanLines(time.Time{}) {
			acquired[l] = true
		}
		for _, n := range []string{"x", "y"} {
			if l := "tenure.acquire {tenure.election.name=" + n + ",tenure.outcome=ok,tenure.token=1} Unset"; !acquired[l] {
				t.Errorf("no span %q among %v", l, p.spanLines(time.Time{}))
			}
		}
	})
}

// A failed operation's span has the status Error and its error recorded;
// a conflict's is not an error; a handover is traced as tenure.handover.
// A failed renewal counts in tenure.renewal.failures and
// tenure.store.errors; a conflict in neither.
func TestFailuresConflictsAndHandoversAreTraced(t *testing.T) {
	p := newProcess(t)
	at := time.Unix(1000, 0)
	down := errors.New("connection refused")
	p.tel.LeaseOp(lead.Operation{Name: "job", Op: lead.OpRenew, Token: 7, Start: at, End: at.Add(time.Second), Outcome: lead.OutcomeError, Err: down})
	p.tel.LeaseOp(lead.Operation{Name: "job", Op: lead.OpAcquire, Token: 8, Start: at, End: at, Outcome: lead.OutcomeConflict})
	p.tel.HandOver(lead.Operation{Name: "job", Token: 7, Start: at, End: at, Outcome: lead.OutcomeOK})
	p.tel.StoreOp("job", lead.OpRenew, time.Second, down)
	p.tel.StoreOp("job", lead.OpAcquire, time.Millisecond, lead.ErrNilArgument) // any error that is not an answer
	p.tel.EveryFailed("job", down)
	p.tel.Claim("job", 3, true)

	want := []string{
		"tenure.renew {tenure.election.name=job,tenure.outcome=error,tenure.token=7} Error",
		"tenure.acquire {tenure.election.name=job,tenure.outcome=conflict,tenure.token=8} Unset",
		"tenure.handover {tenure.election.name=job,tenure.outcome=ok,tenure.token=7} Unset",
	}
	if got := p.spanLines(time.Time{}); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("spans:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	s := p.spans.Ended()[0]
	if s.Status().Description != down.Error() || len(s.Events()) != 1 || s.Events()[0].Name != "exception" ||
		!s.StartTime().Equal(at) || !s.EndTime().Equal(at.Add(time.Second)) {
		t.Errorf("failed span: status %+v, events %+v, %v to %v; want the error recorded, from %v for 1s", s.Status(), s.Events(), s.StartTime(), s.EndTime(), at)
	}
	wantMetrics(t, "job", p.metrics(t), map[string]string{
		"tenure.renewal.failures[{failure}]{tenure.election.name=job}":                          "1",
		"tenure.store.errors[{error}]{tenure.election.name=job,tenure.store.operation=renew}":   "1",
		"tenure.store.errors[{error}]{tenure.election.name=job,tenure.store.operation=acquire}": "1",
		"tenure.every.errors[{error}]{tenure.election.name=job}":                                "1",
		"tenure.claim.waiting[{claim}]{tenure.election.name=job}":                               "1",
		"tenure.renewal.duration[s]{tenure.election.name=job}":                                  "count 1",
	})
}

// New refuses nil providers, naming the option; a nil Telemetry's options
// make lead.New fail; a nil Telemetry records nothing and panics nowhere.
func TestNilArguments(t *testing.T) {
	if _, err := tenureotel.New(tenureotel.WithMeterProvider(nil)); !errors.Is(err, tenureotel.ErrNilArgument) || !strings.Contains(err.Error(), "WithMeterProvider") {
		t.Errorf("New(WithMeterProvider(nil)) = %v; want ErrNilArgument naming it", err)
	}
	if _, err := tenureotel.New(tenureotel.WithTracerProvider(nil)); !errors.Is(err, tenureotel.ErrNilArgument) || !strings.Contains(err.Error(), "WithTracerProvider") {
		t.Errorf("New(WithTracerProvider(nil)) = %v; want ErrNilArgument naming it", err)
	}
	var nilT *tenureotel.Telemetry
	if _, err := lead.New("job", memstore.New[struct{}](), append(nilT.Options(), lead.WithLookupEnv(nil))...); !errors.Is(err, lead.ErrNilArgument) {
		t.Errorf("lead.New with a nil Telemetry's options = %v; want ErrNilArgument", err)
	}
	nilT.Observe(lead.Change{Kind: lead.Started})
	nilT.StoreOp("job", lead.OpRenew, time.Second, nil)
	nilT.EveryFailed("job", nil)
	nilT.LeaseOp(lead.Operation{})
	nilT.HandOver(lead.Operation{})
	nilT.Claim("job", 1, true)
	nilT.Watch("job", true)
	if tel, err := tenureotel.New(nil, tenureotel.WithClock(nil)); err != nil || tel == nil {
		t.Errorf("New with nil options = %v, %v; want the defaults", tel, err)
	}
}

// Tenure's own module requires nothing of OpenTelemetry: this module is
// where it is.
func TestMainModuleDoesNotRequireOpenTelemetry(t *testing.T) {
	b, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "go.opentelemetry.io/") {
			t.Errorf("../go.mod:%d: %s", i+1, strings.TrimSpace(l))
		}
	}
}
