package chaos

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/etcdstore"
	"github.com/tenure-go/tenure/store/kubestore"
	"github.com/tenure-go/tenure/store/memstore"
	"github.com/tenure-go/tenure/store/pgstore"
	"github.com/tenure-go/tenure/store/redisstore"
)

// setupMem: one memstore shared by the electors of a schedule; the only
// fault is an elector crash.
func setupMem(*testing.T) *env {
	return &env{
		newSchedule: func(t *testing.T, seed uint64) (string, func(*testing.T, string) store.Store[meta]) {
			st := memstore.New[meta]()
			return "job", func(*testing.T, string) store.Store[meta] { return st }
		},
	}
}

// setupRedis: a redis-server of the test's own (it is killed), reached
// through the proxies over TCP; the proxies dial its Unix socket.
func setupRedis(t *testing.T) *env {
	srv := testcluster.NewRedis(t)
	return &env{
		network: srv.Network(), addr: srv.Addr(),
		newSchedule: func(t *testing.T, seed uint64) (string, func(*testing.T, string) store.Store[meta]) {
			prefix := fmt.Sprintf("chaos-%d-%d:", seed, time.Now().UnixNano())
			return "job", func(t *testing.T, addr string) store.Store[meta] {
				c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
				t.Cleanup(func() { _ = c.Close() })
				st, err := redisstore.New[meta](c, redisstore.WithPrefix(prefix))
				if err != nil {
					t.Fatal(err)
				}
				return st
			}
		},
		strike: pauseOrKill("redis", srv.Pause, srv.Resume, srv.Kill, srv.Restart, true),
	}
}

// setupPostgres: a PostgreSQL cluster of the test's own (it is crashed),
// and an admin pool that reaches it directly, without faults.
func setupPostgres(t *testing.T) *env {
	pg, err := testcluster.StartPostgres()
	if err != nil {
		testcluster.Unavailable(t, "postgres: %v", err)
	}
	t.Cleanup(func() { _ = pg.Close() })
	admin := newPool(t, pg.DSN()+"&application_name=chaos-admin")
	return &env{
		network: "tcp", addr: fmt.Sprintf("127.0.0.1:%d", pg.Port()),
		newSchedule: func(t *testing.T, seed uint64) (string, func(*testing.T, string) store.Store[meta]) {
			table := fmt.Sprintf("chaos_%d_%d", seed, time.Now().UnixNano())
			// The table is made without faults, before the electors start.
			st, err := pgstore.New[meta](admin, pgstore.WithTable(table))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := st.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			return "job", func(t *testing.T, addr string) store.Store[meta] {
				pool := newPool(t, fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable", addr))
				st, err := pgstore.New[meta](pool, pgstore.WithTable(table), pgstore.WithAutoMigrate(false))
				if err != nil {
					t.Fatal(err)
				}
				return st
			}
		},
		strike: func(k kind) (func() error, bool, error) {
			switch k {
			case kKill:
				return pg.Start, false, pg.Crash()
			case kTerminate:
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_, err := admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
					WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()
					AND application_name <> 'chaos-admin'`)
				return func() error { return nil }, false, err
			}
			return nil, false, fmt.Errorf("postgres: no server fault %s", k)
		},
	}
}

// pauseOrKill is the strike of a server that can be paused (SIGSTOP) and
// killed: pause and resume it, or kill and restart it (lost says whether a
// restart comes back empty).
func pauseOrKill(name string, pause, resume, kill, restart func() error, lost bool) func(kind) (func() error, bool, error) {
	return func(k kind) (func() error, bool, error) {
		switch k {
		case kPause:
			return resume, false, pause()
		case kKill:
			return restart, lost, kill()
		}
		return nil, false, fmt.Errorf("%s: no server fault %s", name, k)
	}
}

// newPool returns a pool of dsn closed when t ends. It connects lazily.
func newPool(t *testing.T, dsn string) *pgxpool.Pool {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// setupKube: an etcd and kube-apiserver of the test's own (the API server
// is paused and killed; etcd keeps the data).
func setupKube(t *testing.T) *env {
	k := testcluster.NewKube(t, testcluster.KubeOptions{})
	port := k.URL()[len("https://127.0.0.1:"):]
	return &env{
		network: "tcp", addr: "127.0.0.1:" + port,
		newSchedule: func(t *testing.T, seed uint64) (string, func(*testing.T, string) store.Store[meta]) {
			ns := k.Namespace(t, "chaos")
			return "job", func(t *testing.T, addr string) store.Store[meta] {
				cfg := rest.CopyConfig(k.Config())
				cfg.Host = "https://" + addr
				leases, err := coordinationclient.NewForConfig(cfg)
				if err != nil {
					t.Fatal(err)
				}
				st, err := kubestore.New[meta](leases, ns)
				if err != nil {
					t.Fatal(err)
				}
				return st
			}
		},
		strike: pauseOrKill("kube", k.Pause, k.Resume, k.Kill, k.Start, false),
	}
}

// setupEtcd: an etcd of the test's own (it is paused, and killed and
// restarted with its data), reached through the proxies over TCP.
func setupEtcd(t *testing.T) *env {
	e := testcluster.NewEtcd(t)
	addr := strings.TrimPrefix(e.Endpoint(), "http://")
	return &env{
		network: "tcp", addr: addr,
		newSchedule: func(t *testing.T, seed uint64) (string, func(*testing.T, string) store.Store[meta]) {
			prefix := fmt.Sprintf("chaos-%d-%d/", seed, time.Now().UnixNano())
			return "job", func(t *testing.T, addr string) store.Store[meta] {
				c, err := clientv3.New(clientv3.Config{
					Endpoints:   []string{"http://" + addr},
					DialTimeout: 2 * time.Second,
					Logger:      zap.NewNop(),
				})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = c.Close() })
				st, err := etcdstore.New[meta](c, etcdstore.WithPrefix(prefix))
				if err != nil {
					t.Fatal(err)
				}
				return st
			}
		},
		strike: pauseOrKill("etcd", e.Pause, e.Resume, e.Kill, e.Start, false),
	}
}
