package controllerruntime_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tenure-go/tenure/controllerruntime"
	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store/memstore"
)

func shardTimings() lease.Config {
	return lease.Config{
		LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second,
		RetryInterval: 500 * time.Millisecond, RetryJitter: 0.1,
		BackendTimeout: time.Second, ErrorInterval: 10 * time.Second,
	}
}

// A controller's work spread over three replicas: every object is
// reconciled by exactly one of them, the one that leads its shard, with
// that shard's token; when one replica stops, the others take its shards
// and its objects.
func TestShardedReconcilesEachObjectOnOneReplica(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New[struct{}]()
		cfg := lead.ShardsConfig{Name: "deployments"}
		for i := range 6 {
			cfg.Shards = append(cfg.Shards, lead.Shard{Name: fmt.Sprintf("deployments-%d", i)})
		}
		var mu sync.Mutex
		reconciled := map[string][]string{} // object -> replicas that reconciled it
		type replica struct {
			r    reconcile.Reconciler
			stop func() error
		}
		start := func(id string) replica {
			s, err := lead.NewShards(st, cfg, lead.WithIdentity(id), lead.WithConfig(shardTimings()), lead.WithLookupEnv(nil))
			if err != nil {
				t.Fatal(err)
			}
			mgr, err := manager.New(&rest.Config{Host: "http://127.0.0.1:1"}, manager.Options{Metrics: metricsserver.Options{BindAddress: "0"}})
			if err != nil {
				t.Fatal(err)
			}
			x, err := controllerruntime.NewSharded(mgr, s, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			r := x.Reconciler(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
				term, ok := controllerruntime.TermFromContext(ctx)
				token, fenced := fence.FromContext(ctx)
				if !ok || !fenced || token != term.Token || term.Name != x.ShardOf(req.String()) {
					t.Errorf("%s: %s reconciled with term %+v (%v), token %d (%v)", id, req, term, ok, token, fenced)
				}
				mu.Lock()
				reconciled[req.String()] = append(reconciled[req.String()], id)
				mu.Unlock()
				return reconcile.Result{}, nil
			}))
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- mgr.Start(ctx) }()
			return replica{r: r, stop: func() error { cancel(); return <-done }}
		}
		// reconcileAll offers every object to every replica once, and
		// checks that exactly one reconciled each.
		reconcileAll := func(reps map[string]replica) {
			t.Helper()
			clear(reconciled)
			for i := range 40 {
				req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: fmt.Sprintf("app-%d", i)}}
				for id, rep := range reps {
					res, err := rep.r.Reconcile(context.Background(), req)
					if err != nil {
						t.Fatalf("%s: %v", id, err)
					}
					mu.Lock()
					did := len(reconciled[req.String()]) > 0 && reconciled[req.String()][len(reconciled[req.String()])-1] == id
					mu.Unlock()
					if !did && res.RequeueAfter != time.Second {
						t.Errorf("%s: %s neither reconciled nor requeued: %+v", id, req, res)
					}
				}
				if got := reconciled[req.String()]; len(got) != 1 {
					t.Errorf("%s reconciled by %v, want exactly one replica", req, got)
				}
			}
		}

		reps := map[string]replica{"pod-a": start("pod-a"), "pod-b": start("pod-b"), "pod-c": start("pod-c")}
		time.Sleep(20 * time.Second)
		synctest.Wait()
		reconcileAll(reps)
		count := map[string]int{}
		for _, ids := range reconciled {
			for _, id := range ids {
				count[id]++
			}
		}
		if len(count) != 3 {
			t.Errorf("objects reconciled by %v, want all three replicas", count)
		}

		if err := reps["pod-c"].stop(); err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("pod-c: %v", err)
		}
		delete(reps, "pod-c")
		time.Sleep(20 * time.Second)
		synctest.Wait()
		reconcileAll(reps)
		for id, rep := range reps {
			if err := rep.stop(); err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("%s: %v", id, err)
			}
		}
	})
}

