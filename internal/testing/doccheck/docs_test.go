package doccheck_test

import (
	"testing"

	"github.com/tenure-go/tenure/internal/testing/doccheck"
)

// Every Go snippet of README.md and docs/ compiles, except those that use
// controller-runtime, which controllerruntime's own test checks in its
// module.
func TestDocumentsCompile(t *testing.T) {
	doccheck.CheckDocuments(t, "../../..", "../../..", func(p doccheck.Program) bool { return !doccheck.ControllerRuntime(p) })
}
