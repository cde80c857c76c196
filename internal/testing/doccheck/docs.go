package doccheck

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Documents are the Markdown files whose Go snippets must compile,
// relative to the repository's root: patterns for filepath.Glob.
var Documents = []string{"README.md", "docs/*.md", "docs/backends/*.md", "controllerruntime/README.md"}

// common is the preamble every document shares: the names its prose uses
// for the things a reader has at hand.
var common = Preamble{
	"Meta":    "type Meta struct{ Addr string }",
	"ctx":     "var ctx context.Context",
	"st":      "var st store.Store[Meta]",
	"e":       "var e *lead.Elector[Meta]",
	"podName": `var podName = os.Getenv("POD_NAME")`,
	"myCodec": "var myCodec store.Codec[Meta]",
	"pool":    "var pool *pgxpool.Pool",
	"rdb":     "var rdb *redis.Client",
}

// Preambles are the preambles of the documents, by path from the root:
// common, with a document's own names added. A document without an entry
// has common.
var Preambles = map[string]Preamble{
	"README.md": with(common, Preamble{
		"listenAddr":    "var listenAddr string",
		"compact":       "func compact(ctx context.Context, token fence.Token) error { return nil }",
		"sendReminders": "func sendReminders(ctx context.Context) error { return nil }",
	}),
	"docs/guide.md": with(common, Preamble{
		"redisClient": "var redisClient *redis.Client",
		"buildReport": "func buildReport(ctx context.Context, token fence.Token) error { return nil }",
		"proxy":       "var proxy interface{ SetUpstream(addr string) }",
		"tenants":     "var tenants []string",
		"clientset":   "var clientset kubernetes.Interface",
		"namespace":   "var namespace string",
		"cfg":         "var cfg *rest.Config",
		"r":           "var r reconcile.Reconciler",
		"day":         "var day string",
		"body":        "var body []byte",
		"data":        "var data []byte",
		// examples/customstore, a module of its own.
		"Endpoint":      "type Endpoint struct { Addr string; Zones []string }",
		"endpointstore": "var endpointstore struct{ New func() store.Store[Endpoint] }",
		// A store of the reader's over a server.
		"serverAddr":   "var serverAddr string",
		"openMyStore":  "func openMyStore(t *testing.T, addr string) store.Store[storetest.Meta] { return nil }",
		"deleteByHand": "func deleteByHand(t *testing.T, addr, name string) {}",
		"timings":      "var timings = lease.DefaultConfig()",
	}),
	"docs/backends/postgres.md": with(common, Preamble{
		"cfg": "var cfg *pgxpool.Config",
		"dsn": "var dsn string",
	}),
	"docs/backends/redis.md": with(common, Preamble{
		"term":  "var term lead.Term",
		"value": "var value string",
	}),
}

// with returns a copy of a with the entries of b added.
func with(a, b Preamble) Preamble {
	out := Preamble{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// ControllerRuntime reports whether p uses controller-runtime or Tenure's
// controllerruntime module, which the main module does not require.
func ControllerRuntime(p Program) bool {
	return slices.ContainsFunc(p.Imports, func(path string) bool {
		return path == tenure+"controllerruntime" || strings.HasPrefix(path, "sigs.k8s.io/controller-runtime")
	})
}

// OpenTelemetry reports whether p uses OpenTelemetry or Tenure's otel
// module, which the main module does not require.
func OpenTelemetry(p Program) bool {
	return slices.ContainsFunc(p.Imports, func(path string) bool {
		return path == tenure+"otel" || strings.HasPrefix(path, "go.opentelemetry.io/")
	})
}

// CheckDocuments checks the snippets of the Documents under root for which
// want is true, building them in a module made from the module in modDir
// (see Check). Each snippet that fails is an error of t naming its file,
// its line and the compiler's message; those marked not compiled are
// counted and logged.
func CheckDocuments(t *testing.T, root, modDir string, want func(Program) bool) {
	t.Helper()
	var progs []Program
	var skipped []string
	for _, pattern := range Documents {
		files, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			rel, err := filepath.Rel(root, f)
			if err != nil {
				t.Fatal(err)
			}
			rel = filepath.ToSlash(rel)
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			snips, err := Extract(rel, data)
			if err != nil {
				t.Error(err)
			}
			for _, s := range snips {
				if s.Skip != "" {
					skipped = append(skipped, s.String()+": "+s.Skip)
					continue
				}
				pre, ok := Preambles[rel]
				if !ok {
					pre = common
				}
				p, err := Complete(s, pre)
				if err != nil {
					t.Error(err)
					continue
				}
				if want(p) {
					progs = append(progs, p)
				}
			}
		}
	}
	if len(progs) == 0 {
		t.Fatalf("no Go snippet to check in %v under %s", Documents, root)
	}
	fails, err := Check(t.Context(), modDir, progs)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fails {
		t.Errorf("a Go snippet does not compile:\n%s\ncompleted as:\n%s", f.Error(), numbered(f.Program.Source))
	}
	t.Logf("%d Go snippets checked, %d marked not compiled", len(progs), len(skipped))
	for _, s := range skipped {
		t.Logf("not compiled: %s", s)
	}
}

// numbered returns src with line numbers.
func numbered(src string) string {
	var b strings.Builder
	for i, l := range strings.Split(strings.TrimSuffix(src, "\n"), "\n") {
		b.WriteString(strconv.Itoa(i+1) + "\t" + l + "\n")
	}
	return b.String()
}
