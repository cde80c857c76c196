package sweep

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// artifactDirer is the part of testing.T that keeps a test's artifacts
// (Go 1.26).
type artifactDirer interface{ ArtifactDir() string }

// PictureDir returns the directory where test t keeps the picture of a
// failing seed: t's artifact directory when the test binary runs with
// -artifacts (go test -artifacts), kept under -outputdir; otherwise
// tenure-sim/<test> under os.TempDir, which outlives the test (the
// artifact directory would not: without -artifacts it is removed when
// the test ends).
func PictureDir(t any, name string) (string, error) {
	if a, ok := t.(artifactDirer); ok && artifactsKept() {
		return a.ArtifactDir(), nil
	}
	dir := filepath.Join(os.TempDir(), "tenure-sim", safeName(name))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return dir, nil
}

// artifactsKept reports whether the test binary was asked to keep
// artifacts.
func artifactsKept() bool {
	f := flag.Lookup("test.artifacts")
	return f != nil && f.Value.String() == "true"
}

// safeName is a test's name as one path element.
func safeName(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.':
			return r
		}
		return '_'
	}, name)
}

// WritePicture writes the picture of seed, drawn by write, into the
// directory PictureDir gives for t, as seed-<seed>.html, and returns its
// path.
func WritePicture(t any, name string, seed uint64, write func(io.Writer) error) (string, error) {
	dir, err := PictureDir(t, name)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, fmt.Sprintf("seed-%d.html", seed))
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return path, err
}
