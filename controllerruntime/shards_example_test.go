package controllerruntime_test

import (
	"context"
	"fmt"
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

// A controller's work sharded over the manager's replicas (here one, in
// memory): the reconciler runs for the objects of the shards this replica
// leads, with the shard's fencing token.
func ExampleSharded() {
	st := memstore.New[struct{}]()
	timings := lease.DefaultConfig()
	timings.RetryInterval = 100 * time.Millisecond // a look every 100 ms
	s, err := lead.NewShards(st, lead.ShardsConfig{Name: "apps", Shards: []lead.Shard{
		{Name: "apps-0"}, {Name: "apps-1"}, {Name: "apps-2"},
	}}, lead.WithIdentity("pod-a"), lead.WithConfig(timings))
	if err != nil {
		fmt.Println(err)
		return
	}
	mgr, err := manager.New(&rest.Config{Host: "http://127.0.0.1:1"}, manager.Options{
		Metrics: metricsserver.Options{BindAddress: "0"}, // off
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	x, err := controllerruntime.NewSharded(mgr, s, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	// Give x.Reconciler(r) to the builder, on every replica:
	// ctrl.NewControllerManagedBy(mgr).For(&appsv1.Deployment{}).
	//	WithOptions(controller.Options{NeedLeaderElection: ptr.To(false)}).
	//	Complete(x.Reconciler(r))
	r := x.Reconciler(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		token, _ := fence.FromContext(ctx)
		fmt.Printf("reconcile %s in shard %s, fenced: %v\n", req.Name, x.ShardOf(req.String()), token > 0)
		return reconcile.Result{}, nil
	}))

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: "web"}}
	for { // until this replica, the only one, leads the object's shard
		if _, ok := x.Term(req.String()); ok {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := r.Reconcile(context.Background(), req); err != nil {
		fmt.Println(err)
	}
	cancel()
	<-done
	// Output:
	// reconcile web in shard apps-0, fenced: true
}
