package lead_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/memstore"
)

type meta struct {
	Addr string
}

// fastConfig: 3s lease, 2s renew deadline, 500ms retries with jitter.
func fastConfig() lease.Config {
	return lease.Config{
		LeaseDuration:  3 * time.Second,
		RenewDeadline:  2 * time.Second,
		RetryInterval:  500 * time.Millisecond,
		RetryJitter:    0.1,
		BackendTimeout: time.Second,
		ErrorInterval:  10 * time.Second,
	}
}

// node is one elector under test, with the changes it reported.
type node struct {
	e       *lead.Elector[meta]
	changes chan lead.Change
	cancel  context.CancelFunc
	done    chan error
}

func start(t *testing.T, st store.Store[meta], id string, opts ...lead.Option) *node {
	t.Helper()
	n := &node{changes: make(chan lead.Change, 100), done: make(chan error, 1)}
	opts = append([]lead.Option{
		lead.WithIdentity(id),
		lead.WithConfig(fastConfig()),
		lead.WithLookupEnv(nil),
		lead.WithObserver(func(c lead.Change) { n.changes <- c }),
	}, opts...)
	if os.Getenv("TENURE_DEBUG") != "" {
		opts = append(opts, lead.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	}
	e, err := lead.New("job", st, opts...)
	if err != nil {
		t.Fatal(err)
	}
	n.e = e
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	go func() { n.done <- e.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-e.Done() })
	return n
}

// next returns the node's next reported change.
func (n *node) next(t *testing.T) lead.Change {
	t.Helper()
	select {
	case c := <-n.changes:
		return c
	case <-time.After(time.Minute):
		t.Fatalf("%s: no leadership change within a minute", n.e.Identity())
		return lead.Change{}
	}
}

func (n *node) stop(t *testing.T) {
	t.Helper()
	n.cancel()
	if err := <-n.done; err != nil {
		t.Fatalf("%s: Run = %v", n.e.Identity(), err)
	}
}

// firstLeader waits for one of nodes to start leading and returns it.
func firstLeader(t *testing.T, nodes ...*node) (*node, lead.Change) {
	t.Helper()
	synctest.Wait()
	var found *node
	var change lead.Change
	for _, n := range nodes {
		select {
		case c := <-n.changes:
			if c.Kind != lead.Started || found != nil {
				t.Fatalf("%s reported %v (token %d); already found %v", n.e.Identity(), c.Kind, c.Term.Token, found != nil)
			}
			found, change = n, c
		default:
		}
	}
	if found == nil {
		t.Fatal("nobody leads")
	}
	return found, change
}

func TestSingleElectorLeads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New[meta]()
		n := start(t, st, "a")
		if err := n.e.SetMetadata(meta{Addr: "10.0.0.1:80"}); err != nil {
			t.Fatal(err)
		}
		<-n.e.Ready()
		c := n.next(t)
		if c.Kind != lead.Started || c.Term.Token != 1 || c.Term.Identity != "a" || c.Term.Name != "job" {
			t.Fatalf("first change = %+v", c)
		}
		if !n.e.IsLeader() || !n.e.ConfirmedWithin(0) {
			t.Fatal("not leader right after starting to lead")
		}
		time.Sleep(5 * time.Second) // several renewals
		synctest.Wait()
		rec, ok := n.e.Record()
		if !ok || rec.Holder != "a" || rec.Token != 1 || rec.Metadata.Addr != "10.0.0.1:80" || rec.LeaseDuration != 3*time.Second {
			t.Fatalf("Record() = %+v, %v", rec, ok)
		}
		if !rec.RenewedAt.After(rec.AcquiredAt) {
			t.Fatalf("RenewedAt %v not after AcquiredAt %v after renewals", rec.RenewedAt, rec.AcquiredAt)
		}
		if !n.e.ConfirmedWithin(fastConfig().MaxRetryInterval()) {
			t.Fatal("renewals not confirmed within one retry interval")
		}
		if n.e.ConfirmedWithin(-1) {
			t.Fatal("ConfirmedWithin(-1) is true")
		}
	})
}

func TestReleaseHandsOverWithoutWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New[meta]()
		a, b, c := start(t, st, "a"), start(t, st, "b"), start(t, st, "c")
		leader, first := firstLeader(t, a, b, c)
		time.Sleep(2 * time.Second)

		released := time.Now()
		leader.stop(t)
		if leader.e.IsLeader() {
			t.Fatal("stopped elector still says it leads")
		}
		if got := leader.next(t); got.Kind != lead.Stopped || !errors.Is(got.Reason, lead.ErrLeadershipLost) {
			t.Fatalf("old leader reported %+v", got)
		}
		var rest []*node
		for _, n := range []*node{a, b, c} {
			if n != leader {
				rest = append(rest, n)
			}
		}
		next, second := firstLeader(t, rest...)
		if waited := time.Since(released); waited >= fastConfig().RetryInterval {
			t.Fatalf("successor led %v after the release; want less than a retry interval", waited)
		}
		if second.Term.Token <= first.Term.Token {
			t.Fatalf("token went from %d to %d", first.Term.Token, second.Term.Token)
		}
		rec, _ := next.e.Record()
		if rec.Transitions != 1 || rec.Holder != next.e.Identity() {
			t.Fatalf("record after handover = %+v", rec)
		}
	})
}

func TestCrashFailoverWaitsForLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New[meta]()
		cfg := fastConfig()
		a := start(t, st, "a", lead.WithReleaseOnStop(false))
		firstLeader(t, a)
		b := start(t, st, "b")
		time.Sleep(2 * time.Second)
		crashed := time.Now()
		a.stop(t)
		c := b.next(t)
		took := time.Since(crashed)
		// b first saw a's last renewal at most one retry interval before
		// the crash, and takes over one lease duration after that.
		if lo, hi := cfg.LeaseDuration-cfg.MaxRetryInterval(), cfg.LeaseDuration+cfg.MaxRetryInterval(); took < lo || took > hi {
			t.Fatalf("failover took %v, want within [%v, %v]", took, lo, hi)
		}
		if c.Kind != lead.Started || c.Term.Token != 2 {
			t.Fatalf("b reported %+v", c)
		}
	})
}

// flaky wraps a store and fails every operation while down is set.
type flaky struct {
	store.Store[meta]
	down atomic.Bool
}

// MayLoseRecords forwards store.Lossy, as every wrapper should.
func (f *flaky) MayLoseRecords() bool { return store.MayLoseRecords(f.Store) }

var errDown = errors.New("store unreachable")

func (f *flaky) Get(ctx context.Context, name string) (lease.Record[meta], lease.Revision, error) {
	if f.down.Load() {
		return lease.Record[meta]{}, 0, errDown
	}
	return f.Store.Get(ctx, name)
}

func (f *flaky) CompareAndSwap(ctx context.Context, name string, exp lease.Revision, next lease.Record[meta]) (lease.Record[meta], lease.Revision, error) {
	if f.down.Load() {
		return lease.Record[meta]{}, 0, errDown
	}
	return f.Store.CompareAndSwap(ctx, name, exp, next)
}

