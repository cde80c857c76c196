package simtest

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tenure-go/tenure/sim"
	"github.com/tenure-go/tenure/sim/internal/picturetest"
)

// driftBeyond is a sweep whose seed 2 makes two leaders: drift past what
// the timings tolerate.
var driftBeyond = Options[struct{}]{Seeds: "2", Duration: 5 * time.Minute,
	Faults: sim.Faults{DriftBeyond: true, Crash: true, Partition: true, Pause: true}}

// Check keeps the picture of a failing seed where it says, with
// -artifacts and without.
func TestCheckWritesThePictureOfAFailingSeed(t *testing.T) {
	picturetest.KeptOnFailure(t, 2, func() { Check(t, driftBeyond) })
}

// A runtime-mode result draws its picture with the violation marked at
// its instant.
func TestResultWriteHTMLMarksTheViolation(t *testing.T) {
	o := driftBeyond
	o.Seed = 2
	res, err := Run(t, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Violation == nil {
		t.Fatal("seed 2 with drift beyond the bound passed")
	}
	var b bytes.Buffer
	if err := res.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf(`id="verdict-mark" class="fail" data-at="%d"`, int64(res.Violation.At)); !strings.Contains(b.String(), want) {
		t.Fatalf("the picture lacks %s", want)
	}
	if n := strings.Count(b.String(), `class="lane"`); n != 3 {
		t.Fatalf("%d lanes, want 3", n)
	}
}
