package pgstore_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/store/pgstore"
)

// Meta is what a leader publishes about itself.
type Meta struct {
	Version string
	Addr    string
}

// An elector on PostgreSQL: the store creates its table on first use.
func ExampleNew() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()

	st, err := pgstore.New[Meta](pool, pgstore.WithTable("ops", "leases"))
	if err != nil {
		log.Fatal(err)
	}
	e, err := lead.New("nightly-report", st, lead.WithIdentity("worker-1"))
	if err != nil {
		log.Fatal(err)
	}
	e.SetMetadata(Meta{Version: "1.4.2", Addr: "10.0.0.7:8080"})
	go func() { _ = e.Run(ctx) }()

	err = e.Lead(ctx, func(ctx context.Context, t lead.Term) error {
		fmt.Println("leading with token", t.Token)
		<-ctx.Done() // work until the term ends
		return ctx.Err()
	})
	log.Println(err)
}

// For teams that manage their own schema: print the statements to run, and
// keep the store from running them itself.
func ExampleStore_SchemaSQL() {
	pool, err := pgxpool.New(context.Background(), os.Getenv("DATABASE_URL")) // connects lazily
	if err != nil {
		log.Fatal(err)
	}
	st, err := pgstore.New[Meta](pool, pgstore.WithAutoMigrate(false))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(st.SchemaSQL())
}