func TestLeaderStepsDownWithinRenewDeadlineWhenStoreIsDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &flaky{Store: memstore.New[meta]()}
		n := start(t, f, "a")
		ran := make(chan error, 1)
		go func() {
			ran <- n.e.Lead(context.Background(), func(ctx context.Context, term lead.Term) error {
				if tok, ok := fence.FromContext(ctx); !ok || tok != term.Token {
					return errors.New("body context lacks the term's token")
				}
				<-ctx.Done()
				return context.Cause(ctx)
			})
		}()
		n.next(t)
		time.Sleep(1200 * time.Millisecond)
		synctest.Wait()
		f.down.Store(true)
		wentDown := time.Now()
		err := <-ran
		took := time.Since(wentDown)
		if !errors.Is(err, lead.ErrLeadershipLost) {
			t.Fatalf("Lead = %v, want ErrLeadershipLost", err)
		}
		if took > fastConfig().RenewDeadline {
			t.Fatalf("body cancelled %v after the store went down; want within RenewDeadline", took)
		}
		if n.e.IsLeader() {
			t.Fatal("still leader with the store down")
		}
		if c := n.next(t); c.Kind != lead.Stopped {
			t.Fatalf("change = %+v", c)
		}
		if n.e.Err() == nil {
			t.Fatal("Err() is nil while the store is down")
		}
		f.down.Store(false)
		c := n.next(t)
		if c.Kind != lead.Started || c.Term.Token != 2 {
			t.Fatalf("after the store came back: %+v, want a new term with token 2", c)
		}
	})
}

func TestLeadReturnsBodyResult(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := start(t, memstore.New[meta](), "a")
		want := errors.New("done with error")
		err := n.e.Lead(context.Background(), func(context.Context, lead.Term) error { return want })
		if err != want {
			t.Fatalf("Lead = %v, want %v", err, want)
		}
		if err := n.e.Lead(context.Background(), func(context.Context, lead.Term) error { return nil }); err != nil {
			t.Fatalf("Lead = %v, want nil", err)
		}
	})
}

func TestLeadRepeatRunsOncePerTerm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New[meta]()
		a := start(t, st, "a")
		firstLeader(t, a)
		ctx, cancel := context.WithCancel(context.Background())
		var mu sync.Mutex
		var tokens []fence.Token
		done := make(chan error, 1)
		go func() {
			done <- a.e.Lead(ctx, func(ctx context.Context, term lead.Term) error {
				mu.Lock()
				tokens = append(tokens, term.Token)
				mu.Unlock()
				<-ctx.Done()
				return ctx.Err()
			}, lead.Repeat())
		}()
		synctest.Wait()
		// Someone else takes the lease by force: a's term ends, and a
		// leads again once that holder's lease expires.
		rec, rev, err := st.Get(ctx, "job")
		if err != nil {
			t.Fatal(err)
		}
		rec.Holder, rec.Token = "intruder", rec.Token+1
		if _, _, err := st.CompareAndSwap(ctx, "job", rev, rec); err != nil {
			t.Fatal(err)
		}
		if c := a.next(t); c.Kind != lead.Stopped {
			t.Fatalf("change = %+v", c)
		}
		if c := a.next(t); c.Kind != lead.Started || c.Term.Token != 3 {
			t.Fatalf("change = %+v", c)
		}
		synctest.Wait()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("Lead = %v, want context.Canceled", err)
		}
		if len(tokens) != 2 || tokens[0] != 1 || tokens[1] != 3 {
			t.Fatalf("body ran with tokens %v, want [1 3]", tokens)
		}
	})
}

func TestLeadAndRunAfterRunReturnedAreRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := start(t, memstore.New[meta](), "a")
		n.stop(t)
		err := n.e.Lead(context.Background(), func(context.Context, lead.Term) error { return nil })
		if !errors.Is(err, lead.ErrStopped) {
			t.Fatalf("Lead = %v, want ErrStopped", err)
		}
		if err := n.e.Run(context.Background()); !errors.Is(err, lead.ErrAlreadyRunning) {
			t.Fatalf("second Run = %v, want ErrAlreadyRunning", err)
		}
	})
}

func TestEveryRunsOnlyOnTheLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New[meta]()
		a := start(t, st, "a")
		firstLeader(t, a)
		b := start(t, st, "b")
		synctest.Wait()
		ctx, cancel := context.WithCancel(context.Background())
		var runs [2]atomic.Int32
		errs := make(chan error, 2)
		for i, n := range []*node{a, b} {
			go func() {
				errs <- n.e.Every(ctx, time.Second, func(ctx context.Context, term lead.Term) error {
					runs[i].Add(1)
					return nil
				})
			}()
		}
		time.Sleep(10*time.Second + time.Millisecond)
		cancel()
		for range 2 {
			if err := <-errs; !errors.Is(err, context.Canceled) {
				t.Fatalf("Every = %v", err)
			}
		}
		if got := runs[0].Load(); got != 11 {
			t.Errorf("leader ran %d times in 10s at 1s intervals from the call, want 11", got)
		}
		if got := runs[1].Load(); got != 0 {
			t.Errorf("follower ran %d times, want 0", got)
		}
	})
}

func TestEveryCancelsBodyWhenTermEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &flaky{Store: memstore.New[meta]()}
		a := start(t, f, "a")
		firstLeader(t, a)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cancelled := make(chan time.Time, 1)
		go a.e.Every(ctx, time.Second, func(ctx context.Context, term lead.Term) error {
			f.down.Store(true)
			<-ctx.Done()
			cancelled <- time.Now()
			return ctx.Err()
		})
		at := <-cancelled
		if a.e.IsLeader() {
			t.Fatal("body cancelled while still leader")
		}
		// The body started at 1s; the last renewal was sent before that.
		if at.Sub(time.Time{}) < 0 {
			t.Fatal("impossible time")
		}
	})
}

func TestEveryRejectsBadInterval(t *testing.T) {
	n, err := lead.New("job", memstore.New[meta](), lead.WithLookupEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Every(context.Background(), 0, func(context.Context, lead.Term) error { return nil }); err == nil || !strings.Contains(err.Error(), "interval") {
		t.Fatalf("Every(0) = %v", err)
	}
}

func TestObserverSeesStartBeforeStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New[meta]()
		a := start(t, st, "a")
		firstLeader(t, a)
		b := start(t, st, "b")
		a.stop(t)
		if c := a.next(t); c.Kind != lead.Stopped || c.Term.Token != 1 {
			t.Fatalf("a: %+v", c)
		}
		if c := b.next(t); c.Kind != lead.Started || c.Term.Token != 2 {
			t.Fatalf("b: %+v", c)
		}
		b.stop(t)
		if c := b.next(t); c.Kind != lead.Stopped || c.Term.Token != 2 {
			t.Fatalf("b: %+v", c)
		}
		select {
		case c := <-a.changes:
			t.Fatalf("a reported more: %+v", c)
		case c := <-b.changes:
			t.Fatalf("b reported more: %+v", c)
		default:
		}
	})
}

func TestReconfigureRefusesABadConfigAndAppliesAGoodOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := start(t, memstore.New[meta](), "a")
		n.next(t)
		bad := fastConfig()
		bad.RenewDeadline = bad.LeaseDuration
		if err := n.e.Reconfigure(bad); !errors.Is(err, lease.ErrInvalidConfig) {
			t.Fatalf("Reconfigure(bad) = %v", err)
		}
		good := fastConfig()
		good.LeaseDuration = 30 * time.Second
		if err := n.e.Reconfigure(good); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		rec, _ := n.e.Record()
		if rec.LeaseDuration != 30*time.Second || n.e.Config() != good {
			t.Fatalf("after Reconfigure the record promises %v", rec.LeaseDuration)
		}
		if n.e.Identity() != "a" {
			t.Fatal("identity changed")
		}
	})
}

