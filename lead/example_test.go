package lead_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/health"
	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store/memstore"
)

// Lead runs a body only while this elector leads. The body's context ends
// with the term and carries the term's fencing token.
func ExampleElector_Lead() {
	st := memstore.New[struct{}]()
	e, err := lead.New("compaction", st, lead.WithIdentity("worker-1"), lead.WithLookupEnv(nil))
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go e.Run(ctx)

	err = e.Lead(ctx, func(ctx context.Context, t lead.Term) error {
		tok, _ := fence.FromContext(ctx)
		fmt.Printf("%s leads %q with token %d (context token %d)\n", t.Identity, t.Name, t.Token, tok)
		return nil
	})
	fmt.Println("Lead returned", err)
	// Output:
	// worker-1 leads "compaction" with token 1 (context token 1)
	// Lead returned <nil>
}

// InTerm runs work that arrives from outside (a request, a reconcile)
// once, in the current term, as one of its bodies; without a term it runs
// nothing.
func ExampleElector_InTerm() {
	st := memstore.New[struct{}]()
	e, err := lead.New("billing", st, lead.WithIdentity("worker-1"), lead.WithLookupEnv(nil))
	if err != nil {
		panic(err)
	}
	err = e.InTerm(context.Background(), func(context.Context, lead.Term) error { return nil })
	fmt.Println("before Run:", errors.Is(err, lead.ErrNotLeader))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go e.Run(ctx)
	_ = e.Lead(ctx, func(context.Context, lead.Term) error { return nil }) // wait for the term

	err = e.InTerm(ctx, func(ctx context.Context, t lead.Term) error {
		tok, _ := fence.FromContext(ctx)
		fmt.Printf("charging in term %d (context token %d)\n", t.Token, tok)
		return nil
	})
	fmt.Println("InTerm returned", err)
	// Output:
	// before Run: true
	// charging in term 1 (context token 1)
	// InTerm returned <nil>
}

