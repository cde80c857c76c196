// Package pgstore keeps Tenure's lease records in PostgreSQL, through a
// *pgxpool.Pool the application already has. A [Store] implements
// [store.Store], [store.Watcher] and [store.FuncWatcher] and passes the
// storetest suite against a real server.
//
//	pool, _ := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
//	st, err := pgstore.New[Meta](pool) // table tenure_leases, JSON metadata
//	e, err := lead.New("nightly-report", st, lead.WithIdentity(podName))
//
// # Schema
//
// One row per election name, in a table created on first use (or by
// [Store.Migrate], or by hand from [Store.SchemaSQL]) under a
// transaction-scoped advisory lock, so that processes starting together do
// not race:
//
//	CREATE SEQUENCE IF NOT EXISTS tenure_leases_revision AS bigint START WITH <now in µs>;
//	CREATE TABLE IF NOT EXISTS tenure_leases (
//		name              text PRIMARY KEY,
//		holder            text NOT NULL,
//		token             numeric(20,0) NOT NULL,  -- at most lease.MaxToken
//		revision          bigint NOT NULL,         -- from the sequence
//		acquired_at       timestamptz NOT NULL,
//		renewed_at        timestamptz NOT NULL,
//		lease_duration_ns bigint NOT NULL,
//		transitions       numeric(20,0) NOT NULL,  -- at most lease.MaxToken
//		metadata          bytea NOT NULL,          -- the codec's bytes
//		claim             boolean NOT NULL DEFAULT false,
//		successor         text NOT NULL DEFAULT '',
//		stamp             numeric(20,0) NOT NULL DEFAULT 0 -- lease.Record.Stamp
//	);
//
// Table and sequence names are always quoted as identifiers
// ([pgx.Identifier]); names, records and metadata are always parameters.
// Revisions come from the sequence, so they never repeat, even after a row
// is deleted; the sequence starts at the time of its creation in
// microseconds, so that a table and sequence created again continue above
// the revisions handed out before. Metadata is bytea because a custom codec
// need not produce JSON.
//
// # One statement per operation
//
// Get is one SELECT. CompareAndSwap is one statement and one round trip:
// with a zero expected revision, an INSERT ... ON CONFLICT DO UPDATE whose
// update changes nothing, so that it always returns a row, the new one or
// the one already there, even when another transaction created it a moment
// before; otherwise an UPDATE ... WHERE revision = $expected in a CTE next
// to a SELECT ... FOR SHARE of the current row, which under READ COMMITTED
// waits for a concurrent writer and returns what it committed. Either way
// the reply says whether this call wrote, and carries the current row when
// it did not, so a loser learns the winner. The statement also calls
// pg_notify, so the notification commits with the write.
//
// CompareAndSwap's statements share round trips under load: a swap made
// while two pipelines are out waits for the next, which sends every swap
// waiting. The swaps of existing records among them (and the renewals of
// CompareAndSwapBatch) go as one batch statement of up to 64 rows, one
// transaction, each row compared and written alone, its guard kept, no
// name twice, and no swap passing an earlier one of its name; creates go
// as statements of their own, each followed by a Sync, so that each is a
// transaction of its own. Idle, a swap runs alone on its own context, as
// a query of the pool does. See docs/backends/postgres.md ("Pipelines").
//
// Statements that provably did not run (nothing was sent, or the server
// ended the session before answering, as pg_terminate_backend or a restart
// does) are sent again on another connection of the pool, so that a
// restart does not fail the first operations after it. A statement whose
// fate is unknown (its context ended while it ran, or the connection broke
// after it was sent) is reported as an error: it may or may not have been
// applied, as the store contract allows.
//
// # Watch
//
// A Store that has watchers holds one connection of its own (taken from the
// pool, then detached from it) on which it LISTENs to [Store.Channel], and
// keeps it for a second after the last watcher leaves. Every
// write notifies once: with the whole record ("r1:...", a named release's
// successor included) when the metadata takes at most 2 KiB and it is no
// claim, which the watchers of NAME receive as their event without a
// read, otherwise with "REVISION:NAME", on which they read the row.
// Anyone who may NOTIFY on the channel can send either: a record carried
// by a notification is only a hint, validated as a stored row is, and an
// elector acts on a release it announces only by a swap guarded on that
// release ([store.CompareReleasedAndSwap]), or after reading the row.
// When the connection breaks it is opened again and every watcher reads its
// row again, so that a change made meanwhile is not missed. The connection
// is closed when the last watcher goes. A watcher of [Store.WatchFunc]
// holds no goroutine while idle: the listener calls its function, and a
// read it needs runs on a goroutine that ends with the read.
//
// # Tokens and revisions
//
// A swap that continues the stored term ([store.Renews]) keeps its token;
// any other write gets a token above the stored one ([store.NewToken]), and
// one that would need a token above lease.MaxToken writes nothing and fails
// with [store.ErrTokenExhausted]. A row's new revision is above both the
// sequence and its stored revision, so it only grows.
//
// # Corrupt records
//
// A row with a NULL, a value outside the bounds of [store.ValidateStored]
// (numbers are read as text, so nothing fails to scan) or metadata the
// codec cannot decode is reported with [store.ErrCorruptRecord], naming
// the column and the rule, from Get, CompareAndSwap and Watch, and never
// with its revision. A swap writes only when it names the row's current
// revision, no call reveals the revision of an unreadable row, and the
// statement itself refuses to update a row out of bounds: no caller can
// overwrite it. A hand edit must give the row a new revision (revision =
// nextval('tenure_leases_revision')); the docs say more.
package pgstore
