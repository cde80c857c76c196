package testcluster

import (
	"fmt"
	"os"
	"testing"
)

// RequireBackendsEnv is the environment variable that turns a missing server
// from a skip into a failure when set to "1".
const RequireBackendsEnv = "TENURE_REQUIRE_BACKENDS"

// BackendsRequired reports whether TENURE_REQUIRE_BACKENDS=1.
func BackendsRequired() bool { return os.Getenv(RequireBackendsEnv) == "1" }

// Unavailable ends tb because a server it needs cannot be had: it fails when
// TENURE_REQUIRE_BACKENDS=1 and skips otherwise, with a message that says
// which server is missing and why.
func Unavailable(tb testing.TB, format string, args ...any) {
	tb.Helper()
	msg := fmt.Sprintf(format, args...)
	if BackendsRequired() {
		tb.Fatalf("%s (%s=1, so this is a failure)", msg, RequireBackendsEnv)
	}
	tb.Skipf("%s (skipping; set %s=1 to make this a failure)", msg, RequireBackendsEnv)
}
