package testcluster

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/memstore"
)

// fatalTB records the message of Fatalf and ends the goroutine, as a
// test's Fatalf does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestHandoversReadsAndBoundsTheEnvironment(t *testing.T) {
	for _, tc := range []struct {
		env   string
		want  int
		fails bool
	}{
		{env: "", want: 20},
		{env: "1", want: 1},
		{env: "100", want: 100},
		{env: "100000", want: 100000},
		{env: "0", fails: true},
		{env: "-5", fails: true},
		{env: "100001", fails: true},
		{env: "ten", fails: true},
		{env: " 100", fails: true},
	} {
		t.Run(fmt.Sprintf("%q", tc.env), func(t *testing.T) {
			t.Setenv("TENURE_HANDOVERS", tc.env)
			tb := &fatalTB{TB: t}
			got := -1
			done := make(chan struct{})
			go func() {
				defer close(done)
				got = Handovers(tb)
			}()
			<-done
			switch {
			case tc.fails && tb.msg == "":
				t.Fatalf("Handovers = %d, want a failure", got)
			case tc.fails && !strings.Contains(tb.msg, "TENURE_HANDOVERS"):
				t.Fatalf("the failure %q does not name the variable", tb.msg)
			case !tc.fails && (tb.msg != "" || got != tc.want):
				t.Fatalf("Handovers = %d (failure %q), want %d", got, tb.msg, tc.want)
			}
		})
	}
}

// TestMeasureHandoverPairedCallsFloorBetweenHandovers checks that floor
// runs once before each handover, with a leader settled in the record,
// and that every handover passes the lease to another holder between two
// calls (and after the last); each call's handover comes back, in order,
// beside one of the electors'.
func TestMeasureHandoverPairedCallsFloorBetweenHandovers(t *testing.T) {
	shared := memstore.New[string]()
	var holders []string
	const n = 4
	hs, floors := MeasureHandoverPaired(t, "job", FastConfig(), n, func(testing.TB) store.Store[string] { return shared }, func() Handover {
		r, _, err := shared.Get(t.Context(), "job")
		if err != nil {
			t.Fatalf("floor: %v", err)
		}
		holders = append(holders, r.Holder)
		return Handover{Total: time.Duration(len(holders))}
	})
	if len(hs) != n || len(holders) != n {
		t.Fatalf("%d handovers and %d calls of floor, want %d of each", len(hs), len(holders), n)
	}
	for i, f := range floors {
		if want := time.Duration(i + 1); f.Total != want {
			t.Errorf("floor handover %d: Total %v, want %v (the %d-th call's, in order)", i, f.Total, want, i+1)
		}
	}
	if len(floors) != n {
		t.Errorf("%d floor handovers, want %d", len(floors), n)
	}
	for i, h := range holders {
		if h == "" {
			t.Errorf("call %d of floor: the lease is free, want a settled leader", i)
		}
		if i > 0 && h == holders[i-1] {
			t.Errorf("calls %d and %d of floor both saw %q lead: no handover between them", i-1, i, h)
		}
	}
	// The last call came before the last handover.
	last, _, err := shared.Get(t.Context(), "job")
	if err != nil {
		t.Fatal(err)
	}
	if last.Holder == holders[n-1] {
		t.Errorf("the last call of floor saw %q lead, who leads after the last handover", last.Holder)
	}
	for i, h := range hs {
		if h.Total <= 0 {
			t.Errorf("handover %d: Total %v", i, h.Total)
		}
	}
}
