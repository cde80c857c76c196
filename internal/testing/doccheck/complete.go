package doccheck

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"go/types"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
)

const tenure = "github.com/tenure-go/tenure/"

// Packages maps the package names a fragment may use without importing
// them to their import paths: Tenure's packages, the client libraries its
// stores take, and the standard library's packages the documents use.
var Packages = map[string]string{
	// Tenure.
	"controllerruntime": tenure + "controllerruntime",
	"etcdfence":         tenure + "fence/etcdfence",
	"etcdstore":         tenure + "store/etcdstore",
	"fence":             tenure + "fence",
	"fsm":               tenure + "fsm",
	"health":            tenure + "health",
	"kubestore":         tenure + "store/kubestore",
	"lead":              tenure + "lead",
	"lease":             tenure + "lease",
	"memstore":          tenure + "store/memstore",
	"metrics":           tenure + "metrics",
	"pgfence":           tenure + "fence/pgfence",
	"pgstore":           tenure + "store/pgstore",
	"realtime":          tenure + "sim/realtime",
	"redisfence":        tenure + "fence/redisfence",
	"redisstore":        tenure + "store/redisstore",
	"sim":               tenure + "sim",
	"simtest":           tenure + "sim/simtest",
	"store":             tenure + "store",
	"storetest":         tenure + "store/storetest",
	"storeurl":          tenure + "storeurl",
	"tenureotel":        tenure + "otel",
	"watchutil":         tenure + "store/watchutil",

	// Client libraries.
	"clientv3":       "go.etcd.io/etcd/client/v3",
	"coordinationv1": "k8s.io/client-go/kubernetes/typed/coordination/v1",
	"corev1":         "k8s.io/api/core/v1",
	"ctrl":           "sigs.k8s.io/controller-runtime",
	"ctxwatch":       "github.com/jackc/pgx/v5/pgconn/ctxwatch",
	"gocron":         "github.com/go-co-op/gocron/v2", // in no module of the repository: check such a snippet where it is, or mark it
	"kubernetes":     "k8s.io/client-go/kubernetes",
	"manager":        "sigs.k8s.io/controller-runtime/pkg/manager",
	"metav1":         "k8s.io/apimachinery/pkg/apis/meta/v1",
	"pgconn":         "github.com/jackc/pgx/v5/pgconn",
	"pgx":            "github.com/jackc/pgx/v5",
	"pgxpool":        "github.com/jackc/pgx/v5/pgxpool",
	"prometheus":     "github.com/prometheus/client_golang/prometheus",
	"promhttp":       "github.com/prometheus/client_golang/prometheus/promhttp",
	"reconcile":      "sigs.k8s.io/controller-runtime/pkg/reconcile",
	"sdkmetric":      "go.opentelemetry.io/otel/sdk/metric",
	"sdktrace":       "go.opentelemetry.io/otel/sdk/trace",
	"redis":          "github.com/redis/go-redis/v9",
	"rest":           "k8s.io/client-go/rest",
	"yaml":           "sigs.k8s.io/yaml",

	// The standard library.
	"atomic":   "sync/atomic",
	"bytes":    "bytes",
	"context":  "context",
	"errors":   "errors",
	"exec":     "os/exec",
	"filepath": "path/filepath",
	"fmt":      "fmt",
	"http":     "net/http",
	"io":       "io",
	"json":     "encoding/json",
	"log":      "log",
	"net":      "net",
	"os":       "os",
	"rand":     "math/rand/v2",
	"signal":   "os/signal",
	"slog":     "log/slog",
	"strconv":  "strconv",
	"strings":  "strings",
	"sync":     "sync",
	"syscall":  "syscall",
	"testing":  "testing",
	"time":     "time",
	"url":      "net/url",
}

// Preamble declares, by name, what a document's fragments use without
// declaring it (the ctx, st and e its prose speaks of): each value is one
// package-level Go declaration of that name, added to a fragment only when
// the fragment uses the name and declares nothing by it. A declaration may
// use other names of the preamble and the packages of [Packages].
type Preamble map[string]string

// Program is a snippet completed into a Go file.
type Program struct {
	Snippet
	// Source is the Go file.
	Source string
	// Imports are the import paths of Source, sorted.
	Imports []string
	// lines[i] is the document line of Source's line i+1; 0 for a line
	// that Complete added.
	lines []int
	fset  *token.FileSet
}

// DocLine returns the document line of line n (from 1) of p.Source, or 0
// when Complete added that line.
func (p Program) DocLine(n int) int {
	if n < 1 || n > len(p.lines) {
		return 0
	}
	return p.lines[n-1]
}

// SourceLine returns line n (from 1) of p.Source, or "".
func (p Program) SourceLine(n int) string {
	ls := strings.Split(p.Source, "\n")
	if n < 1 || n > len(ls) {
		return ""
	}
	return ls[n-1]
}

// elided is what a "{ ... }" block of a fragment becomes.
const elided = `{ panic("elided") }`

