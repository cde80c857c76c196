package browser

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
)

// Errors returned by Find.
var (
	// ErrNoBrowser: no Chromium binary was found.
	ErrNoBrowser = errors.New("browser: no Chromium found")
)

// candidates are the names Find looks up on PATH, in order.
var candidates = []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"}

// Find returns the path of a Chromium binary: TENURE_CHROMIUM when it is
// set (an error when it names nothing executable), otherwise the first of
// chromium, chromium-browser, google-chrome and headless-shell on PATH.
func Find(getenv func(string) string) (string, error) {
	if p := getenv("TENURE_CHROMIUM"); p != "" {
		path, err := exec.LookPath(p)
		if err != nil {
			return "", fmt.Errorf("%w: TENURE_CHROMIUM=%q: %w", ErrNoBrowser, p, err)
		}
		return path, nil
	}
	for _, name := range candidates {
		if path, err := exec.LookPath(name); err == nil {
			return path, nil
		}
	}
	return "", fmt.Errorf("%w: none of %v on PATH and TENURE_CHROMIUM unset (make backends installs Debian's chromium)", ErrNoBrowser, candidates)
}

// unavailable skips t with why, or fails it when the environment requires
// every backend.
func unavailable(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("TENURE_REQUIRE_BACKENDS") == "1" {
		t.Fatalf("browser: %s (TENURE_REQUIRE_BACKENDS=1)", why)
	}
	t.Skipf("browser: %s; skipping", why)
}

// New starts a headless Chromium for t and returns a chromedp context
// bound to one tab of it; both end when t ends. The browser starts with
// no network other than what the test's pages fetch, no sandbox (tests
// run as root in containers), a fixed 1280×800 window, and a fresh
// profile in t's temporary directory.
func New(t testing.TB) context.Context {
	t.Helper()
	path, err := Find(os.Getenv)
	if err != nil {
		unavailable(t, err.Error())
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.WindowSize(1280, 800),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-dev-shm-usage", true),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The first call starts the browser, which lives as long as that
	// call's context: it takes no timeout of its own.
	if err := chromedp.Do(ctx); err != nil {
		unavailable(t, fmt.Sprintf("cannot start %s: %v", path, err))
	}
	return ctx
}

// Screenshot saves a PNG of the whole page shown in ctx as name.png in
// t's artifact directory and returns its path.
func Screenshot(ctx context.Context, t *testing.T, name string) string {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("browser: screenshot %s: %v", name, err)
	}
	path := filepath.Join(t.ArtifactDir(), name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatalf("browser: save screenshot: %v", err)
	}
	t.Logf("browser: screenshot %s", path)
	return path
}
