package doccheck_test

import (
	"testing"

	"github.com/tenure-go/tenure/internal/testing/doccheck"
)

// Every Go snippet of README.md and docs/ compiles, except those that use
// controller-runtime or OpenTelemetry, which the controllerruntime and
// otel modules' own tests check in their modules.
func TestDocumentsCompile(t *testing.T) {
	doccheck.CheckDocuments(t, "../../..", "../../..", func(p doccheck.Program) bool {
		return !doccheck.ControllerRuntime(p) && !doccheck.OpenTelemetry(p)
	})
}
