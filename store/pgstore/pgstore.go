package pgstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenure-go/tenure/internal/batch"
	"github.com/tenure-go/tenure/internal/nilarg"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/internal/edge"
	"github.com/tenure-go/tenure/store/watchutil"
)

// DefaultTable is the table a Store uses unless WithTable says otherwise.
const DefaultTable = "tenure_leases"

// SequenceSuffix is appended to the table's name to name the sequence that
// revisions are drawn from: tenure_leases_revision for the default table.
const SequenceSuffix = "_revision"

// maxIdentBytes is PostgreSQL's limit on identifiers (NAMEDATALEN-1); longer
// ones are silently truncated by the server, so they are refused here.
const maxIdentBytes = 63

// Errors returned by New and the Store's methods.
var (
	// ErrInvalidOption: an option was given a value it cannot take.
	ErrInvalidOption = errors.New("pgstore: invalid option")
	// ErrSchema: the database holds something the Store cannot use: a
	// relation other than a sequence under the name of the Store's
	// sequence, or one under the table's name that lacks a column the
	// Store needs or has it of another type; or, with automatic creation
	// off, no table at all.
	ErrSchema = errors.New("pgstore: schema conflict")
)

// Option configures a Store.
type Option func(*options)

type options struct {
	table       []string
	autoMigrate bool
	errs        []error
}

// WithTable sets the table the records live in: one part ("leases") for a
// table found through the search_path, two ("myschema", "leases") for a
// schema-qualified one. The default is DefaultTable. The parts are used
// verbatim, case included, and always quoted as identifiers; none may be
// empty, contain a NUL byte or exceed 63 bytes, and the table's own name may
// not exceed 63 bytes minus len(SequenceSuffix), so that the sequence's name
// fits too.
func WithTable(parts ...string) Option {
	return func(o *options) {
		if err := checkTable(parts); err != nil {
			o.errs = append(o.errs, err)
			return
		}
		o.table = append([]string(nil), parts...)
	}
}

// WithAutoMigrate says whether the Store creates its table and sequence on
// first use (the default, true). Teams that manage their own schema turn it
// off and create them from Store.SchemaSQL or with Migrate.
func WithAutoMigrate(enabled bool) Option {
	return func(o *options) { o.autoMigrate = enabled }
}

func checkTable(parts []string) error {
	if len(parts) < 1 || len(parts) > 2 {
		return fmt.Errorf("%w: WithTable takes a table name, optionally preceded by a schema name; got %d parts", ErrInvalidOption, len(parts))
	}
	for i, p := range parts {
		limit := maxIdentBytes
		if i == len(parts)-1 {
			limit -= len(SequenceSuffix)
		}
		switch {
		case p == "":
			return fmt.Errorf("%w: WithTable: empty name", ErrInvalidOption)
		case strings.IndexByte(p, 0) >= 0:
			return fmt.Errorf("%w: WithTable: %q contains a NUL byte", ErrInvalidOption, p)
		case !utf8.ValidString(p):
			return fmt.Errorf("%w: WithTable: %q is not valid UTF-8", ErrInvalidOption, p)
		case len(p) > limit:
			return fmt.Errorf("%w: WithTable: %q is %d bytes, the limit is %d", ErrInvalidOption, p, len(p), limit)
		}
	}
	return nil
}

// Store keeps lease records in a PostgreSQL table, one row per election
// name. It implements store.Store and store.Watcher and is safe for
// concurrent use. Create it with New: the methods of a nil or zero Store,
// and those given a nil ctx, return an error wrapping store.ErrNilArgument
// (the accessors return "").
type Store[M any] struct {
	pool        *pgxpool.Pool
	codec       store.Codec[M]
	table       pgx.Identifier
	seq         pgx.Identifier
	seqText     string                 // seq, quoted: passed as a parameter and cast to regclass
	channel     atomic.Pointer[string] // the LISTEN/NOTIFY channel; nil until the table's schema is known
	autoMigrate bool

	sqlGet, sqlCreate, sqlUpdate string
	nameCreate, nameUpdate       string // stmtName of sqlCreate and sqlUpdate
	sqlBatch, nameBatch          string // CompareAndSwapBatch's statement (batch.go)

	migrateMu sync.Mutex
	migrated  bool // guarded by migrateMu: the schema was made (Migrate) or found usable (checkTable)

	hub      *watchutil.Hub[string, note]    // the watches' listening connection
	listener *listener[M]                    // what hub watches through
	pipe     *batch.Runner[pgCall, pgAnswer] // CompareAndSwap's statements

	// listenIdle, when not zero, replaces defaultListenIdle (tests).
	listenIdle time.Duration
}

var (
	_ store.Store[struct{}]   = (*Store[struct{}])(nil)
	_ store.Watcher[struct{}] = (*Store[struct{}])(nil)
)

// New returns a Store that keeps its records in pool's database, with
// metadata encoded by [store.JSONCodec] (see NewWithCodec for another
// codec). It returns an error wrapping [store.ErrNilArgument] for a nil
// pool and ErrInvalidOption for a bad option. New does not touch the
// database: the table is created on first use (see WithAutoMigrate and
// Migrate).
//
// A Store that has watchers holds one more connection, for LISTEN: it is
// opened through the pool, so that the pool's settings and hooks apply, and
// then detached from it, so that it does not count against the pool's
// MaxConns.
func New[M any](pool *pgxpool.Pool, opts ...Option) (*Store[M], error) {
	return NewWithCodec[M](pool, nil, opts...)
}

// NewWithCodec is New with metadata encoded and decoded by codec, whose
// type fixes the Store's metadata type. A nil codec means
// [store.JSONCodec].
func NewWithCodec[M any](pool *pgxpool.Pool, codec store.Codec[M], opts ...Option) (*Store[M], error) {
	if pool == nil {
		return nil, fmt.Errorf("pgstore: New: %w: pool is nil", store.ErrNilArgument)
	}
	o := options{table: []string{DefaultTable}, autoMigrate: true}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if err := errors.Join(o.errs...); err != nil {
		return nil, err
	}
	if nilarg.IsNil(codec) {
		codec = store.JSONCodec[M]{}
	}
	s := &Store[M]{
		pool:        pool,
		codec:       codec,
		table:       pgx.Identifier(o.table),
		autoMigrate: o.autoMigrate,
	}
	seq := append(pgx.Identifier(nil), o.table...)
	seq[len(seq)-1] += SequenceSuffix
	s.seq = seq
	s.seqText = seq.Sanitize()
	if len(o.table) == 2 {
		s.setChannel(o.table[0])
	}
	s.buildSQL()
	s.buildBatchSQL()
	s.listener = &listener[M]{s: s}
	s.setLinger(defaultListenLinger)
	s.pipe = newPipe(s.runPipe)
	return s, nil
}

