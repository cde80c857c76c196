package simtest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tenure-go/tenure/sim"
)

// pictureChild makes TestCheckWritesThePictureOfAFailingSeed's child
// process run a sweep that fails.
const pictureChild = "TENURE_TEST_PICTURE_CHILD"

// driftBeyond is a sweep whose seed 2 makes two leaders: drift past what
// the timings tolerate.
var driftBeyond = Options[struct{}]{Seeds: "2", Duration: 5 * time.Minute,
	Faults: sim.Faults{DriftBeyond: true, Crash: true, Partition: true, Pause: true}}

// Check writes the picture of a failing seed and logs its path: into the
// test's artifact directory under go test -artifacts, else under
// os.TempDir. The sweep fails, so it runs in a child process of this test
// binary.
func TestCheckWritesThePictureOfAFailingSeed(t *testing.T) {
	if os.Getenv(pictureChild) == "1" {
		Check(t, driftBeyond)
		return
	}
	for _, artifacts := range []bool{false, true} {
		tmp, out := t.TempDir(), t.TempDir()
		args := []string{"-test.run=^TestCheckWritesThePictureOfAFailingSeed$", "-test.v"}
		if artifacts {
			args = append(args, "-test.artifacts", "-test.outputdir="+out)
		}
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), pictureChild+"=1", "TMPDIR="+tmp, sim.EnvSeeds+"=")
		var b bytes.Buffer
		cmd.Stdout, cmd.Stderr = &b, &b
		if err := cmd.Run(); err == nil {
			t.Fatalf("artifacts %v: the failing sweep passed:\n%s", artifacts, b.String())
		}
		m := regexp.MustCompile(`picture: (\S+)`).FindStringSubmatch(b.String())
		if m == nil {
			t.Fatalf("artifacts %v: no picture logged:\n%s", artifacts, b.String())
		}
		want := filepath.Join(tmp, "tenure-sim", "TestCheckWritesThePictureOfAFailingSeed")
		if artifacts {
			want = filepath.Join(out, "_artifacts")
		}
		if !strings.HasPrefix(m[1], want+string(filepath.Separator)) || filepath.Base(m[1]) != "seed-2.html" {
			t.Errorf("artifacts %v: picture at %s, want seed-2.html under %s", artifacts, m[1], want)
		}
		page, err := os.ReadFile(m[1])
		if err != nil {
			t.Fatalf("artifacts %v: %v", artifacts, err)
		}
		for _, s := range []string{`<svg id="picture"`, `id="verdict-mark" class="fail"`, `class="overlap"`} {
			if !bytes.Contains(page, []byte(s)) {
				t.Errorf("artifacts %v: the picture lacks %s", artifacts, s)
			}
		}
	}
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
