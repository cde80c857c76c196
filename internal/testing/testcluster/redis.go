package testcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisServerEnv names the redis-server binary to run; when it is unset the
// binary is looked up as "redis-server" on PATH.
const RedisServerEnv = "TENURE_REDIS_SERVER"

// redisReadyTimeout bounds how long a starting redis-server may take to
// answer PING.
const redisReadyTimeout = 10 * time.Second

// Redis is a private redis-server started for tests. It listens only on a
// Unix socket in a temporary directory of its own (so there is no port to
// race for and the system Redis on port 6379 is never touched), or in
// cluster mode on free loopback ports; it keeps nothing on disk (no RDB, no
// AOF), and can be killed and restarted at the same address with empty
// data, as a server without persistence is after a crash.
//
// Its methods are safe for concurrent use.
type Redis struct {
	bin     string
	extra   []string // flags for this version of redis-server (debugFlags)
	dir     string
	sock    string // the Unix socket; "" in cluster mode
	port    int    // the TCP port in cluster mode
	busPort int    // the cluster bus port in cluster mode

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// StartRedis starts a private redis-server. The caller must Close it. It
// fails when redis-server cannot be found or does not become ready; tests
// should rather use NewRedis or PackageRedis, which turn that into a skip.
func StartRedis() (*Redis, error) {
	return startRedis(false)
}

// StartRedisCluster starts a private redis-server in cluster mode: a cluster
// of one node that owns all 16384 slots, so that Redis Cluster's rules
// (hash slots, CROSSSLOT, sharded Pub/Sub) apply. Cluster mode needs TCP,
// so it listens on free ports of 127.0.0.1 (one for clients, one for the
// cluster bus) instead of a Unix socket. Restart keeps the slots (in
// nodes.conf) but no data. The caller must Close it.
func StartRedisCluster() (*Redis, error) {
	return startRedis(true)
}

// debugFlags returns the flags that let clients on the socket or the
// loopback run DEBUG (DEBUG RELOAD loads an older file into a running
// server): --enable-debug-command local on Redis 7.0 and later, which
// refuse DEBUG without it; nothing on older versions, which allow it and
// do not know the flag.
func debugFlags(bin string) []string {
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return nil
	}
	_, v, ok := strings.Cut(string(out), " v=")
	if !ok {
		return nil
	}
	major, _, _ := strings.Cut(v, ".")
	if n, err := strconv.Atoi(major); err != nil || n < 7 {
		return nil
	}
	return []string{"--enable-debug-command", "local"}
}

func startRedis(cluster bool) (*Redis, error) {
	if err := serversSupported(); err != nil {
		return nil, err
	}
	bin := os.Getenv(RedisServerEnv)
	if bin == "" {
		var err error
		bin, err = exec.LookPath("redis-server")
		if err != nil {
			return nil, fmt.Errorf("redis-server not found on PATH (install it with scripts/backends.sh, or set %s): %w", RedisServerEnv, err)
		}
	}
	var errs []error
	// A port found free may be taken before the server binds it: try again
	// with other ports.
	for range 3 {
		// A short directory: a Unix socket path must fit in 108 bytes,
		// and t.TempDir paths can be longer.
		dir, err := os.MkdirTemp("", "tenure-redis-")
		if err != nil {
			return nil, fmt.Errorf("redis: temporary directory: %w", err)
		}
		r := &Redis{bin: bin, extra: debugFlags(bin), dir: dir}
		if cluster {
			if r.port, err = freePort(); err == nil {
				r.busPort, err = freePort()
			}
			if err != nil {
				_ = os.RemoveAll(dir)
				return nil, err
			}
		} else {
			r.sock = filepath.Join(dir, "redis.sock")
		}
		err = r.start()
		if err == nil {
			return r, nil
		}
		_ = os.RemoveAll(dir)
		errs = append(errs, err)
		if !cluster {
			break // no port to race for
		}
	}
	return nil, errors.Join(errs...)
}

