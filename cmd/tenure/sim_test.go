package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func runSimArgs(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), append([]string{"sim"}, args...), &out, &errOut)
	return out.String() + errOut.String(), code
}

func TestSimSameSeedSameOutput(t *testing.T) {
	dir := t.TempDir()
	svgA, svgB := filepath.Join(dir, "a.svg"), filepath.Join(dir, "b.svg")
	a, codeA := runSimArgs(t, "-seeds", "5", "-duration", "4m", "-svg", svgA)
	b, codeB := runSimArgs(t, "-seeds", "5", "-duration", "4m", "-svg", svgB)
	if a != b || codeA != codeB {
		t.Fatalf("two runs of seed 5 differ:\n%s\n---\n%s", a, b)
	}
	for _, want := range []string{"n0 ", "n4 ", "terms (", "store (", "faults (", "checks: "} {
		if !strings.Contains(a, want) {
			t.Errorf("output lacks %q:\n%s", want, a)
		}
	}
	sa, err := os.ReadFile(svgA)
	if err != nil {
		t.Fatal(err)
	}
	sb, _ := os.ReadFile(svgB)
	if !bytes.Equal(sa, sb) {
		t.Fatal("two runs of seed 5 wrote different SVGs")
	}
	if err := xml.Unmarshal(sa, new(struct{})); err != nil {
		t.Fatalf("the SVG is not well-formed XML: %v", err)
	}
	if c, _ := runSimArgs(t, "-seeds", "6", "-duration", "4m"); c == a {
		t.Fatal("seeds 5 and 6 gave the same output")
	}
	// -seed N is -seeds N.
	if c, _ := runSimArgs(t, "-seed", "5", "-duration", "4m"); c != a {
		t.Fatal("-seed 5 and -seeds 5 differ")
	}
}

func TestSimCommandExitCodesAndOutput(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"help", []string{"-h"}, 0, "Examples:"},
		{"calm run holds", []string{"-calm", "-nodes", "3", "-duration", "1m"}, 0, "checks: OK"},
		{"drift past the bound makes two leaders", []string{"-seeds", "3", "-nodes", "3", "-duration", "5m", "-drift-beyond", "-crash", "-partition"}, 1, "one-leader check failed"},
		{"default faults are explicit", []string{"-seeds", "1-2", "-duration", "1m"}, 0, "faults drift,crash,pause,partition,loss,slow,release,"},
		{"named faults only", []string{"-seeds", "1-2", "-duration", "1m", "-crash"}, 0, "faults crash,"},
		{"dataloss implies a lossy store", []string{"-seeds", "1-2", "-duration", "1m", "-dataloss"}, 0, "faults dataloss, lossy store true"},
		{"the create gate implies a lossy store", []string{"-seeds", "1-2", "-duration", "1m", "-dataloss", "-gate"}, 0, "faults dataloss, lossy store true"},
		{"the create gate on a store that never loses", []string{"-gate", "-lossy=false"}, 1, "-gate models a store that may lose records"},
		{"the create gate in runtime mode", []string{"-runtime", "-gate"}, 1, "-gate is for model mode"},
		{"a sweep names the failing seed and how to replay it", []string{"-seeds", "1-4", "-nodes", "3", "-duration", "5m", "-drift-beyond", "-crash", "-partition"}, 1,
			"seed 3: VIOLATION"},
		{"replay command", []string{"-seeds", "3,4", "-nodes", "3", "-duration", "5m", "-drift-beyond", "-crash", "-partition"}, 1,
			"replay: tenure sim -seeds 3 -crash=true -drift-beyond=true -duration=5m0s -nodes=3 -partition=true"},
		{"bad timings", []string{"-lease", "5s", "-renew", "6s"}, 1, "RenewDeadline"},
		{"bad timings name their flags", []string{"-lease-duration", "5s", "-renew", "6s"}, 1, "(LeaseDuration 5s from -lease-duration, RenewDeadline 6s from -renew)"},
		{"flags after a stray argument", []string{"extra", "-seeds", "1"}, 1, `unexpected arguments ["extra"]`},
		{"bad width", []string{"-width", "3"}, 1, "-width"},
		{"stray argument", []string{"extra"}, 1, "unexpected arguments"},
		{"calm with a fault", []string{"-calm", "-crash"}, 1, "-calm runs no fault, but -crash"},
		{"calm with data loss", []string{"-calm", "-dataloss"}, 1, "-calm runs no fault, but -dataloss"},
		{"data loss in a store that never loses", []string{"-dataloss", "-lossy=false"}, 1, "-dataloss needs a store that may lose records"},
		{"both drifts", []string{"-drift", "-drift-beyond"}, 1, "exclude each other"},
		{"rho without drift", []string{"-crash", "-rho", "0.1"}, 1, "-rho is the bound of -drift"},
		{"beyond-rho without drift-beyond", []string{"-beyond-rho", "0.3"}, 1, "-beyond-rho"},
		{"seed and seeds", []string{"-seed", "1", "-seeds", "2"}, 1, "exclude each other"},
		{"bad seed list", []string{"-seeds", "5-1"}, 1, "runs backwards"},
		{"svg needs one seed", []string{"-seeds", "1-2", "-svg", "x.svg"}, 1, "single seed"},
		{"json and trace", []string{"-json", "-trace"}, 1, "exclude each other"},
		{"runtime mode, calm", []string{"-runtime", "-calm", "-duration", "30s", "-speed", "30"}, 0, "checks: OK"},
		{"runtime mode says it is not reproducible", []string{"-runtime", "-calm", "-duration", "30s", "-speed", "30"}, 0,
			"not byte-reproducible; reproducible in virtual time: TENURE_SIM_SEEDS=1 TENURE_SIM_FAULTS=calm go test -run 'TestRuntimeSweep$'"},
		{"runtime mode reads the timings", []string{"-runtime", "-calm", "-duration", "30s", "-speed", "30", "-lease", "6s", "-renew", "4s", "-backend-timeout", "1s"}, 0,
			"L=6s R=4s I=2s J=0.10 T=1s"},
		{"runtime sweep", []string{"-runtime", "-seeds", "1-2", "-nodes", "2", "-duration", "30s", "-speed", "30", "-crash"}, 0,
			"tenure sim -runtime: 2 seeds (2 electors on memstore, 30s each, faults crash, watch true, speed 30): every check held"},
		{"runtime mode with contradictions", []string{"-runtime", "-calm", "-crash"}, 1, "-calm runs no fault"},
		{"speed without runtime mode", []string{"-speed", "5"}, 1, "-speed and -parallel are for runtime mode"},
		{"lossy in runtime mode", []string{"-runtime", "-lossy"}, 1, "-lossy is for model mode"},
		{"bad speed", []string{"-runtime", "-speed", "0"}, 1, "-speed is 0"},
		{"bad parallel", []string{"-runtime", "-parallel", "0"}, 1, "-parallel is 0"},
		{"too many electors in runtime mode", []string{"-runtime", "-nodes", "17"}, 1, "at most 16"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, code := runSimArgs(t, tt.args...)
			if code != tt.code || !strings.Contains(out, tt.want) {
				t.Fatalf("exit %d (want %d), output lacks %q or is:\n%s", code, tt.code, tt.want, out)
			}
		})
	}
}

