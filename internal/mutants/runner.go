package mutants

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Outcome is what a run made of one mutant.
type Outcome uint8

const (
	// Caught: a test failed with the mutant applied.
	Caught Outcome = iota
	// Survived: every test that could catch it passed.
	Survived
	// Error: the entry is wrong (stale original text, a build or vet
	// failure) or the run could not be done; it is not a catch.
	Error
	// Undecided: the tests still running when the mutant's budget ran
	// out had not failed; it is not a catch.
	Undecided
)

// errBudget: a mutant's tests did not finish within its budget.
var errBudget = errors.New("budget ran out")

// Result is one mutant's outcome.
type Result struct {
	Name    string
	Outcome Outcome
	// By names what caught it: "pkg.TestName" (pkg relative to its
	// module's path), or "pkg (package failed)" when the package failed
	// outside any test.
	By string
	// Err says what went wrong, for Error.
	Err     error
	Elapsed time.Duration
}

// String is the result's line in a run's report.
func (r Result) String() string {
	what := ""
	switch r.Outcome {
	case Caught:
		what = "caught by " + r.By
	case Survived:
		what = "SURVIVED"
		if r.By != "" {
			what += " (" + r.By + ")"
		}
	case Error:
		what = "ERROR: " + firstLine(r.Err.Error())
	case Undecided:
		what = "UNDECIDED (" + firstLine(r.Err.Error()) + ")"
	}
	return fmt.Sprintf("%-44s %-70s %7.1fs", r.Name, what, r.Elapsed.Seconds())
}

// Runner applies mutants one at a time in a scratch copy of a module tree
// and runs the tests that should catch each.
type Runner struct {
	// Root is the repository (a git work tree) copied.
	Root string
	// Scratch is where the copy lives. Keep it at a fixed path: Go's build
	// cache is then reused from one run to the next.
	Scratch string
	// Modules are the directories, relative to Root, of the modules whose
	// tests count (the first one holds the mutated files).
	Modules []string
	// TestFlags are added to every go test (GOTESTFLAGS, e.g. -race).
	TestFlags []string
	// Timeout bounds each mutant's tests.
	Timeout time.Duration
	// Go is the go command ("go" if empty).
	Go string
	// Out gets one line per mutant and the summary (nil: discarded).
	Out io.Writer
	// Log gets the commands run (nil: discarded).
	Log io.Writer
	// ExpectedOnly skips the packages that import the mutated one: a
	// quick first pass. A mutant the expected packages miss is then
	// reported as Survived with By "expected packages only".
	ExpectedOnly bool

	deps map[string][]pkgDeps // module dir -> its test binaries' deps
}

// pkgDeps is a package of a module and every package its test binary
// builds.
type pkgDeps struct {
	pkg  string
	deps []string
}

// Run syncs the scratch copy, runs every mutant of c in turn and returns
// the results. The error is set when the run could not start.
func (r *Runner) Run(ctx context.Context, c []Mutant) ([]Result, error) {
	if r.Go == "" {
		r.Go = "go"
	}
	if r.Out == nil {
		r.Out = io.Discard
	}
	if r.Log == nil {
		r.Log = io.Discard
	}
	if len(r.Modules) == 0 {
		r.Modules = []string{"."}
	}
	if r.Timeout <= 0 {
		r.Timeout = 10 * time.Minute
	}
	if err := Check(c); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(r.Scratch, 0o755); err != nil {
		return nil, err
	}
	unlock, err := lockScratch(r.Scratch + ".lock")
	if err != nil {
		return nil, fmt.Errorf("mutants: %w", err)
	}
	defer unlock()
	if err := r.sync(ctx); err != nil {
		return nil, fmt.Errorf("mutants: copying %s to %s: %w", r.Root, r.Scratch, err)
	}
	start := time.Now()
	var out []Result
	for _, m := range c {
		res := r.runOne(ctx, m)
		out = append(out, res)
		fmt.Fprintln(r.Out, res)
		if ctx.Err() != nil {
			break
		}
	}
	var n [Undecided + 1]int
	for _, res := range out {
		n[res.Outcome]++
	}
	fmt.Fprintf(r.Out, "mutants: %d caught, %d survived, %d undecided, %d errors, of %d, in %.0fs\n", n[Caught], n[Survived], n[Undecided], n[Error], len(c), time.Since(start).Seconds())
	return out, nil
}

