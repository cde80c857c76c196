package etcdstore_test

import (
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
)

func TestMain(m *testing.M) { testcluster.Main(m) }

// eventTimeout bounds every wait for a watch event.
const eventTimeout = 10 * time.Second

// newClient returns an etcd client of e, closed when tb ends. Its log is
// discarded: the tests kill servers on purpose.
func newClient(tb testing.TB, e *testcluster.Etcd) *clientv3.Client {
	tb.Helper()
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{e.Endpoint()},
		DialTimeout: 2 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c
}
