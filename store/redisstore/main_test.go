package redisstore_test

import (
	"context"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
)

// quiet drops go-redis's own log lines: the tests kill servers and cut
// connections on purpose, and every failed dial would be logged.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func TestMain(m *testing.M) {
	if os.Getenv("TENURE_REDIS_LOG") == "" {
		redis.SetLogger(quiet{})
	}
	testcluster.Main(m)
}
