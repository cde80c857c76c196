package storeurl

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/tenure-go/tenure/store/pgstore"
	"github.com/tenure-go/tenure/store/redisstore"
)

// backend returns the opener of a network scheme.
func backend[M any](scheme string) (func(context.Context, *url.URL) (Store[M], error), bool) {
	switch scheme {
	case "redis", "rediss", "unix":
		return openRedis[M], true
	case "postgres", "postgresql":
		return openPostgres[M], true
	}
	return openKube[M](scheme)
}

// openRedis opens redis://, rediss:// and unix:// URLs in go-redis's
// syntax. Tenure's own query parameters are taken out first: prefix (the
// key prefix) and may_lose_records (false when the server persists every
// write, see docs/backends/redis.md).
func openRedis[M any](ctx context.Context, u *url.URL) (Store[M], error) {
	q := u.Query()
	var opts []redisstore.Option
	if p := q.Get("prefix"); p != "" {
		opts = append(opts, redisstore.WithPrefix(p))
	}
	if v := q.Get("may_lose_records"); v != "" {
		may, err := strconv.ParseBool(v)
		if err != nil {
			return Store[M]{}, fmt.Errorf("%w: may_lose_records=%q in %s is not a boolean", ErrBadURL, v, redacted(u))
		}
		opts = append(opts, redisstore.WithMayLoseRecords(may))
	}
	q.Del("prefix")
	q.Del("may_lose_records")
	clean := *u
	clean.RawQuery = q.Encode()
	ropts, err := redis.ParseURL(clean.String())
	if err != nil {
		return Store[M]{}, fmt.Errorf("%w: %s: %w", ErrBadURL, redacted(u), err)
	}
	client := redis.NewClient(ropts)
	st, err := redisstore.New[M](client, opts...)
	if err != nil {
		_ = client.Close()
		return Store[M]{}, err
	}
	if err := client.Ping(ctx).Err(); err != nil {
		_ = client.Close()
		return Store[M]{}, fmt.Errorf("storeurl: cannot reach Redis at %s: %w", redacted(u), err)
	}
	return Store[M]{Store: st, Close: client.Close}, nil
}

// openPostgres opens postgres:// URLs in pgx's syntax. The query parameter
// tenure_table (TABLE or SCHEMA.TABLE, at most one dot) is Tenure's and is
// taken out first.
func openPostgres[M any](ctx context.Context, u *url.URL) (Store[M], error) {
	q := u.Query()
	var opts []pgstore.Option
	if t := q.Get("tenure_table"); t != "" {
		parts, err := splitTable(t)
		if err != nil {
			return Store[M]{}, fmt.Errorf("%w: %w in %s", ErrBadURL, err, redacted(u))
		}
		opts = append(opts, pgstore.WithTable(parts...))
	}
	q.Del("tenure_table")
	clean := *u
	clean.RawQuery = q.Encode()
	cfg, err := pgxpool.ParseConfig(clean.String())
	if err != nil {
		return Store[M]{}, fmt.Errorf("%w: %s cannot be parsed as a PostgreSQL URL", ErrBadURL, redacted(u))
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return Store[M]{}, fmt.Errorf("storeurl: cannot open PostgreSQL at %s: %w", redacted(u), err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return Store[M]{}, fmt.Errorf("storeurl: cannot reach PostgreSQL at %s: %w", redacted(u), err)
	}
	st, err := pgstore.New[M](pool, opts...)
	if err != nil {
		pool.Close()
		return Store[M]{}, err
	}
	return Store[M]{Store: st, Close: func() error { pool.Close(); return nil }}, nil
}

// splitTable splits the value of tenure_table, "table" or "schema.table",
// into its parts. More than one dot is refused: the value could not say
// which dot separates the schema from the table.
func splitTable(t string) ([]string, error) {
	parts := strings.Split(t, ".")
	if len(parts) > 2 {
		return nil, fmt.Errorf("tenure_table=%q has %d dots: it must be TABLE or SCHEMA.TABLE, and names containing a dot cannot be given in a URL (use pgstore.WithTable)", t, len(parts)-1)
	}
	for _, p := range parts {
		if p == "" {
			return nil, fmt.Errorf("tenure_table=%q has an empty part: it must be TABLE or SCHEMA.TABLE", t)
		}
	}
	return parts, nil
}
