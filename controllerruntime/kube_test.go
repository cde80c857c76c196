package controllerruntime_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/tenure-go/tenure/controllerruntime"
	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store/kubestore"
)

func TestMain(m *testing.M) {
	// client-go logs through klog, controller-runtime through its own
	// logger; the crash below makes both complain on purpose.
	if os.Getenv("TENURE_KUBE_LOG") == "" {
		klog.SetLogger(logr.Discard())
		ctrllog.SetLogger(logr.Discard())
	}
	testcluster.Main(m)
}

// eventTimeout bounds every wait for something that must happen.
const eventTimeout = 30 * time.Second

// electorConfig is short enough for tests, in the whole seconds a Lease
// counts in: a 2s lease, a 1.5s renew deadline, 200ms retries, 1s backend
// timeout.
func electorConfig() lease.Config {
	return lease.Config{
		LeaseDuration:  2 * time.Second,
		RenewDeadline:  1500 * time.Millisecond,
		RetryInterval:  200 * time.Millisecond,
		RetryJitter:    0.1,
		BackendTimeout: time.Second,
		ErrorInterval:  time.Second,
	}
}

// longLease is electorConfig with a lease longer than eventTimeout: a
// successor that takes over within eventTimeout was told of a release, an
// expiry would come too late.
func longLease() lease.Config {
	c := electorConfig()
	c.LeaseDuration = 2 * eventTimeout
	return c
}

// monitor sees every start and stop of the replicas' runnables, and checks
// at each one that at most one leader-only runnable runs and that terms'
// tokens only go up. Waiters are woken at every change.
type monitor struct {
	mu         sync.Mutex
	leading    map[string]fence.Token // replica -> token of its running leader-only runnable
	everyone   map[string]bool        // replica -> its every-replica runnable runs
	lastToken  fence.Token
	violations []string
	timeline   []string
	changed    chan struct{} // closed and replaced at every change
	start      time.Time
	// linger is how long a leader-only runnable goes on after its context
	// ended, as a reconcile in flight does: a successor that started
	// before the runnable returned would be seen running beside it.
	linger time.Duration
}

func newMonitor() *monitor {
	return &monitor{leading: map[string]fence.Token{}, everyone: map[string]bool{}, changed: make(chan struct{}), start: time.Now()}
}

// noteLocked adds a line to the timeline and wakes the waiters.
func (m *monitor) noteLocked(format string, args ...any) {
	m.timeline = append(m.timeline, fmt.Sprintf("%8v ", time.Since(m.start).Round(time.Millisecond))+fmt.Sprintf(format, args...))
	close(m.changed)
	m.changed = make(chan struct{})
}

// leaderOnly is the leader-only runnable of replica id: it runs until its
// context ends, as a controller does.
func (m *monitor) leaderOnly(id string) manager.Runnable {
	return manager.RunnableFunc(func(ctx context.Context) error {
		token, tokOK := fence.FromContext(ctx)
		term, termOK := controllerruntime.TermFromContext(ctx)
		m.mu.Lock()
		switch {
		case !tokOK || !termOK:
			m.violations = append(m.violations, fmt.Sprintf("%s: started without a token (%v) or term (%v) in its context", id, tokOK, termOK))
		case term.Identity != id || term.Token != token:
			m.violations = append(m.violations, fmt.Sprintf("%s: context carries term %+v and token %d", id, term, token))
		case token <= m.lastToken:
			m.violations = append(m.violations, fmt.Sprintf("%s: token %d after token %d", id, token, m.lastToken))
		}
		m.lastToken = max(m.lastToken, token)
		m.leading[id] = token
		if len(m.leading) > 1 {
			m.violations = append(m.violations, fmt.Sprintf("two leader-only runnables at once: %v", m.leading))
		}
		m.noteLocked("%s: leader-only runnable started, token %d", id, token)
		m.mu.Unlock()

		<-ctx.Done()
		if m.linger > 0 {
			// Work that finishes after the cancel, not a wait for an event.
			time.Sleep(m.linger)
		}

		m.mu.Lock()
		delete(m.leading, id)
		m.noteLocked("%s: leader-only runnable stopped (%v)", id, context.Cause(ctx))
		m.mu.Unlock()
		return nil
	})
}

