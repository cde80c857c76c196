package mutants

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const root = "../.."

// Every entry is complete, its name unique, and its original text occurs
// exactly once in today's file: editing the code under a mutant without
// updating the entry fails here.
func TestCatalogueMatchesTheCode(t *testing.T) {
	c := Catalogue()
	if err := Check(c); err != nil {
		t.Fatal(err)
	}
	if len(c) < 34 {
		t.Errorf("the catalogue has %d entries, want at least 34", len(c))
	}
	for _, m := range c {
		b, err := os.ReadFile(filepath.Join(root, m.File))
		if err != nil {
			t.Errorf("%s: %v", m.Name, err)
			continue
		}
		if _, err := m.Apply(string(b)); err != nil {
			t.Errorf("%v", err)
		}
		for _, p := range m.Packages {
			if _, err := os.Stat(filepath.Join(root, p)); err != nil {
				t.Errorf("%s: package %s: %v", m.Name, p, err)
			}
		}
		if m.Tests != "" {
			if _, err := regexp.Compile(m.Tests); err != nil {
				t.Errorf("%s: Tests: %v", m.Name, err)
			}
		}
	}
}

// The fast subset covers the state machine, a store, a fence and the
// driver.
func TestFastSubsetCoversEachLayer(t *testing.T) {
	fast := Fast(Catalogue())
	if len(fast) < 6 || len(fast) > 8 {
		t.Errorf("the fast subset has %d entries, want 6 to 8", len(fast))
	}
	for _, dir := range []string{"fsm/", "store/", "fence/", "lead/"} {
		if !slices.ContainsFunc(fast, func(m Mutant) bool { return strings.HasPrefix(m.File, dir) }) {
			t.Errorf("no fast entry changes %s", dir)
		}
	}
}

// Check refuses an entry without a reason or a package, and a repeated
// name; Apply refuses text that occurs twice or not at all.
func TestCheckAndApplyRefuseBadEntries(t *testing.T) {
	good := Mutant{Name: "a", File: "f.go", Original: "x", Replacement: "y", Reason: "r", Packages: []string{"./p"}}
	noReason, noPkg := good, good
	noReason.Reason, noPkg.Packages = "", nil
	for _, c := range [][]Mutant{{noReason}, {noPkg}, {good, good}} {
		if err := Check(c); !errors.Is(err, ErrInvalid) {
			t.Errorf("Check(%+v) = %v, want ErrInvalid", c, err)
		}
	}
	for _, src := range []string{"none here", "x and x"} {
		if _, err := good.Apply(src); !errors.Is(err, ErrStale) {
			t.Errorf("Apply(%q) = %v, want ErrStale", src, err)
		}
	}
	if got, err := good.Apply("a x b"); err != nil || got != "a y b" {
		t.Errorf("Apply = %q, %v", got, err)
	}
}

// Modules lists the modules whose tests make test runs.
func TestModulesAreThoseOfMakeTest(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "\ntest:")
	if !ok {
		t.Fatal("Makefile: no test target")
	}
	recipe, _, _ := strings.Cut(rest, "\n\n")
	want := []string{"."}
	for _, m := range regexp.MustCompile(`cd (\S+) && \$\(GO\) test`).FindAllStringSubmatch(recipe, -1) {
		want = append(want, m[1])
	}
	if !slices.Equal(Modules, want) {
		t.Errorf("Modules = %q, make test tests %q", Modules, want)
	}
}
