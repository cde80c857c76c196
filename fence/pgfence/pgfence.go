package pgfence

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/internal/nilarg"
)

// DefaultTable is the table a Fence keeps its tokens in unless WithTable
// says otherwise.
const DefaultTable = "tenure_fences"

// maxIdentBytes is PostgreSQL's limit on identifiers.
const maxIdentBytes = 63

// ErrInvalidOption is returned by New for an option it cannot take.
var ErrInvalidOption = errors.New("pgfence: invalid option")

// ErrInvalidResource is returned for a resource name that PostgreSQL cannot
// store: empty, not valid UTF-8, or with a NUL byte.
var ErrInvalidResource = errors.New("pgfence: invalid resource name")

// Querier runs a query: a pgx.Tx, or anything else with its QueryRow. Check
// must be given the transaction that makes the guarded write.
type Querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Beginner starts a transaction: a *pgxpool.Pool, a *pgx.Conn, or a pgx.Tx
// (which starts a savepoint).
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Option configures a Fence.
type Option func(*options)

type options struct {
	table []string
	err   error
}

// WithTable sets the table of tokens: one part for a table found through
// the search_path, two for a schema-qualified one. The default is
// DefaultTable. The parts are quoted as identifiers, never pasted as text;
// none may be empty, contain a NUL byte, or exceed 63 bytes.
func WithTable(parts ...string) Option {
	return func(o *options) {
		if len(parts) < 1 || len(parts) > 2 {
			o.err = fmt.Errorf("%w: WithTable takes a table name, optionally preceded by a schema name; got %d parts", ErrInvalidOption, len(parts))
			return
		}
		for _, p := range parts {
			if p == "" || strings.IndexByte(p, 0) >= 0 || !utf8.ValidString(p) || len(p) > maxIdentBytes {
				o.err = fmt.Errorf("%w: WithTable: %q is not a usable identifier (empty, NUL, not UTF-8 or over %d bytes)", ErrInvalidOption, p, maxIdentBytes)
				return
			}
		}
		o.table = append([]string(nil), parts...)
	}
}

// Fence makes writes to PostgreSQL conditional on a fencing token. It keeps,
// in a table of its own, the highest token accepted for each resource (any
// name the application chooses: a table, a job, a tenant). A write passes
// when, in its own transaction, its token is at least the one recorded; the
// record is then raised to it and its row stays locked until the
// transaction ends, so that writes under different tokens are applied in
// token order and a stale one can never commit after a newer one.
//
// The statement behind Check, for the default table:
//
//	INSERT INTO "tenure_fences" AS f (resource, token) VALUES ($1, $2)
//	ON CONFLICT (resource) DO UPDATE SET token = excluded.token
//	WHERE f.token <= excluded.token
//	RETURNING f.token
//
// It returns a row when the token is accepted and none when it is stale.
// A Fence is safe for concurrent use. Make it with New: the methods of a
// nil or zero Fence, and those given a nil ctx or database handle, return an
// error wrapping fence.ErrNilArgument.
type Fence struct {
	table      pgx.Identifier
	sqlCheck   string
	sqlHighest string
}

// New returns a Fence. It does not touch the database: create the table
// with Migrate, or from SchemaSQL.
func New(opts ...Option) (*Fence, error) {
	o := options{table: []string{DefaultTable}}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.err != nil {
		return nil, o.err
	}
	t := pgx.Identifier(o.table)
	return &Fence{
		table: t,
		sqlCheck: `INSERT INTO ` + t.Sanitize() + ` AS f (resource, token) VALUES ($1, $2)
ON CONFLICT (resource) DO UPDATE SET token = excluded.token
WHERE f.token <= excluded.token
RETURNING f.token`,
		sqlHighest: `SELECT token FROM ` + t.Sanitize() + ` WHERE resource = $1`,
	}, nil
}

// Table returns the table's name, quoted as an identifier ("" for a nil
// Fence).
func (f *Fence) Table() string {
	if f == nil {
		return ""
	}
	return f.table.Sanitize()
}

// SchemaSQL returns the statement that creates the table if it does not
// exist ("" for a nil Fence or one not made by New).
func (f *Fence) SchemaSQL() string {
	if f == nil || len(f.table) == 0 {
		return ""
	}
	return `CREATE TABLE IF NOT EXISTS ` + f.table.Sanitize() + ` (
	resource text PRIMARY KEY,
	token    numeric(20,0) NOT NULL CHECK (token BETWEEN 0 AND 18446744073709551615)
)`
}

// Migrate creates the table if it does not exist, in a transaction under an
// advisory lock so that processes starting together do not race.
func (f *Fence) Migrate(ctx context.Context, db Beginner) error {
	if err := f.nilArgs(ctx, "Migrate", "db", db); err != nil {
		return err
	}
	h := fnv.New64a()
	h.Write([]byte("tenure fence migrate " + f.table.Sanitize()))
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(h.Sum64())); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, f.SchemaSQL())
		return err
	})
	if err != nil {
		return fmt.Errorf("pgfence: Migrate %s: %w", f.table.Sanitize(), err)
	}
	return nil
}

