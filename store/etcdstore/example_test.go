package etcdstore_test

import (
	"context"
	"log"
	"os"
	"os/signal"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/store/etcdstore"
)

// An elector on the etcd cluster the application already uses. Every
// replica runs the same code; one of them runs the nightly report at a
// time.
func Example() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"localhost:2379"}})
	if err != nil {
		log.Fatal(err)
	}
	defer cli.Close()

	type Meta struct{ Addr string }
	st, err := etcdstore.New[Meta](cli, etcdstore.WithPrefix("myapp/"))
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
		// resources written (see fence/etcdfence).
		return runReport(ctx, uint64(t.Token))
	}, lead.Repeat())
	if err != nil && ctx.Err() == nil {
		log.Fatal(err)
	}
}

func runReport(ctx context.Context, token uint64) error { return nil }
