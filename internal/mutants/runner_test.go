package mutants

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// synthetic writes a tiny module into a new git work tree: package a
// (Add tested, Sub not, Double tested only through b) and package b.
func synthetic(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/syn\n\ngo 1.26\n",
		"a/a.go": "package a\n\nfunc Add(x, y int) int { return x + y }\n\nfunc Sub(x, y int) int { return x - y }\n\nfunc Double(x int) int { return 2 * x }\n",
		"a/a_test.go": "package a\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(\"Add(2, 3) != 5\")\n\t}\n}\n\n" +
			"func TestNothing(t *testing.T) {}\n",
		"b/b.go":      "package b\n\nimport \"example.com/syn/a\"\n\nfunc Quad(x int) int { return a.Double(a.Double(x)) }\n",
		"b/b_test.go": "package b\n\nimport \"testing\"\n\nfunc TestQuad(t *testing.T) {\n\tif Quad(1) != 4 {\n\t\tt.Fatal(\"Quad(1) != 4\")\n\t}\n}\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Skipf("git init: %v: %s", err, out)
	}
	return dir
}

// The runner tells a mutant caught by the expected package's test, one
// caught only by a package that imports the mutated one, one no test
// catches, a stale one and one that breaks the build: only the first two
// are catches, and the mutated file is restored after each.
func TestRunnerOnASyntheticModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and tests a module five times")
	}
	root := synthetic(t)
	entry := func(name, orig, repl string) Mutant {
		return Mutant{Name: name, File: "a/a.go", Original: orig, Replacement: repl, Reason: "r", Packages: []string{"./a"}}
	}
	caught := entry("add-subtracts", "return x + y", "return x - y")
	caught.Tests = "TestAdd"
	c := []Mutant{
		caught,
		entry("double-triples", "return 2 * x", "return 3 * x"),
		entry("sub-adds", "return x - y", "return x + y"),
		entry("stale", "return x * y", "return x / y"),
		entry("build-break", "return x + y }", "return x + }"),
	}
	var out strings.Builder
	scratch := filepath.Join(t.TempDir(), "scratch")
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	r := &Runner{Root: root, Scratch: scratch, Modules: []string{"."}, Timeout: 2 * time.Minute, Out: &out}
	res, err := r.Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	// A killed go test leaves its build directory, and its tests their
	// servers' directories: none may outlive the run.
	if left, err := os.ReadDir(tmp); err != nil || len(left) > 0 {
		t.Errorf("the run left %v in $TMPDIR (%v)", left, err)
	}
	want := []struct {
		o  Outcome
		by string
	}{{Caught, "a.TestAdd"}, {Caught, "b.TestQuad"}, {Survived, ""}, {Error, ""}, {Error, ""}}
	if len(res) != len(want) {
		t.Fatalf("%d results, want %d:\n%s", len(res), len(want), out.String())
	}
	for i, w := range want {
		if res[i].Outcome != w.o || res[i].By != w.by {
			t.Errorf("%s: outcome %d by %q (err %v), want %d by %q", res[i].Name, res[i].Outcome, res[i].By, res[i].Err, w.o, w.by)
		}
	}
	if AllCaught(res) {
		t.Error("AllCaught with a survivor")
	}
	if !strings.Contains(out.String(), "SURVIVED") || !strings.Contains(out.String(), "caught by a.TestAdd") {
		t.Errorf("report:\n%s", out.String())
	}
	got, err := os.ReadFile(filepath.Join(scratch, "a", "a.go"))
	if err != nil {
		t.Fatal(err)
	}
	orig, _ := os.ReadFile(filepath.Join(root, "a", "a.go"))
	if string(got) != string(orig) {
		t.Errorf("the scratch copy was not restored:\n%s", got)
	}
	if !AllCaught(res[:2]) {
		t.Error("AllCaught false for two catches")
	}
}

// A test of a package that imports the mutated one and fails whatever the
// code is (a flaky test) is no catch: the mutant is undecided.
func TestRunnerDoesNotCountAFailureWithoutTheMutant(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and tests a module")
	}
	root := synthetic(t)
	for name, body := range map[string]string{
		"c/c.go":      "package c\n\nimport \"example.com/syn/a\"\n\nvar _ = a.Sub\n",
		"c/c_test.go": "package c\n\nimport \"testing\"\n\nfunc TestBroken(t *testing.T) { t.Fatal(\"broken whatever the code\") }\n",
	} {
		if err := os.MkdirAll(filepath.Join(root, "c"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m := Mutant{Name: "sub-adds", File: "a/a.go", Original: "return x - y", Replacement: "return x + y", Reason: "r", Packages: []string{"./a"}}
	r := &Runner{Root: root, Scratch: filepath.Join(t.TempDir(), "scratch"), Modules: []string{"."}, Timeout: 2 * time.Minute}
	res, err := r.Run(context.Background(), []Mutant{m})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Outcome != Undecided || !strings.Contains(res[0].String(), "c.TestBroken fails without the mutant") {
		t.Fatalf("results %+v; want undecided, c.TestBroken failing without the mutant", res)
	}
}

// Two runs sharing a scratch copy would apply their mutants to each
// other's tests: the second is refused while the first holds it.
func TestRunnerRefusesAScratchCopyInUse(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		t.Skip("the scratch copy is locked on Unix only")
	}
	root := synthetic(t)
	scratch := filepath.Join(t.TempDir(), "scratch")
	unlock, err := lockScratch(scratch + ".lock")
	if err != nil {
		t.Fatal(err)
	}
	m := Mutant{Name: "sub-adds", File: "a/a.go", Original: "return x - y", Replacement: "return x + y", Reason: "r", Packages: []string{"./a"}}
	r := &Runner{Root: root, Scratch: scratch, Modules: []string{"."}, Timeout: 2 * time.Minute}
	if _, err := r.Run(context.Background(), []Mutant{m}); err == nil || !strings.Contains(err.Error(), "another run uses the scratch copy") {
		t.Fatalf("Run with the scratch copy locked = %v; want it refused", err)
	}
	unlock()
}