// channelName returns the notification channel of the table of schema
// schema and name table: "tenure:SCHEMA.TABLE", or, when that would exceed
// PostgreSQL's 63-byte limit on channel names or the schema's name holds a
// dot (which would leave the channel's dot ambiguous), "tenure:" followed
// by a hash of the quoted, qualified name.
func channelName(schema, table string) string {
	c := "tenure:" + schema + "." + table
	if len(c) <= maxIdentBytes && !strings.Contains(schema, ".") {
		return c
	}
	sum := sha256.Sum256([]byte(pgx.Identifier{schema, table}.Sanitize()))
	return "tenure:" + hex.EncodeToString(sum[:16])
}

// setChannel sets the channel, once, to that of the table in schema: the
// schema the Store's statements find the table in, so that Stores of the
// same table share a channel however they name it, and Stores of tables of
// one name in different schemas do not.
func (s *Store[M]) setChannel(schema string) {
	c := channelName(schema, s.table[len(s.table)-1])
	s.channel.CompareAndSwap(nil, &c)
}

// Table returns the table's name, quoted as an identifier (schema-qualified
// if it was given so).
func (s *Store[M]) Table() string {
	if s == nil {
		return ""
	}
	return s.table.Sanitize()
}

// Sequence returns the name of the sequence revisions are drawn from, quoted
// as an identifier. A hand edit of a row gives it a new revision with
// nextval of it, as a string: revision = nextval('"tenure_leases_revision"').
func (s *Store[M]) Sequence() string {
	if s == nil {
		return ""
	}
	return s.seqText
}

// Channel returns the name of the channel on which every write is announced
// with one NOTIFY: with the whole record (a payload that starts with "r1:")
// when the metadata takes at most 2 KiB and the record is no claim,
// otherwise with the payload "REVISION:NAME". It is "tenure:" followed by
// the table's schema, a dot and its name (see channelName for long names). For a table given
// without a schema, the schema is the one the table is found in through
// the search_path, known once the Store has used the table (Migrate or any
// operation): until then Channel returns "". To listen from psql, quote it
// as an identifier: LISTEN "tenure:public.tenure_leases".
func (s *Store[M]) Channel() string {
	if s == nil {
		return ""
	}
	if c := s.channel.Load(); c != nil {
		return *c
	}
	return ""
}

// columns are the columns of a record.
const columns = "holder, token, revision, acquired_at, renewed_at, lease_duration_ns, transitions, metadata, claim, successor, stamp"

// selected returns the columns of a record as row.dest reads them, from the
// table or CTE named alias: the numbers as text, so that whatever a row
// holds (NULL, a value out of range, a fraction in a column someone
// retyped) reads as a corrupt record rather than a scan error.
func selected(alias string) string {
	a := alias + "."
	return a + "holder, " + a + "token::text, " + a + "revision::text, " + a + "acquired_at, " + a + "renewed_at, " +
		a + "lease_duration_ns::text, " + a + "transitions::text, " + a + "metadata, " + a + "claim, " + a + "successor, " + a + "stamp::text"
}

// The bounds of store.ValidateStored and store.MaxRevision, as SQL
// literals.
var (
	sqlMaxToken    = strconv.FormatUint(lease.MaxToken, 10)
	sqlMaxDuration = strconv.FormatInt(int64(lease.MaxDuration), 10)
	sqlMaxRevision = strconv.FormatUint(uint64(store.MaxRevision), 10)
	sqlMaxHolder   = strconv.Itoa(store.MaxHolderBytes)
)

// sqlValid is true for a row of alias t that store.ValidateStored accepts
// (as far as SQL can tell: the times and the metadata are checked by the
// Go side) and that has a later revision to give: every column set, the
// numbers within their bounds, a holder without control characters, a
// positive LeaseDuration while held, finite times, a revision below
// store.MaxRevision.
// NULL in any column makes it NULL, which WHERE treats as false.
var sqlValid = `t.token BETWEEN 0 AND ` + sqlMaxToken + ` AND t.token = trunc(t.token)
	AND t.transitions BETWEEN 0 AND ` + sqlMaxToken + ` AND t.transitions = trunc(t.transitions)
	AND t.lease_duration_ns BETWEEN 0 AND ` + sqlMaxDuration + `
	AND (t.holder = '' OR t.lease_duration_ns > 0)
	AND octet_length(t.holder) <= ` + sqlMaxHolder + ` AND t.holder !~ '[\x01-\x1f\x7f-\x9f]'
	AND t.revision BETWEEN 1 AND ` + sqlMaxRevision + ` - 1
	AND isfinite(t.acquired_at) AND isfinite(t.renewed_at) AND t.metadata IS NOT NULL`

// sqlClockToken is the server's clock in microseconds since the Unix
// epoch (store.ClockToken): the least token a new term gets, so that a
// term after a restore of the table never reuses a token the restore lost.
const sqlClockToken = `trunc(extract(epoch FROM clock_timestamp()) * 1000000)`

// sqlNextToken is the token an update of the row of alias t to holder $3
// and token $4 writes: t.token when the write continues the stored term
// (store.Renews), otherwise greatest($4, t.token+1, the server's clock)
// (store.NewToken over store.ClockToken).
const sqlNextToken = `CASE WHEN $4::numeric = t.token AND ($3::text = '' OR $3::text = t.holder) THEN t.token ELSE greatest($4::numeric, t.token + 1, ` + sqlClockToken + `) END`

// sqlReleased is the guard of CompareReleasedAndSwap on the row of alias
// t: true when $12 is false (CompareAndSwap), otherwise only for a
// released row with token $13, transitions $14, lease duration $15 and
// successor $17.
const sqlReleased = `($12::boolean IS NOT TRUE OR (t.holder = '' AND t.token = $13::numeric AND t.transitions = $14::numeric AND t.lease_duration_ns = $15::bigint AND t.successor = $17::text))`

// notifyMetadataMax is the largest metadata, in bytes, that a notification
// carries (hex-encoded, so twice as many characters): the whole payload
// stays below PostgreSQL's limit of 8000 bytes.
const notifyMetadataMax = 2048