// A Reconfigure that shortens RenewDeadline moves the open term's deadline
// back at once, to the last renewal plus the new RenewDeadline: IsLeader
// and the term's context, which read it when the loop is late, never
// outlast the machine's belief.
func TestReconfigureShorterMovesTheTermsDeadlineBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		long := fastConfig()
		long.LeaseDuration, long.RenewDeadline, long.RetryInterval = 30*time.Second, 20*time.Second, 5*time.Second
		n := start(t, memstore.New[meta](), "a", lead.WithConfig(long))
		n.next(t)
		synctest.Wait()
		before := n.e.Status()
		if !before.Leading || before.Deadline.Sub(before.LastRenewal) != long.RenewDeadline {
			t.Fatalf("before: %+v", before)
		}
		short := fastConfig() // time stands still until the check: no renewal
		if err := n.e.Reconfigure(short); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		after := n.e.Status()
		if !after.InTerm || after.LastRenewal != before.LastRenewal {
			t.Fatalf("the term ended or renewed: %+v", after)
		}
		if got := after.Deadline.Sub(after.LastRenewal); got != short.RenewDeadline {
			t.Fatalf("after a Reconfigure to RenewDeadline %v the term's deadline is %v after the last renewal", short.RenewDeadline, got)
		}
	})
}

// A Reconfigure to a shorter RetryInterval and RenewDeadline while a term
// is open takes effect for the renewal already scheduled: the leader
// renews within the new pause and keeps its term, rather than waiting out
// the old pause past the new deadline and losing the term with the store
// answering fine.
func TestReconfigureShorterRetryIntervalKeepsTheTerm(t *testing.T) {
	for _, c := range []struct {
		name     string
		from, to lease.Config
	}{
		{"to fastConfig from a 30s lease", lease.Config{LeaseDuration: 30 * time.Second, RenewDeadline: 20 * time.Second, RetryInterval: 5 * time.Second, RetryJitter: 0.1, BackendTimeout: time.Second, ErrorInterval: 10 * time.Second}, fastConfig()},
		{"to fastConfig from the longest lease", lease.Config{LeaseDuration: lease.MaxDuration, RenewDeadline: lease.MaxDuration - time.Hour, RetryInterval: 24 * time.Hour, BackendTimeout: time.Second, ErrorInterval: time.Minute}, fastConfig()},
		{"RetryInterval alone shorter", func() lease.Config { c := fastConfig(); c.RetryInterval = time.Second / 2; return c }(), func() lease.Config { c := fastConfig(); c.RetryInterval = 100 * time.Millisecond; return c }()},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := start(t, memstore.New[meta](), "a", lead.WithConfig(c.from))
				if ch := n.next(t); ch.Kind != lead.Started {
					t.Fatalf("first change: %+v", ch)
				}
				synctest.Wait()
				if err := n.e.Reconfigure(c.to); err != nil {
					t.Fatal(err)
				}
				time.Sleep(time.Minute)
				synctest.Wait()
				select {
				case ch := <-n.changes:
					t.Fatalf("after the Reconfigure, with the store answering: %+v", ch)
				default:
				}
				if !n.e.ConfirmedWithin(c.to.MaxRetryInterval()) {
					t.Fatalf("after the Reconfigure no renewal within %v: %+v", c.to.MaxRetryInterval(), n.e.Status())
				}
				n.stop(t)
			})
		})
	}
}

// uncheckedStore says it takes any metadata, and then refuses some at
// write time: what a store whose check disagrees with its codec does.
type uncheckedStore struct{ store.Store[meta] }

func (uncheckedStore) CheckMetadata(meta) error { return nil }

func TestOversizedMetadataStopsRunWithError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New[meta]()
		e, err := lead.New("job", uncheckedStore{st}, lead.WithConfig(fastConfig()), lead.WithLookupEnv(nil))
		if err != nil {
			t.Fatal(err)
		}
		if err := e.SetMetadata(meta{Addr: strings.Repeat("x", store.MaxMetadataBytes)}); err != nil {
			t.Fatalf("SetMetadata = %v; the store said it takes anything", err)
		}
		err = e.Run(context.Background())
		if !errors.Is(err, store.ErrMetadataTooLarge) {
			t.Fatalf("Run = %v, want ErrMetadataTooLarge", err)
		}
		if _, _, err := st.Get(context.Background(), "job"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("store holds something after a refused write: %v", err)
		}
	})
}