// TestSimReadsTenureEnv: the timings come from TENURE_* as lead.New reads
// them, per-name variables winning, and flags win over both.
func TestSimReadsTenureEnv(t *testing.T) {
	t.Setenv("TENURE_LEASE_DURATION", "6s")
	t.Setenv("TENURE_RENEW_DEADLINE", "4s")
	t.Setenv("TENURE_BACKEND_TIMEOUT", "1s")
	out, code := runSimArgs(t, "-calm", "-duration", "1m")
	if code != 0 || !strings.Contains(out, "L=6s R=4s I=2s J=0.10 T=1s") {
		t.Fatalf("exit %d, want L=6s R=4s T=1s:\n%s", code, out)
	}
	t.Setenv("TENURE_JOBS_LEASE_DURATION", "8s")
	if out, _ := runSimArgs(t, "-calm", "-duration", "1m", "-name", "jobs"); !strings.Contains(out, "L=8s R=4s") {
		t.Fatalf("-name jobs does not read TENURE_JOBS_LEASE_DURATION:\n%s", out)
	}
	if out, _ := runSimArgs(t, "-calm", "-duration", "1m", "-lease", "7s"); !strings.Contains(out, "L=7s R=4s") {
		t.Fatalf("-lease does not win over TENURE_LEASE_DURATION:\n%s", out)
	}
	t.Setenv("TENURE_RETRY_JITTER", "lots")
	if out, code := runSimArgs(t, "-calm"); code != 1 || !strings.Contains(out, "TENURE_RETRY_JITTER") {
		t.Fatalf("exit %d, want an error naming TENURE_RETRY_JITTER:\n%s", code, out)
	}
}

// TestSimJSONPrintsOneVerdictPerSeedAndASummary: one verdict object per seed, in seed order, and a summary.
func TestSimJSONPrintsOneVerdictPerSeedAndASummary(t *testing.T) {
	out, code := runSimArgs(t, "-seeds", "1-3,7", "-nodes", "3", "-duration", "5m", "-drift-beyond", "-crash", "-partition", "-json")
	if code != 1 {
		t.Fatalf("exit %d, want 1 (seed 3 makes two leaders):\n%s", code, out)
	}
	var seeds []uint64
	var summary map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var v map[string]any
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("not a JSON object: %q: %v", sc.Text(), err)
		}
		switch v["type"] {
		case "seed":
			seeds = append(seeds, uint64(v["seed"].(float64)))
			if v["seed"].(float64) == 3 {
				viol, _ := v["violation"].(map[string]any)
				if v["ok"] != false || viol["check"] != "one-leader" {
					t.Errorf("seed 3: %v", v)
				}
			}
		case "summary":
			summary = v
		default:
			t.Fatalf("object of unknown type: %v", v)
		}
	}
	if want := []uint64{1, 2, 3, 7}; len(seeds) != 4 || seeds[0] != 1 || seeds[2] != 3 || seeds[3] != 7 {
		t.Fatalf("seeds %v, want %v", seeds, want)
	}
	if summary == nil || summary["seeds"].(float64) != 4 || summary["ok"] != false || summary["failed"].(float64) < 1 {
		t.Fatalf("summary %v", summary)
	}
	again, _ := runSimArgs(t, "-seeds", "1-3,7", "-nodes", "3", "-duration", "5m", "-drift-beyond", "-crash", "-partition", "-json")
	if again != out {
		t.Fatal("two runs gave different JSON")
	}
}

