package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/internal/edge"
)

var _ store.Batcher[struct{}] = (*Store[struct{}])(nil)

// maxBatchRows is the most swaps one statement of CompareAndSwapBatch
// carries.
const maxBatchRows = 64

// buildBatchSQL writes the statement of CompareAndSwapBatch: sqlUpdate's
// swap for many rows at once, each row's swap an element of the array
// parameters ($1 to $10 and $13 to $19, joined by their position), under
// the same conditions (the expected revision, sqlValid, the token's rules,
// and sqlReleased's guard for a row that has one) and
// with the same new revision, token and notification per row. Each row
// is compared and updated alone: a row whose condition fails is not
// updated and is read FOR SHARE instead, as sqlUpdate's current row is,
// and no condition of a row refers to another. That read is a LATERAL
// subquery per swap, so that each is an index lookup of its name: as a
// join of the table with the swaps, the generic plan PostgreSQL settles on
// after five executions scanned the whole table for every batch. The result has one row
// per swap that found a row: its position, whether it wrote, the row
// written or found, and the notifications sent.
func (s *Store[M]) buildBatchSQL() {
	t := s.table.Sanitize()
	var b, u, n, c string
	for prefix := "tenure_"; ; prefix += "_" {
		b, u, n, c = prefix+"batch", prefix+"bupd", prefix+"bnotify", prefix+"bcur"
		if len(s.table) > 1 || !slices.Contains([]string{b, u, n, c}, s.table[0]) {
			break
		}
	}
	next := strings.NewReplacer("$4::numeric", b+".b_token::numeric", "$3::text", b+".b_holder").Replace(sqlNextToken)
	notify := strings.ReplaceAll(notifySQL(u, "$12"), "|| $1", "|| "+u+".name")
	guard := strings.NewReplacer("$12::boolean", b+".b_guard", "$13::numeric", b+".b_gtoken::numeric", "$14::numeric", b+".b_gtransitions::numeric",
		"$15::bigint", b+".b_gduration", "$17::text", b+".b_gsuccessor").Replace(sqlReleased)
	qualified := "t." + strings.ReplaceAll(columns, ", ", ", t.")
	s.sqlBatch = `WITH ` + b + ` AS (
	SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::timestamptz[], $6::timestamptz[], $7::bigint[], $8::text[], $9::bytea[], $10::boolean[], $13::text[], $14::text[],
		$15::boolean[], $16::text[], $17::text[], $18::bigint[], $19::text[])
		WITH ORDINALITY AS x(b_name, b_exp, b_holder, b_token, b_acquired, b_renewed, b_duration, b_transitions, b_metadata, b_claim, b_successor, b_stamp,
			b_guard, b_gtoken, b_gtransitions, b_gduration, b_gsuccessor, b_i)
),
` + u + ` AS (
	UPDATE ` + t + ` AS t SET holder = ` + b + `.b_holder, token = ` + next + `,
		revision = greatest(nextval($11::text::regclass), t.revision + 1, ` + sqlClockToken + `),
		acquired_at = ` + b + `.b_acquired, renewed_at = ` + b + `.b_renewed, lease_duration_ns = ` + b + `.b_duration,
		transitions = ` + b + `.b_transitions::numeric, metadata = ` + b + `.b_metadata, claim = ` + b + `.b_claim,
		successor = ` + b + `.b_successor, stamp = ` + b + `.b_stamp::numeric
	FROM ` + b + `
	WHERE t.name = ` + b + `.b_name AND t.revision = ` + b + `.b_exp AND ` + sqlValid + `
		AND ` + next + ` <= ` + sqlMaxToken + `
		AND ` + guard + `
	RETURNING ` + b + `.b_i, t.name, ` + qualified + `
),
` + n + ` AS (SELECT ` + notify + ` FROM ` + u + `),
` + c + ` AS (
	SELECT ` + b + `.b_i, cur.* FROM ` + b + ` CROSS JOIN LATERAL (
		SELECT ` + columns + ` FROM ` + t + ` AS t WHERE t.name = ` + b + `.b_name
			AND NOT EXISTS (SELECT 1 FROM ` + u + ` WHERE ` + u + `.b_i = ` + b + `.b_i) FOR SHARE
	) AS cur
)
SELECT ` + u + `.b_i, true, ` + selected(u) + `, (SELECT count(*) FROM ` + n + `) FROM ` + u + `
UNION ALL
SELECT ` + c + `.b_i, false, ` + selected(c) + `, 0 FROM ` + c
	s.nameBatch = stmtName(s.sqlBatch)
}

// batchRow is a row of the batch statement: the position of its swap
// (from 1) and what swapRow holds.
type batchRow struct {
	i int64
	swapRow
}