// NewRedis starts a private redis-server for tb alone and stops it when tb
// ends. It calls Unavailable (skip, or fail under TENURE_REQUIRE_BACKENDS=1)
// when the server cannot be started. Use it for tests that kill or restart
// the server; tests that only read and write should share one with
// PackageRedis.
func NewRedis(tb testing.TB) *Redis {
	tb.Helper()
	return newRedis(tb, false)
}

// NewRedisCluster is NewRedis for a one-node cluster (see
// StartRedisCluster).
func NewRedisCluster(tb testing.TB) *Redis {
	tb.Helper()
	return newRedis(tb, true)
}

func newRedis(tb testing.TB, cluster bool) *Redis {
	tb.Helper()
	r, err := startRedis(cluster)
	if err != nil {
		Unavailable(tb, "redis: %v", err)
	}
	tb.Cleanup(func() {
		if err := r.Close(); err != nil {
			tb.Errorf("redis: close: %v", err)
		}
	})
	return r
}

var pkgRedis = shared[*Redis]{what: "redis-server", start: StartRedis, restart: (*Redis).Restart}

// PackageRedis returns the redis-server shared by the tests of the calling
// package, starting it on first use. It calls Unavailable when the server
// cannot be started. The package's TestMain must call StopPackageRedis after
// m.Run:
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		testcluster.StopPackageRedis()
//		os.Exit(code)
//	}
//
// Tests on the shared server must not kill it, and should use names (or a
// key prefix) of their own so that they do not see each other's records.
// A shared server found dead (a test broke the rule) is started again.
func PackageRedis(tb testing.TB) *Redis {
	tb.Helper()
	return pkgRedis.get(tb)
}

// StopPackageRedis stops the server that PackageRedis started, if any.
func StopPackageRedis() { pkgRedis.stop() }

// Network is the network to dial the server on: "unix", or "tcp" in
// cluster mode.
func (r *Redis) Network() string {
	if r.sock == "" {
		return "tcp"
	}
	return "unix"
}

// Addr is the server's address: the path of its Unix socket, or
// 127.0.0.1:port in cluster mode. It does not change across Restart.
func (r *Redis) Addr() string {
	if r.sock == "" {
		return fmt.Sprintf("127.0.0.1:%d", r.port)
	}
	return r.sock
}

// Cluster reports whether the server runs in cluster mode.
func (r *Redis) Cluster() bool { return r.sock == "" }

// Dir is the server's working directory; its log is Dir()/redis.log.
func (r *Redis) Dir() string { return r.dir }

// Options returns go-redis options that reach the server, with every other
// setting at go-redis's defaults.
func (r *Redis) Options() *redis.Options {
	return &redis.Options{Network: r.Network(), Addr: r.Addr()}
}

// Client returns a new go-redis client of the server, closed when tb ends.
// In cluster mode it talks to the one node directly, which serves every
// slot.
func (r *Redis) Client(tb testing.TB) *redis.Client {
	tb.Helper()
	c := redis.NewClient(r.Options())
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// ClusterClient returns a new go-redis cluster client of a server started
// in cluster mode, closed when tb ends.
func (r *Redis) ClusterClient(tb testing.TB) *redis.ClusterClient {
	tb.Helper()
	if !r.Cluster() {
		tb.Fatal("redis: ClusterClient of a server not in cluster mode")
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{r.Addr()}})
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// Running reports whether the server process is alive.
func (r *Redis) Running() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runningLocked()
}

func (r *Redis) runningLocked() bool {
	if r.cmd == nil {
		return false
	}
	select {
	case <-r.done:
		return false
	default:
		return true
	}
}

// Kill kills the server with SIGKILL, as a crash would, and waits for it to
// exit. Its data is lost: the server keeps none on disk. Killing a server
// that is not running does nothing.
func (r *Redis) Kill() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.killLocked()
}

func (r *Redis) killLocked() error {
	if !r.runningLocked() {
		return nil
	}
	if err := r.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("redis: kill: %w", err)
	}
	<-r.done
	r.cmd = nil
	return nil
}

// Restart kills the server if it is running and starts it again at the
// same address, with no data.
func (r *Redis) Restart() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.killLocked(); err != nil {
		return err
	}
	return r.startLocked()
}

