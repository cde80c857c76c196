package tenureotel_test

import (
	"testing"

	"github.com/tenure-go/tenure/internal/testing/doccheck"
)

// The Go snippets of README.md and docs/ that use OpenTelemetry compile;
// the main module's doccheck test checks the others.
func TestDocumentSnippetsCompile(t *testing.T) {
	doccheck.CheckDocuments(t, "..", ".", doccheck.OpenTelemetry)
}