// AllCaught reports whether every result is a catch.
func AllCaught(rs []Result) bool {
	for _, r := range rs {
		if r.Outcome != Caught {
			return false
		}
	}
	return true
}

func (r *Runner) runOne(ctx context.Context, m Mutant) (res Result) {
	start := time.Now()
	res = Result{Name: m.Name, Outcome: Error}
	defer func() { res.Elapsed = time.Since(start) }()
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	restore, err := m.ApplyIn(r.Scratch)
	if err != nil {
		res.Err = err
		return res
	}
	defer func() {
		if err := restore(); err != nil && res.Err == nil {
			res.Outcome, res.Err = Error, fmt.Errorf("restoring %s: %w", m.File, err)
		}
	}()
	mod := r.Modules[0]
	dir := filepath.Join(r.Scratch, mod)
	pkgDir := "./" + filepath.ToSlash(filepath.Dir(filepath.Clean(m.File)))
	if out, err := r.command(ctx, dir, "vet", pkgDir).CombinedOutput(); err != nil {
		res.Err = fmt.Errorf("go vet %s with the mutant applied failed (a catalogue error, not a catch): %s", pkgDir, lastLines(out, 6))
		return res
	}
	type stage struct {
		mod    string
		run    string
		pkgs   []string
		verify bool // a catch here is confirmed (see confirm)
	}
	var stages []stage
	if m.Tests != "" {
		stages = append(stages, stage{mod, m.Tests, m.Packages, false})
	}
	stages = append(stages, stage{mod, "", m.Packages, false})
	ip, err := r.importPath(ctx, dir, pkgDir)
	if err != nil {
		res.Err = err
		return res
	}
	expected := map[string]bool{}
	for _, p := range m.Packages {
		eip, err := r.importPath(ctx, dir, p)
		if err != nil {
			res.Err = err
			return res
		}
		expected[eip] = true
	}
	for _, md := range r.Modules {
		if r.ExpectedOnly {
			break
		}
		dependents, err := r.dependents(ctx, md, ip)
		if err != nil {
			res.Err = err
			return res
		}
		var rest []string
		for _, p := range dependents {
			if !(md == mod && expected[p]) {
				rest = append(rest, p)
			}
		}
		if len(rest) > 0 {
			stages = append(stages, stage{md, "", rest, true})
		}
	}
	for _, s := range stages {
		by, err := r.test(ctx, s.mod, s.run, s.pkgs)
		if err == nil && by.name != "" && s.verify {
			err = r.confirm(ctx, s.mod, by, restore)
		}
		if err != nil {
			if errors.Is(err, errBudget) || errors.Is(err, errFlaky) {
				res.Outcome = Undecided
			}
			res.Err = err
			return res
		}
		if by.name != "" {
			res.Outcome, res.By = Caught, by.name
			return res
		}
	}
	res.Outcome = Survived
	if r.ExpectedOnly {
		res.By = "expected packages only"
	}
	return res
}

// testEvent is the part of go test -json's events the runner reads.
type testEvent struct {
	Action      string
	Package     string
	Test        string
	Output      string
	FailedBuild string
}

// failure is what failed first in a go test: the package (import path),
// its test ("" for a package that failed outside any test), and the name
// a report gives it (pkg.TestName, pkg relative to the module's path).
type failure struct {
	pkg, test, name string
}

