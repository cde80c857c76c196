package testcluster

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A shared server outlives the test that started it, and only Main stops
// it and removes its directory: a package whose tests use one without Main
// leaves a data directory behind at each run.
func TestEveryPackageUsingASharedServerRunsMain(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found from %s: %v", root, err)
	}
	uses := map[string]string{} // directory: a test file using a shared server
	mains := map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dir := filepath.Dir(path)
		if strings.Contains(string(b), "testcluster.Package") {
			uses[dir] = path
		}
		if strings.Contains(string(b), "testcluster.Main(") {
			mains[dir] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(uses) == 0 {
		t.Fatal("no test file uses a shared server: the search is broken")
	}
	for dir, file := range uses {
		if !mains[dir] {
			rel, _ := filepath.Rel(root, file)
			t.Errorf("%s uses a shared server, but no TestMain in its package calls testcluster.Main", rel)
		}
	}
}
