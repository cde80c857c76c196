package kubestore_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store/kubestore"
)

// ledger records, in real time, when each contender starts and stops
// leading, and every overlap of two of them.
type ledger struct {
	mu       sync.Mutex
	leading  map[string]time.Time // id -> since
	overlaps []string
	started  chan start // as they start
}

// start is a contender starting to lead, and when.
type start struct {
	id string
	at time.Time
}

func newLedger() *ledger {
	return &ledger{leading: map[string]time.Time{}, started: make(chan start, 100)}
}

func (l *ledger) start(id string) {
	now := time.Now()
	l.mu.Lock()
	for other, since := range l.leading {
		l.overlaps = append(l.overlaps, fmt.Sprintf("%s started leading while %s led (since %v)", id, other, now.Sub(since)))
	}
	l.leading[id] = now
	l.mu.Unlock()
	l.started <- start{id, now}
}

func (l *ledger) stop(id string) {
	l.mu.Lock()
	delete(l.leading, id)
	l.mu.Unlock()
}

// check fails t on any overlap so far.
func (l *ledger) check(t testing.TB) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, o := range l.overlaps {
		t.Errorf("mutual exclusion broken: %s", o)
	}
}

// next waits for the next contender to start leading.
func (l *ledger) next(t testing.TB, d time.Duration) (string, time.Time) {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case s := <-l.started:
		return s.id, s.at
	case <-timer.C:
		t.Fatalf("nobody started leading within %v", d)
	}
	panic("unreachable")
}

// quiet checks that nobody starts leading for d.
func (l *ledger) quiet(t testing.TB, d time.Duration) {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case s := <-l.started:
		t.Fatalf("%s started leading while the Lease was held", s.id)
	case <-timer.C:
	}
}

// contenders runs Tenure electors and client-go LeaderElectors for the Lease
// "job" in one namespace, each with a clientset of its own.
type contenders struct {
	t    testing.TB
	e    *env
	cfg  lease.Config
	led  *ledger
	stop map[string]func() // id -> stop and wait
	// wrap, when set, changes the client configuration of contender id.
	wrap func(id string, cfg *rest.Config)
}

func newContenders(t testing.TB, e *env, cfg lease.Config) *contenders {
	return &contenders{t: t, e: e, cfg: cfg, led: newLedger(), stop: map[string]func(){}}
}

// clientset returns a clientset of its own for contender id.
func (c *contenders) clientset(id string) kubernetes.Interface {
	cfg := c.e.k.Config()
	if c.wrap != nil {
		c.wrap(id, cfg)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		c.t.Fatal(err)
	}
	return cs
}

// tenure starts a Tenure elector; release says whether it releases the
// Lease when stopped (false: a crash).
func (c *contenders) tenure(id string, release bool) {
	t := c.t
	st, err := kubestore.New[meta](c.clientset(id).CoordinationV1(), c.e.ns)
	if err != nil {
		t.Fatal(err)
	}
	el, err := lead.New("job", st, lead.WithIdentity(id), lead.WithConfig(c.cfg), lead.WithLookupEnv(nil), lead.WithReleaseOnStop(release))
	if err != nil {
		t.Fatal(err)
	}
	el.SetMetadata(meta{Pod: id})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = el.Run(ctx) })
	wg.Go(func() {
		_ = el.Lead(ctx, func(ctx context.Context, _ lead.Term) error {
			c.led.start(id)
			<-ctx.Done()
			c.led.stop(id)
			return nil
		}, lead.Repeat())
	})
	c.stop[id] = func() { cancel(); wg.Wait() }
	t.Cleanup(c.stop[id])
}

// clientGo starts a client-go LeaderElector with the same timings;
// release is its ReleaseOnCancel.
func (c *contenders) clientGo(id string, release bool) {
	t := c.t
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: c.e.ns, Name: "job"},
			Client:     c.clientset(id).CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: id},
		},
		LeaseDuration:   c.cfg.LeaseDuration,
		RenewDeadline:   c.cfg.RenewDeadline,
		RetryPeriod:     c.cfg.RetryInterval,
		ReleaseOnCancel: release,
		Name:            id,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				c.led.start(id)
				<-ctx.Done()
				c.led.stop(id)
			},
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { le.Run(ctx); close(done) }()
	c.stop[id] = func() { cancel(); <-done }
	t.Cleanup(c.stop[id])
}

