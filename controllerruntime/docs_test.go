package controllerruntime_test

import (
	"testing"

	"github.com/tenure-go/tenure/internal/testing/doccheck"
)

// The Go snippets of README.md, the guide and this module's README.md that
// use controller-runtime compile; the main module's doccheck test checks
// the others.
func TestDocumentSnippetsCompile(t *testing.T) {
	doccheck.CheckDocuments(t, "..", ".", doccheck.ControllerRuntime)
}
