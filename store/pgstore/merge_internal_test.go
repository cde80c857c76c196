package pgstore

import (
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tenure-go/tenure/internal/batch"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

// mergeRig is a Store whose pipeline a test calls directly, with the
// records it created.
type mergeRig struct {
	t  *testing.T
	st *Store[string]
}

func newMergeRig(t *testing.T) mergeRig {
	return mergeRig{t: t, st: pipeStore(t, pgx.QueryExecModeCacheStatement)}
}

// create writes name held by holder and returns its revision.
func (r mergeRig) create(name, holder string) lease.Revision {
	r.t.Helper()
	now := time.Now()
	_, rev, err := r.st.CompareAndSwap(r.t.Context(), name, 0, lease.Record[string]{Holder: holder, AcquiredAt: now, RenewedAt: now, LeaseDuration: time.Second})
	if err != nil {
		r.t.Fatal(err)
	}
	return rev
}

// swap is the call of a swap of name from revision exp to holder, guarded
// by was when not nil.
func (r mergeRig) swap(name string, exp lease.Revision, was *store.Released, holder string) pgCall {
	r.t.Helper()
	now := time.Now()
	rec := lease.Record[string]{Holder: holder, Token: uint64(now.UnixMicro()) + 1000, AcquiredAt: now, RenewedAt: now, LeaseDuration: time.Second, Transitions: 1}
	if holder == "" {
		rec.LeaseDuration = 0
	}
	enc, _, err := store.EncodeRecord(r.st.codec, rec)
	if err != nil {
		r.t.Fatal(err)
	}
	return r.st.swapCall(name, exp, was, uint64(now.UnixMicro()), enc)
}

// run sends calls through one pipeline and returns each call's rows.
func (r mergeRig) run(calls ...pgCall) [][]swapRow {
	r.t.Helper()
	out := r.st.runPipe(r.t.Context(), calls)
	rows := make([][]swapRow, len(out))
	for i, a := range out {
		if a.Err != nil {
			r.t.Fatalf("call %d: %v", i, a.Err)
		}
		for _, v := range a.V.rows {
			switch v := v.(type) {
			case *swapRow:
				rows[i] = append(rows[i], *v)
			case *batchRow:
				rows[i] = append(rows[i], v.swapRow)
			default:
				r.t.Fatalf("call %d: a row of type %T", i, v)
			}
		}
	}
	return rows
}

// holderOf is the holder of a row returned.
func holderOf(sr swapRow) string {
	if sr.r.holder == nil {
		return "<nil>"
	}
	return *sr.r.holder
}

// Swaps of existing records waiting together go out as one statement,
// and each caller gets its own row as if its swap had gone alone: a
// single swap its swap's row, a batch its rows numbered from its first.
func TestPipelinedSwapsGoAsOneStatementAndEachGetsItsOwnRow(t *testing.T) {
	r := newMergeRig(t)
	ra, rb, rc, rd := r.create("a", "x"), r.create("b", "x"), r.create("c", "x"), r.create("d", "x")
	// A batch of two swaps (c, d) between two single swaps.
	batchOf := &batchCols{}
	for _, c := range []pgCall{r.swap("c", rc, nil, "batch"), r.swap("d", rd, nil, "batch")} {
		c.appendRows(batchOf)
	}
	calls := []pgCall{r.swap("a", ra, nil, "one"), r.st.batchCall(batchOf), r.swap("b", rb+1000, nil, "two")}
	if m := r.st.mergeCalls(calls); len(m) != 1 {
		t.Fatalf("%d statements for three calls of distinct names, want 1", len(m))
	}
	out := r.st.runPipe(t.Context(), calls)
	for i, a := range out {
		if a.Err != nil {
			t.Fatalf("call %d: %v", i, a.Err)
		}
	}
	// The single swap of a: its own row, written.
	if len(out[0].V.rows) != 1 {
		t.Fatalf("a: %d rows, want 1", len(out[0].V.rows))
	}
	if sr, ok := out[0].V.rows[0].(*swapRow); !ok || !sr.written || holderOf(*sr) != "one" {
		t.Errorf("a: %#v, want its swap's row, written by one", out[0].V.rows[0])
	}
	// The batch: rows 1 and 2, its own numbering, both written.
	seen := map[int64]string{}
	for _, v := range out[1].V.rows {
		br, ok := v.(*batchRow)
		if !ok || !br.written {
			t.Fatalf("batch: %#v, want a written batch row", v)
		}
		seen[br.i] = *br.r.holder
	}
	if len(seen) != 2 || seen[1] != "batch" || seen[2] != "batch" {
		t.Errorf("batch: rows %v, want 1 and 2 written by batch", seen)
	}
	// The swap of b at a stale revision: not written, b's row found.
	if len(out[2].V.rows) != 1 {
		t.Fatalf("b: %d rows, want 1", len(out[2].V.rows))
	}
	if sr, ok := out[2].V.rows[0].(*swapRow); !ok || sr.written || holderOf(*sr) != "x" || sr.r.rev() != int64(rb) {
		t.Errorf("b: %#v, want b's row as it was, not written", out[2].V.rows[0])
	}
}

// Two swaps of one name from the same revision, waiting together, are
// two statements in order: the first wins, and the second is told the
// record the first wrote.
func TestPipelinedSwapsOfOneNameStayApart(t *testing.T) {
	r := newMergeRig(t)
	rev := r.create("a", "x")
	rows := r.run(r.swap("a", rev, nil, "first"), r.swap("a", rev, nil, "second"))
	if len(rows[0]) != 1 || !rows[0][0].written || holderOf(rows[0][0]) != "first" {
		t.Fatalf("first swap: %+v, want written", rows[0])
	}
	if len(rows[1]) != 1 || rows[1][0].written || holderOf(rows[1][0]) != "first" || rows[1][0].r.rev() != rows[0][0].r.rev() {
		t.Errorf("second swap: written %v, holder %s, want not written and told of first's write", len(rows[1]) == 1 && rows[1][0].written, holderOf(rows[1][0]))
	}
}

// A guarded swap (CompareReleasedAndSwap) merged with others keeps its
// guard: a released record other than the one it names is not
// overwritten.
func TestPipelinedGuardedSwapKeepsItsGuard(t *testing.T) {
	r := newMergeRig(t)
	ra, rb := r.create("a", "x"), r.create("b", "x")
	rows := r.run(r.swap("a", ra, nil, ""))
	rel := rows[0][0]
	if !rel.written {
		t.Fatal("the release was not written")
	}
	rec, relRev, err := rel.r.parse()
	if err != nil {
		t.Fatal(err)
	}
	wrong := &store.Released{Token: rec.Token + 1, Transitions: rec.Transitions, LeaseDuration: rec.LeaseDuration}
	calls := []pgCall{r.swap("b", rb, nil, "y"), r.swap("a", relRev, wrong, "z")}
	if m := r.st.mergeCalls(calls); len(m) != 1 {
		t.Fatalf("%d statements, want the guarded swap merged with the other", len(m))
	}
	rows = r.run(calls...)
	if len(rows[1]) != 1 || rows[1][0].written {
		t.Errorf("the guarded swap naming another released record was written: %+v", rows[1])
	}
	if len(rows[0]) != 1 || !rows[0][0].written {
		t.Errorf("the swap beside it: %+v, want written", rows[0])
	}
}

// A swap does not pass an earlier call of its name that cannot be merged
// (a create): it goes after it, and finds the created record.
func TestPipelinedSwapDoesNotPassAnEarlierCreateOfItsName(t *testing.T) {
	r := newMergeRig(t)
	rb := r.create("b", "x")
	rows := r.run(r.swap("b", rb, nil, "y"), r.swap("a", 0, nil, "created"), r.swap("a", 1, nil, "late"))
	if len(rows[1]) != 1 || !rows[1][0].written {
		t.Fatalf("the create: %+v, want written", rows[1])
	}
	if len(rows[2]) != 1 || rows[2][0].written || holderOf(rows[2][0]) != "created" {
		t.Errorf("the swap after the create found %d rows (%+v), want the created record, not written", len(rows[2]), rows[2])
	}
}

// A merged statement the server refused as a whole (a deadlock with
// another process's statement) was rolled back: unmerge answers none of
// its calls, so that each goes again alone, and runPipe then answers
// each from its own statement.
func TestRefusedMergedStatementLeavesEachCallToGoAgainAlone(t *testing.T) {
	r := newMergeRig(t)
	ra, rb := r.create("a", "x"), r.create("b", "x")
	calls := []pgCall{r.swap("a", ra, nil, "one"), r.swap("b", rb, nil, "two")}
	m := r.st.mergeCalls(calls)
	if len(m) != 1 || len(m[0].parts) != 2 {
		t.Fatalf("%d statements, want the two calls merged into one", len(m))
	}
	out := make([]batch.Answer[pgAnswer], len(calls))
	refused := batch.Answer[pgAnswer]{Err: &pgconn.PgError{Code: "40P01", Message: "deadlock detected"}}
	if r.st.unmerge(calls, m[0], refused, out) {
		t.Fatal("unmerge took a refused merged statement as answered")
	}
	for i, a := range out {
		if a.Err != nil || len(a.V.rows) != 0 {
			t.Errorf("call %d was answered (%+v), want it left to go again", i, a)
		}
	}
	// A statement that failed otherwise (the connection broke) is an
	// answer: each call gets the error, its outcome unknown.
	broken := batch.Answer[pgAnswer]{Err: errors.New("connection reset")}
	if !r.st.unmerge(calls, m[0], broken, out) {
		t.Fatal("unmerge left a broken statement's calls to go again")
	}
	for i, a := range out {
		if a.Err == nil {
			t.Errorf("call %d: no error after the connection broke", i)
		}
	}
}
