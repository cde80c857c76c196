package realtime_test

import (
	"context"
	"fmt"
	"time"

	"github.com/tenure-go/tenure/sim"
	"github.com/tenure-go/tenure/sim/realtime"
)

// Run runs runtime mode outside a test: three real lead.Electors on
// memstore, in real time at 20 times its speed, first with no fault for
// 30 s of their time (1.5 s of wall-clock time), then with crashes and
// partitions for a minute (3 s). The schedule, the terms and the elector
// time depend on scheduling and vary from run to run; the verdict does not:
// the checks report only violations the reads prove, or disagreements that
// outlast the measured scheduling delay.
func ExampleRun() {
	for _, faults := range []sim.Faults{{}, {Crash: true, Partition: true}} {
		d := 30 * time.Second
		if faults != (sim.Faults{}) {
			d = time.Minute
		}
		res, err := realtime.Run(context.Background(), realtime.Options[struct{}]{
			Seed: 1, Duration: d, Faults: faults, Speed: 20,
		})
		if err != nil {
			panic(err)
		}
		fmt.Printf("faults %v: violation %v, a leader elected: %v\n", faults, res.Err(), res.Terms > 0)
	}
	// Output:
	// faults calm: violation <nil>, a leader elected: true
	// faults crash,partition: violation <nil>, a leader elected: true
}