// newBatchRow returns a batchRow and the scan targets of its columns.
func newBatchRow() (any, []any) {
	br := &batchRow{}
	return br, append(append([]any{&br.i, &br.written}, br.r.dest()...), &br.notes)
}

// batchCols are rows of the batch statement, a column each ($1 to $10
// and $13 to $19): the swaps of existing records it compares and writes.
type batchCols struct {
	names, holders, tokens, transitions []string
	exps, durations                     []int64
	acquired, renewed                   []time.Time
	metadata                            [][]byte
	claims                              []bool
	successors, stamps                  []string
	// The guard of CompareReleasedAndSwap (sqlReleased): whether the
	// swap has one, and the released record it names. Empty while no
	// row has one: unnest pads them with NULL, which is no guard.
	guards                []bool
	gtokens, gtransitions []string
	gdurations            []int64
	gsuccessors           []string
}

// add appends the swap of name at revision exp to enc, guarded by was
// when not nil.
func (b *batchCols) add(name string, exp int64, was *store.Released, enc lease.Record[[]byte]) {
	if was != nil {
		b.padGuards()
		b.guards = append(b.guards, true)
		b.gtokens = append(b.gtokens, strconv.FormatUint(was.Token, 10))
		b.gtransitions = append(b.gtransitions, strconv.FormatUint(was.Transitions, 10))
		b.gdurations = append(b.gdurations, int64(was.LeaseDuration))
		b.gsuccessors = append(b.gsuccessors, was.Successor)
	} else if len(b.guards) > 0 {
		b.addNoGuard()
	}
	b.names = append(b.names, name)
	b.exps = append(b.exps, exp)
	b.holders = append(b.holders, enc.Holder)
	b.tokens = append(b.tokens, strconv.FormatUint(enc.Token, 10))
	b.acquired = append(b.acquired, enc.AcquiredAt)
	b.renewed = append(b.renewed, enc.RenewedAt)
	b.durations = append(b.durations, int64(enc.LeaseDuration))
	b.transitions = append(b.transitions, strconv.FormatUint(enc.Transitions, 10))
	b.metadata = append(b.metadata, enc.Metadata)
	b.claims = append(b.claims, enc.Claim)
	b.successors = append(b.successors, enc.Successor)
	b.stamps = append(b.stamps, strconv.FormatUint(enc.Stamp, 10))
}

// addNoGuard appends the guard columns of a row without one.
func (b *batchCols) addNoGuard() {
	b.guards = append(b.guards, false)
	b.gtokens = append(b.gtokens, "0")
	b.gtransitions = append(b.gtransitions, "0")
	b.gdurations = append(b.gdurations, 0)
	b.gsuccessors = append(b.gsuccessors, "")
}

// padGuards fills the guard columns of the rows so far, none guarded,
// if they are empty.
func (b *batchCols) padGuards() {
	for len(b.guards) < len(b.names) {
		b.addNoGuard()
	}
}

// addAll appends o's rows.
func (b *batchCols) addAll(o *batchCols) {
	switch {
	case len(o.guards) > 0:
		b.padGuards()
		b.guards = append(b.guards, o.guards...)
		b.gtokens = append(b.gtokens, o.gtokens...)
		b.gtransitions = append(b.gtransitions, o.gtransitions...)
		b.gdurations = append(b.gdurations, o.gdurations...)
		b.gsuccessors = append(b.gsuccessors, o.gsuccessors...)
	case len(b.guards) > 0:
		for range o.names {
			b.addNoGuard()
		}
	}
	b.names = append(b.names, o.names...)
	b.exps = append(b.exps, o.exps...)
	b.holders = append(b.holders, o.holders...)
	b.tokens = append(b.tokens, o.tokens...)
	b.acquired = append(b.acquired, o.acquired...)
	b.renewed = append(b.renewed, o.renewed...)
	b.durations = append(b.durations, o.durations...)
	b.transitions = append(b.transitions, o.transitions...)
	b.metadata = append(b.metadata, o.metadata...)
	b.claims = append(b.claims, o.claims...)
	b.successors = append(b.successors, o.successors...)
	b.stamps = append(b.stamps, o.stamps...)
}

// batchCall returns the batch statement of cols.
func (s *Store[M]) batchCall(cols *batchCols) pgCall {
	return pgCall{sql: s.sqlBatch, name: s.nameBatch, row: newBatchRow, rows: cols, args: []any{
		cols.names, cols.exps, cols.holders, cols.tokens, cols.acquired, cols.renewed, cols.durations, cols.transitions,
		cols.metadata, cols.claims, s.seqText, s.Channel(), cols.successors, cols.stamps,
		cols.guards, cols.gtokens, cols.gtransitions, cols.gdurations, cols.gsuccessors}}
}