func TestNewRejectsBadInput(t *testing.T) {
	st := memstore.New[meta]()
	noEnv := lead.WithLookupEnv(nil)
	bad := fastConfig()
	bad.BackendTimeout = 0
	tests := []struct {
		name    string
		elector string
		st      store.Store[meta]
		opts    []lead.Option
		want    error
		mention string
	}{
		{"nil store", "job", nil, nil, lead.ErrNilStore, "store is nil"},
		{"empty name", "", st, nil, store.ErrInvalidName, "name is empty"},
		{"long name", strings.Repeat("n", 300), st, nil, store.ErrInvalidName, "300 bytes"},
		{"bad config", "job", st, []lead.Option{lead.WithConfig(bad)}, lease.ErrInvalidConfig, "BackendTimeout"},
		{"bad identity", "job", st, []lead.Option{lead.WithIdentity("a\nb")}, lead.ErrInvalidIdentity, "control character"},
		{"bad env", "job", st, []lead.Option{lead.WithLookupEnv(func(k string) (string, bool) {
			if k == "TENURE_JOB_RENEW_DEADLINE" {
				return "ten", true
			}
			return "", false
		})}, lease.ErrInvalidEnv, "TENURE_JOB_RENEW_DEADLINE"},
		{"env config breaks a rule", "job", st, []lead.Option{lead.WithLookupEnv(func(k string) (string, bool) {
			if k == "TENURE_LEASE_DURATION" {
				return "5s", true
			}
			return "", false
		})}, lease.ErrInvalidConfig, "RenewDeadline (10s) must be < LeaseDuration (5s, from TENURE_LEASE_DURATION=5s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := append([]lead.Option{noEnv}, tt.opts...)
			e, err := lead.New(tt.elector, tt.st, opts...)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.mention) {
				t.Fatalf("New = %v, %v; want %v mentioning %q", e, err, tt.want, tt.mention)
			}
		})
	}
}

func TestIdentityIsUniqueByDefaultAndOptionsOverrideTheEnvironment(t *testing.T) {
	st := memstore.New[meta]()
	e1, _ := lead.New("job", st, lead.WithLookupEnv(nil))
	e2, _ := lead.New("job", st, lead.WithLookupEnv(nil))
	if e1.Identity() == e2.Identity() || e1.Identity() == "" {
		t.Fatalf("default identities %q and %q", e1.Identity(), e2.Identity())
	}
	env := map[string]string{"TENURE_JOB_IDENTITY": "from-env", "TENURE_RETRY_INTERVAL": "1s"}
	lookup := lead.WithLookupEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	e3, err := lead.New("job", st, lookup)
	if err != nil {
		t.Fatal(err)
	}
	if e3.Identity() != "from-env" || e3.Config().RetryInterval != time.Second {
		t.Fatalf("env not applied: %q %v", e3.Identity(), e3.Config())
	}
	e4, _ := lead.New("job", st, lookup, lead.WithIdentity("explicit"), lead.WithConfig(fastConfig()))
	if e4.Identity() != "explicit" || e4.Config() != fastConfig() {
		t.Fatalf("explicit options lost to env: %q %v", e4.Identity(), e4.Config())
	}
}

func TestUnencodableMetadataStopsRunWithError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New[func()]()
		e, err := lead.New("job", st, lead.WithConfig(fastConfig()), lead.WithLookupEnv(nil))
		if err != nil {
			t.Fatal(err)
		}
		if err := e.SetMetadata(func() {}); !errors.Is(err, store.ErrEncode) {
			t.Fatalf("SetMetadata = %v, want ErrEncode", err)
		}
		// Not even the zero metadata (a nil func) can be encoded.
		if err := e.Run(context.Background()); !errors.Is(err, store.ErrEncode) {
			t.Fatalf("Run = %v, want ErrEncode", err)
		}
	})
}

// countHandler counts log records by message and checks their attributes.
type countHandler struct {
	mu    sync.Mutex
	count map[string]int
	attrs map[string]bool
}