// everyReplica is a runnable that must run on every replica, leader or not.
type everyReplica struct {
	m  *monitor
	id string
}

func (r everyReplica) NeedLeaderElection() bool { return false }

func (r everyReplica) Start(ctx context.Context) error {
	r.m.mu.Lock()
	r.m.everyone[r.id] = true
	r.m.noteLocked("%s: every-replica runnable started", r.id)
	r.m.mu.Unlock()
	<-ctx.Done()
	r.m.mu.Lock()
	delete(r.m.everyone, r.id)
	r.m.noteLocked("%s: every-replica runnable stopped", r.id)
	r.m.mu.Unlock()
	return nil
}

// waitFor waits until cond, called with m.mu held, holds.
func (m *monitor) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	timer := time.NewTimer(eventTimeout)
	defer timer.Stop()
	for {
		m.mu.Lock()
		ok, changed := cond(), m.changed
		m.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-changed:
		case <-timer.C:
			t.Fatalf("after %v, still waiting for %s\n%s", eventTimeout, what, m.report())
		}
	}
}

// check fails t if any violation was seen.
func (m *monitor) check(t *testing.T) {
	t.Helper()
	m.mu.Lock()
	bad := len(m.violations) > 0
	m.mu.Unlock()
	if bad {
		t.Fatal(m.report())
	}
}

func (m *monitor) report() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return fmt.Sprintf("violations: %q\ntimeline:\n%s", m.violations, strings.Join(m.timeline, "\n"))
}

// replica is one operator process: a manager whose election goes through
// a proxy of its own to the API server, so that its store can be cut.
type replica struct {
	id     string
	proxy  *testcluster.Proxy
	x      *controllerruntime.Election[struct{}]
	cancel context.CancelFunc
	done   chan error // Start's result
}

