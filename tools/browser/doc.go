// Package browser runs Tenure's pages in a real headless browser for
// tests: Chromium, driven through the DevTools protocol with chromedp.
//
// It is a module of its own so that programs importing Tenure never
// download chromedp. New finds Chromium (TENURE_CHROMIUM, then chromium,
// chromium-browser, google-chrome and headless-shell on PATH); make
// backends installs Debian's chromium package when it is missing and the
// machine can. A test whose browser cannot be had skips with a message,
// or fails when TENURE_REQUIRE_BACKENDS=1.
//
// Screenshot keeps a PNG in the test's artifact directory
// (testing.T.ArtifactDir): run go test with -artifacts (make test does)
// to keep them under -outputdir.
package browser
