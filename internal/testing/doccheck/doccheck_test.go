package doccheck_test

import (
	"strings"
	"testing"

	"github.com/tenure-go/tenure/internal/testing/doccheck"
)

const fixture = "# A guide\n" + // 1
	"\n" + // 2
	"```go\n" + // 3: compiles once completed
	"e, err := lead.New(\"job\", st, lead.WithIdentity(podName))\n" + // 4
	"if err != nil { ... }\n" + // 5
	"go e.Run(ctx)\n" + // 6
	"```\n" + // 7
	"\n" + // 8
	"```go\n" + // 9: does not compile
	"e, err := lead.New(\"job\", st)\n" + // 10
	"if err != nil { ... }\n" + // 11
	"e.RunForever(ctx)\n" + // 12
	"```\n" + // 13
	"\n" + // 14
	"<!-- not compiled: pseudo-code -->\n" + // 15
	"```go\n" + // 16
	"lead the election\n" + // 17
	"```\n" + // 18
	"\n" + // 19
	"- In a list:\n" + // 20
	"\n" + // 21
	"  ```go\n" + // 22: indented, with a declaration at the margin
	"  type Pair struct{ A, B int }\n" + // 23
	"\n" + // 24
	"  func (p Pair) Sum() int { return p.A + p.B }\n" + // 25
	"  ```\n" + // 26
	"\n" + // 27
	"```sh\n" + // 28: not Go
	"go test ./...\n" + // 29
	"```\n" // 30

var fixturePreamble = doccheck.Preamble{
	"Meta":    "type Meta struct{ Addr string }",
	"ctx":     "var ctx context.Context",
	"st":      "var st store.Store[Meta]",
	"podName": "var podName string",
}

func TestExtractFindsGoBlocksAndMarks(t *testing.T) {
	snips, err := doccheck.Extract("fixture.md", []byte(fixture))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range snips {
		got = append(got, s.String()+" skip="+s.Skip)
	}
	want := []string{"fixture.md:3 skip=", "fixture.md:9 skip=", "fixture.md:16 skip=pseudo-code", "fixture.md:22 skip="}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("Extract found %q, want %q", got, want)
	}
	if !strings.HasPrefix(snips[3].Code, "type Pair") {
		t.Errorf("the indented block's code is %q: its indentation was not taken off", snips[3].Code)
	}
}

func TestExtractRefusesAMarkWithoutReasonAndAnOpenFence(t *testing.T) {
	for _, doc := range []string{
		"<!-- not compiled: -->\n```go\nx\n```\n",
		"text\n```go\nx := 1\n",
	} {
		if _, err := doccheck.Extract("bad.md", []byte(doc)); err == nil {
			t.Errorf("Extract(%q) succeeded; want an error", doc)
		}
	}
}

// The checker passes what compiles and fails what does not, naming the
// document, the line and the compiler's message.
func TestCheckNamesTheLineOfABrokenSnippet(t *testing.T) {
	snips, err := doccheck.Extract("fixture.md", []byte(fixture))
	if err != nil {
		t.Fatal(err)
	}
	var progs []doccheck.Program
	for _, s := range snips {
		if s.Skip != "" {
			continue
		}
		p, err := doccheck.Complete(s, fixturePreamble)
		if err != nil {
			t.Fatalf("Complete(%s): %v", s, err)
		}
		progs = append(progs, p)
	}
	fails, err := doccheck.Check(t.Context(), "../../..", progs)
	if err != nil {
		t.Fatal(err)
	}
	if len(fails) != 1 {
		t.Fatalf("Check found %d failing snippets, want 1 (the block at line 9): %v", len(fails), fails)
	}
	msg := fails[0].Error()
	if fails[0].Program.Line != 9 || !strings.Contains(msg, "fixture.md:12 ") || !strings.Contains(msg, "RunForever") {
		t.Errorf("the failure says %q; want it at fixture.md:12, naming RunForever", msg)
	}
}

func TestCompleteReportsASyntaxErrorAtItsLine(t *testing.T) {
	s := doccheck.Snippet{File: "doc.md", Line: 40, Code: "x := 1\ny := (x +\n"}
	_, err := doccheck.Complete(s, nil)
	if err == nil || !strings.Contains(err.Error(), "doc.md:4") {
		t.Errorf("Complete of a block with a syntax error returned %v; want an error at doc.md:41 or 42", err)
	}
}

// A fragment is completed from the preamble and the package table, and
// keeps its declarations at the top level.
func TestCompleteResolvesNamesAndKeepsDeclarations(t *testing.T) {
	s := doccheck.Snippet{File: "doc.md", Line: 1, Code: "type T struct{}\n\nfunc (T) M() {}\n\nst.Get(ctx, \"x\")\nd := time.Second\n"}
	p, err := doccheck.Complete(s, doccheck.Preamble{"st": "var st store.Store[int]", "ctx": "var ctx context.Context"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"context", "github.com/tenure-go/tenure/store", "time"}
	if strings.Join(p.Imports, " ") != strings.Join(want, " ") {
		t.Errorf("imports %q, want %q", p.Imports, want)
	}
	for _, frag := range []string{"\ntype T struct{}", "\nfunc (T) M() {}", "d := time.Second; _ = d", "var st store.Store[int]"} {
		if !strings.Contains(p.Source, frag) {
			t.Errorf("the completed source lacks %q:\n%s", frag, p.Source)
		}
	}
	if got := p.DocLine(strings.Count(p.Source[:strings.Index(p.Source, "d := ")], "\n") + 1); got != 7 {
		t.Errorf("the line of d := is mapped to document line %d, want 7", got)
	}
}
