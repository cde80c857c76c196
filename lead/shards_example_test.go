package lead_test

import (
	"context"
	"fmt"
	"time"

	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store/memstore"
)

// Two replicas share four shards: the first leads all four alone, and
// when the second joins, two move to it, handed over as each is released.
func ExampleShards() {
	st := memstore.New[string]()
	cfg := lead.ShardsConfig{Name: "reports", Shards: []lead.Shard{
		{Name: "reports-0"}, {Name: "reports-1"}, {Name: "reports-2"}, {Name: "reports-3"},
	}}
	timing := lease.Config{
		LeaseDuration: 600 * time.Millisecond, RenewDeadline: 400 * time.Millisecond,
		RetryInterval: 50 * time.Millisecond, RetryJitter: 0.1,
		BackendTimeout: 100 * time.Millisecond, ErrorInterval: time.Second,
	}
	started := make(chan string, 16)
	ctx, cancel := context.WithCancel(context.Background())
	var runs []chan error
	replica := func(id string) *lead.Shards[string] {
		s, err := lead.NewShards(st, cfg, lead.WithIdentity(id), lead.WithConfig(timing))
		if err != nil {
			panic(err)
		}
		done := make(chan error, 1)
		runs = append(runs, done)
		go func() {
			done <- s.Run(ctx, func(ctx context.Context, shard string, t lead.Term) error {
				started <- shard // the shard's work starts, with t.Token to fence it
				<-ctx.Done()     // and stops when the term ends
				return nil
			})
		}()
		return s
	}

	a := replica("a")
	for range 4 {
		<-started
	}
	fmt.Println("a alone:", a.Leading())

	b := replica("b")
	for range 2 {
		<-started
	}
	fmt.Println("a:", a.Leading())
	fmt.Println("b:", b.Leading())

	cancel()
	for _, done := range runs {
		<-done
	}
	// Output:
	// a alone: [reports-0 reports-1 reports-2 reports-3]
	// a: [reports-0 reports-1]
	// b: [reports-2 reports-3]
}