// Record tells anyone who leads, since when, and with what metadata.
func ExampleElector_Record() {
	type meta struct{ Addr string }
	st := memstore.New[meta]()
	e, err := lead.New("scheduler", st, lead.WithIdentity("pod-a"), lead.WithLookupEnv(nil))
	if err != nil {
		panic(err)
	}
	if err := e.SetMetadata(meta{Addr: "10.0.0.7:8080"}); err != nil {
		panic(err) // the store cannot encode it, or it is too large
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go e.Run(ctx)
	_ = e.Lead(ctx, func(context.Context, lead.Term) error { return nil })

	rec, _ := e.Record()
	fmt.Println(rec.Holder, rec.Token, rec.Transitions, rec.Metadata.Addr, rec.LeaseDuration)
	// Output:
	// pod-a 1 0 10.0.0.7:8080 15s
}

// Every runs a periodic task on the leader only.
func ExampleElector_Every() {
	st := memstore.New[struct{}]()
	e, _ := lead.New("reminders", st, lead.WithIdentity("worker-1"), lead.WithLookupEnv(nil))
	runCtx, stopRun := context.WithCancel(context.Background())
	go e.Run(runCtx)

	ctx, cancel := context.WithCancel(context.Background())
	runs := 0
	err := e.Every(ctx, 10*time.Millisecond, func(ctx context.Context, t lead.Term) error {
		runs++
		if runs == 3 {
			cancel()
		}
		return nil
	})
	stopRun()
	<-e.Done()
	fmt.Println(runs, err)
	// Output:
	// 3 context canceled
}

// A Gate has the method gocron v2's Elector interface asks for, so
//
//	gocron.NewScheduler(gocron.WithDistributedElector(e.Gate()))
//
// runs the scheduler's jobs on the leader only.
func ExampleGate() {
	// The interface gocron v2 declares; Tenure does not import gocron.
	type gocronElector interface {
		IsLeader(context.Context) error
	}
	st := memstore.New[struct{}]()
	e, _ := lead.New("cron", st, lead.WithIdentity("worker-1"), lead.WithLookupEnv(nil))
	var gate gocronElector = e.Gate()
	fmt.Println(gate.IsLeader(context.Background()))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go e.Run(ctx)
	_ = e.Lead(ctx, func(context.Context, lead.Term) error { return nil })
	fmt.Println(gate.IsLeader(context.Background()))
	// Output:
	// lead: not the leader: worker-1 does not lead "cron"
	// <nil>
}

// Leaders tells every elector, followers too, who leads: client-go's
// OnNewLeader, with the holder's token and metadata.
func ExampleElector_Leaders() {
	type meta struct{ Addr string }
	st := memstore.New[meta]()
	start := func(id string) (*lead.Elector[meta], context.CancelFunc) {
		e, err := lead.New("scheduler", st, lead.WithIdentity(id), lead.WithLookupEnv(nil))
		if err != nil {
			panic(err)
		}
		if err := e.SetMetadata(meta{Addr: id + ":8080"}); err != nil {
			panic(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		go e.Run(ctx)
		return e, func() { cancel(); <-e.Done() }
	}
	a, stopA := start("pod-a")
	_ = a.Lead(context.Background(), func(context.Context, lead.Term) error { return nil }) // pod-a leads
	b, stopB := start("pod-b")
	defer stopB()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // ends the channel
	leaders, err := b.Leaders(ctx)
	if err != nil {
		panic(err)
	}
	for l := range leaders {
		if l.Holder == "" {
			continue // released, or no record: nobody leads right now
		}
		fmt.Printf("leader %s, token %d, at %s, this pod: %v\n", l.Holder, l.Token, l.Record.Metadata.Addr, l.Self)
		if l.Self {
			break
		}
		stopA() // pod-a steps down and releases; pod-b takes over
	}
	// Output:
	// leader pod-a, token 1, at pod-a:8080, this pod: false
	// leader pod-b, token 2, at pod-b:8080, this pod: true
}

// What client-go's leaderelection callbacks become (see "Coming from
// client-go" in docs/guide.md).
func Example_clientGo() {
	st := memstore.New[struct{}]()
	stopped := make(chan lead.Change, 1)
	e, err := lead.New("controller", st,
		lead.WithIdentity("pod-a"),             // Identity
		lead.WithConfig(lease.DefaultConfig()), // LeaseDuration 15s, RenewDeadline 10s, RetryPeriod 2s
		lead.WithReleaseOnStop(true),           // ReleaseOnCancel (true is the default)
		lead.WithLookupEnv(nil),
		lead.WithObserver(func(c lead.Change) { // OnStoppedLeading
			if c.Kind == lead.Stopped {
				stopped <- c
			}
		}))
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go e.Run(ctx)                               // RunOrDie
	leaders, err := e.Leaders(ctx)              // OnNewLeader
	healthz := health.Handler(e, 5*time.Second) // HealthzAdaptor
	if err != nil {
		panic(err)
	}

	_ = e.Lead(ctx, func(ctx context.Context, t lead.Term) error { // OnStartedLeading
		fmt.Println("started leading with token", t.Token)
		rec := httptest.NewRecorder()
		healthz.ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
		fmt.Println("healthz:", rec.Code)
		return nil
	})
	for l := range leaders {
		if l.Holder != "" {
			fmt.Println("new leader:", l.Holder)
			break
		}
	}
	cancel() // steps down and releases the lease
	fmt.Println("stopped leading:", (<-stopped).Reason)
	<-e.Done()
	// Output:
	// started leading with token 1
	// healthz: 200
	// new leader: pod-a
	// stopped leading: lead: leadership lost: stopped
}

// A Group runs many elections (one per tenant, say) with one goroutine.
// Each name's Elector works as one made by New.
func ExampleGroup() {
	st := memstore.New[struct{}]()
	g, err := lead.NewGroup(st, lead.WithIdentity("worker-1"), lead.WithLookupEnv(nil))
	if err != nil {
		panic(err)
	}
	var tenants []*lead.Elector[struct{}]
	for _, name := range []string{"tenant-a", "tenant-b", "tenant-c"} {
		e, err := g.Add(name)
		if err != nil {
			panic(err)
		}
		tenants = append(tenants, e)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()

	for _, e := range tenants {
		_ = e.Lead(ctx, func(ctx context.Context, t lead.Term) error {
			fmt.Printf("%s leads %s with token %d\n", t.Identity, t.Name, t.Token)
			return nil
		})
	}
	cancel() // every elector steps down and releases
	fmt.Println("Run returned", <-done)
	// Output:
	// worker-1 leads tenant-a with token 1
	// worker-1 leads tenant-b with token 1
	// worker-1 leads tenant-c with token 1
	// Run returned <nil>
}

// HandOver passes the lease to a chosen successor, a warm replica, say,
// during a rolling update: the term ends and its bodies stop first, then
// the release names the successor, which alone may take it at once.
func ExampleElector_HandOver() {
	st := memstore.New[struct{}]()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	elector := func(id string) *lead.Elector[struct{}] {
		e, err := lead.New("scheduler", st, lead.WithIdentity(id), lead.WithLookupEnv(nil))
		if err != nil {
			panic(err)
		}
		go e.Run(ctx)
		return e
	}
	old := elector("old-pod")
	report := func(_ context.Context, t lead.Term) error {
		fmt.Printf("%s leads with token %d\n", t.Identity, t.Token)
		return nil
	}
	_ = old.Lead(ctx, report)

	successor := elector("new-pod")
	<-successor.Ready()
	fmt.Println("handed over:", old.HandOver(ctx, "new-pod"))
	_ = successor.Lead(ctx, report)
	fmt.Println("old-pod leads:", old.IsLeader())
	// Output:
	// old-pod leads with token 1
	// handed over: <nil>
	// new-pod leads with token 2
	// old-pod leads: false
}

// WithPriority prefers a leader: a candidate of higher priority that
// joins takes the lease over through a handover (HandOver), not a race.
func ExampleWithPriority() {
	st := memstore.New[struct{}]()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := lease.Config{LeaseDuration: 2 * time.Second, RenewDeadline: 1500 * time.Millisecond,
		RetryInterval: 300 * time.Millisecond, BackendTimeout: time.Second, ErrorInterval: time.Second}
	elector := func(id string, priority uint64) *lead.Elector[struct{}] {
		e, err := lead.New("scheduler", st, lead.WithIdentity(id), lead.WithPriority(priority),
			lead.WithConfig(cfg), lead.WithLookupEnv(nil))
		if err != nil {
			panic(err)
		}
		go e.Run(ctx)
		return e
	}
	report := func(_ context.Context, t lead.Term) error {
		fmt.Printf("%s leads with token %d\n", t.Identity, t.Token)
		return nil
	}
	spare := elector("spare-pod", 1)
	_ = spare.Lead(ctx, report)

	preferred := elector("preferred-pod", 5)
	_ = preferred.Lead(ctx, report)
	fmt.Println("spare-pod leads:", spare.IsLeader())
	// Output:
	// spare-pod leads with token 1
	// preferred-pod leads with token 2
	// spare-pod leads: false
}
