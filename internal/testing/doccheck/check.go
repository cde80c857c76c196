package doccheck

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Failure is a snippet that does not compile, or that go vet faults.
type Failure struct {
	// Program is the completed snippet.
	Program Program
	// Messages are the compiler's and vet's messages, each placed at its
	// document line.
	Messages []string
}

// Error returns the messages, one a line.
func (f Failure) Error() string { return strings.Join(f.Messages, "\n") }

// Check type-checks progs with go vet (every analyzer but unreachable,
// since a completed fragment may end with a return of its own), each in a
// package of its own, in a temporary module made from the module in dir:
// its go.mod with the module path replaced and relative replace directives
// made absolute, plus a requirement of dir's module replaced by dir
// itself, and its go.sum. The go command runs with GOPROXY=off and
// -mod=mod, so a snippet can use any package of a module in dir's module
// graph whose files are in the module cache, and nothing is downloaded.
//
// Check returns a Failure for each program that does not pass, in the
// order of progs, and an error when go vet cannot run or fails in a way
// no program explains.
func Check(ctx context.Context, dir string, progs []Program) ([]Failure, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "doccheck-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	if err := writeModule(work, dir); err != nil {
		return nil, err
	}
	for i, p := range progs {
		pkg := filepath.Join(work, pkgDir(i))
		if err := os.Mkdir(pkg, 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(pkg, "snippet.go"), []byte(p.Source), 0o644); err != nil {
			return nil, err
		}
	}
	cmd := exec.CommandContext(ctx, "go", "vet", "-unreachable=false", "./...")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod -buildvcs=false", "GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	runErr := cmd.Run()
	if runErr == nil {
		return nil, nil
	}
	byProg := map[int][]string{}
	for _, line := range strings.Split(out.String(), "\n") {
		m := message.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		i, _ := strconv.Atoi(m[1])
		n, _ := strconv.Atoi(m[2])
		if i >= len(progs) {
			continue
		}
		byProg[i] = append(byProg[i], progs[i].where(n, m[3]))
	}
	if len(byProg) == 0 {
		return nil, fmt.Errorf("go vet in a module made from %s: %v\n%s", dir, runErr, out.String())
	}
	var fails []Failure
	for i, p := range progs {
		if ms := byProg[i]; ms != nil {
			fails = append(fails, Failure{Program: p, Messages: ms})
		}
	}
	return fails, nil
}

// message matches a message of the compiler or of vet about a snippet:
// the snippet's number, the line and the text.
var message = regexp.MustCompile(`s(\d+)[/\\]snippet\.go:(\d+)(?::\d+)?:\s*(.*)$`)

// pkgDir is the directory of program i in the temporary module.
func pkgDir(i int) string { return fmt.Sprintf("s%03d", i) }

var (
	moduleLine  = regexp.MustCompile(`(?m)^module\s+(\S+)\s*$`)
	relativeDir = regexp.MustCompile(`=>\s*(\.\.?(?:/\S*)?)`)
)

// writeModule writes go.mod and go.sum to work: those of dir, as Check
// says.
func writeModule(work, dir string) error {
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return err
	}
	m := moduleLine.FindSubmatch(mod)
	if m == nil {
		return fmt.Errorf("%s/go.mod has no module line", dir)
	}
	path := string(m[1])
	mod = moduleLine.ReplaceAll(mod, []byte("module doccheck.example/snippets"))
	mod = relativeDir.ReplaceAllFunc(mod, func(b []byte) []byte {
		rel := relativeDir.FindSubmatch(b)[1]
		return []byte("=> " + strconv.Quote(filepath.Join(dir, string(rel))))
	})
	mod = append(mod, fmt.Sprintf("\nrequire %s v0.0.0\n\nreplace %s => %s\n", path, path, strconv.Quote(dir))...)
	if err := os.WriteFile(filepath.Join(work, "go.mod"), mod, 0o644); err != nil {
		return err
	}
	sum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(work, "go.sum"), sum, 0o644)
}
