package controllerruntime_test

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/tenure-go/tenure/controllerruntime"
	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/store/memstore"
)

// Two replicas of an operator share one election (here in memory; a Lease
// through kubestore, or Redis, PostgreSQL or etcd through storeurl, in a
// real one). The first leads and runs its leader-only runnable; when it
// stops, it releases, and the second takes over at once.
func Example() {
	st := memstore.New[struct{}]()
	// Nothing here reads the API server, so none is needed.
	cfg := &rest.Config{Host: "http://127.0.0.1:1"}

	events := make(chan string)
	replica := func(id string) (*controllerruntime.Election[struct{}], error) {
		e, err := lead.New("my-operator", st, lead.WithIdentity(id))
		if err != nil {
			return nil, err
		}
		x, err := controllerruntime.NewManager(cfg, manager.Options{
			Metrics: metricsserver.Options{BindAddress: "0"}, // off
		}, e)
		if err != nil {
			return nil, err
		}
		// What a controller's Reconcile gets: the term's token, to fence
		// its writes with.
		err = x.Manager().Add(manager.RunnableFunc(func(ctx context.Context) error {
			token, _ := fence.FromContext(ctx)
			events <- fmt.Sprintf("%s: leader-only runnable started, token %d", id, token)
			<-ctx.Done()
			events <- fmt.Sprintf("%s: leader-only runnable stopped", id)
			return nil
		}))
		return x, err
	}
	start := func(x *controllerruntime.Election[struct{}]) (stop func() error) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- x.Manager().Start(ctx) }()
		return func() error { cancel(); return <-done }
	}

	a, err := replica("pod-a")
	if err != nil {
		fmt.Println(err)
		return
	}
	stopA := start(a)
	fmt.Println(<-events)
	<-a.Elected() // closed once the leader-only runnables were started
	b, err := replica("pod-b")
	if err != nil {
		fmt.Println(err)
		return
	}
	stopB := start(b)
	go func() { events <- fmt.Sprint("pod-a stopped: ", stopA()) }()
	fmt.Println(<-events) // pod-a's runnable returns before pod-a releases
	// pod-a's manager returns, and pod-b takes over at once (told of the
	// release by memstore's watch): in either order.
	next := []string{<-events, <-events}
	slices.Sort(next)
	fmt.Println(strings.Join(next, "\n"))
	<-b.Elected()
	go func() { events <- fmt.Sprint("pod-b stopped: ", stopB()) }()
	fmt.Println(<-events)
	fmt.Println(<-events)
	// Output:
	// pod-a: leader-only runnable started, token 1
	// pod-a: leader-only runnable stopped
	// pod-a stopped: <nil>
	// pod-b: leader-only runnable started, token 2
	// pod-b: leader-only runnable stopped
	// pod-b stopped: <nil>
}