// TestSimRuntimeJSON: runtime mode's JSON has a verdict per seed with the
// scheduling delay and tolerance, and a summary with the mode and speed.
func TestSimRuntimeJSON(t *testing.T) {
	out, code := runSimArgs(t, "-runtime", "-seeds", "1-2", "-nodes", "2", "-duration", "30s", "-speed", "30", "-calm", "-json")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	var seeds int
	var summary map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var v map[string]any
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("not a JSON object: %q: %v", sc.Text(), err)
		}
		switch v["type"] {
		case "seed":
			seeds++
			if v["ok"] != true || v["tolerance_ns"] == nil || v["elector_seconds"].(float64) < 59 {
				t.Errorf("seed verdict %v", v)
			}
		case "summary":
			summary = v
		}
	}
	if seeds != 2 || summary == nil || summary["mode"] != "runtime" || summary["speed"].(float64) != 30 || summary["ok"] != true {
		t.Fatalf("%d seeds, summary %v:\n%s", seeds, summary, out)
	}
}

// TestCLIDoesNotLinkTesting: the tenure binary must not link package
// testing or testing/synctest (runtime mode runs in real time through
// sim/realtime; its synctest driver lives in sim/simtest).
func TestCLIDoesNotLinkTesting(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command(gobin, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if p == "testing" || strings.HasPrefix(p, "testing/") {
			t.Fatalf("the tenure command links %s", p)
		}
	}
}

// tenure sim warns about a TENURE_ variable it does not read, on stderr,
// with its near match, and the run goes on; a variable it reads is not
// warned about.
func TestSimWarnsAboutUnknownTenureVariables(t *testing.T) {
	t.Setenv("TENURE_LEASE_DURATIN", "5s")
	t.Setenv("TENURE_RENEW_DEADLINE", "8s")
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"sim", "-seeds", "1-2", "-duration", "1m"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d:\n%s%s", code, out.String(), errOut.String())
	}
	want := "tenure sim: warning: the environment sets TENURE_LEASE_DURATIN, which Tenure does not read: misspelt TENURE_LEASE_DURATION?\n"
	if !strings.Contains(errOut.String(), want) || strings.Contains(errOut.String(), "TENURE_RENEW_DEADLINE") {
		t.Errorf("stderr is\n%s\nwant it to hold\n%s", errOut.String(), want)
	}
	if strings.Contains(out.String(), "TENURE_") {
		t.Errorf("the warning went to stdout:\n%s", out.String())
	}
}

// -html draws the seed given; of several, the first that fails, or the
// last when all pass; in runtime mode as well.
func TestSimHTMLDrawsTheFirstFailingSeedOrTheLast(t *testing.T) {
	dir := t.TempDir()
	titleSeed := regexp.MustCompile(`<title>tenure sim[^:]*: seed (\d+),`)
	drawn := func(path string) string {
		t.Helper()
		page, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := xml.Unmarshal(page, new(struct{})); err != nil {
			t.Fatalf("%s is not well-formed: %v", path, err)
		}
		m := titleSeed.FindSubmatch(page)
		if m == nil {
			t.Fatalf("%s names no seed in its title", path)
		}
		return string(m[1])
	}
	for _, c := range []struct {
		name string
		args []string
		code int
		want func(out string) string
	}{
		{"one seed", []string{"-seeds", "4", "-calm", "-duration", "1m"}, 0, func(string) string { return "4" }},
		{"all pass", []string{"-seeds", "2-4", "-calm", "-duration", "1m"}, 0, func(string) string { return "4" }},
		{"some fail", []string{"-seeds", "1-10", "-nodes", "3", "-duration", "5m", "-drift-beyond", "-crash", "-partition"}, 1,
			func(out string) string {
				return regexp.MustCompile(`(?m)^seed (\d+): VIOLATION`).FindStringSubmatch(out)[1]
			}},
		{"json", []string{"-seeds", "2-4", "-calm", "-duration", "1m", "-json"}, 0, func(string) string { return "4" }},
		{"runtime", []string{"-runtime", "-seeds", "1-2", "-calm", "-duration", "2s", "-speed", "100"}, 0, func(string) string { return "2" }},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".html")
		out, code := runSimArgs(t, append(c.args, "-html", path)...)
		if code != c.code {
			t.Fatalf("%s: exit %d, want %d:\n%s", c.name, code, c.code, out)
		}
		if got, want := drawn(path), c.want(out); got != want {
			t.Errorf("%s: drew seed %s, want %s", c.name, got, want)
		}
	}
}