// Complete turns s into a Go file of package snippet: a whole file (one
// with a package clause) as it is, a fragment as the package doc
// describes. An error names the document line of a syntax error.
func Complete(s Snippet, pre Preamble) (Program, error) {
	code := strings.Split(strings.TrimSuffix(s.Code, "\n"), "\n")
	docLine := func(i int) int { return s.Line + 1 + i } // code[i]'s line in the document
	if isWholeFile(code) {
		p := Program{Snippet: s, Source: strings.Join(code, "\n") + "\n"}
		for i := range code {
			p.lines = append(p.lines, docLine(i))
		}
		f, err := p.parse()
		if err != nil {
			return p, err
		}
		p.Imports = importPaths(f)
		return p, nil
	}

	for i, l := range code {
		if strings.TrimSpace(l) == "..." {
			code[i] = ""
		}
		code[i] = strings.ReplaceAll(code[i], "{ ... }", elided)
	}
	top, body, err := split(code)
	if err != nil {
		return Program{}, fmt.Errorf("%s:%d: %v", s.File, docLine(0), err)
	}

	// The core: the fragment's imports, its other top-level declarations,
	// then the rest as a function body.
	core := Program{Snippet: s, Source: "package snippet\n", lines: []int{0}}
	add := func(text string, line int) {
		core.Source += text + "\n"
		core.lines = append(core.lines, line)
	}
	for _, wantImport := range []bool{true, false} {
		for _, c := range top {
			if c.isImport == wantImport {
				for i := c.first; i <= c.last; i++ {
					add(code[i], docLine(i))
				}
			}
		}
	}
	if body != nil {
		add("func snippet() error {", 0)
		for _, i := range body {
			add(code[i], docLine(i))
		}
		add("\treturn nil", 0)
		add("}", 0)
	}
	f, err := core.parse()
	if err != nil {
		return core, err
	}

	// The names the fragment leaves undeclared: first from the preamble,
	// then from the packages.
	var decls []string
	chosen := map[string]bool{}
	var missing []string
	for {
		missing, err = unresolved(core.Source + strings.Join(decls, "\n"))
		if err != nil {
			return core, fmt.Errorf("%s: the preamble: %v", s, err)
		}
		added := false
		for _, n := range missing {
			if d, ok := pre[n]; ok && !chosen[n] {
				chosen[n] = true
				decls = append(decls, d)
				added = true
			}
		}
		if !added {
			break
		}
	}
	var imports []string
	for _, n := range missing {
		if p, ok := Packages[n]; ok {
			imports = append(imports, fmt.Sprintf("\t%s %q", n, p))
		}
	}

	// Every variable declared in a function body is marked used.
	src := markUsed(core.Source, f, core.fset)

	p := Program{Snippet: s}
	p.Source = "package snippet\n"
	p.lines = []int{0}
	if len(imports) > 0 {
		p.Source += "\nimport (\n" + strings.Join(imports, "\n") + "\n)\n"
		p.lines = append(p.lines, slices.Repeat([]int{0}, len(imports)+3)...)
	}
	p.Source += strings.TrimPrefix(src, "package snippet\n")
	p.lines = append(p.lines, core.lines[1:]...)
	for _, d := range decls {
		d = "\n" + strings.TrimSuffix(d, "\n") + "\n"
		p.Source += d
		p.lines = append(p.lines, slices.Repeat([]int{0}, strings.Count(d, "\n"))...)
	}
	pf, err := p.parse()
	if err != nil {
		return p, err
	}
	p.Imports = importPaths(pf)
	return p, nil
}

// isWholeFile reports whether the first line of code that is neither
// blank nor a comment is a package clause.
func isWholeFile(code []string) bool {
	for _, l := range code {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "//") {
			continue
		}
		return strings.HasPrefix(l, "package ")
	}
	return false
}

// chunk is a top-level declaration of a fragment: lines first to last of
// its code.
type chunk struct {
	first, last int
	isImport    bool
}

// split sorts the lines of a fragment into top-level declarations (import,
// type and func at the left margin, up to the end of the declaration) and
// the indexes of the lines of the body, nil when the body holds no code.
func split(code []string) ([]chunk, []int, error) {
	src := []byte(strings.Join(code, "\n") + "\n")
	fset := token.NewFileSet()
	file := fset.AddFile("fragment.go", -1, len(src))
	var errs scanner.ErrorList
	var sc scanner.Scanner
	sc.Init(file, src, func(pos token.Position, msg string) { errs.Add(pos, msg) }, 0)
	type tok struct {
		line, col int
		tok       token.Token
	}
	var toks []tok
	for {
		pos, t, _ := sc.Scan()
		if t == token.EOF {
			break
		}
		p := fset.Position(pos)
		toks = append(toks, tok{p.Line - 1, p.Column, t})
	}
	if errs.Len() > 0 {
		return nil, nil, errs.Err()
	}
	var top []chunk
	isTop := make([]bool, len(code))
	bodyCode := false
	depth := 0
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		startsDecl := t.tok == token.IMPORT || t.tok == token.TYPE || t.tok == token.FUNC
		if depth == 0 && t.col == 1 && startsDecl {
			c := chunk{first: t.line, isImport: t.tok == token.IMPORT}
			d := 0
			for ; i < len(toks); i++ {
				switch toks[i].tok {
				case token.LPAREN, token.LBRACE, token.LBRACK:
					d++
				case token.RPAREN, token.RBRACE, token.RBRACK:
					d--
				}
				if d == 0 && toks[i].tok == token.SEMICOLON {
					break
				}
			}
			c.last = toks[min(i, len(toks)-1)].line
			for l := c.first; l <= c.last; l++ {
				isTop[l] = true
			}
			top = append(top, c)
			continue
		}
		switch t.tok {
		case token.LPAREN, token.LBRACE, token.LBRACK:
			depth++
		case token.RPAREN, token.RBRACE, token.RBRACK:
			depth--
		}
		if t.tok != token.SEMICOLON {
			bodyCode = true
		}
	}
	if !bodyCode {
		return top, nil, nil
	}
	var body []int
	for i := range code {
		if !isTop[i] {
			body = append(body, i)
		}
	}
	return top, body, nil
}

