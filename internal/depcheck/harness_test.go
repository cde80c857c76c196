package depcheck_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// harnessRoots are the packages of the test harness: real servers, chaos
// runs, the scale benchmark, the docs check. Only tests import them. A
// package under internal/testing/ is harness whether listed or not.
var harnessRoots = []string{
	tenure + "internal/testing/testcluster",
	tenure + "internal/testing/chaos",
	tenure + "internal/testing/scale",
	tenure + "internal/testing/doccheck",
}

// isHarness reports whether pkg is a package of the test harness.
func isHarness(pkg string) bool {
	return strings.HasPrefix(pkg, tenure+"internal/testing/") || slices.Contains(harnessRoots, pkg)
}

// harnessImports returns, for each package of Tenure in g that is not
// itself harness, every harness package it imports, as "pkg -> harness".
// The graph of go list without -test holds the imports of non-test files
// only: tests may import the harness, production code may not.
func (g graph) harnessImports() []string {
	var out []string
	for p, imports := range g {
		if !strings.HasPrefix(p, tenure) || isHarness(p) {
			continue
		}
		for _, q := range imports {
			if isHarness(q) {
				out = append(out, fmt.Sprintf("%s -> %s", p, q))
			}
		}
	}
	slices.Sort(out)
	return out
}

// No package of the module outside the test harness (library packages,
// commands, the simulator, tools) imports the harness from a non-test
// file: production code sits below it.
func TestProductionImportsNoTestHarness(t *testing.T) {
	g := deps(t, tenure+"...")
	if bad := g.harnessImports(); len(bad) > 0 {
		t.Errorf("%d production imports of the test harness:\n%s", len(bad), strings.Join(bad, "\n"))
	}
	var found int
	for p := range g {
		if isHarness(p) {
			found++
		}
	}
	if found == 0 {
		t.Error("no harness package found in the module: the check checks nothing")
	}
}

// The check catches a production import of the harness, under either
// form of the harness's paths, and lets the harness import itself and
// production code (and other modules import what they like).
func TestHarnessImportIsCaught(t *testing.T) {
	g := graph{
		tenure + "lead":                         {tenure + "internal/testing/testcluster", "context"},
		tenure + "store/pgstore":                {harnessRoots[0]},
		tenure + "internal/testing/testcluster": {tenure + "internal/testing/chaosproxy", tenure + "lead"},
		harnessRoots[1]:                         {harnessRoots[0]},
		tenure + "internal/nilarg":              {"reflect"},
		"example.com/other/lead":                {tenure + "internal/testing/testcluster"},
	}
	want := []string{
		tenure + "lead -> " + tenure + "internal/testing/testcluster",
		tenure + "store/pgstore -> " + harnessRoots[0],
	}
	if got := g.harnessImports(); !slices.Equal(got, want) {
		t.Errorf("harnessImports = %q, want %q", got, want)
	}
}