func (h *countHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.count[r.Message]++
	r.Attrs(func(a slog.Attr) bool { h.attrs[a.Key] = true; return true })
	return nil
}
func (h *countHandler) WithAttrs(as []slog.Attr) slog.Handler {
	h.mu.Lock()
	for _, a := range as {
		h.attrs[a.Key] = true
	}
	h.mu.Unlock()
	return h
}
func (h *countHandler) WithGroup(string) slog.Handler { return h }

func TestRepeatingErrorsAreLoggedOncePerInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &countHandler{count: map[string]int{}, attrs: map[string]bool{}}
		f := &flaky{Store: memstore.New[meta]()}
		f.down.Store(true)
		n := start(t, f, "a", lead.WithLogger(slog.New(h)))
		// 25s of failing reads every ~0.5s with ErrorInterval 10s.
		time.Sleep(25 * time.Second)
		n.stop(t)
		h.mu.Lock()
		defer h.mu.Unlock()
		if got := h.count["store operation failed"]; got != 3 {
			t.Fatalf("logged %d failures in 25s, want 3 (at 0s, 10s, 20s)", got)
		}
		for _, k := range []string{"name", "identity", "op", "error", "state"} {
			if !h.attrs[k] {
				t.Errorf("log records lack attribute %q", k)
			}
		}
	})
}

// holdingHandler is a logger that holds the loop on the record whose
// message is msg until release is closed.
type holdingHandler struct {
	msg     string
	release chan struct{}
}

func (h holdingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h holdingHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		<-h.release
	}
	return nil
}
func (h holdingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h holdingHandler) WithGroup(string) slog.Handler      { return h }

// A term's work sees the record of its own acquire in Record: the record
// is kept before the term starts, not after (ExampleElector_Record once
// printed an empty record in CI: Lead's body had run and Lead returned
// before the loop kept it).
func TestRecordIsKeptBeforeTheTermStarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := holdingHandler{msg: "started leading", release: make(chan struct{})}
		e, err := lead.New("job", memstore.New[meta](), lead.WithIdentity("pod-a"), lead.WithLookupEnv(nil),
			lead.WithLogger(slog.New(h)))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go e.Run(ctx)
		var rec lease.Record[meta]
		var ok bool
		err = e.Lead(ctx, func(context.Context, lead.Term) error {
			rec, ok = e.Record()
			return nil
		})
		close(h.release)
		if err != nil || !ok || rec.Holder != "pod-a" || rec.Token != 1 {
			t.Fatalf("Record in the term's work: %+v (found %v), Lead: %v; want pod-a's record of token 1", rec, ok, err)
		}
		cancel()
		<-e.Done()
	})
}

// InTerm runs work that arrives from outside as a body of the current
// term: not at all without a term; with the term's token; its context
// ends when the term does, and the lease is not released before it
// returns.
func TestInTermRunsFnAsABodyOfTheTerm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New[meta]()
		a := start(t, st, "a")
		b := start(t, st, "b")
		leader, first := firstLeader(t, a, b)
		follower := a
		if leader == a {
			follower = b
		}
		called := false
		if err := follower.e.InTerm(context.Background(), func(context.Context, lead.Term) error { called = true; return nil }); !errors.Is(err, lead.ErrNotLeader) || called {
			t.Fatalf("InTerm on the follower = %v (fn called: %v), want ErrNotLeader without fn", err, called)
		}
		inFn, release := make(chan struct{}), make(chan struct{})
		res := make(chan error, 1)
		go func() {
			res <- leader.e.InTerm(context.Background(), func(ctx context.Context, term lead.Term) error {
				if tok, ok := fence.FromContext(ctx); !ok || tok != first.Term.Token || term.Token != first.Term.Token {
					t.Errorf("fn's token %v %v and term %d, want %d", tok, ok, term.Token, first.Term.Token)
				}
				close(inFn)
				<-ctx.Done()
				<-release
				return nil
			})
		}()
		<-inFn
		resigned := make(chan error, 1)
		go func() { resigned <- leader.e.Resign(context.Background()) }()
		time.Sleep(time.Second)
		if rec, _, err := st.Get(context.Background(), "job"); err != nil || rec.Holder != leader.e.Identity() {
			t.Fatalf("stored %+v, %v while fn runs: want the lease still held", rec, err)
		}
		close(release)
		if err := <-res; !errors.Is(err, lead.ErrLeadershipLost) {
			t.Fatalf("InTerm = %v, want ErrLeadershipLost: the term ended before fn returned", err)
		}
		if err := <-resigned; err != nil {
			t.Fatalf("Resign = %v", err)
		}
	})
}

