package pgstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenure-go/tenure/internal/batch"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

// pgCall is one statement sent through a Store's pipelines: sql with args,
// whose rows are scanned into what row makes (the value to keep, and the
// scan targets into it), one per row.
type pgCall struct {
	sql  string
	name string // the name sql is prepared under for pipelines: stmtName(sql)
	args []any
	row  func() (any, []any)
	// key is the record a statement of one swap writes. A swap of an
	// existing record (single) and a batch statement (rows) can share a
	// batch statement with others waiting with them (mergeCalls), which
	// takes their rows only then.
	key    string
	single *singleSwap
	rows   *batchCols
}

// singleSwap is the swap of CompareAndSwap's update statement, as a row
// of the batch statement would carry it.
type singleSwap struct {
	exp int64
	was *store.Released
	enc lease.Record[[]byte]
}

// names are the records call writes.
func (call pgCall) names() []string {
	if call.rows != nil {
		return call.rows.names
	}
	return []string{call.key}
}

// mergeable reports whether call can share a batch statement.
func (call pgCall) mergeable() bool { return call.single != nil || call.rows != nil }

// appendRows appends call's rows (it is mergeable) to cols.
func (call pgCall) appendRows(cols *batchCols) {
	if call.rows != nil {
		cols.addAll(call.rows)
		return
	}
	cols.add(call.key, call.single.exp, call.single.was, call.single.enc)
}

// pgAnswer is what a statement returned: the values its rows were scanned
// into, in order.
type pgAnswer struct {
	rows []any
}

// pipeLimit is how many pipelines a Store has in flight at once, each on a
// connection of the pool: calls made while they are all out wait for the
// next, which takes every call waiting. Two leave the rest of a pool of
// pgx's default size (4 connections at least) to reads and to the watch's
// reads.
const pipeLimit = 2

// pipeSize is the most statements one pipeline carries. When a pipeline
// took every call waiting (up to the 256 operations a Group runs at once
// by default), three Groups of 10,000 elections on one server got 1,100–
// 1,400 renewals a second written, against 3,600–4,300 with pipelines of
// 16 (2 cores; docs/benchmarks.md), and their leaders lost their terms
// waiting.
const pipeSize = 16

// newPipe returns the batch runner of a Store's swaps, which sends each
// batch through run (the Store's runPipe, which a test may wrap): at most
// pipeLimit pipelines at once, of at most pipeSize statements each.
func newPipe(run func(context.Context, []pgCall) []batch.Answer[pgAnswer]) *batch.Runner[pgCall, pgAnswer] {
	return batch.NewInline(pipeLimit, run).Cap(pipeSize)
}

// stmtName is the name under which the Store prepares sql on a connection
// for its pipelines: from a hash of the statement, so that Stores of other
// tables on the same pool prepare their own. buildSQL computes it once per
// statement.
func stmtName(sql string) string {
	h := sha256.Sum256([]byte(sql))
	return "tenure_pipe_" + hex.EncodeToString(h[:12])
}

// runPipe runs calls on one connection of the pool, in one round trip when
// there are several: each statement is followed by a Sync, so it is a
// transaction of its own that commits or fails alone, as if sent by itself
// (a batch of statements before one Sync would be one transaction: one
// failure would undo every write of the batch, and the row locks of its
// updates would be held until the last). A pool whose connections do not
// cache prepared statements (pgx.QueryExecModeCacheStatement, pgx's
// default: a pooler in transaction mode needs another mode), or that has a
// Tracer (which sees queries, not pipelines), runs them one after the
// other, as its queries would be; so does a batch of one.
//
// Before that, the swaps of calls that can (mergeCalls) go out as one
// batch statement: one transaction rather than one each, for PostgreSQL's
// cost per transaction (see CompareAndSwapBatch) is what a pipeline of
// swaps waits for. Each is reported as if it had gone alone.
func (s *Store[M]) runPipe(ctx context.Context, calls []pgCall) []batch.Answer[pgAnswer] {
	out := make([]batch.Answer[pgAnswer], len(calls))
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		for i := range out {
			out[i].Err = err
		}
		return out
	}
	defer c.Release()
	stmts := s.mergeCalls(calls)
	sent := make([]pgCall, len(stmts))
	for i, m := range stmts {
		sent[i] = m.call
	}
	answers := make([]batch.Answer[pgAnswer], len(sent))
	if cfg := c.Conn().Config(); len(sent) == 1 || cfg.DefaultQueryExecMode != pgx.QueryExecModeCacheStatement || cfg.Tracer != nil {
		for i, call := range sent {
			answers[i] = queryOne(ctx, c, call)
		}
	} else {
		s.pipeline(ctx, c.Conn(), sent, answers)
	}
	for i, m := range stmts {
		if !s.unmerge(calls, m, answers[i], out) {
			// Refused as a whole and rolled back: each alone, so that
			// none fails for another's sake.
			for _, p := range m.parts {
				out[p.at] = queryOne(ctx, c, calls[p.at])
			}
		}
	}
	return out
}