func TestNewShardedRefusesBadArguments(t *testing.T) {
	st := memstore.New[struct{}]()
	s, err := lead.NewShards(st, lead.ShardsConfig{Name: "x", Shards: []lead.Shard{{Name: "x-0"}}})
	if err != nil {
		t.Fatal(err)
	}
	empty, err := lead.NewShards(st, lead.ShardsConfig{Name: "y"})
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := manager.New(&rest.Config{Host: "http://127.0.0.1:1"}, manager.Options{Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		err  error
		call func() error
	}{
		{"a nil manager", controllerruntime.ErrNilArgument, func() error { _, err := controllerruntime.NewSharded(nil, s, 0); return err }},
		{"nil shards", controllerruntime.ErrNilArgument, func() error { _, err := controllerruntime.NewSharded[struct{}](mgr, nil, 0); return err }},
		{"a negative recheck", controllerruntime.ErrBadOption, func() error { _, err := controllerruntime.NewSharded(mgr, s, -time.Second); return err }},
		{"a recheck below MinRecheck", controllerruntime.ErrBadOption, func() error { _, err := controllerruntime.NewSharded(mgr, s, time.Nanosecond); return err }},
		{"no shards", controllerruntime.ErrBadOption, func() error { _, err := controllerruntime.NewSharded(mgr, empty, 0); return err }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); !errors.Is(err, tt.err) {
				t.Fatalf("NewSharded: %v, want %v", err, tt.err)
			}
		})
	}
}

// A nil or zero Sharded, or a nil reconciler, gives errors and zero
// values, never panics.
func TestShardedNilAndZeroGiveErrorsNotPanics(t *testing.T) {
	var nilSharded *controllerruntime.Sharded[struct{}]
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: "app"}}
	for name, x := range map[string]*controllerruntime.Sharded[struct{}]{"nil": nilSharded, "zero": {}} {
		if x.ShardOf("default/app") != "" {
			t.Errorf("%s: ShardOf names a shard", name)
		}
		if _, ok := x.Term("default/app"); ok {
			t.Errorf("%s: Term found one", name)
		}
		r := x.Reconciler(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) { return reconcile.Result{}, nil }))
		if _, err := r.Reconcile(context.Background(), req); !errors.Is(err, controllerruntime.ErrNilArgument) {
			t.Errorf("%s: Reconcile = %v, want ErrNilArgument", name, err)
		}
	}
}

// A reconcile in flight holds its shard: when the shard moves to a
// replica that joins, its context ends with the term, and the new replica
// leads the shard only once the reconcile has returned. Two replicas never
// reconcile an object of one shard at once.
func TestShardedReconcileEndsBeforeItsShardMoves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New[struct{}]()
		cfg := lead.ShardsConfig{Name: "d", Shards: []lead.Shard{{Name: "d-0"}, {Name: "d-1"}}}
		type replica struct {
			x    *controllerruntime.Sharded[struct{}]
			stop func()
		}
		start := func(id string) replica {
			s, err := lead.NewShards(st, cfg, lead.WithIdentity(id), lead.WithConfig(shardTimings()), lead.WithLookupEnv(nil))
			if err != nil {
				t.Fatal(err)
			}
			mgr, err := manager.New(&rest.Config{Host: "http://127.0.0.1:1"}, manager.Options{Metrics: metricsserver.Options{BindAddress: "0"}})
			if err != nil {
				t.Fatal(err)
			}
			x, err := controllerruntime.NewSharded(mgr, s, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- mgr.Start(ctx) }()
			return replica{x: x, stop: func() { cancel(); <-done }}
		}
		a := start("pod-a")
		time.Sleep(10 * time.Second)
		// One object of each shard, each held in a reconcile on pod-a
		// until its context ends, and a little longer.
		keys := map[string]reconcile.Request{}
		for i := 0; len(keys) < 2; i++ {
			req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: fmt.Sprintf("app-%d", i)}}
			if _, dup := keys[a.x.ShardOf(req.String())]; !dup {
				keys[a.x.ShardOf(req.String())] = req
			}
		}
		var mu sync.Mutex
		returned := map[string]bool{}
		var wg sync.WaitGroup
		for shard, req := range keys {
			started := make(chan struct{})
			r := a.x.Reconciler(reconcile.Func(func(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
				close(started)
				<-ctx.Done()
				time.Sleep(300 * time.Millisecond)
				mu.Lock()
				returned[shard] = true
				mu.Unlock()
				return reconcile.Result{}, nil
			}))
			wg.Go(func() { _, _ = r.Reconcile(context.Background(), req) })
			<-started
		}
		b := start("pod-b")
		for moved := false; !moved; {
			time.Sleep(10 * time.Millisecond)
			for shard, req := range keys {
				if _, ok := b.x.Term(req.String()); ok {
					mu.Lock()
					done := returned[shard]
					mu.Unlock()
					if !done {
						t.Fatalf("pod-b leads %s while pod-a's reconcile of %s in it still runs", shard, req)
					}
					moved = true
				}
			}
		}
		b.stop()
		a.stop()
		wg.Wait()
	})
}