// BatchesSwaps reports true: CompareAndSwapBatch swaps many names in one
// statement. It is part of [store.Batcher].
func (s *Store[M]) BatchesSwaps() bool { return s != nil }

// CompareAndSwapBatch runs each swap as CompareAndSwap does and returns
// their results in order. The swaps of existing records (a non-zero
// expected revision) go in one statement per 64 swaps, a transaction of
// its own, which compares and writes each row alone under the conditions
// of CompareAndSwap's statement: a row that fails them is not written and
// is reported as CompareAndSwap reports it, and the others are written.
// A statement the server refuses as a whole (a deadlock with another
// process's batch, say) was rolled back; its swaps are then sent one at a
// time. Creates, and a name's second swap in the batch, go after the
// swaps before them, as single swaps would. A name or record that
// CompareAndSwap would refuse before sending is refused alone. It
// implements [store.Batcher].
//
// One statement rather than a pipeline of CompareAndSwap's: each
// statement in a pipeline is a transaction, and PostgreSQL's cost per
// transaction (its snapshot, its commit, its plan's start) was most of
// what 5,000 renewals a second asked of a server on two cores.
func (s *Store[M]) CompareAndSwapBatch(ctx context.Context, swaps []store.Swap[M]) []store.SwapResult[M] {
	out := make([]store.SwapResult[M], len(swaps))
	for _, round := range edge.Rounds(swaps) {
		var updates []int
		for _, i := range round {
			sw := swaps[i]
			if sw.Expected == 0 {
				out[i].Record, out[i].Revision, out[i].Err = s.CompareAndSwap(ctx, sw.Name, sw.Expected, sw.Next)
				continue
			}
			updates = append(updates, i)
		}
		for len(updates) > 0 {
			chunk := updates[:min(len(updates), maxBatchRows)]
			updates = updates[len(chunk):]
			s.swapRows(ctx, swaps, chunk, out)
		}
	}
	return out
}

// swapRows swaps the swaps at positions at (distinct names, none a
// create) in one statement, and fills out at those positions.
func (s *Store[M]) swapRows(ctx context.Context, swaps []store.Swap[M], at []int, out []store.SwapResult[M]) {
	const op = "CompareAndSwap"
	cols := &batchCols{}
	sent := make([]int, 0, len(at))
	for _, i := range at {
		sw := swaps[i]
		if err := s.check(ctx, op, sw.Name); err != nil {
			out[i].Err = err
			continue
		}
		enc, _, err := store.EncodeRecord(s.codec, sw.Next)
		if err != nil {
			out[i].Err = fmt.Errorf("pgstore: %s %q: %w", op, sw.Name, err)
			continue
		}
		cols.add(sw.Name, s.swapCall(sw.Name, sw.Expected, nil, 0, enc).single.exp, nil, enc)
		sent = append(sent, i)
	}
	if len(sent) == 0 {
		return
	}
	if err := s.ensureSchema(ctx); err != nil {
		for _, i := range sent {
			out[i].Err = err
		}
		return
	}
	call := s.batchCall(cols)
	rows := make([]*batchRow, len(sent))
	err := s.afterSchemaChange(ctx, func() error {
		return s.retry(ctx, notExecuted, func() error {
			a, err := s.pipe.Do(ctx, call)
			if err != nil {
				return err
			}
			clear(rows)
			for _, v := range a.rows {
				br, ok := v.(*batchRow)
				if !ok || br.i < 1 || br.i > int64(len(sent)) || rows[br.i-1] != nil {
					return fmt.Errorf("pgstore: an unexpected row %#v from the batch", v)
				}
				rows[br.i-1] = br
			}
			return nil
		})
	})
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && ctx.Err() == nil:
		// The statement failed as a whole and was rolled back: each
		// swap alone, so that none fails for another's sake.
		for _, i := range sent {
			sw := swaps[i]
			out[i].Record, out[i].Revision, out[i].Err = s.CompareAndSwap(ctx, sw.Name, sw.Expected, sw.Next)
		}
		return
	case err != nil:
		for _, i := range sent {
			out[i].Err = fmt.Errorf("pgstore: %s %q: %w", op, swaps[i].Name, withCtx(ctx, s.explain(err)))
		}
		return
	}
	for j, i := range sent {
		sw := swaps[i]
		var r row
		var written, found bool
		if br := rows[j]; br != nil {
			r, written, found = br.r, br.written, true
		}
		out[i].Record, out[i].Revision, out[i].Err = s.swapped(op, sw.Name, sw.Expected, nil, sw.Next, &r, written, found)
	}
}
