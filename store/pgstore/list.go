package pgstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/internal/edge"
)

var _ store.Lister[struct{}] = (*Store[struct{}])(nil)

// List returns the records whose names start with prefix, sorted by name
// (byte order), in one SELECT of the Store's table: every row is an
// election's record (revisions come from a sequence of their own). The
// prefix is matched with LIKE, its '%', '_' and '\' escaped: a prefix
// match, which an index on name can serve under the C collation.
// Each row reads as Get reads it; one that cannot be read is listed with
// Err wrapping [store.ErrCorruptRecord]. A row whose name is not a valid
// name (written by hand) is not listed. It is part of [store.Lister].
func (s *Store[M]) List(ctx context.Context, prefix string) ([]store.Listed[M], error) {
	if err := edge.CheckList(ctx, "pgstore", prefix, s.Validate()); err != nil {
		return nil, err
	}
	if err := s.ensureSchema(ctx); err != nil {
		return nil, err
	}
	sql := "SELECT t.name, " + selected("t") + " FROM " + s.table.Sanitize() + " AS t"
	var args []any
	if prefix != "" {
		sql += ` WHERE t.name LIKE $1 ESCAPE '\'`
		args = append(args, likeEscape(prefix)+"%")
	}
	sql += ` ORDER BY t.name COLLATE "C"`
	var out []store.Listed[M]
	err := s.afterSchemaChange(ctx, func() error {
		return s.retry(ctx, connectionLost, func() error {
			out = out[:0]
			rows, err := s.pool.Query(forRead(ctx), sql, args...)
			if err != nil {
				return err
			}
			var (
				name string
				r    row
			)
			dest := append([]any{&name}, r.dest()...)
			_, err = pgx.ForEachRow(rows, dest, func() error {
				if !strings.HasPrefix(name, prefix) || store.ValidateName(name) != nil {
					return nil
				}
				rec, rev, err := s.record(name, &r)
				out = append(out, store.Listed[M]{Name: name, Record: rec, Revision: rev, Err: err})
				return nil
			})
			return err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: List %q: %w", prefix, withCtx(ctx, err))
	}
	return out, nil
}

// likeEscape escapes the characters special in a LIKE pattern with
// backslash ('\' as the ESCAPE character), so that s matches only itself.
func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}