// notifySQL returns the select list that announces the row of alias a
// (its name in $1) on the channel in parameter ch, with one notification:
// the whole record ("r1:" payload, see parseNotification; a nonzero
// stamp follows the metadata after a dot, a successor precedes it
// between tildes) when its metadata is small enough, its times finite
// and it is no claim (lease.Record's Claim, which the "r1:" payload does
// not carry), otherwise "REVISION:NAME", on which the listeners read the
// row. One notification per write: every listener receives and parses
// each, and a second one per write doubles what listening costs (a
// quarter of a 10,000-name process's CPU). The holder's length is counted
// in the writing connection's client_encoding, in which a listener of the
// same configuration receives the payload, whatever the database's
// encoding.
func notifySQL(a, ch string) string {
	micros := func(col string) string {
		return `(extract(epoch FROM ` + a + `.` + col + `) * 1000000)::bigint::text`
	}
	full := `'r1:' || ` + a + `.revision::text || ':' || ` + a + `.token::text || ':' || ` + a + `.transitions::text || ':' || ` +
		a + `.lease_duration_ns::text || ':' || ` + micros("acquired_at") + ` || ':' || ` + micros("renewed_at") + ` || ':' || ` +
		`CASE WHEN ` + a + `.successor <> '' THEN '~' || encode(convert_to(` + a + `.successor, 'UTF8'), 'hex') || '~' ELSE '' END || ` +
		`encode(` + a + `.metadata, 'hex') || CASE WHEN ` + a + `.stamp <> 0 THEN '.' || ` + a + `.stamp::text ELSE '' END || ':' || octet_length(convert_to(` + a + `.holder, pg_client_encoding()))::text || ':' || ` + a + `.holder || $1`
	fits := `isfinite(` + a + `.acquired_at) AND isfinite(` + a + `.renewed_at) AND octet_length(` + a + `.metadata) <= ` + strconv.Itoa(notifyMetadataMax) +
		` AND ` + a + `.claim IS NOT TRUE`
	return `CASE WHEN ` + fits + ` THEN pg_notify(` + ch + `, ` + full + `) ELSE pg_notify(` + ch + `, ` + a + `.revision::text || ':' || $1) END`
}

// buildSQL writes the statements once. The table and the sequence appear in
// them only quoted by pgx.Identifier.Sanitize; every value is a parameter.
func (s *Store[M]) buildSQL() {
	t := s.table.Sanitize()
	s.sqlGet = "SELECT " + selected("t") + " FROM " + t + " AS t WHERE t.name = $1"

	// The statements name their CTEs. A CTE name shadows a table of the
	// same name in FROM, so the prefix grows until no CTE is named like
	// an unqualified table.
	var r, w, n, u, c string
	for prefix := "tenure_"; ; prefix += "_" {
		r, w, n, u, c = prefix+"rev", prefix+"ins", prefix+"notify", prefix+"upd", prefix+"cur"
		if len(s.table) > 1 || !slices.Contains([]string{r, w, n, u, c}, s.table[0]) {
			break
		}
	}

	// Create if absent. ON CONFLICT DO UPDATE, unlike DO NOTHING, always
	// yields a row: the new one, or the one already there (even one that
	// a concurrent transaction inserted after this statement's snapshot,
	// which it waits for and locks). The update is a no-op (it sets holder
	// to itself), so an existing record is never changed. The revision
	// drawn from the sequence is unique, so the returned row carries it if
	// and only if this statement inserted it.
	s.sqlCreate = `WITH ` + r + ` AS (SELECT nextval($9::text::regclass) AS rev),
` + w + ` AS (
	INSERT INTO ` + t + ` AS t (name, holder, token, revision, acquired_at, renewed_at, lease_duration_ns, transitions, metadata, claim, successor, stamp)
	SELECT $1, $2, greatest($3::numeric, ` + sqlClockToken + `), ` + r + `.rev, $4, $5, $6, $7, $8, $11, $12, $13::numeric FROM ` + r + `
	ON CONFLICT (name) DO UPDATE SET holder = t.holder
	RETURNING t.holder, t.token, t.revision, t.acquired_at, t.renewed_at, t.lease_duration_ns, t.transitions, t.metadata, t.claim, t.successor, t.stamp
),
` + n + ` AS (SELECT ` + notifySQL(w, "$10") + ` FROM ` + w + `, ` + r + ` WHERE ` + w + `.revision = ` + r + `.rev)
SELECT coalesce(` + w + `.revision = ` + r + `.rev, false), ` + selected(w) + `, (SELECT count(*) FROM ` + n + `)
FROM ` + w + `, ` + r

	// Swap if the revision matches and the stored row is within bounds
	// (sqlValid). The new revision is above the sequence and the stored
	// revision, and at least the server's clock in microseconds, so a
	// revision never goes back on a write, even after the row was given a
	// higher one by hand, and a restore of the table and its sequence does
	// not hand out again a revision some elector still expects; the new token follows
	// store.Renews and store.NewToken, and a token above lease.MaxToken is
	// never written. When the UPDATE matches nothing, the current row is
	// read FOR SHARE: under READ COMMITTED that waits for a concurrent
	// writer and returns the newest committed version, not the one in
	// this statement's snapshot, so a loser learns the winner. A name
	// absent from the snapshot yields no row: the swap failed against an
	// absent record. A row at the expected revision that was not updated
	// is out of bounds or has no token left; the Go side says which.
	s.sqlUpdate = `WITH ` + u + ` AS (
	UPDATE ` + t + ` AS t SET holder = $3, token = ` + sqlNextToken + `,
		revision = greatest(nextval($10::text::regclass), t.revision + 1, ` + sqlClockToken + `),
		acquired_at = $5, renewed_at = $6, lease_duration_ns = $7, transitions = $8, metadata = $9, claim = $16, successor = $18, stamp = $19::numeric
	WHERE t.name = $1 AND t.revision = $2 AND ` + sqlValid + `
		AND ` + sqlNextToken + ` <= ` + sqlMaxToken + `
		AND ` + sqlReleased + `
	RETURNING ` + columns + `
),
` + n + ` AS (SELECT ` + notifySQL(u, "$11") + ` FROM ` + u + `),
` + c + ` AS (SELECT ` + columns + ` FROM ` + t + ` WHERE name = $1 AND NOT EXISTS (SELECT 1 FROM ` + u + `) FOR SHARE)
SELECT true, ` + selected(u) + `, (SELECT count(*) FROM ` + n + `) FROM ` + u + `
UNION ALL
SELECT false, ` + selected(c) + `, 0 FROM ` + c
	s.nameCreate, s.nameUpdate = stmtName(s.sqlCreate), stmtName(s.sqlUpdate)
}

// SchemaSQL returns the statements that create the Store's sequence and
// table if they do not exist, and add the claim, successor and stamp columns to a
// table made before those columns existed, as Migrate runs them. Teams that manage their
// own schema can run them (or their equivalent) instead.
func (s *Store[M]) SchemaSQL() string {
	if s.Validate() != nil {
		return ""
	}
	return schemaSQL(s.table, s.seq, time.Now())
}

func schemaSQL(table, seq pgx.Identifier, now time.Time) string {
	return createSQL(table, seq, now) + addClaimSQL(table)
}

