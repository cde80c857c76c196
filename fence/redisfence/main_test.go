package redisfence_test

import (
	"os"
	"testing"

	"github.com/tenure-go/tenure/internal/testcluster"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testcluster.StopPackageRedis()
	os.Exit(code)
}