// merged is one statement runPipe sends: calls[at] as it is, or (parts
// not empty) the batch statement of the rows of several calls, rows in
// all.
type merged struct {
	call  pgCall
	at    int
	parts []mergedPart
	rows  int
}

// mergedPart is one call of a merged statement: calls[at]'s rows are the
// statement's rows from+1 to from+n (as the batch statement numbers them).
type mergedPart struct{ at, from, n int }

// mergeCalls returns the statements that carry calls, in order: mergeable
// calls in a row join the batch statement of the ones before, up to
// maxBatchRows rows, as long as no name comes twice in it (a statement
// writes a row once and reads its own snapshot: the second swap of a
// name must see the first's write), and no call left out since it began
// writes one of their names (the merged statement goes where its first
// call was: a later swap of a name must not pass an earlier one). A
// statement of one call is that call as it is.
func (s *Store[M]) mergeCalls(calls []pgCall) []merged {
	if len(calls) == 1 {
		return []merged{{call: calls[0], at: 0}} // most pipelines of a quiet store
	}
	var out []merged
	open := -1
	taken := map[string]bool{} // the open statement's names, and those written since it began
	takenAny := func(names []string) bool {
		for _, n := range names {
			if taken[n] {
				return true
			}
		}
		return false
	}
	take := func(names []string) {
		for _, n := range names {
			taken[n] = true
		}
	}
	for i, call := range calls {
		names := call.names()
		if !call.mergeable() {
			out = append(out, merged{call: call, at: i})
			take(names)
			continue
		}
		if open >= 0 {
			m := &out[open]
			if m.rows+len(names) <= maxBatchRows && !takenAny(names) {
				m.parts = append(m.parts, mergedPart{at: i, from: m.rows, n: len(names)})
				m.rows += len(names)
				take(names)
				continue
			}
		}
		out = append(out, merged{at: -1, rows: len(names), parts: []mergedPart{{at: i, n: len(names)}}})
		open = len(out) - 1
		clear(taken)
		take(names)
	}
	for j := range out {
		m := &out[j]
		switch {
		case m.at >= 0:
		case len(m.parts) == 1:
			m.call, m.at, m.parts = calls[m.parts[0].at], m.parts[0].at, nil
		default:
			cols := &batchCols{}
			for _, p := range m.parts {
				calls[p.at].appendRows(cols)
			}
			m.call = s.batchCall(cols)
		}
	}
	return out
}