// createSQL creates the sequence and the table if they do not exist.
func createSQL(table, seq pgx.Identifier, now time.Time) string {
	// The sequence starts at the current time in microseconds, so that if
	// it is ever lost and created again, the new one still continues above
	// the revisions the old one handed out (unless more than a million
	// writes a second were made, which a lease table never sees).
	start := max(now.UnixMicro(), 1)
	return "CREATE SEQUENCE IF NOT EXISTS " + seq.Sanitize() + " AS bigint START WITH " + strconv.FormatInt(start, 10) + ";\n" +
		"CREATE TABLE IF NOT EXISTS " + table.Sanitize() + ` (
	name              text PRIMARY KEY,
	holder            text NOT NULL,
	token             numeric(20,0) NOT NULL CHECK (token BETWEEN 0 AND 18446744073709551615),
	revision          bigint NOT NULL CHECK (revision > 0),
	acquired_at       timestamptz NOT NULL,
	renewed_at        timestamptz NOT NULL,
	lease_duration_ns bigint NOT NULL CHECK (lease_duration_ns >= 0),
	transitions       numeric(20,0) NOT NULL CHECK (transitions BETWEEN 0 AND 18446744073709551615),
	metadata          bytea NOT NULL,
	claim             boolean NOT NULL DEFAULT false,
	successor         text NOT NULL DEFAULT '',
	stamp             numeric(20,0) NOT NULL DEFAULT 0 CHECK (stamp BETWEEN 0 AND 18446744073709551615)
);
`
}

// addClaimSQL adds the claim, successor and stamp columns to a table made
// before they existed (a row without a stamp reads as Stamp 0: none).
// Migrate runs it only once the table is found to be the Store's
// (checkTable): it never alters a table of someone else's.
func addClaimSQL(table pgx.Identifier) string {
	return "ALTER TABLE " + table.Sanitize() + " ADD COLUMN IF NOT EXISTS claim boolean NOT NULL DEFAULT false;\n" +
		"ALTER TABLE " + table.Sanitize() + " ADD COLUMN IF NOT EXISTS successor text NOT NULL DEFAULT '';\n" +
		"ALTER TABLE " + table.Sanitize() + " ADD COLUMN IF NOT EXISTS stamp numeric(20,0) NOT NULL DEFAULT 0;\n"
}

// lockKey is the advisory lock Migrate takes: one per table, so that
// stores of different tables do not wait for each other.
func (s *Store[M]) lockKey() int64 {
	h := fnv.New64a()
	h.Write([]byte("tenure migrate "))
	h.Write([]byte(s.table.Sanitize()))
	return int64(h.Sum64())
}

// Migrate creates the Store's sequence and table if they do not exist
// (SchemaSQL shows the statements), and adds the claim, successor and
// stamp columns to a table of the Store's made before they existed. It runs them in one
// transaction under a transaction-scoped advisory lock, so that processes
// starting together do not race to create the same table. It is safe to
// call at any time and changes nothing else that exists. It fails with an error wrapping ErrSchema
// when a relation of the table's name exists but cannot hold the records
// (naming each column missing or of a type the Store cannot use), or when
// a relation other than a sequence has the sequence's name.
func (s *Store[M]) Migrate(ctx context.Context) error {
	if err := s.Validate(); err != nil {
		return fmt.Errorf("pgstore: Migrate: %w", err)
	}
	if ctx == nil {
		return fmt.Errorf("pgstore: Migrate: %w: ctx is nil", store.ErrNilArgument)
	}
	var schema string
	err := s.retry(ctx, connectionLost, func() error {
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) (err error) {
			if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", s.lockKey()); err != nil {
				return err
			}
			if err := s.checkSequenceName(ctx, tx); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, createSQL(s.table, s.seq, time.Now())); err != nil {
				return err
			}
			var noClaim bool
			if schema, noClaim, err = s.checkTable(ctx, tx); err != nil || !noClaim {
				return err
			}
			_, err = tx.Exec(ctx, addClaimSQL(s.table))
			return err
		})
	})
	if err != nil {
		return fmt.Errorf("pgstore: Migrate %s: %w", s.table.Sanitize(), withCtx(ctx, err))
	}
	s.setChannel(schema)
	s.migrateMu.Lock()
	s.migrated = true
	s.migrateMu.Unlock()
	return nil
}

// tableColumns are the columns the Store reads and writes: the type it
// creates each with, and what it can use instead (a type of that category,
// pg_type.typcategory, or that very type, pg_type.typname). A number of
// another numeric type is read as text and checked, so a column retyped
// that way still works.
var tableColumns = []struct {
	name, created string
	category      string // "S" string, "N" numeric; "" when only typname will do
	typname       string
}{
	{"name", "text", "S", ""},
	{"holder", "text", "S", ""},
	{"token", "numeric(20,0)", "N", ""},
	{"revision", "bigint", "N", ""},
	{"acquired_at", "timestamptz", "", "timestamptz"},
	{"renewed_at", "timestamptz", "", "timestamptz"},
	{"lease_duration_ns", "bigint", "N", ""},
	{"transitions", "numeric(20,0)", "N", ""},
	{"metadata", "bytea", "", "bytea"},
	{"claim", "boolean NOT NULL DEFAULT false", "", "bool"},
	{"successor", "text NOT NULL DEFAULT ''", "S", ""},
	{"stamp", "numeric(20,0) NOT NULL DEFAULT 0", "N", ""},
}

// sqlTableColumns lists the relation that the table's name ($1) stands for
// in the search_path: its kind and its schema, then one row per column (NULL when it has
// none) with its type's name and category, the type as SQL writes it, and
// whether a unique index (non-partial, immediate: ON CONFLICT can use it)
// has that column as its only key. No row: no relation has that name.
const sqlTableColumns = `SELECT c.relkind::text, (SELECT n.nspname::text FROM pg_namespace n WHERE n.oid = c.relnamespace), a.attname::text, t.typname::text, t.typcategory::text, format_type(a.atttypid, a.atttypmod),
	coalesce(EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisunique AND i.indimmediate
		AND i.indpred IS NULL AND i.indnkeyatts = 1 AND i.indkey[0] = a.attnum), false)
FROM pg_class c
LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
LEFT JOIN pg_type t ON t.oid = a.atttypid
WHERE c.oid = to_regclass($1::text)`