// nilArgs returns an error wrapping fence.ErrNilArgument, for method op,
// when f is nil or was not made by New, or ctx or the database handle
// (named arg) is nil.
func (f *Fence) nilArgs(ctx context.Context, op, arg string, db any) error {
	switch {
	case f == nil:
		return fmt.Errorf("pgfence: %s: %w: the *Fence is nil (make one with New)", op, fence.ErrNilArgument)
	case f.sqlCheck == "":
		return fmt.Errorf("pgfence: %s: %w: the Fence was not made by New", op, fence.ErrNilArgument)
	case ctx == nil:
		return fmt.Errorf("pgfence: %s: %w: ctx is nil", op, fence.ErrNilArgument)
	case nilarg.IsNil(db):
		return fmt.Errorf("pgfence: %s: %w: %s is nil", op, fence.ErrNilArgument, arg)
	case unmade(db):
		return fmt.Errorf("pgfence: %s: %w: %s (%T) was not made by its constructor (pgxpool.New, pgx.Connect)", op, fence.ErrNilArgument, arg, db)
	}
	return nil
}

// unmade reports whether db is a pool or connection of pgx's own types
// that its constructor did not make (a zero value), which pgx
// dereferences and panics on.
func unmade(db any) bool {
	switch db := db.(type) {
	case *pgxpool.Pool:
		// A Pool's configuration is unexported; a zero Pool has none.
		cfg := reflect.ValueOf(db).Elem().FieldByName("config")
		return cfg.IsValid() && cfg.Kind() == reflect.Pointer && cfg.IsNil()
	case *pgx.Conn:
		return db.PgConn() == nil
	}
	return false
}

func checkResource(resource string) error {
	if resource == "" || strings.IndexByte(resource, 0) >= 0 || !utf8.ValidString(resource) {
		return fmt.Errorf("%w: %q", ErrInvalidResource, resource)
	}
	return nil
}

// Check accepts token for resource within tx, the transaction that makes the
// guarded write, or returns an error wrapping a *fence.StaleTokenError (and
// so fence.ErrStaleToken) when a larger token was accepted for resource
// before: it names the token and the highest accepted, read in tx by a
// second statement that only a stale token costs. Once accepted, the token is
// recorded and resource stays locked until tx ends: commit tx for the
// record to count, and make the write in tx. If tx rolls back, nothing is
// recorded. Check may come before or after the write in tx; before is
// cheaper when it fails.
//
// A token above lease.MaxToken, which no store issues, is refused with an
// error wrapping fence.ErrTokenOutOfRange before anything is sent.
//
// After an error, roll tx back: a stale write must not commit.
func (f *Fence) Check(ctx context.Context, tx Querier, resource string, token fence.Token) error {
	if err := f.nilArgs(ctx, "Check", "tx", tx); err != nil {
		return err
	}
	if err := checkResource(resource); err != nil {
		return err
	}
	if err := fence.CheckToken(token); err != nil {
		return fmt.Errorf("pgfence: Check %q: %w", resource, err)
	}
	var got uint64
	err := tx.QueryRow(ctx, f.sqlCheck, resource, uint64(token)).Scan(&got)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		// Stale. One more read, on this path only, names the highest
		// token accepted; if it fails the error says so without it.
		stale := &fence.StaleTokenError{Token: token}
		var highest uint64
		if err := tx.QueryRow(ctx, f.sqlHighest, resource).Scan(&highest); err != nil {
			return fmt.Errorf("pgfence: Check %q: %w (reading the highest: %w)", resource, stale, err)
		}
		stale.Highest = fence.Token(highest)
		return fmt.Errorf("pgfence: Check %q: %w", resource, stale)
	case err != nil:
		return fmt.Errorf("pgfence: Check %q: %w", resource, err)
	}
	return nil
}

// Do runs write in a new transaction of db after Check has accepted token
// for resource, and commits. It returns an error wrapping
// fence.ErrStaleToken, without calling write, when token is stale; if write
// returns an error, the transaction is rolled back and the error returned,
// and the token is not recorded.
func (f *Fence) Do(ctx context.Context, db Beginner, resource string, token fence.Token, write func(tx pgx.Tx) error) error {
	if err := f.nilArgs(ctx, "Do", "db", db); err != nil {
		return err
	}
	if write == nil {
		return fmt.Errorf("pgfence: Do: %w: write is nil", fence.ErrNilArgument)
	}
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if err := f.Check(ctx, tx, resource, token); err != nil {
			return err
		}
		return write(tx)
	})
}

// DoContext is Do with the token taken from ctx (see fence.WithToken); it
// returns fence.ErrNoToken when ctx carries none.
func (f *Fence) DoContext(ctx context.Context, db Beginner, resource string, write func(tx pgx.Tx) error) error {
	if err := f.nilArgs(ctx, "DoContext", "db", db); err != nil {
		return err
	}
	token, ok := fence.FromContext(ctx)
	if !ok {
		return fence.ErrNoToken
	}
	return f.Do(ctx, db, resource, token, write)
}

// Highest returns the highest token accepted for resource, and false when
// none was.
func (f *Fence) Highest(ctx context.Context, db Querier, resource string) (fence.Token, bool, error) {
	if err := f.nilArgs(ctx, "Highest", "db", db); err != nil {
		return 0, false, err
	}
	if err := checkResource(resource); err != nil {
		return 0, false, err
	}
	var t uint64
	err := db.QueryRow(ctx, f.sqlHighest, resource).Scan(&t)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, false, nil
	case err != nil:
		return 0, false, fmt.Errorf("pgfence: Highest %q: %w", resource, err)
	}
	return fence.Token(t), true, nil
}