// Pause stops the server process with SIGSTOP: it keeps its connections and
// its data but answers nothing until Resume, as a server stalled by the
// machine it runs on would.
func (r *Redis) Pause() error { return r.signal("pause", pauseProcess) }

// Resume continues a server stopped by Pause.
func (r *Redis) Resume() error { return r.signal("resume", resumeProcess) }

func (r *Redis) signal(what string, do func(*os.Process) error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.runningLocked() {
		return fmt.Errorf("redis: %s: the server is not running", what)
	}
	if err := do(r.cmd.Process); err != nil {
		return fmt.Errorf("redis: %s: %w", what, err)
	}
	return nil
}

// Close kills the server and removes its directory.
func (r *Redis) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.killLocked()
	return errors.Join(err, os.RemoveAll(r.dir))
}

// Log returns the last lines of the server's log, for failure messages.
func (r *Redis) Log() string {
	b, err := os.ReadFile(filepath.Join(r.dir, "redis.log"))
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}

func (r *Redis) start() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.startLocked()
}

// startLocked starts redis-server and waits until it answers PING.
func (r *Redis) startLocked() error {
	args := []string{
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--dir", r.dir,
		"--logfile", filepath.Join(r.dir, "redis.log"),
		"--daemonize", "no",
	}
	args = append(args, r.extra...)
	if r.sock != "" {
		// A killed server leaves its socket file behind.
		if err := os.Remove(r.sock); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("redis: removing the old socket: %w", err)
		}
		args = append(args,
			"--port", "0", // no TCP at all
			"--unixsocket", r.sock,
			"--unixsocketperm", "700")
	} else {
		args = append(args,
			"--port", fmt.Sprint(r.port),
			"--cluster-enabled", "yes",
			"--cluster-port", fmt.Sprint(r.busPort),
			"--cluster-config-file", filepath.Join(r.dir, "nodes.conf"))
	}
	cmd := exec.Command(r.bin, args...)
	cmd.Dir = r.dir
	// The server dies with the test binary, even when it is killed (Linux).
	cmd.SysProcAttr = serverAttr(syscall.SIGKILL, nil)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("redis: starting %s: %w", r.bin, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	r.cmd, r.done = cmd, done
	if err := r.waitReady(done); err != nil {
		_ = r.killLocked()
		return fmt.Errorf("%w\nredis.log:\n%s", err, r.Log())
	}
	return nil
}

// clusterReady gives a fresh one-node cluster every slot, and reports
// whether the cluster is up.
func (r *Redis) clusterReady(ctx context.Context, c *redis.Client) error {
	info, err := c.ClusterInfo(ctx).Result()
	if err != nil {
		return err
	}
	if strings.Contains(info, "cluster_state:ok") {
		return nil
	}
	if strings.Contains(info, "cluster_slots_assigned:0\r") {
		if err := c.ClusterAddSlotsRange(ctx, 0, 16383).Err(); err != nil {
			return fmt.Errorf("CLUSTER ADDSLOTSRANGE: %w", err)
		}
	}
	return errors.New("cluster_state is not ok yet")
}

// waitReady polls the server with PING (and in cluster mode CLUSTER INFO)
// until it answers, it exits, or redisReadyTimeout passes. redis-server signals readiness only in its log,
// so polling is the simplest reliable test.
func (r *Redis) waitReady(exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(context.Background(), redisReadyTimeout)
	defer cancel()
	c := redis.NewClient(&redis.Options{
		Network:     r.Network(),
		Addr:        r.Addr(),
		MaxRetries:  -1,
		DialTimeout: time.Second,
		PoolSize:    1,
	})
	defer c.Close()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		if last = c.Ping(ctx).Err(); last == nil && r.Cluster() {
			last = r.clusterReady(ctx, c)
		}
		if last == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("redis: %s exited at start", r.bin)
		case <-ctx.Done():
			return fmt.Errorf("redis: not ready after %v: %w", redisReadyTimeout, last)
		case <-tick.C:
		}
	}
}