// querier is what checkTable needs of a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// checkTable returns the schema of the table the Store's statements use,
// found through the search_path when the Store's table has no schema, and
// whether its only lack is the claim, successor or stamp column, which
// Migrate adds (a table made before those columns existed). It fails with ErrSchema, naming the table and each column that
// is missing or of a type the Store cannot use, when the relation its
// statements would use under the table's name cannot hold its records: a
// table of someone else's of the same name, say, which CREATE TABLE IF NOT
// EXISTS leaves as it is. Without it every statement would fail with the
// server's "column t.revision does not exist".
func (s *Store[M]) checkTable(ctx context.Context, q querier) (schema string, noClaim bool, err error) {
	rows, err := q.Query(ctx, sqlTableColumns, s.table.Sanitize())
	if err != nil {
		return "", false, err
	}
	type column struct {
		typname, category, sqlType string
		unique                     bool
	}
	var (
		kind  string
		found bool
		cols  = map[string]column{}
	)
	for rows.Next() {
		var k, nsp string
		var name, typname, category, sqlType *string
		var unique bool
		if err := rows.Scan(&k, &nsp, &name, &typname, &category, &sqlType, &unique); err != nil {
			rows.Close()
			return "", false, err
		}
		found, kind, schema = true, k, nsp
		if name != nil && typname != nil && category != nil && sqlType != nil {
			cols[*name] = column{*typname, *category, *sqlType, unique}
		}
	}
	if err := rows.Err(); err != nil {
		return "", false, err
	}
	t := s.table.Sanitize()
	if !found {
		return "", false, fmt.Errorf("%w: the table %s does not exist (automatic creation is off: create it with Migrate or the statements of Store.SchemaSQL)", ErrSchema, t)
	}
	var problems []string
	if kind != "r" && kind != "p" {
		what := relkinds[kind]
		if what == "" {
			what = "relation of kind " + strconv.Quote(kind)
		}
		problems = append(problems, "it is a "+what+", not a table")
	}
	for _, want := range tableColumns {
		c, ok := cols[want.name]
		switch {
		case !ok && (want.name == "claim" || want.name == "successor" || want.name == "stamp"):
			noClaim = true
		case !ok:
			problems = append(problems, fmt.Sprintf("column %s is missing (the Store creates it %s)", want.name, want.created))
		case want.category != "" && c.category != want.category, want.category == "" && c.typname != want.typname:
			problems = append(problems, fmt.Sprintf("column %s is %s, which the Store cannot use (it creates it %s)", want.name, c.sqlType, want.created))
		case want.name == "name" && !c.unique:
			problems = append(problems, "column name has no unique index of its own (the Store creates it PRIMARY KEY)")
		}
	}
	if len(problems) == 0 {
		return schema, noClaim, nil
	}
	return "", false, fmt.Errorf("%w: the table %s cannot hold the Store's records: %s: rename or fix it, or choose another table with WithTable",
		ErrSchema, t, strings.Join(problems, "; "))
}

// relkinds names the kinds of relation pg_class.relkind stands for.
var relkinds = map[string]string{
	"r": "table", "p": "partitioned table", "v": "view", "m": "materialized view",
	"i": "index", "I": "partitioned index", "f": "foreign table", "c": "composite type", "t": "TOAST table",
}

// checkSequenceName fails with ErrSchema when a relation other than a
// sequence has the name of the Store's sequence: CREATE SEQUENCE IF NOT
// EXISTS would skip it, and every write would then fail with "... is not a
// sequence".
func (s *Store[M]) checkSequenceName(ctx context.Context, tx pgx.Tx) error {
	var kind string
	err := tx.QueryRow(ctx, "SELECT relkind::text FROM pg_class WHERE oid = to_regclass($1)", s.seqText).Scan(&kind)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil
	case err != nil:
		return err
	case kind == "S":
		return nil
	}
	what := relkinds[kind]
	if what == "" {
		what = "relation of kind " + strconv.Quote(kind)
	}
	return fmt.Errorf("%w: the Store draws revisions from the sequence %s (its table's name followed by %q), but a %s of that name exists: rename it, or choose another table with WithTable",
		ErrSchema, s.seqText, SequenceSuffix, what)
}

// schemaChanged reports whether err is the server's refusal of a
// statement because the schema is not what the Store checked (checkTable)
// and made: the table or the sequence is missing (undefined_table), or a
// schema (invalid_schema_name), a column (undefined_column), an operator
// or function for a column's type (undefined_function), or the unique
// index on name (invalid_column_reference, from ON CONFLICT): dropped or
// altered since. The statement did not run.
func schemaChanged(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	switch pgErr.Code {
	case "42P01", // undefined_table
		"3F000", // invalid_schema_name
		"42703", // undefined_column
		"42883", // undefined_function
		"42P10": // invalid_column_reference
		return true
	}
	return false
}

// afterSchemaChange runs op, and when op fails because the schema changed
// (schemaChanged: the table or the sequence dropped after the Store
// created them, say) it forgets that the schema was made and checked,
// makes and checks it again (ensureSchema) and runs op once more: the
// server refused the statement, so it did not run. Records dropped with
// the table are gone, as if deleted. The normal path sends nothing more.
func (s *Store[M]) afterSchemaChange(ctx context.Context, op func() error) error {
	err := op()
	if !schemaChanged(err) {
		return err
	}
	s.migrateMu.Lock()
	s.migrated = false
	s.migrateMu.Unlock()
	if merr := s.ensureSchema(ctx); merr != nil {
		return fmt.Errorf("%w (after: %w)", merr, err)
	}
	return op()
}