// views reads the Lease as Tenure and as client-go see it.
func (c *contenders) views(ctx context.Context) (lease.Record[meta], *resourcelock.LeaderElectionRecord) {
	t := c.t
	t.Helper()
	st, err := kubestore.New[meta](c.e.client.CoordinationV1(), c.e.ns)
	if err != nil {
		t.Fatal(err)
	}
	rec, _, err := st.Get(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	lock := &resourcelock.LeaseLock{LeaseMeta: metav1.ObjectMeta{Namespace: c.e.ns, Name: "job"}, Client: c.e.client.CoordinationV1()}
	ler, _, err := lock.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return rec, ler
}

// Tenure electors and client-go LeaderElectors contend for one Lease, all
// releasing on stop: at most one leads at any time, each side takes over
// from the other at once after a release, and the Lease reads naturally to
// both.
func TestInteropClientGoRelease(t *testing.T) {
	cfg := electorConfig()
	e := newEnv(t, "interop")
	c := newContenders(t, e, cfg)
	// Four contenders race to create the Lease; one wins.
	for _, id := range []string{"tenure-1", "tenure-2"} {
		c.tenure(id, true)
	}
	for _, id := range []string{"client-go-1", "client-go-2"} {
		c.clientGo(id, true)
	}
	leader, _ := c.led.next(t, eventTimeout)
	c.led.quiet(t, cfg.LeaseDuration)
	// Keep the leader and one contender of the other side.
	other := "client-go-1"
	if !isTenure(leader) {
		other = "tenure-1"
	}
	for _, id := range []string{"tenure-1", "tenure-2", "client-go-1", "client-go-2"} {
		if id != leader && id != other {
			c.stop[id]()
		}
	}
	for round := range 6 {
		rec, ler := c.views(ctx(t))
		if rec.Holder != leader || ler.HolderIdentity != leader {
			t.Fatalf("round %d: %s leads; Tenure reads holder %q, client-go %q", round, leader, rec.Holder, ler.HolderIdentity)
		}
		switch {
		case isTenure(leader) && (rec.Token == 0 || rec.Metadata.Pod != leader):
			t.Fatalf("round %d: Tenure's %s leads, but the record reads %+v", round, leader, rec)
		case !isTenure(leader) && (rec.Token != 0 || rec.Metadata != (meta{})):
			t.Fatalf("round %d: client-go's %s leads, but Tenure reads token %d, metadata %+v", round, leader, rec.Token, rec.Metadata)
		}
		if ler.LeaseDurationSeconds != int(cfg.LeaseDuration/time.Second) {
			t.Fatalf("round %d: leaseDurationSeconds %d", round, ler.LeaseDurationSeconds)
		}
		// The leader stops and releases; the other side takes over, then a
		// new contender of the old leader's identity starts.
		stopping := time.Now()
		c.stop[leader]()
		next, at := c.led.next(t, eventTimeout)
		took := at.Sub(stopping)
		t.Logf("round %d: %s released, %s leads %v later", round, leader, next, took)
		if next != other {
			t.Fatalf("round %d: %s leads, want %s", round, next, other)
		}
		if took > cfg.LeaseDuration/2 {
			t.Errorf("round %d: %s took over %v after %s released: it waited for expiry", round, next, took, leader)
		}
		if isTenure(leader) {
			c.tenure(leader, true)
		} else {
			c.clientGo(leader, true)
		}
		leader, other = other, leader
	}
	c.led.check(t)
}

func isTenure(id string) bool { return strings.HasPrefix(id, "tenure") }

// A contender that stops without releasing is taken over by the other side
// once its lease has run out, and not before; while it renews, the other
// side waits.
func TestInteropClientGoExpiry(t *testing.T) {
	cfg := electorConfig()
	for _, first := range []string{"client-go", "tenure"} {
		t.Run(first+"-crashes", func(t *testing.T) {
			e := newEnv(t, "expiry")
			c := newContenders(t, e, cfg)
			if first == "tenure" {
				c.tenure("first", false)
			} else {
				c.clientGo("first", false)
			}
			if id, _ := c.led.next(t, eventTimeout); id != "first" {
				t.Fatalf("%s leads", id)
			}
			if first == "tenure" {
				c.clientGo("second", true)
			} else {
				c.tenure("second", true)
			}
			// While the first renews, the second waits.
			c.led.quiet(t, 3*cfg.LeaseDuration)
			crashed := time.Now()
			c.stop["first"]()
			id, at := c.led.next(t, eventTimeout)
			took := at.Sub(crashed)
			t.Logf("%s took over %v after %s stopped without releasing (lease %v)", id, took, first, cfg.LeaseDuration)
			if id != "second" {
				t.Fatalf("%s leads", id)
			}
			lo := cfg.LeaseDuration - cfg.MaxRetryInterval()
			if first == "tenure" {
				// client-go notices a renewal only when it changes its
				// LeaderElectionRecord as JSON, where renewTime has whole
				// seconds: with renewals every 200ms it may count the
				// lease from up to a second before the last renewal.
				lo -= time.Second
			}
			if took < lo {
				t.Fatalf("took over after %v, before the lease could have expired (%v)", took, lo)
			}
			c.led.check(t)
		})
	}
}