// test runs go test on pkgs of module mod (only the tests matching run, if
// set) and returns what failed first (a zero failure if nothing did). It
// stops at the first failure. A build failure is an error.
func (r *Runner) test(ctx context.Context, mod, run string, pkgs []string) (failure, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	deadline, _ := ctx.Deadline()
	args := []string{"test", "-count=1", "-failfast", "-json"}
	args = append(args, r.TestFlags...)
	args = append(args, "-timeout", max(time.Until(deadline), time.Second).Round(time.Second).String())
	if run != "" {
		args = append(args, "-run", run)
	}
	args = append(args, pkgs...)
	cmd := r.command(ctx, filepath.Join(r.Scratch, mod), args...)
	// The run is killed at its first failure, and a killed go test leaves
	// its build directory behind, as its tests leave their servers' data
	// directories: all of them go in a directory of the run's own, removed
	// once it ends.
	tmp, err := os.MkdirTemp("", "tenure-mutants-run-")
	if err != nil {
		return failure{}, err
	}
	defer os.RemoveAll(tmp)
	// PostgreSQL runs as its own user when the tests run as root, and must
	// reach its directory through this one.
	if err := os.Chmod(tmp, 0o755); err != nil {
		return failure{}, err
	}
	cmd.Env = append(cmd.Env, "TMPDIR="+tmp, "GOTMPDIR="+tmp)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return failure{}, err
	}
	if err := cmd.Start(); err != nil {
		return failure{}, err
	}
	modPath := r.modulePath(mod)
	var (
		by       failure
		buildErr []string
	)
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			var ev testEvent
			if json.Unmarshal(sc.Bytes(), &ev) != nil {
				continue
			}
			switch {
			case ev.Action == "build-output":
				buildErr = append(buildErr, strings.TrimRight(ev.Output, "\n"))
			case ev.Action == "fail" && ev.FailedBuild != "":
				buildErr = append(buildErr, "build failed: "+ev.FailedBuild)
			case ev.Action == "fail" && len(buildErr) == 0:
				short := strings.TrimPrefix(strings.TrimPrefix(ev.Package, modPath), "/")
				if short == "" {
					short = ev.Package
				}
				by.pkg = ev.Package
				if ev.Test != "" {
					by.test, _, _ = strings.Cut(ev.Test, "/")
					by.name = short + "." + by.test
				} else {
					by.name = short + " (package failed)"
				}
				cancel() // stop the other packages: the mutant is caught
				return
			}
		}
	}()
	select {
	case <-scanned:
	case <-ctx.Done():
	}
	werr := cmd.Wait() // WaitDelay closes the pipe if something still holds it
	<-scanned
	if by.name != "" {
		return by, nil
	}
	if len(buildErr) > 0 {
		return failure{}, fmt.Errorf("go test: the build failed (a catalogue error, not a catch): %s", strings.Join(lastN(buildErr, 6), " | "))
	}
	if ctx.Err() != nil {
		return failure{}, fmt.Errorf("%w: go test %s", errBudget, shortList(pkgs, modPath))
	}
	if werr != nil {
		return failure{}, fmt.Errorf("go test %s: %v: %s", strings.Join(pkgs, " "), werr, lastLines(stderr.Bytes(), 6))
	}
	return failure{}, nil
}

// errFlaky: a test of a package the mutant was not expected to break
// failed, but not as a catch: alone, it passed with the mutant, or failed
// without it.
var errFlaky = errors.New("not confirmed")

// confirm checks a catch by a package the entry did not expect: the test
// that failed is run alone with the mutant applied (it must fail again),
// then without it (restore puts the file back; it must pass). A test that
// fails under load whatever the code is no catch.
func (r *Runner) confirm(ctx context.Context, mod string, by failure, restore func() error) error {
	if by.test == "" {
		return nil // no test to run alone
	}
	run := "^" + regexp.QuoteMeta(by.test) + "$"
	again, err := r.test(ctx, mod, run, []string{by.pkg})
	if err != nil {
		return err
	}
	if again.name == "" {
		return fmt.Errorf("%w: %s failed, then passed alone with the mutant", errFlaky, by.name)
	}
	if err := restore(); err != nil {
		return err
	}
	without, err := r.test(ctx, mod, run, []string{by.pkg})
	if err != nil {
		return err
	}
	if without.name != "" {
		return fmt.Errorf("%w: %s fails without the mutant too", errFlaky, by.name)
	}
	return nil
}