// ensureSchema runs Migrate once, before the first operation, when
// automatic migration is on, and otherwise checks the table (checkTable);
// and again after an operation found the schema changed
// (afterSchemaChange). A failed attempt is tried again by the next
// operation.
func (s *Store[M]) ensureSchema(ctx context.Context) error {
	s.migrateMu.Lock()
	done := s.migrated
	s.migrateMu.Unlock()
	if done {
		return nil
	}
	if s.autoMigrate {
		return s.Migrate(ctx)
	}
	var schema string
	err := s.retry(ctx, connectionLost, func() (err error) {
		var noClaim bool
		schema, noClaim, err = s.checkTable(ctx, s.pool)
		if err == nil && noClaim {
			t := s.table.Sanitize()
			err = fmt.Errorf("%w: the table %s lacks the column claim, successor or stamp, which this version of the Store writes (a table made by an older one): "+
				"add them with Migrate, or run %q (automatic creation is off)", ErrSchema, t, strings.TrimSpace(addClaimSQL(s.table)))
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("pgstore: %s: %w", s.table.Sanitize(), withCtx(ctx, err))
	}
	s.setChannel(schema)
	s.migrateMu.Lock()
	s.migrated = true
	s.migrateMu.Unlock()
	return nil
}

// swapCall returns the statement of swap.
func (s *Store[M]) swapCall(name string, expected lease.Revision, was *store.Released, created uint64, enc lease.Record[[]byte]) pgCall {
	if expected == 0 {
		return pgCall{sql: s.sqlCreate, name: s.nameCreate, row: newSwapRow, key: name, args: []any{
			name, enc.Holder, created, enc.AcquiredAt, enc.RenewedAt, int64(enc.LeaseDuration), enc.Transitions, enc.Metadata,
			s.seqText, s.Channel(), enc.Claim, enc.Successor, enc.Stamp}}
	}
	// No stored revision exceeds MaxInt64: a larger expected revision
	// matches nothing, and neither does -1.
	exp := int64(-1)
	if expected <= math.MaxInt64 {
		exp = int64(expected)
	}
	var g store.Released
	if was != nil {
		g = *was
	}
	call := pgCall{sql: s.sqlUpdate, name: s.nameUpdate, row: newSwapRow, key: name, args: []any{
		name, exp, enc.Holder, enc.Token, enc.AcquiredAt, enc.RenewedAt, int64(enc.LeaseDuration), enc.Transitions, enc.Metadata,
		s.seqText, s.Channel(), was != nil, g.Token, g.Transitions, int64(g.LeaseDuration), enc.Claim, g.Successor, enc.Successor, enc.Stamp}}
	call.single = &singleSwap{exp: exp, was: was, enc: enc}
	return call
}

// swapRow is the row of CompareAndSwap's statement: whether it wrote, the
// row it wrote or found, and how many notifications it sent.
type swapRow struct {
	written bool
	r       row
	notes   int64
}

// newSwapRow returns a swapRow and the scan targets of its columns.
func newSwapRow() (any, []any) {
	sr := &swapRow{}
	return sr, append(append([]any{&sr.written}, sr.r.dest()...), &sr.notes)
}

// row is a record as stored, as selected returns it: every column may be
// NULL, and the numbers are text.
type row struct {
	holder      *string
	token       *string
	revision    *string
	acquiredAt  pgtype.Timestamptz
	renewedAt   pgtype.Timestamptz
	durationNS  *string
	transitions *string
	metadata    *[]byte
	claim       *bool   // NULL (a notification's record, which has none) is false
	successor   *string // NULL (likewise) is none
	stamp       *string // NULL (a notification's record without one) is 0
}

func (r *row) dest() []any {
	return []any{&r.holder, &r.token, &r.revision, &r.acquiredAt, &r.renewedAt, &r.durationNS, &r.transitions, &r.metadata, &r.claim, &r.successor, &r.stamp}
}

// rev returns the row's revision, or 0 when it is not one.
func (r *row) rev() int64 {
	if r.revision == nil {
		return 0
	}
	n, err := strconv.ParseInt(*r.revision, 10, 64)
	if err != nil || n < 1 {
		return 0
	}
	return n
}

// parse checks every column of r and converts it, its metadata still
// encoded. Its errors name the column and the rule; they wrap
// store.ErrCorruptRecord.
func (r *row) parse() (lease.Record[[]byte], lease.Revision, error) {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf(format, args...))
	}
	text := func(col string, v *string) string {
		if v == nil {
			bad("column %s is NULL", col)
			return ""
		}
		return *v
	}
	number := func(col string, v *string, limit uint64) uint64 {
		if v == nil {
			bad("column %s is NULL", col)
			return 0
		}
		n, err := strconv.ParseUint(*v, 10, 64)
		if err != nil || n > limit {
			bad("column %s = %.40q is not an integer in [0, %d]", col, *v, limit)
			return 0
		}
		return n
	}
	when := func(col string, v pgtype.Timestamptz) time.Time {
		switch {
		case !v.Valid:
			bad("column %s is NULL", col)
		case v.InfinityModifier != pgtype.Finite:
			bad("column %s is %s, not a time", col, v.InfinityModifier)
		}
		return v.Time
	}
	var rec lease.Record[[]byte]
	rec.Holder = text("holder", r.holder)
	// Token and Transitions are read up to MaxUint64, so that
	// store.ValidateStored names what is out of its bounds.
	rec.Token = number("token", r.token, math.MaxUint64)
	rev := number("revision", r.revision, uint64(store.MaxRevision))
	if r.revision != nil && rev == 0 && len(errs) == 0 {
		bad("column revision is 0, not a revision")
	}
	rec.AcquiredAt = when("acquired_at", r.acquiredAt)
	rec.RenewedAt = when("renewed_at", r.renewedAt)
	rec.LeaseDuration = time.Duration(number("lease_duration_ns", r.durationNS, math.MaxInt64))
	rec.Transitions = number("transitions", r.transitions, math.MaxUint64)
	rec.Claim = r.claim != nil && *r.claim
	if r.successor != nil {
		rec.Successor = *r.successor
	}
	if r.stamp != nil {
		rec.Stamp = number("stamp", r.stamp, math.MaxUint64)
	}
	if r.metadata == nil {
		bad("column metadata is NULL")
	} else {
		rec.Metadata = *r.metadata
	}
	if len(errs) > 0 {
		return lease.Record[[]byte]{}, 0, fmt.Errorf("%w: %w", store.ErrCorruptRecord, errors.Join(errs...))
	}
	if err := store.ValidateStored(rec); err != nil {
		return lease.Record[[]byte]{}, 0, err
	}
	return rec, lease.Revision(rev), nil
}

// record checks and decodes r. The error wraps store.ErrCorruptRecord.
func (s *Store[M]) record(name string, r *row) (lease.Record[M], lease.Revision, error) {
	raw, rev, err := r.parse()
	if err != nil {
		return lease.Record[M]{}, 0, corrupt(name, err)
	}
	m, err := s.codec.Decode(raw.Metadata)
	if err != nil {
		return lease.Record[M]{}, 0, corrupt(name, err)
	}
	return lease.Record[M]{
		Holder:        raw.Holder,
		Token:         raw.Token,
		AcquiredAt:    raw.AcquiredAt,
		RenewedAt:     raw.RenewedAt,
		LeaseDuration: raw.LeaseDuration,
		Transitions:   raw.Transitions,
		Claim:         raw.Claim,
		Successor:     raw.Successor,
		Stamp:         raw.Stamp,
		Metadata:      m,
	}, rev, nil
}

// corrupt wraps a decoding error of the record of name so that it matches
// store.ErrCorruptRecord.
func corrupt(name string, err error) error { return edge.Corrupt("pgstore", name, err) }

// check refuses a Store not made by New, a nil or ended ctx, then a bad
// name, for operation op.
func (s *Store[M]) check(ctx context.Context, op, name string) error {
	return edge.Check(ctx, "pgstore", op, name, s.Validate(), store.ValidateName)
}

// Get returns the record stored under name and its revision. It returns an
// error wrapping store.ErrNotFound when there is none,
// store.ErrCorruptRecord (with a zero revision) when a column is NULL or out
// of the bounds of store.ValidateStored or the metadata cannot be decoded,
// store.ErrInvalidName for a bad name, and an error wrapping ctx.Err() when
// ctx ends first.
func (s *Store[M]) Get(ctx context.Context, name string) (lease.Record[M], lease.Revision, error) {
	r, found, err := s.read(ctx, name)
	if err != nil {
		return lease.Record[M]{}, 0, err
	}
	if !found {
		return lease.Record[M]{}, 0, fmt.Errorf("pgstore: Get %q: %w", name, store.ErrNotFound)
	}
	rec, rev, err := s.record(name, &r)
	if err != nil {
		return lease.Record[M]{}, 0, err
	}
	return rec, rev, nil
}

