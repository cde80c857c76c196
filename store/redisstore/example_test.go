package redisstore_test

import (
	"context"
	"log"
	"os"
	"os/signal"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/store/redisstore"
)

// An elector on the Redis the application already uses. Every replica runs
// the same code; one of them runs the nightly report at a time.
func Example() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()

	type Meta struct{ Addr string }
	st, err := redisstore.New[Meta](rdb, redisstore.WithPrefix("myapp:"))
	if err != nil {
		log.Fatal(err)
	}
	e, err := lead.New("nightly-report", st)
	if err != nil {
		log.Fatal(err)
	}
	go e.Run(ctx) // releases the lease when ctx ends

	err = e.Lead(ctx, func(ctx context.Context, t lead.Term) error {
		// ctx ends the moment this term does; pass t.Token to the
		// resources written (see fence/redisfence).
		return runReport(ctx, uint64(t.Token))
	}, lead.Repeat())
	if err != nil && ctx.Err() == nil {
		log.Fatal(err)
	}
}

func runReport(ctx context.Context, token uint64) error { return nil }

// Two Stores of one application, under different prefixes, whose watches
// share one Pub/Sub connection. Without WithHub each Store would have a
// connection of its own (still one for all its names).
func ExampleNewHub() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()

	hub, err := redisstore.NewHub(rdb)
	if err != nil {
		log.Fatal(err)
	}
	jobs, err := redisstore.New[struct{}](rdb, redisstore.WithPrefix("jobs:"), redisstore.WithHub(hub))
	if err != nil {
		log.Fatal(err)
	}
	shards, err := redisstore.New[struct{}](rdb, redisstore.WithPrefix("shards:"), redisstore.WithHub(hub))
	if err != nil {
		log.Fatal(err)
	}
	_, _ = jobs, shards // pass each to lead.New for as many names as needed
}