// dependents returns the packages of module mod (relative to Root) whose
// test binaries build the package ip.
func (r *Runner) dependents(ctx context.Context, mod, ip string) ([]string, error) {
	if r.deps == nil {
		r.deps = map[string][]pkgDeps{}
	}
	all, ok := r.deps[mod]
	if !ok {
		cmd := r.command(ctx, filepath.Join(r.Scratch, mod), "list", "-test", "-deps=false", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, "./...")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("go list in %s: %v: %s", mod, err, lastLines(stderr.Bytes(), 6))
		}
		for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
			f := strings.Fields(line)
			if len(f) == 0 || !strings.HasSuffix(f[0], ".test") {
				continue
			}
			deps := make([]string, 0, len(f)-1)
			for _, d := range f[1:] {
				if !strings.HasPrefix(d, "[") {
					deps = append(deps, d)
				}
			}
			all = append(all, pkgDeps{pkg: strings.TrimSuffix(f[0], ".test"), deps: deps})
		}
		r.deps[mod] = all
	}
	var out []string
	for _, p := range all {
		if p.pkg == ip || slices.Contains(p.deps, ip) {
			out = append(out, p.pkg)
		}
	}
	return out, nil
}

// importPath returns the import path of the package in dir's pattern p.
func (r *Runner) importPath(ctx context.Context, dir, p string) (string, error) {
	out, err := r.command(ctx, dir, "list", "-f", "{{.ImportPath}}", p).Output()
	if err != nil {
		return "", fmt.Errorf("go list %s: %w", p, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// modulePath returns the module path of the module in directory mod, read
// from its go.mod ("" if it cannot be read).
func (r *Runner) modulePath(mod string) string {
	b, err := os.ReadFile(filepath.Join(r.Scratch, mod, "go.mod"))
	if err != nil {
		return ""
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

func (r *Runner) command(ctx context.Context, dir string, args ...string) *exec.Cmd {
	fmt.Fprintf(r.Log, "(cd %s && %s %s)\n", dir, r.Go, strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, r.Go, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	setGroup(cmd)
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// sync makes Scratch a copy of the files git lists in Root (tracked, and
// untracked but not ignored: uncommitted changes count), writing only
// those that differ and removing any other file.
func (r *Runner) sync(ctx context.Context) error {
	cmd := exec.CommandContext(ctx, "git", "ls-files", "-z", "-c", "-o", "--exclude-standard")
	cmd.Dir = r.Root
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("git ls-files: %w", err)
	}
	want := map[string]bool{}
	for f := range strings.SplitSeq(strings.TrimRight(string(out), "\x00"), "\x00") {
		if f == "" {
			continue
		}
		src := filepath.Join(r.Root, filepath.FromSlash(f))
		fi, err := os.Lstat(src)
		if err != nil || !fi.Mode().IsRegular() {
			continue // deleted but not yet staged, or not a file
		}
		want[filepath.FromSlash(f)] = true
		b, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		dst := filepath.Join(r.Scratch, filepath.FromSlash(f))
		if old, err := os.ReadFile(dst); err == nil && bytes.Equal(old, b) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dst, b, fi.Mode().Perm()); err != nil {
			return err
		}
	}
	return filepath.WalkDir(r.Scratch, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(r.Scratch, p)
		if err != nil {
			return err
		}
		if !want[rel] {
			return os.Remove(p)
		}
		return nil
	})
}

// shortList names pkgs without the module path, for a report line.
func shortList(pkgs []string, modPath string) string {
	out := make([]string, len(pkgs))
	for i, p := range pkgs {
		if s := strings.TrimPrefix(strings.TrimPrefix(p, modPath), "/"); s != "" {
			p = s
		}
		out[i] = p
	}
	return strings.Join(out, " ")
}

func lastLines(b []byte, n int) string {
	return strings.Join(lastN(strings.Split(strings.TrimSpace(string(b)), "\n"), n), " | ")
}

func lastN(s []string, n int) []string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
