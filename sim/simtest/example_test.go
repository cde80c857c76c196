package simtest_test

import (
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/sim"
	"github.com/tenure-go/tenure/sim/simtest"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/memstore"
)

// Meta is the metadata the electors of these examples attach.
type Meta struct{ Addr string }

// Check, from a test of yours, sweeps seeds of runtime mode over your own
// store (or memstore by default) and fails the test for every seed that
// breaks a check, with its timeline and the command that replays it.
//
// Runtime mode needs the *testing.T of a test (testing/synctest runs only
// there), and examples get none, so this example is compiled but not run;
// TestExampleRun runs the one below.
func ExampleCheck() {
	var t *testing.T // the *testing.T of a test function
	simtest.Check(t, simtest.Options[Meta]{
		NewStore: func() store.Store[Meta] { return memstore.New[Meta]() }, // or your store
		Faults:   sim.DefaultFaults(),
		Seeds:    "1-200", // or a Budget; TENURE_SIM_SEEDS=N replays one
	})
}

// Run runs one seed: here three electors on memstore for a virtual minute
// with no fault, then the same with every fault of the default set.
func ExampleRun() {
	var t *testing.T // the *testing.T of a test function
	runExample(t, os.Stdout)
}

// runExample is ExampleRun's body.
func runExample(t *testing.T, w io.Writer) {
	for _, faults := range []sim.Faults{{}, sim.DefaultFaults()} {
		res, err := simtest.Run(t, simtest.Options[Meta]{
			Seed:     1,
			Duration: time.Minute,
			Config:   lease.DefaultConfig(),
			Faults:   faults,
		})
		if err != nil {
			panic(err)
		}
		fmt.Fprintf(w, "faults %v: violation %v, %d terms, elector time %v\n",
			faults, res.Err(), res.Terms, res.ElectorTime.Round(time.Second))
	}
}

// The output runExample gives; TestExampleRun checks it.
const exampleRunOutput = `faults calm: violation <nil>, 1 terms, elector time 3m0s
faults drift,crash,pause,partition,loss,slow,release: violation <nil>, 2 terms, elector time 2m44s
`
