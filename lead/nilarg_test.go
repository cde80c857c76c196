package lead_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tenure-go/tenure/fsm"
	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store/memstore"
)

// noPanic calls f and turns a panic into a test failure.
func noPanic(t *testing.T, name string, f func() error) (err error) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Errorf("%s panicked: %v", name, p)
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return f()
}

// nilRandT and nilInstruments implement the option interfaces; their nil
// pointers are typed nils.
type (
	nilRandT       struct{ fsm.Rand }
	nilInstruments struct{ lead.Instruments }
)

// Every exported function and method of package lead, given a nil or zero
// argument, returns an error that wraps ErrNilArgument and names the
// argument, and panics nowhere.
func TestNilArgumentsAreRefusedByName(t *testing.T) {
	st := memstore.New[meta]()
	ok, err := lead.New("job", st, lead.WithLookupEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	var nilE *lead.Elector[meta]
	zeroE := &lead.Elector[meta]{}
	noEnv := lead.WithLookupEnv(nil)
	body := func(context.Context, lead.Term) error { return nil }
	ctx := context.Background()
	var nilCtx context.Context
	tests := []struct {
		name    string
		call    func() error
		mention string
	}{
		{"New: nil store", func() error { _, err := lead.New[meta]("job", nil, noEnv); return err }, "store is nil"},
		{"New: typed nil store", func() error { _, err := lead.New[meta]("job", (*memstore.Store[meta])(nil), noEnv); return err }, "nil *memstore.Store"},
		{"New: zero memstore.Store", func() error { _, err := lead.New[meta]("job", &memstore.Store[meta]{}, noEnv); return err }, "not made by New"},
		{"New: wrapper around nil", func() error { _, err := lead.New[meta]("job", plainWrapper{}, noEnv); return err }, "field Store"},
		{"New: pointer wrapper around nil", func() error { _, err := lead.New[meta]("job", &flaky{}, noEnv); return err }, "field Store"},
		{"New: nil option", func() error { _, err := lead.New("job", st, noEnv, nil); return err }, "option 2 of 2 is nil"},
		{"New: WithObserver(nil)", func() error { _, err := lead.New("job", st, noEnv, lead.WithObserver(nil)); return err }, "WithObserver: f"},
		{"New: WithClock(typed nil)", func() error {
			var c *gateClock
			_, err := lead.New("job", st, noEnv, lead.WithClock(c))
			return err
		}, "WithClock: c"},
		{"New: WithRand(typed nil)", func() error {
			var r *nilRandT
			_, err := lead.New("job", st, noEnv, lead.WithRand(r))
			return err
		}, "WithRand: r"},
		{"New: WithInstruments(typed nil)", func() error {
			var i *nilInstruments
			_, err := lead.New("job", st, noEnv, lead.WithInstruments(i))
			return err
		}, "WithInstruments: i"},
		{"New: WithTracer(typed nil)", func() error {
			var tr *traceLog
			_, err := lead.New("job", st, noEnv, lead.WithTracer(tr))
			return err
		}, "WithTracer: t"},
		{"Run: nil ctx", func() error { return ok.Run(nilCtx) }, "Run: ctx"},
		{"Run: nil Elector", func() error { return nilE.Run(ctx) }, "*Elector is nil"},
		{"Run: zero Elector", func() error { return zeroE.Run(ctx) }, "not made by New"},
		{"InTerm: nil ctx", func() error { return ok.InTerm(nilCtx, body) }, "InTerm: ctx"},
		{"InTerm: nil fn", func() error { return ok.InTerm(ctx, nil) }, "InTerm: fn"},
		{"InTerm: nil Elector", func() error { return nilE.InTerm(ctx, body) }, "*Elector is nil"},
		{"InTerm: zero Elector", func() error { return zeroE.InTerm(ctx, body) }, "not made by New"},
		{"Lead: nil ctx", func() error { return ok.Lead(nilCtx, body) }, "Lead: ctx"},
		{"Lead: nil fn", func() error { return ok.Lead(ctx, nil) }, "Lead: fn"},
		{"Lead: nil option", func() error { return ok.Lead(ctx, body, nil) }, "option 1 of 1"},
		{"Lead: nil Elector", func() error { return nilE.Lead(ctx, body) }, "*Elector is nil"},
		{"Lead: zero Elector", func() error { return zeroE.Lead(ctx, body) }, "not made by New"},
		{"Every: nil ctx", func() error { return ok.Every(nilCtx, time.Second, body) }, "Every: ctx"},
		{"Every: nil Elector", func() error { return nilE.Every(ctx, time.Second, body) }, "*Elector is nil"},
		{"Every: zero Elector", func() error { return zeroE.Every(ctx, time.Second, body) }, "not made by New"},
		{"Every: nil fn", func() error { return ok.Every(ctx, time.Second, nil) }, "Every: fn"},
		{"Resign: nil ctx", func() error { return ok.Resign(nilCtx) }, "Resign: ctx"},
		{"Resign: nil Elector", func() error { return nilE.Resign(ctx) }, "*Elector is nil"},
		{"Resign: zero Elector", func() error { return zeroE.Resign(ctx) }, "not made by New"},
		{"SetMetadata: nil Elector", func() error { return nilE.SetMetadata(meta{}) }, "SetMetadata"},
		{"SetMetadata: zero Elector", func() error { return zeroE.SetMetadata(meta{}) }, "SetMetadata"},
		{"Reconfigure: nil Elector", func() error { return nilE.Reconfigure(fastConfig()) }, "Reconfigure"},
		{"Reconfigure: zero Elector", func() error { return zeroE.Reconfigure(fastConfig()) }, "Reconfigure"},
		{"Err: nil Elector", func() error { return nilE.Err() }, "Err"},
		{"Err: zero Elector", func() error { return zeroE.Err() }, "Err"},
		{"Gate.IsLeader: nil ctx", func() error { return ok.Gate().IsLeader(nilCtx) }, "Gate.IsLeader: ctx"},
		{"Gate.IsLeader: nil Elector", func() error { return nilE.Gate().IsLeader(ctx) }, "*Elector is nil"},
		{"Gate.IsLeader: zero Gate", func() error { return lead.Gate[meta]{}.IsLeader(ctx) }, "*Elector is nil"},
	}
	for _, tt := range tests {
		err := noPanic(t, tt.name, tt.call)
		if !errors.Is(err, lead.ErrNilArgument) || !strings.Contains(err.Error(), tt.mention) {
			t.Errorf("%s = %v; want ErrNilArgument naming %q", tt.name, err, tt.mention)
		}
	}
	if _, err := lead.New[meta]("job", nil, noEnv); !errors.Is(err, lead.ErrNilStore) {
		t.Errorf("New(nil store) = %v, want ErrNilStore", err)
	}

	// The methods without an error report that a nil or zero Elector does
	// not lead, and give zero values; none panics.
	for _, e := range []*lead.Elector[meta]{nilE, zeroE} {
		label := fmt.Sprintf("%T %v", e, e == nil)
		noPanic(t, label+" queries", func() error {
			if e.IsLeader() || e.ConfirmedWithin(time.Hour) || e.Status().Leading || e.Status().InTerm {
				t.Errorf("%s says it leads", label)
			}
			if _, ok := e.Term(); ok {
				t.Errorf("%s has a term", label)
			}
			if _, ok := e.Record(); ok {
				t.Errorf("%s has a record", label)
			}
			if e.Name() != "" || e.Identity() != "" || e.Config() != (lease.Config{}) {
				t.Errorf("%s: Name %q, Identity %q, Config %+v", label, e.Name(), e.Identity(), e.Config())
			}
			for what, ch := range map[string]<-chan struct{}{"Ready": e.Ready(), "Done": e.Done()} {
				select {
				case <-ch:
				default:
					t.Errorf("%s: %s is not closed; Run returns at once", label, what)
				}
			}
			return nil
		})
	}

	// The Clock, Rand, logger and Instruments options keep their defaults
	// when given a plain nil.
	if _, err := lead.New("job", st, noEnv, lead.WithClock(nil), lead.WithRand(nil), lead.WithLogger(nil), lead.WithInstruments(nil)); err != nil {
		t.Errorf("New with nil defaults = %v", err)
	}
}
