// Package pgfence makes a write to PostgreSQL conditional on a fencing
// token, in the same transaction as the write, so that a leader whose term
// has ended cannot write after a newer leader did.
//
// A [Fence] records, per resource, the highest token it has accepted, in a
// table of its own (tenure_fences by default). [Fence.Check], run in the
// transaction that makes the write, accepts the token if it is at least the
// recorded one, raises the record to it and keeps the resource's row locked
// until the transaction ends; otherwise it returns an error wrapping
// [fence.ErrStaleToken] and the caller rolls back. [Fence.Do] wraps the
// whole: begin, check, write, commit.
//
//	f, _ := pgfence.New()
//	_ = f.Migrate(ctx, pool) // once, at start
//	err := e.Lead(ctx, func(ctx context.Context, t lead.Term) error {
//		return f.Do(ctx, pool, "invoices", t.Token, func(tx pgx.Tx) error {
//			_, err := tx.Exec(ctx, "UPDATE invoices SET ...")
//			return err
//		})
//	})
//
// The statement, for use without this package (parameters: resource,
// token), returns a row when the token is accepted and none when it is
// stale:
//
//	INSERT INTO tenure_fences AS f (resource, token) VALUES ($1, $2)
//	ON CONFLICT (resource) DO UPDATE SET token = excluded.token
//	WHERE f.token <= excluded.token
//	RETURNING f.token
//
// Equal tokens pass: one term may write many times. Under READ COMMITTED
// (PostgreSQL's default) the statement waits for a concurrent transaction
// that holds the resource's row and then judges against the token it
// committed, so two terms' writes are applied in token order.
package pgfence
