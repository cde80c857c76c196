package testcluster

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
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

func TestHandovers(t *testing.T) {
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
