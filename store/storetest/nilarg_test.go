package storetest_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/memstore"
	"github.com/tenure-go/tenure/store/storetest"
)

// nilCases are the calls with a nil argument; TestNilArgumentsCase runs the
// one named by STORETEST_NIL_CASE in a child process.
var nilCases = map[string]func(t *testing.T){
	"Run: nil newStore": func(t *testing.T) { storetest.Run[storetest.Meta](t, nil) },
	"Run: newStore returns nil": func(t *testing.T) {
		storetest.Run(t, func(*testing.T) store.Store[storetest.Meta] { return nil })
	},
	"Run: newStore returns a typed nil": func(t *testing.T) {
		storetest.Run(t, func(*testing.T) store.Store[storetest.Meta] { return (*memstore.Store[storetest.Meta])(nil) })
	},
	"Race: nil ctx": func(t *testing.T) {
		var ctx context.Context
		storetest.Race(t, ctx, memstore.New[storetest.Meta](), "job", 0, 1)
	},
	"Race: nil st": func(t *testing.T) { storetest.Race[storetest.Meta](t, context.Background(), nil, "job", 0, 1) },
	"Run: no samples of another type": func(t *testing.T) {
		storetest.Run(t, func(*testing.T) store.Store[string] { return memstore.New[string]() })
	},
	"Run: nil option": func(t *testing.T) {
		storetest.Run(t, func(*testing.T) store.Store[string] { return memstore.New[string]() }, nil)
	},
}

// wantMention is what each case's failure must name.
var wantMention = map[string]string{
	"Run: nil newStore":                 "newStore is nil",
	"Run: newStore returns nil":         "the store is nil",
	"Run: newStore returns a typed nil": "nil *memstore.Store",
	"Race: nil ctx":                     "ctx is nil",
	"Race: nil st":                      "the store is nil",
	"Run: no samples of another type":   "no metadata values of type string: pass some with storetest.WithSamples",
	"Run: nil option":                   "option 1 of 1 is nil",
}

func TestNilArgumentsCase(t *testing.T) {
	name := os.Getenv("STORETEST_NIL_CASE")
	if name == "" {
		t.Skip("run by TestNilArguments")
	}
	nilCases[name](t)
}

// The suite's functions fail the test, naming the nil argument, and do not
// panic.
func TestNilArguments(t *testing.T) {
	for name := range nilCases {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestNilArgumentsCase$", "-test.v")
			cmd.Env = append(os.Environ(), "STORETEST_NIL_CASE="+name)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the test passed; want it failed:\n%s", out)
			}
			text := string(out)
			if strings.Contains(text, "panic:") || !strings.Contains(text, store.ErrNilArgument.Error()) || !strings.Contains(text, wantMention[name]) {
				t.Fatalf("output does not report ErrNilArgument naming %q without a panic:\n%s", wantMention[name], text)
			}
		})
	}
}
