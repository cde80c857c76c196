// Package picturetest checks, for the tests of sim and sim/simtest, that
// a Check that fails keeps the picture of the failing seed where it says.
package picturetest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tenure-go/tenure/sim/internal/sweep"
)

// child is set in the environment of the child process that runs the
// failing sweep.
const child = "TENURE_TEST_PICTURE_CHILD"

// pictureLine is how Check names the picture in its failure.
var pictureLine = regexp.MustCompile(`picture: (\S+)`)

// KeptOnFailure checks that the sweep fail runs, which fails seed, keeps
// its picture where Check says: in the test's artifact directory under go
// test -artifacts, else under os.TempDir. The sweep fails its test, so
// KeptOnFailure runs the test t again in a child process of the test
// binary, where it calls fail and returns.
func KeptOnFailure(t *testing.T, seed uint64, fail func()) {
	t.Helper()
	if os.Getenv(child) == "1" {
		fail()
		return
	}
	for _, artifacts := range []bool{false, true} {
		tmp, out := t.TempDir(), t.TempDir()
		args := []string{"-test.run=^" + t.Name() + "$", "-test.v"}
		if artifacts {
			args = append(args, "-test.artifacts", "-test.outputdir="+out)
		}
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), child+"=1", "TMPDIR="+tmp, sweep.EnvSeeds+"=")
		var b bytes.Buffer
		cmd.Stdout, cmd.Stderr = &b, &b
		if err := cmd.Run(); err == nil {
			t.Fatalf("artifacts %v: the failing sweep passed:\n%s", artifacts, b.String())
		}
		m := pictureLine.FindStringSubmatch(b.String())
		if m == nil {
			t.Fatalf("artifacts %v: no picture named:\n%s", artifacts, b.String())
		}
		want, name := filepath.Join(tmp, "tenure-sim", t.Name()), fmt.Sprintf("seed-%d.html", seed)
		if artifacts {
			want = filepath.Join(out, "_artifacts")
		}
		if !strings.HasPrefix(m[1], want+string(filepath.Separator)) || filepath.Base(m[1]) != name {
			t.Errorf("artifacts %v: picture at %s, want %s under %s", artifacts, m[1], name, want)
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