// unmerge fills out with the answers of m's calls from a, its statement's
// answer, each as if it had gone alone: a swap's row as its statement
// returns it, a batch statement's rows numbered from its first. It
// reports false, and fills nothing, when the server refused a merged
// statement as a whole: its calls have to go again, each alone.
func (s *Store[M]) unmerge(calls []pgCall, m merged, a batch.Answer[pgAnswer], out []batch.Answer[pgAnswer]) bool {
	if m.parts == nil {
		out[m.at] = a
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(a.Err, &pgErr) {
		return false
	}
	for _, p := range m.parts {
		out[p.at] = batch.Answer[pgAnswer]{Err: a.Err}
	}
	if a.Err != nil {
		return true
	}
	for _, v := range a.V.rows {
		br, ok := v.(*batchRow)
		j := -1
		if ok {
			j = slices.IndexFunc(m.parts, func(p mergedPart) bool { return br.i > int64(p.from) && br.i <= int64(p.from+p.n) })
		}
		if j < 0 {
			for _, p := range m.parts {
				out[p.at] = batch.Answer[pgAnswer]{Err: fmt.Errorf("pgstore: an unexpected row %#v from a merged batch", v)}
			}
			return true
		}
		p := m.parts[j]
		if calls[p.at].name == s.nameUpdate {
			out[p.at].V.rows = append(out[p.at].V.rows, &br.swapRow)
			continue
		}
		br.i -= int64(p.from)
		out[p.at].V.rows = append(out[p.at].V.rows, br)
	}
	return true
}

// queryOne runs call by itself on c.
func queryOne(ctx context.Context, c *pgxpool.Conn, call pgCall) batch.Answer[pgAnswer] {
	rows, err := c.Query(ctx, call.sql, call.args...)
	if err != nil {
		return batch.Answer[pgAnswer]{Err: err}
	}
	var a pgAnswer
	for rows.Next() {
		v, dest := call.row()
		if err := rows.Scan(dest...); err != nil {
			rows.Close()
			return batch.Answer[pgAnswer]{Err: err}
		}
		a.rows = append(a.rows, v)
	}
	return batch.Answer[pgAnswer]{V: a, Err: rows.Err()}
}

// pipeline sends calls on c in one round trip, a Sync after each, and fills
// out with their answers.
func (s *Store[M]) pipeline(ctx context.Context, c *pgx.Conn, calls []pgCall, out []batch.Answer[pgAnswer]) {
	// Prepared once per connection, by name: pgx keeps the description
	// and later calls of Prepare cost no round trip.
	sds := make(map[string]*pgconn.StatementDescription, 2) // by name
	for _, call := range calls {
		if sds[call.name] != nil {
			continue
		}
		sd, err := c.Prepare(ctx, call.name, call.sql)
		if err != nil {
			for i := range out {
				out[i].Err = err
			}
			return
		}
		sds[call.name] = sd
	}
	p := c.PgConn().StartPipeline(ctx)
	var eqb pgx.ExtendedQueryBuilder
	sent := make([]int, 0, len(calls))
	for i, call := range calls {
		sd := sds[call.name]
		if err := eqb.Build(c.TypeMap(), sd, call.args); err != nil {
			out[i].Err = err // not sent
			continue
		}
		// The Bind is encoded as it is sent; the result formats are kept
		// for reading, and eqb reuses its slices.
		p.SendQueryStatement(sd, eqb.ParamValues, eqb.ParamFormats, slices.Clone(eqb.ResultFormats))
		p.SendPipelineSync()
		sent = append(sent, i)
	}
	broken := p.Flush()
	statementFailed := false
	for _, i := range sent {
		if broken != nil {
			out[i].Err = broken
			continue
		}
		res, err := p.GetResults()
		var pgErr *pgconn.PgError
		switch {
		case errors.As(err, &pgErr):
			// The statement failed, alone: the server skips to its
			// Sync, and the next statement runs.
			out[i].Err = err
			statementFailed = true
		case err != nil:
			broken = err
			out[i].Err = err
			continue
		default:
			rr, ok := res.(*pgconn.ResultReader)
			if !ok {
				broken = fmt.Errorf("pgstore: a pipelined statement answered with %T", res)
				out[i].Err = broken
				continue
			}
			out[i] = readRows(rr, c.TypeMap(), calls[i].row)
			if errors.As(out[i].Err, &pgErr) {
				statementFailed = true
			}
		}
		if _, err := p.GetResults(); err != nil { // the statement's Sync
			broken = err
		}
	}
	if err := p.Close(); err != nil && broken == nil {
		for _, i := range sent {
			if out[i].Err == nil {
				// Not expected: every result was read. Report it on the
				// calls rather than lose it.
				out[i].Err = err
			}
		}
	}
	if statementFailed && !c.IsClosed() {
		// A statement prepared before a change of the table may fail
		// until prepared again ("cached plan must not change result
		// type"): let the next batch prepare it anew.
		for name := range sds {
			_ = c.Deallocate(ctx, name)
		}
	}
}

// readRows reads the rows of one statement's result, scanning each into
// the targets row makes.
func readRows(rr *pgconn.ResultReader, m *pgtype.Map, row func() (any, []any)) batch.Answer[pgAnswer] {
	var a pgAnswer
	var scanErr error
	fds := rr.FieldDescriptions()
	for rr.NextRow() {
		if scanErr != nil {
			continue
		}
		v, dest := row()
		vals := rr.Values()
		if len(vals) != len(dest) || len(fds) != len(dest) {
			scanErr = fmt.Errorf("pgstore: a row of %d columns, want %d", len(vals), len(dest))
			continue
		}
		for j := range dest {
			if err := m.Scan(fds[j].DataTypeOID, fds[j].Format, vals[j], dest[j]); err != nil {
				scanErr = fmt.Errorf("pgstore: column %q: %w", fds[j].Name, err)
				break
			}
		}
		a.rows = append(a.rows, v)
	}
	if _, err := rr.Close(); err != nil {
		return batch.Answer[pgAnswer]{Err: err}
	}
	if scanErr != nil {
		return batch.Answer[pgAnswer]{Err: scanErr}
	}
	return batch.Answer[pgAnswer]{V: a}
}