// parse parses p.Source, reporting a syntax error at its document line.
func (p *Program) parse() (*ast.File, error) {
	p.fset = token.NewFileSet()
	f, err := parser.ParseFile(p.fset, "snippet.go", p.Source, parser.SkipObjectResolution)
	if err == nil {
		return f, nil
	}
	var list scanner.ErrorList
	if errors.As(err, &list) && len(list) > 0 {
		e := list[0]
		return nil, fmt.Errorf("%s", p.where(e.Pos.Line, "syntax error: "+e.Msg))
	}
	return nil, fmt.Errorf("%s: %v", p.Snippet, err)
}

// where formats msg about line n of p.Source: at its document line, or, for
// a line Complete added, with the line's text.
func (p Program) where(n int, msg string) string {
	if l := p.DocLine(n); l > 0 {
		return fmt.Sprintf("%s:%d (the ```go block at line %d): %s", p.File, l, p.Line, msg)
	}
	return fmt.Sprintf("%s:%d (the ```go block there), in the line %q that completes it: %s", p.File, p.Line, strings.TrimSpace(p.SourceLine(n)), msg)
}

// unresolved returns the names the Go file src uses without declaring
// them (with Go's scopes), leaving out the packages it imports and the
// predeclared names, sorted.
func unresolved(src string) ([]string, error) {
	// The parser resolves names to Go's scopes without type-checking code
	// that may not compile.
	f, err := parser.ParseFile(token.NewFileSet(), "snippet.go", src, 0)
	if err != nil {
		return nil, err
	}
	imported := map[string]bool{}
	for _, im := range f.Imports {
		if im.Name != nil {
			imported[im.Name.Name] = true
			continue
		}
		p, _ := strconv.Unquote(im.Path.Value)
		imported[importName(p)] = true
	}
	seen := map[string]bool{}
	var out []string
	for _, id := range f.Unresolved {
		n := id.Name
		if seen[n] || imported[n] || n == "_" || types.Universe.Lookup(n) != nil {
			continue
		}
		seen[n] = true
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// importName is the name a package is imported by: its name in Packages,
// else the last element of its path that is not a major version.
func importName(p string) string {
	for n, q := range Packages {
		if q == p {
			return n
		}
	}
	base := path.Base(p)
	if len(base) > 1 && base[0] == 'v' && strings.Trim(base[1:], "0123456789") == "" {
		base = path.Base(path.Dir(p))
	}
	return base
}

// markUsed returns src with "; _ = x" after every statement of a function
// body that declares variables (x := ..., var x ...), on the same line.
func markUsed(src string, f *ast.File, fset *token.FileSet) string {
	type insert struct {
		at   int
		text string
	}
	var ins []insert
	stmts := func(list []ast.Stmt) {
		for _, s := range list {
			var ids []*ast.Ident
			switch s := s.(type) {
			case *ast.AssignStmt:
				if s.Tok == token.DEFINE {
					for _, l := range s.Lhs {
						if id, ok := l.(*ast.Ident); ok {
							ids = append(ids, id)
						}
					}
				}
			case *ast.DeclStmt:
				if g, ok := s.Decl.(*ast.GenDecl); ok && g.Tok == token.VAR {
					for _, sp := range g.Specs {
						ids = append(ids, sp.(*ast.ValueSpec).Names...)
					}
				}
			}
			var text string
			for _, id := range ids {
				if id.Name != "_" {
					text += "; _ = " + id.Name
				}
			}
			if text != "" {
				ins = append(ins, insert{fset.Position(s.End()).Offset, text})
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BlockStmt:
			stmts(n.List)
		case *ast.CaseClause:
			stmts(n.Body)
		case *ast.CommClause:
			stmts(n.Body)
		}
		return true
	})
	sort.Slice(ins, func(i, j int) bool { return ins[i].at > ins[j].at })
	for _, in := range ins {
		src = src[:in.at] + in.text + src[in.at:]
	}
	return src
}

// importPaths returns the import paths of f, sorted.
func importPaths(f *ast.File) []string {
	var out []string
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}