func startReplica(t *testing.T, k *testcluster.Kube, ns, id string, cfg lease.Config, m *monitor) *replica {
	t.Helper()
	u, err := url.Parse(k.URL())
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := testcluster.StartProxy("tcp", u.Host, uint64(time.Now().UnixNano()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	viaProxy := rest.CopyConfig(k.Config())
	viaProxy.Host = "https://" + proxy.Addr()
	leases, err := coordinationclient.NewForConfig(viaProxy)
	if err != nil {
		t.Fatal(err)
	}
	st, err := kubestore.New[struct{}](leases, ns)
	if err != nil {
		t.Fatal(err)
	}
	e, err := lead.New("operator", st, lead.WithIdentity(id), lead.WithConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	x, err := controllerruntime.NewManager(k.Config(), manager.Options{
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		GracefulShutdownTimeout: ptr(eventTimeout),
	}, e)
	if err != nil {
		t.Fatal(err)
	}
	mgr := x.Manager()
	if err := mgr.Add(m.leaderOnly(id)); err != nil {
		t.Fatal(err)
	}
	if err := mgr.Add(everyReplica{m, id}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &replica{id: id, proxy: proxy, x: x, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(eventTimeout):
			t.Errorf("%s: manager still running %v after cleanup", id, eventTimeout)
		}
	})
	return r
}

func ptr[T any](v T) *T { return &v }

// stopped waits for r's manager to return and returns its error.
func (r *replica) stopped(t *testing.T, m *monitor) error {
	t.Helper()
	select {
	case err := <-r.done:
		r.done <- err // for the cleanup
		return err
	case <-time.After(eventTimeout):
		t.Fatalf("%s: manager still running after %v\n%s", r.id, eventTimeout, m.report())
		return nil
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// leaderOf returns which of rs runs its leader-only runnable; m.mu held.
func (m *monitor) leaderOf(rs ...*replica) *replica {
	for _, r := range rs {
		if _, ok := m.leading[r.id]; ok {
			return r
		}
	}
	return nil
}

// startPair starts two replicas of one election and waits until one
// leads and both run their every-replica runnable. It returns the leader
// and the follower, having checked their Elected.
func startPair(t *testing.T, k *testcluster.Kube, ns string, cfg lease.Config, m *monitor) (leader, follower *replica) {
	t.Helper()
	a := startReplica(t, k, ns, "pod-a", cfg, m)
	b := startReplica(t, k, ns, "pod-b", cfg, m)
	m.waitFor(t, "a leader and both every-replica runnables", func() bool {
		return m.leaderOf(a, b) != nil && m.everyone[a.id] && m.everyone[b.id]
	})
	m.mu.Lock()
	leader = m.leaderOf(a, b)
	m.mu.Unlock()
	follower = map[*replica]*replica{a: b, b: a}[leader]
	if !isClosed(leader.x.Elected()) {
		t.Fatalf("%s runs its leader-only runnable, but Elected is open", leader.id)
	}
	if isClosed(follower.x.Elected()) {
		t.Fatalf("%s follows, but Elected is closed", follower.id)
	}
	m.check(t)
	return leader, follower
}

// token returns the token of r's running leader-only runnable (0: none).
func (m *monitor) token(r *replica) fence.Token {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.leading[r.id]
}

// Two managers on one Lease of the real API server: one leads and runs its
// leader-only runnable, the other only its every-replica runnable; the
// leader stops cleanly: its runnable returns (300ms after the cancel, as
// a reconcile in flight would), it releases, and the other
// takes over at once (the lease is longer than the wait: only the release
// can explain it). With a third replica there, the leader stops the same
// way until one is left. At every start of a leader-only runnable
// the monitor checks that no other one runs and that tokens go up.
func TestKubeReleaseHandover(t *testing.T) {
	k := testcluster.PackageKube(t)
	ns := k.Namespace(t, "ctrlrt-release")
	m := newMonitor()
	m.linger = 300 * time.Millisecond
	cfg := longLease()
	first, second := startPair(t, k, ns, cfg, m)
	third := startReplica(t, k, ns, "pod-c", cfg, m)
	m.waitFor(t, "pod-c's every-replica runnable", func() bool { return m.everyone[third.id] })
	live := []*replica{second, third}
	from := first
	for len(live) > 0 {
		fromToken := m.token(from)
		from.cancel()
		if err := from.stopped(t, m); err != nil {
			t.Fatalf("%s: clean stop returned %v", from.id, err)
		}
		var to *replica
		m.waitFor(t, "a successor of "+from.id+" after its release", func() bool {
			to = m.leaderOf(live...)
			return to != nil && m.leading[to.id] > fromToken
		})
		if !isClosed(to.x.Elected()) {
			t.Fatalf("%s leads, but Elected is open", to.id)
		}
		live = slices.DeleteFunc(live, func(r *replica) bool { return r == to })
		from = to
	}
	st, err := kubestore.New[struct{}](k.Leases(t), ns)
	if err != nil {
		t.Fatal(err)
	}
	if rec, _, err := st.Get(t.Context(), "operator"); err != nil || rec.Holder != from.id {
		t.Fatalf("record after the handovers: %+v, %v", rec, err)
	}
	from.cancel()
	if err := from.stopped(t, m); err != nil {
		t.Fatalf("%s: clean stop returned %v", from.id, err)
	}
	m.check(t)
	t.Log(m.report())
}

// The leader's store is cut (a crash, as the other replica sees it): its
// leader-only runnable is cancelled at its renew deadline and its manager
// stops with ErrLeadershipLost (policy Exit); the other takes over once
// the lease has expired, never while the first one's runnable runs.
func TestKubeCrashTakeover(t *testing.T) {
	k := testcluster.PackageKube(t)
	ns := k.Namespace(t, "ctrlrt-crash")
	m := newMonitor()
	leader, follower := startPair(t, k, ns, electorConfig(), m)
	leaderToken := m.token(leader)
	leader.proxy.SetFaults(testcluster.NetFaults{HoldUp: true, HoldDown: true})
	err := leader.stopped(t, m)
	if !errors.Is(err, controllerruntime.ErrLeadershipLost) || !errors.Is(err, lead.ErrLeadershipLost) {
		t.Fatalf("%s: manager returned %v, want ErrLeadershipLost", leader.id, err)
	}
	m.waitFor(t, follower.id+" to take over after the crash", func() bool {
		tok, ok := m.leading[follower.id]
		return ok && tok > leaderToken
	})
	leader.proxy.SetFaults(testcluster.NetFaults{})
	follower.cancel()
	if err := follower.stopped(t, m); err != nil {
		t.Fatalf("%s: clean stop returned %v", follower.id, err)
	}
	m.check(t)
	t.Log(m.report())
}