// read fetches the row of name, trying again on a broken connection (a read
// is always safe to repeat).
func (s *Store[M]) read(ctx context.Context, name string) (row, bool, error) {
	if err := s.check(ctx, "Get", name); err != nil {
		return row{}, false, err
	}
	if err := s.ensureSchema(ctx); err != nil {
		return row{}, false, err
	}
	var r row
	found := true
	err := s.afterSchemaChange(ctx, func() error {
		return s.retry(ctx, connectionLost, func() error {
			c, err := s.pool.Acquire(forRead(ctx))
			if err != nil {
				return err
			}
			defer c.Release()
			if err := s.warmSwap(ctx, c); err != nil {
				return err
			}
			err = c.QueryRow(ctx, s.sqlGet, name).Scan(r.dest()...)
			if errors.Is(err, pgx.ErrNoRows) {
				found = false
				return nil
			}
			return err
		})
	})
	if err != nil {
		return row{}, false, fmt.Errorf("pgstore: Get %q: %w", name, withCtx(ctx, err))
	}
	return r, found, nil
}

// warmRuns is how many times warmSwap runs the swap statement on a new
// connection. PostgreSQL plans each of the first five executions of a
// prepared statement anew for its arguments (a custom plan: 0.5–1.3 ms of
// planning each on a new session, measured with EXPLAIN (ANALYZE,
// SUMMARY)), and from the sixth on, under the default plan_cache_mode
// (auto), weighs the cached generic plan against them: for the swap, an
// index scan of the primary key either way, the generic one is kept, and
// planning it again costs about 0.06 ms.
const warmRuns = 6

// warmSwap runs the swap statement warmRuns times on conn, in one batch,
// the first time a read takes conn, so that a follower's takeover after a
// release does not pay what the statement's first uses on a connection
// cost: pgx prepares and caches each statement on a connection at its
// first use (a round trip that parses and describes it), and PostgreSQL
// plans its first five executions one by one (see warmRuns). The read
// that confirms a release usually runs on the connection the acquiring
// swap takes next. The swap is of the name "" (no election has it) from
// revision -1: it matches no row, locks nothing and notifies nobody.
func (s *Store[M]) warmSwap(ctx context.Context, c *pgxpool.Conn) error {
	data := c.Conn().PgConn().CustomData()
	if data[s.sqlUpdate] != nil {
		return nil
	}
	// The statement and arguments of a swap of "" from a revision above
	// any stored (sent as -1), as swapCall makes them.
	call := s.swapCall("", math.MaxUint64, nil, 0, lease.Record[[]byte]{Metadata: []byte{}})
	var b pgx.Batch
	for range warmRuns {
		b.Queue(call.sql, call.args...)
	}
	if err := c.SendBatch(ctx, &b).Close(); err != nil {
		return err
	}
	data[s.sqlUpdate] = true
	return nil
}

// CompareAndSwap stores next under name if the stored revision equals
// expected (zero: only if no record exists), and returns the stored record
// and its new revision, in one statement and one round trip. The write is
// announced on Channel in the same statement.
//
// On mismatch it returns an error wrapping store.ErrConflict with the
// current record and revision (zero when absent). When the current record
// cannot be read (see Get) it returns an error wrapping
// store.ErrCorruptRecord and a zero revision instead, whatever the expected
// revision, and nothing is written; so does a swap from store.MaxRevision,
// which has no later revision.
//
// A write that continues the stored term (store.Renews) keeps its token;
// any other gets a token above the stored one and at least the server's
// clock in microseconds (store.NewToken, store.ClockToken: a restore of
// the table takes the stored token back, not the clock), and when that would exceed lease.MaxToken the swap
// writes nothing and returns an error wrapping store.ErrTokenExhausted.
// The new revision is above the stored one. It refuses a bad name
// (store.ErrInvalidName), a record that breaks store.ValidateRecord
// (store.ErrInvalidRecord), metadata that cannot be encoded (store.ErrEncode)
// or is too large (store.ErrMetadataTooLarge), and an ended ctx; it then
// writes nothing.
//
// The record returned on success is the one stored: its times carry
// PostgreSQL's microsecond precision.
func (s *Store[M]) CompareAndSwap(ctx context.Context, name string, expected lease.Revision, next lease.Record[M]) (lease.Record[M], lease.Revision, error) {
	return s.compareAndSwap(ctx, "CompareAndSwap", name, expected, nil, next)
}

// GuardsReleases reports true: CompareReleasedAndSwap guards its swap. It
// is part of [store.ReleaseGuard].
func (s *Store[M]) GuardsReleases() bool { return true }

// CompareReleasedAndSwap stores next under name as CompareAndSwap does,
// and only if the record stored at revision expected is released and
// shows was (the check is in the statement's WHERE, so it holds at the
// write); otherwise it returns an error wrapping store.ErrConflict with
// the record found. It implements store.ReleaseGuard: an elector takes a
// release it heard of by NOTIFY over with it, without reading first, and
// a forged notification makes it fail, never overwrite a live lease.
func (s *Store[M]) CompareReleasedAndSwap(ctx context.Context, name string, expected lease.Revision, was store.Released, next lease.Record[M]) (lease.Record[M], lease.Revision, error) {
	if expected == 0 {
		// No record at revision 0 is a released one: a conflict with
		// whatever is stored.
		if err := s.check(ctx, "CompareReleasedAndSwap", name); err != nil {
			return lease.Record[M]{}, 0, err
		}
		rec, rev, err := s.Get(ctx, name)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return lease.Record[M]{}, 0, fmt.Errorf("pgstore: CompareReleasedAndSwap %q: expected revision 0, which no released record has: %w", name, store.ErrConflict)
		case err != nil:
			return lease.Record[M]{}, 0, err
		}
		return rec, rev, fmt.Errorf("pgstore: CompareReleasedAndSwap %q: expected revision 0, found %d: %w", name, rev, store.ErrConflict)
	}
	return s.compareAndSwap(ctx, "CompareReleasedAndSwap", name, expected, &was, next)
}

// compareAndSwap is CompareAndSwap, guarded by was when it is not nil
// (CompareReleasedAndSwap); op names the method in errors.
func (s *Store[M]) compareAndSwap(ctx context.Context, op, name string, expected lease.Revision, was *store.Released, next lease.Record[M]) (lease.Record[M], lease.Revision, error) {
	if err := s.check(ctx, op, name); err != nil {
		return lease.Record[M]{}, 0, err
	}
	enc, _, err := store.EncodeRecord(s.codec, next)
	if err != nil {
		return lease.Record[M]{}, 0, fmt.Errorf("pgstore: %s %q: %w", op, name, err)
	}
	if err := s.ensureSchema(ctx); err != nil {
		return lease.Record[M]{}, 0, err
	}

	// A create starts a term: NewToken raises a token of 0 to 1.
	created, err := store.NewToken(next.Token, 0)
	if err != nil {
		return lease.Record[M]{}, 0, fmt.Errorf("pgstore: %s %q: %w", op, name, err)
	}
	var (
		r              row
		written, found bool
	)
	err = s.afterSchemaChange(ctx, func() (err error) {
		r, written, found, err = s.swap(ctx, name, expected, was, created, enc)
		return err
	})
	if err != nil {
		return lease.Record[M]{}, 0, fmt.Errorf("pgstore: %s %q: %w", op, name, withCtx(ctx, s.explain(err)))
	}
	return s.swapped(op, name, expected, was, next, &r, written, found)
}

