package testcluster

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
)

// The environment variables that name the binaries the Kubernetes harness
// runs. When TENURE_KUBE_APISERVER is unset, kube-apiserver is looked for in
// the cache that scripts/kube.sh builds into
// (${TENURE_CACHE:-$HOME/.cache/tenure}/kube-apiserver-<KubeVersion>), then
// on PATH. When TENURE_ETCD is unset, etcd is looked for on PATH, then at
// /usr/bin/etcd (Debian's etcd-server).
const (
	// KubeAPIServerEnv names the kube-apiserver binary to run.
	KubeAPIServerEnv = "TENURE_KUBE_APISERVER"
	// EtcdEnv names the etcd binary to run.
	EtcdEnv = "TENURE_ETCD"
	// CacheEnv names the directory scripts/kube.sh builds into.
	CacheEnv = "TENURE_CACHE"
)

// KubeVersion is the version of kube-apiserver that scripts/kube.sh builds
// (from tools/kube) and the harness looks for.
const KubeVersion = "v1.37.2"

// Timeouts of the harness: a cold kube-apiserver on a busy machine takes a
// while to answer /readyz.
const (
	etcdReadyTimeout = 30 * time.Second
	kubeReadyTimeout = 90 * time.Second
	kubeStopTimeout  = 30 * time.Second
)

// KubeOptions configures a Kubernetes API server started by StartKube.
type KubeOptions struct {
	// RBAC runs the server with --authorization-mode=RBAC instead of
	// AlwaysAllow. The admin token is in group system:masters, which may do
	// anything under both.
	RBAC bool
	// Users are extra users of the token file, each with a token of its own
	// (see Kube.UserConfig) and no group: under RBAC they may do only what
	// a RoleBinding grants them. The token file is read at start, so users
	// are fixed for the server's life.
	Users []string
}

// Kube is a private Kubernetes API server for tests: an etcd and a
// kube-apiserver on free loopback ports, with their data and certificates
// in a temporary directory. No controller manager, no scheduler, no nodes:
// enough for Leases, Namespaces and RBAC objects.
//
// The API server can be stopped and started again (same port, same
// certificates, same etcd, so the data survives); etcd runs until Close.
// Its methods are safe for concurrent use.
type Kube struct {
	apiserverBin string
	etcdBin      string
	dir          string
	opts         KubeOptions
	port         int               // kube-apiserver's secure port
	etcdURL      string            // client URL
	tokens       map[string]string // user -> bearer token; "admin" included

	mu        sync.Mutex
	etcd      *kubeProc
	apiserver *kubeProc
}

// kubeProc is one running server process.
type kubeProc struct {
	cmd  *exec.Cmd
	log  string
	done chan struct{} // closed when cmd has exited
}