// heldClock is a clock whose time moves only by advance and whose timers
// fire only by fire: a term's deadline can pass with nothing acting on it
// yet, as after a suspend whose timers run late.
type heldClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []heldTimer
}

type heldTimer struct {
	d       time.Duration
	f       func()
	stopped *atomic.Bool
}

type heldStop struct{ stopped *atomic.Bool }

func (s heldStop) Stop() bool { return !s.stopped.Swap(true) }

func (c *heldClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *heldClock) AfterFunc(d time.Duration, f func()) lead.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := heldTimer{d: d, f: f, stopped: new(atomic.Bool)}
	c.timers = append(c.timers, t)
	return heldStop{t.stopped}
}

func (c *heldClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// fire runs the pending timers set for d.
func (c *heldClock) fire(d time.Duration) {
	c.mu.Lock()
	var due []heldTimer
	rest := c.timers[:0]
	for _, t := range c.timers {
		if t.d == d && !t.stopped.Load() {
			due = append(due, t)
		} else {
			rest = append(rest, t)
		}
	}
	c.timers = rest
	c.mu.Unlock()
	for _, t := range due {
		go t.f()
	}
}

// heldLeader returns an elector on clk that leads, and stops it at the
// end of the test.
func heldLeader(t *testing.T, clk *heldClock) *lead.Elector[meta] {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	e, err := lead.New("job", memstore.New[meta](), lead.WithIdentity("a"), lead.WithConfig(fastConfig()), lead.WithLookupEnv(nil), lead.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	go e.Run(ctx)
	t.Cleanup(func() { cancel(); clk.advance(time.Hour); <-e.Done() })
	synctest.Wait()
	if !e.IsLeader() {
		t.Fatal("a does not lead")
	}
	return e
}

// A body that ignored its context past its term's deadline, before
// anything acted on the deadline, ran out of its term: Lead says so
// (ErrLeadershipLost) rather than return the body's nil.
func TestLeadSeesADeadlineNothingActedOnYet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := &heldClock{now: time.Unix(1e9, 0)}
		e := heldLeader(t, clk)
		err := e.Lead(context.Background(), func(context.Context, lead.Term) error {
			clk.advance(2 * fastConfig().RenewDeadline)
			return nil
		})
		if !errors.Is(err, lead.ErrLeadershipLost) {
			t.Fatalf("Lead = %v, want ErrLeadershipLost: the term's deadline passed under the body", err)
		}
	})
}

// Every starts no run once its term's deadline has passed, even when its
// tick comes before anything acted on the deadline.
func TestEveryStartsNoRunPastItsTermsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := &heldClock{now: time.Unix(1e9, 0)}
		e := heldLeader(t, clk)
		runs := make(chan bool, 10)
		const every = 1234 * time.Millisecond
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = e.Every(ctx, every, func(context.Context, lead.Term) error { runs <- e.IsLeader(); return nil })
		}()
		synctest.Wait()
		if leading := <-runs; !leading {
			t.Fatal("Every's first run is not in a term")
		}
		clk.advance(2 * fastConfig().RenewDeadline)
		clk.fire(every)
		synctest.Wait()
		select {
		case leading := <-runs:
			t.Fatalf("Every ran after its term's deadline (IsLeader %v)", leading)
		default:
		}
		cancel()
		<-done
	})
}
