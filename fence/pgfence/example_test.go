package pgfence_test

import (
	"context"
	"errors"
	"log"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/fence/pgfence"
	"github.com/tenure-go/tenure/lead"
)

// A leader's write that commits only while no later term has written.
func ExampleFence_Do() {
	ctx := context.Background()
	var (
		pool *pgxpool.Pool           // yours
		e    *lead.Elector[struct{}] // yours, running
	)
	f, err := pgfence.New()
	if err != nil {
		log.Fatal(err)
	}
	if err := f.Migrate(ctx, pool); err != nil { // once, at start
		log.Fatal(err)
	}
	err = e.Lead(ctx, func(ctx context.Context, t lead.Term) error {
		return f.Do(ctx, pool, "invoices", t.Token, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, "UPDATE invoices SET sent = true WHERE due < now()")
			return err
		})
	})
	if errors.Is(err, fence.ErrStaleToken) {
		log.Print("a later leader has written; this term's write was refused")
	}
}
