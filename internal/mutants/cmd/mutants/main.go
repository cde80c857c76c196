// Command mutants applies the catalogue of deliberate unsafe changes
// (internal/mutants) one at a time in a scratch copy of the repository and
// runs the tests that should catch each; it exits 1 unless every one is
// caught. make mutants runs it; see the package documentation of
// internal/mutants.
//
// Usage:
//
//	go run ./internal/mutants/cmd/mutants [-fast] [-run regexp] [-timeout d] [-expected-only] [-list] [-v]
//
// MUTANTS=fast is -fast; GOTESTFLAGS (e.g. -race) is added to every go
// test; TENURE_REQUIRE_BACKENDS and the rest of the environment pass
// through to the tests.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/tenure-go/tenure/internal/mutants"
)

func main() {
	fast := flag.Bool("fast", os.Getenv("MUTANTS") == "fast", "run only the fast subset")
	run := flag.String("run", "", "run only the mutants whose names match this regexp")
	timeout := flag.Duration("timeout", 8*time.Minute, "the budget of each mutant's tests")
	scratch := flag.String("scratch", "", "the scratch copy (keep it fixed: the build cache is reused; default: one per repository under the temporary directory)")
	verbose := flag.Bool("v", false, "print the go commands run")
	list := flag.Bool("list", false, "list the catalogue and exit")
	expectedOnly := flag.Bool("expected-only", false, "a quick pass: run only each entry's expected packages, not those that import the mutated one")
	flag.Parse()
	if err := main1(*fast, *run, *timeout, *scratch, *verbose, *list, *expectedOnly); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func main1(fast bool, run string, timeout time.Duration, scratch string, verbose, list, expectedOnly bool) error {
	c := mutants.Catalogue()
	if fast {
		c = mutants.Fast(c)
	}
	if run != "" {
		re, err := regexp.Compile(run)
		if err != nil {
			return fmt.Errorf("mutants: -run: %w", err)
		}
		var sel []mutants.Mutant
		for _, m := range c {
			if re.MatchString(m.Name) {
				sel = append(sel, m)
			}
		}
		c = sel
	}
	if list {
		for _, m := range c {
			fmt.Printf("%-44s %-28s %s\n", m.Name, m.File, strings.Join(m.Packages, " "))
		}
		return nil
	}
	root, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return fmt.Errorf("mutants: run it inside the repository: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if scratch == "" {
		sum := sha256.Sum256(bytes.TrimSpace(root))
		scratch = filepath.Join(os.TempDir(), fmt.Sprintf("tenure-mutants-%x", sum[:6]))
	}
	r := &mutants.Runner{
		Root:      strings.TrimSpace(string(root)),
		Scratch:   scratch,
		Modules:   mutants.Modules,
		TestFlags: strings.Fields(os.Getenv("GOTESTFLAGS")),
		Timeout:   timeout,
		Out:       os.Stdout,

		ExpectedOnly: expectedOnly,
	}
	if verbose {
		r.Log = os.Stderr
	}
	fmt.Printf("mutants: %d entries, scratch copy %s, go test flags %q\n", len(c), scratch, r.TestFlags)
	res, err := r.Run(ctx, c)
	if err != nil {
		return err
	}
	if !mutants.AllCaught(res) {
		return fmt.Errorf("mutants: not every mutant was caught")
	}
	return nil
}