// swapped returns what compareAndSwap returns for the answer of its
// statement: the row it wrote (written) or found (found is false when
// there was none).
func (s *Store[M]) swapped(op, name string, expected lease.Revision, was *store.Released, next lease.Record[M], r *row, written, found bool) (lease.Record[M], lease.Revision, error) {
	if !found {
		return lease.Record[M]{}, 0, fmt.Errorf("pgstore: %s %q: expected revision %d, found none: %w", op, name, expected, store.ErrConflict)
	}
	rec, rev, err := s.record(name, r)
	if err != nil {
		if written {
			// Cannot happen: the record was checked and its metadata
			// decoded above.
			return lease.Record[M]{}, 0, fmt.Errorf("pgstore: %s %q: written, but cannot read back: %w", op, name, err)
		}
		return lease.Record[M]{}, 0, fmt.Errorf("pgstore: %s %q: the stored record is not overwritten: %w", op, name, err)
	}
	if written {
		return rec, rev, nil
	}
	if rev != expected {
		return rec, rev, fmt.Errorf("pgstore: %s %q: expected revision %d, found %d: %w", op, name, expected, rev, store.ErrConflict)
	}
	if was != nil && !store.ReleasedAs(rec, *was) {
		return rec, rev, fmt.Errorf("pgstore: %s %q: the record at revision %d is not the released one expected: %w", op, name, rev, store.ErrConflict)
	}
	// The row is at the expected revision, readable, and was not
	// updated: the statement found no token or no revision left for the
	// write, or a check of its own refused the row.
	if !store.Renews(rec, next) {
		if _, err := store.NewToken(next.Token, rec.Token); err != nil {
			return lease.Record[M]{}, 0, fmt.Errorf("pgstore: %s %q: nothing was written: %w", op, name, err)
		}
	}
	if rev >= store.MaxRevision {
		return lease.Record[M]{}, 0, fmt.Errorf("pgstore: %s %q: the stored record is not overwritten: %w: revision %d is the largest a revision may be: no later one exists", op, name, store.ErrCorruptRecord, rev)
	}
	if was != nil {
		// The released row the guard names, readable, with a token and a
		// revision left, and not written: the statement's snapshot was
		// taken before that revision committed (the FOR SHARE read
		// waited for it). A caller told of a revision before its commit
		// (a notification forged by someone who guessed it) loses a
		// race, not a check: a conflict showing the row.
		return rec, rev, fmt.Errorf("pgstore: %s %q: revision %d committed while the swap ran: %w", op, name, rev, store.ErrConflict)
	}
	return lease.Record[M]{}, 0, fmt.Errorf("pgstore: %s %q: the stored record is not overwritten: %w: the row at revision %d fails the store's checks in SQL (a control character in holder, say)", op, name, store.ErrCorruptRecord, rev)
}

// swap runs the statement of CompareAndSwap: it creates the row of name
// with enc and token created when expected is zero, and otherwise updates
// it to enc if it is at revision expected. It returns the row it wrote,
// or the row it found (found is false when there is none).
func (s *Store[M]) swap(ctx context.Context, name string, expected lease.Revision, was *store.Released, created uint64, enc lease.Record[[]byte]) (r row, written, found bool, err error) {
	call := s.swapCall(name, expected, was, created, enc)
	err = s.retry(ctx, notExecuted, func() error {
		a, err := s.pipe.Do(ctx, call)
		if err != nil {
			return err
		}
		found = false
		for _, v := range a.rows {
			sr, ok := v.(*swapRow)
			if !ok {
				return fmt.Errorf("pgstore: a row of type %T from the swap", v)
			}
			found = true
			r, written = sr.r, sr.written
		}
		return nil
	})
	return r, written, found, err
}

// explain adds what the store knows to an error of the server: a
// "... is not a sequence" (wrong_object_type) from nextval means a relation
// other than a sequence has the name of the Store's sequence.
func (s *Store[M]) explain(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42809" {
		return fmt.Errorf("%w: %s is not a sequence but the Store draws revisions from a sequence of that name (its table's name followed by %q): rename that relation, or choose another table with WithTable: %w",
			ErrSchema, s.seqText, SequenceSuffix, err)
	}
	return err
}

// withCtx makes sure an error caused by the end of ctx matches ctx.Err().
func withCtx(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w: %w", cerr, err)
	}
	return err
}

// retry runs op until it succeeds, fails with an error that may not be
// retried, or ctx ends. retryable says which errors may be: each such
// failure discards one broken connection of the pool (a server restart breaks
// them all), so the attempts are bounded by the pool's size plus one.
func (s *Store[M]) retry(ctx context.Context, retryable func(error) bool, op func() error) error {
	attempts := min(max(int(s.pool.Stat().MaxConns())+1, 2), 32)
	var err error
	for attempt := 1; ; attempt++ {
		err = op()
		if err == nil || attempt >= attempts || ctx.Err() != nil || !retryable(err) {
			return err
		}
	}
}

// notExecuted reports whether err proves that the statement was not
// executed: nothing was sent, or the server ended the session before
// answering (pg_terminate_backend, a shutdown, the crash of another
// backend): the statement's transaction, if it began, was rolled back, and
// a commit would have been answered before the session ended. Only then is a
// write repeated.
func notExecuted(err error) bool {
	if brokenOrUnreachable(err) {
		return false
	}
	if pgconn.SafeToRetry(err) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "57P01", // admin_shutdown
			"57P02": // crash_shutdown
			return true
		}
	}
	return false
}

// connectionLost reports whether err comes from a connection that broke
// rather than from the statement: worth another attempt for a read, which is
// always safe to repeat.
func connectionLost(err error) bool {
	if errors.Is(err, ErrSchema) {
		return false
	}
	if notExecuted(err) {
		return true
	}
	if brokenOrUnreachable(err) {
		return false
	}
	var pgErr *pgconn.PgError
	return !errors.As(err, &pgErr) // an I/O error, not the server's answer
}

// brokenOrUnreachable reports errors that no retry fixes now: the context
// ended, or no connection can be made at all.
func brokenOrUnreachable(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var connErr *pgconn.ConnectError
	return errors.As(err, &connErr)
}
