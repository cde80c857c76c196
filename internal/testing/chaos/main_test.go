package chaos

import (
	"testing"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
)

func TestMain(m *testing.M) {
	testcluster.Main(m, printSummary)
}