// alive reports whether p is still running.
func (p *kubeProc) alive() bool {
	if p == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// stop sends sig to p and waits for it to exit, killing it after timeout.
func (p *kubeProc) stop(sig syscall.Signal, timeout time.Duration) {
	if !p.alive() {
		return
	}
	_ = p.cmd.Process.Signal(sig)
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-p.done:
	case <-timer.C:
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// KubeBinaries returns the paths of kube-apiserver and etcd, or an error
// that says what is missing and how to get it.
func KubeBinaries() (apiserver, etcd string, err error) {
	apiserver = os.Getenv(KubeAPIServerEnv)
	if apiserver == "" {
		cache := os.Getenv(CacheEnv)
		if cache == "" {
			if home, herr := os.UserHomeDir(); herr == nil {
				cache = filepath.Join(home, ".cache", "tenure")
			}
		}
		if p := filepath.Join(cache, "kube-apiserver-"+KubeVersion); cache != "" && kubeExecutable(p) {
			apiserver = p
		} else if p, lerr := exec.LookPath("kube-apiserver"); lerr == nil {
			apiserver = p
		}
	}
	etcd = etcdBinary()
	var missing []string
	if apiserver == "" || !kubeExecutable(apiserver) {
		missing = append(missing, fmt.Sprintf("kube-apiserver %s (build it with `bash scripts/kube.sh`, several minutes the first time, or set %s)", KubeVersion, KubeAPIServerEnv))
	}
	if etcd == "" || !kubeExecutable(etcd) {
		missing = append(missing, fmt.Sprintf("etcd (`apt-get install etcd-server`, which scripts/kube.sh does, or set %s)", EtcdEnv))
	}
	if len(missing) > 0 {
		return "", "", fmt.Errorf("kube: missing %s", strings.Join(missing, " and "))
	}
	return apiserver, etcd, nil
}

// etcdBinary returns the etcd binary named by TENURE_ETCD, or found on PATH
// or at /usr/bin/etcd; "" when there is none.
func etcdBinary() string {
	etcd := os.Getenv(EtcdEnv)
	if etcd == "" {
		if p, lerr := exec.LookPath("etcd"); lerr == nil {
			etcd = p
		} else if kubeExecutable("/usr/bin/etcd") {
			etcd = "/usr/bin/etcd"
		}
	}
	return etcd
}

func kubeExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// StartKube starts etcd and kube-apiserver and waits until the API server
// is ready. The caller must Close it. Tests should rather use NewKube or
// PackageKube, which turn a missing binary into a skip.
func StartKube(opts KubeOptions) (*Kube, error) {
	if err := serversSupported(); err != nil {
		return nil, err
	}
	apiserver, etcd, err := KubeBinaries()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "tenure-kube-")
	if err != nil {
		return nil, fmt.Errorf("kube: temporary directory: %w", err)
	}
	k := &Kube{apiserverBin: apiserver, etcdBin: etcd, dir: dir, opts: opts, tokens: map[string]string{}}
	if err := k.setup(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := k.startEtcdLocked(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if err := k.startLocked(); err != nil {
		k.etcd.stop(syscall.SIGKILL, kubeStopTimeout)
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return k, nil
}

// setup writes the service-account key pair and the token file, and picks
// the ports.
func (k *Kube) setup() error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return fmt.Errorf("kube: service-account key: %w", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return fmt.Errorf("kube: service-account key: %w", err)
	}
	if err := os.WriteFile(filepath.Join(k.dir, "sa.key"), pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		return fmt.Errorf("kube: %w", err)
	}
	if err := os.WriteFile(filepath.Join(k.dir, "sa.pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o600); err != nil {
		return fmt.Errorf("kube: %w", err)
	}
	var lines []string
	for _, u := range append([]string{"admin"}, k.opts.Users...) {
		if u == "" || strings.ContainsAny(u, ",\"\n") {
			return fmt.Errorf("kube: bad user name %q", u)
		}
		if _, dup := k.tokens[u]; dup {
			return fmt.Errorf("kube: user %q twice", u)
		}
		tok, err := kubeRandom(16)
		if err != nil {
			return err
		}
		k.tokens[u] = tok
		if u == "admin" {
			lines = append(lines, fmt.Sprintf("%s,admin,admin,system:masters", tok))
		} else {
			lines = append(lines, fmt.Sprintf("%s,%s,%s", tok, u, u))
		}
	}
	if err := os.WriteFile(filepath.Join(k.dir, "tokens.csv"), []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		return fmt.Errorf("kube: %w", err)
	}
	if k.port, err = freePort(); err != nil {
		return err
	}
	return nil
}

func kubeRandom(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("kube: random: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// spawn starts bin with args, its output going to the log file name in
// k.dir.
func (k *Kube) spawn(name, bin string, args ...string) (*kubeProc, error) {
	return spawnServer("kube", k.dir, name, bin, args...)
}

// spawnServer starts bin with args in dir, its output going to the log file
// name in dir; what names the harness in errors.
func spawnServer(what, dir, name, bin string, args ...string) (*kubeProc, error) {
	logPath := filepath.Join(dir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = f, f
	// The server dies with the test binary, even when it is killed (Linux).
	cmd.SysProcAttr = serverAttr(syscall.SIGKILL, nil)
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: starting %s: %w", what, bin, err)
	}
	p := &kubeProc{cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// startEtcdLocked starts etcd on free ports and waits until it answers
// /health.
func (k *Kube) startEtcdLocked() error {
	var lastErr error
	for range 3 { // a port taken between picking and binding: try again
		client, err1 := freePort()
		peer, err2 := freePort()
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
		k.etcdURL = fmt.Sprintf("http://127.0.0.1:%d", client)
		peerURL := fmt.Sprintf("http://127.0.0.1:%d", peer)
		p, err := k.spawn("etcd", k.etcdBin,
			"--data-dir", filepath.Join(k.dir, "etcd"),
			"--listen-client-urls", k.etcdURL,
			"--advertise-client-urls", k.etcdURL,
			"--listen-peer-urls", peerURL,
			"--initial-advertise-peer-urls", peerURL,
			"--initial-cluster", "default="+peerURL,
			"--unsafe-no-fsync",
		)
		if err != nil {
			return err
		}
		k.etcd = p
		if lastErr = waitHTTP(p, k.etcdURL+"/health", "", etcdReadyTimeout, func(body string) bool {
			return strings.Contains(body, `"health":"true"`)
		}); lastErr == nil {
			return nil
		}
		p.stop(syscall.SIGKILL, kubeStopTimeout)
		lastErr = fmt.Errorf("etcd: %w\n%s", lastErr, kubeLogTail(p.log))
	}
	return lastErr
}

// Start starts the API server again after Stop, on the same port, and waits
// until it is ready. Starting a running server does nothing.
func (k *Kube) Start() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.apiserver.alive() {
		return nil
	}
	if !k.etcd.alive() {
		return errors.New("kube: etcd is not running (Close was called?)")
	}
	return k.startLocked()
}

// startLocked starts kube-apiserver and waits until /readyz says ok.
func (k *Kube) startLocked() error {
	authz := "AlwaysAllow"
	if k.opts.RBAC {
		authz = "RBAC"
	}
	p, err := k.spawn("kube-apiserver", k.apiserverBin,
		"--etcd-servers="+k.etcdURL,
		"--etcd-prefix=/tenure-"+filepath.Base(k.dir),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(k.port),
		"--cert-dir="+filepath.Join(k.dir, "certs"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+filepath.Join(k.dir, "sa.pub"),
		"--service-account-signing-key-file="+filepath.Join(k.dir, "sa.key"),
		"--service-cluster-ip-range=10.0.0.0/24",
		"--authorization-mode="+authz,
		// 127.0.0.1 is loopback: without this the server exits.
		"--endpoint-reconciler-type=none",
		"--token-auth-file="+filepath.Join(k.dir, "tokens.csv"),
	)
	if err != nil {
		return err
	}
	k.apiserver = p
	if err := waitHTTP(p, k.URL()+"/readyz", k.tokens["admin"], kubeReadyTimeout, func(body string) bool {
		return strings.TrimSpace(body) == "ok"
	}); err != nil {
		p.stop(syscall.SIGKILL, kubeStopTimeout)
		return fmt.Errorf("kube-apiserver: %w\n%s", err, kubeLogTail(p.log))
	}
	return nil
}

// waitHTTP polls url until ready accepts a 200 answer's body, the process
// exits, or timeout passes.
func waitHTTP(p *kubeProc, url, token string, timeout time.Duration, ready func(string) bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	client := &http.Client{
		Timeout: 2 * time.Second,
		// The server's certificate is made at its first start; trust is
		// not the point of a readiness probe.
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
	}
	defer client.CloseIdleConnections()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if resp, err := client.Do(req); err != nil {
			last = err
		} else {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && ready(string(body)) {
				return nil
			}
			last = fmt.Errorf("%s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited while starting (%v)", filepath.Base(p.cmd.Path), p.cmd.ProcessState)
		case <-ctx.Done():
			return fmt.Errorf("not ready after %v: %w", timeout, last)
		case <-tick.C:
		}
	}
}

// Stop stops the API server with SIGTERM and waits for it to exit (it is
// killed after 30s: a graceful shutdown waits for open watches); etcd keeps
// running and the data stays. Start starts it again.
func (k *Kube) Stop() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.apiserver.stop(syscall.SIGTERM, kubeStopTimeout)
	return nil
}

// Kill kills the API server with SIGKILL, as a crash of its machine would,
// and waits for it to exit; etcd keeps running and the data stays. Start
// starts it again.
func (k *Kube) Kill() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.apiserver.stop(syscall.SIGKILL, kubeStopTimeout)
	return nil
}

// Pause stops the API server process with SIGSTOP: it keeps its
// connections but answers nothing until Resume. etcd keeps running.
func (k *Kube) Pause() error { return k.signalAPIServer("pause", pauseProcess) }

// Resume continues an API server stopped by Pause.
func (k *Kube) Resume() error { return k.signalAPIServer("resume", resumeProcess) }

func (k *Kube) signalAPIServer(what string, do func(*os.Process) error) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.apiserver.alive() {
		return fmt.Errorf("kube: %s: the API server is not running", what)
	}
	if err := do(k.apiserver.cmd.Process); err != nil {
		return fmt.Errorf("kube: %s: %w", what, err)
	}
	return nil
}

// Running reports whether the API server process is alive.
func (k *Kube) Running() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.apiserver.alive()
}

// Close stops both servers and removes their directory.
func (k *Kube) Close() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.apiserver.stop(syscall.SIGKILL, kubeStopTimeout)
	k.etcd.stop(syscall.SIGKILL, kubeStopTimeout)
	return os.RemoveAll(k.dir)
}

// URL is the API server's address: https://127.0.0.1:PORT. It does not
// change across Stop and Start.
func (k *Kube) URL() string { return fmt.Sprintf("https://127.0.0.1:%d", k.port) }

// Dir is the temporary directory of the servers: their logs
// (kube-apiserver.log, etcd.log), certs/, tokens.csv and kubeconfig.
func (k *Kube) Dir() string { return k.dir }

// Config returns a rest.Config of the admin user (group system:masters),
// trusting the server's own certificate. Client-side rate limiting is off,
// so that tests measure the server rather than client-go's throttle.
func (k *Kube) Config() *rest.Config { return k.config("admin") }

// UserConfig returns a rest.Config with the token of user, one of
// KubeOptions.Users. It panics for an unknown user.
func (k *Kube) UserConfig(user string) *rest.Config {
	if _, ok := k.tokens[user]; !ok || user == "admin" {
		panic(fmt.Sprintf("testcluster: Kube.UserConfig: %q is not one of KubeOptions.Users", user))
	}
	return k.config(user)
}

func (k *Kube) config(user string) *rest.Config {
	return &rest.Config{
		Host:            k.URL(),
		BearerToken:     k.tokens[user],
		TLSClientConfig: rest.TLSClientConfig{CAFile: filepath.Join(k.dir, "certs", "apiserver.crt")},
		QPS:             -1, // no client-side rate limit
		UserAgent:       "tenure-tests",
	}
}

// Client returns a clientset of the admin user.
func (k *Kube) Client(tb testing.TB) kubernetes.Interface {
	tb.Helper()
	c, err := kubernetes.NewForConfig(k.Config())
	if err != nil {
		tb.Fatalf("kube: clientset: %v", err)
	}
	return c
}

// Leases returns a coordination/v1 client of the admin user of its own,
// made from a rest.Config alone as a program that needs only Leases makes it
// (no clientset): what kubestore.New takes.
func (k *Kube) Leases(tb testing.TB) coordinationclient.CoordinationV1Interface {
	tb.Helper()
	c, err := coordinationclient.NewForConfig(k.Config())
	if err != nil {
		tb.Fatalf("kube: coordination/v1 client: %v", err)
	}
	return c
}

// Namespace creates a namespace with a fresh name starting with prefix and
// returns its name. Namespaces are never deleted: without a controller
// manager they would stay Terminating; the server is thrown away anyway.
func (k *Kube) Namespace(tb testing.TB, prefix string) string {
	tb.Helper()
	suffix, err := kubeRandom(4)
	if err != nil {
		tb.Fatal(err)
	}
	name := prefix + "-" + suffix
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := k.Client(tb).CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		tb.Fatalf("kube: creating namespace %s: %v", name, err)
	}
	return name
}

// WriteKubeconfig writes a kubeconfig of the admin user to Dir()/kubeconfig
// and returns its path, for kubectl.
func (k *Kube) WriteKubeconfig() (string, error) {
	path := filepath.Join(k.dir, "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: tenure
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: admin
  user:
    token: %s
contexts:
- name: tenure
  context: {cluster: tenure, user: admin}
current-context: tenure
`, k.URL(), filepath.Join(k.dir, "certs", "apiserver.crt"), k.tokens["admin"])
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		return "", fmt.Errorf("kube: %w", err)
	}
	return path, nil
}

// Log returns the end of the API server's log, for failure messages.
func (k *Kube) Log() string { return kubeLogTail(filepath.Join(k.dir, "kube-apiserver.log")) }

func kubeLogTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(no log %s: %v)", filepath.Base(path), err)
	}
	s := string(b)
	if len(s) > 4000 {
		s = "..." + s[len(s)-4000:]
	}
	return filepath.Base(path) + ":\n" + s
}

// NewKube starts a private etcd and kube-apiserver for tb alone and stops
// them when tb ends. It calls Unavailable (a skip, or a failure under
// TENURE_REQUIRE_BACKENDS=1) when they cannot be started. Use it for tests
// that stop the server or need options; the others should share one with
// PackageKube.
func NewKube(tb testing.TB, opts KubeOptions) *Kube {
	tb.Helper()
	k, err := StartKube(opts)
	if err != nil {
		Unavailable(tb, "Kubernetes API server is unavailable: %v", err)
		return nil
	}
	tb.Cleanup(func() {
		if err := k.Close(); err != nil {
			tb.Errorf("kube: close: %v", err)
		}
	})
	return k
}

var pkgKube = shared[*Kube]{
	what:    "Kubernetes API server",
	start:   func() (*Kube, error) { return StartKube(KubeOptions{}) },
	restart: (*Kube).Start,
}

// PackageKube returns the etcd and kube-apiserver (AlwaysAllow, no extra
// users) shared by the tests of the calling test binary, starting them on
// first use. When they cannot be had it ends tb through Unavailable. A
// start that failed is not retried. Stop them from TestMain:
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		testcluster.StopPackageKube()
//		os.Exit(code)
//	}
//
// Tests on the shared server must not stop it, and should work in a
// namespace of their own (Kube.Namespace).
func PackageKube(tb testing.TB) *Kube {
	tb.Helper()
	return pkgKube.get(tb)
}

// StopPackageKube stops the servers PackageKube started, if any.
func StopPackageKube() { pkgKube.stop() }
