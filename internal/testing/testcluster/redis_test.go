package testcluster

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func ping(c *redis.Client, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return c.Ping(ctx).Err()
}

func TestRedisLifecycle(t *testing.T) {
	r := NewRedis(t) // not PackageRedis: this package has no TestMain
	if r.Network() != "unix" || !strings.HasPrefix(r.Addr(), r.Dir()) {
		t.Fatalf("address %s %s, want a Unix socket in %s", r.Network(), r.Addr(), r.Dir())
	}
	c := redis.NewClient(&redis.Options{Network: r.Network(), Addr: r.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true})
	defer c.Close()
	ctx := t.Context()
	if !r.Running() {
		t.Fatal("Running() = false after start")
	}
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// No TCP listener, nothing kept on disk.
	cfg, err := c.ConfigGet(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"port": "0", "save": "", "appendonly": "no"} {
		if cfg[k] != want {
			t.Errorf("CONFIG %s = %q, want %q", k, cfg[k], want)
		}
	}

	// Restart: same address, no data.
	if err := r.Restart(); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Exists(ctx, "k").Result(); err != nil || n != 0 {
		t.Fatalf("after Restart: EXISTS k = %d, %v; want 0 (the data is gone)", n, err)
	}

	// Kill: nothing answers; Restart brings it back.
	if err := r.Kill(); err != nil {
		t.Fatal(err)
	}
	if r.Running() {
		t.Fatal("Running() = true after Kill")
	}
	if err := ping(c, time.Second); err == nil {
		t.Fatal("PING answered after Kill")
	}
	if err := r.Kill(); err != nil {
		t.Fatalf("a second Kill: %v", err)
	}
	if err := r.Pause(); err == nil {
		t.Fatal("Pause of a killed server succeeded")
	}
	if err := r.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := ping(c, time.Second); err != nil {
		t.Fatalf("PING after Restart: %v", err)
	}

	// Pause: connections stay, nothing answers until Resume.
	if err := r.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := ping(c, 200*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) && !isTimeoutErr(err) {
		t.Fatalf("PING of a paused server: %v, want a timeout", err)
	}
	if err := r.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := ping(c, time.Second); err != nil {
		t.Fatalf("PING after Resume: %v", err)
	}
	if log := r.Log(); !strings.Contains(strings.ToLower(log), "ready to accept connections") {
		t.Errorf("the log does not say the server was ready:\n%s", log)
	}
}

func isTimeoutErr(err error) bool {
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}

func TestPackageRedisIsShared(t *testing.T) {
	a := PackageRedis(t)
	t.Cleanup(StopPackageRedis)
	b := PackageRedis(t)
	if a != b {
		t.Fatal("PackageRedis returned two servers")
	}
	// A shared server found dead is started again.
	if err := a.Kill(); err != nil {
		t.Fatal(err)
	}
	if c := PackageRedis(t); c != a || !c.Running() {
		t.Fatal("PackageRedis did not restart its dead server")
	}
	if err := ping(a.Client(t), time.Second); err != nil {
		t.Fatal(err)
	}
}

func TestRedisCloseRemovesDirectory(t *testing.T) {
	r, err := StartRedis()
	if err != nil {
		Unavailable(t, "redis: %v", err)
	}
	dir := r.Dir()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("%s still exists after Close (err %v)", dir, err)
	}
	if r.Running() {
		t.Fatal("Running() = true after Close")
	}
}

func TestRedisMissingBinary(t *testing.T) {
	t.Setenv(RedisServerEnv, "/nonexistent/redis-server")
	r, err := StartRedis()
	if err == nil {
		_ = r.Close()
		t.Fatal("StartRedis succeeded with a missing binary")
	}
	if !strings.Contains(err.Error(), "/nonexistent/redis-server") {
		t.Fatalf("error %q does not name the binary", err)
	}
}

func TestRedisClusterMode(t *testing.T) {
	r := NewRedisCluster(t)
	if r.Network() != "tcp" || !r.Cluster() || strings.HasSuffix(r.Addr(), ":6379") {
		t.Fatalf("cluster server at %s %s", r.Network(), r.Addr())
	}
	ctx := t.Context()
	c := r.ClusterClient(t)
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// Cluster rules apply: keys of two slots in one command are refused.
	if err := r.Client(t).MSet(ctx, "a", "1", "b", "2").Err(); err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Fatalf("MSET across slots: %v, want CROSSSLOT", err)
	}
	if err := r.Restart(); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Exists(ctx, "k").Result(); err != nil || n != 0 {
		t.Fatalf("after Restart: EXISTS k = %d, %v; want 0", n, err)
	}
	info, err := r.Client(t).ClusterInfo(ctx).Result()
	if err != nil || !strings.Contains(info, "cluster_state:ok") {
		t.Fatalf("after Restart: cluster info %q, %v", info, err)
	}
}
