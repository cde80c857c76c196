package storeurl

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/tenure-go/tenure/store/pgstore"
	"github.com/tenure-go/tenure/store/redisstore"
)

// opener opens the store of one network scheme from the parsed URL and the
// text it came from (for messages).
type opener[M any] func(ctx context.Context, u *url.URL, raw string) (Store[M], error)

// backend returns the opener of a network scheme.
func backend[M any](scheme string) (opener[M], bool) {
	switch scheme {
	case "redis", "rediss", "unix":
		return openRedis[M], true
	case "postgres", "postgresql":
		return openPostgres[M], true
	case "kubernetes", "k8s":
		return openKubernetes[M], true
	case "etcd", "etcds":
		return openEtcd[M], true
	}
	return nil, false
}

// openRedis opens redis://, rediss:// and unix:// URLs in go-redis's
// syntax. Tenure's own query parameters are taken out first: prefix (the
// key prefix) and may_lose_records (false when the server persists every
// write, see docs/backends/redis.md). A TCP URL needs a host and a unix://
// URL a path: go-redis would otherwise dial localhost:6379.
func openRedis[M any](ctx context.Context, u *url.URL, raw string) (Store[M], error) {
	switch {
	case u.Scheme == "unix" && u.Host != "":
		return nil, fmt.Errorf("%w: %s: unix:// takes no host, only a socket path: want unix:///PATH/TO/redis.sock (three slashes)", ErrBadURL, display(raw))
	case u.Scheme == "unix" && strings.Trim(u.Path, "/") == "":
		return nil, fmt.Errorf("%w: %s: the socket path is empty: want unix:///PATH/TO/redis.sock", ErrBadURL, display(raw))
	case u.Scheme != "unix" && u.Hostname() == "":
		return nil, fmt.Errorf("%w: %s: the host is empty: want %s://HOST[:PORT][/DB]", ErrBadURL, display(raw), u.Scheme)
	}
	q := u.Query()
	var opts []redisstore.Option
	prefix := q.Get("prefix")
	if prefix != "" {
		opts = append(opts, redisstore.WithPrefix(prefix))
	}
	if v := q.Get("may_lose_records"); v != "" {
		may, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: may_lose_records=%q is not a boolean (true or false)", ErrBadURL, display(raw), v)
		}
		opts = append(opts, redisstore.WithMayLoseRecords(may))
	}
	q.Del("prefix")
	q.Del("may_lose_records")
	if err := checkRedisQuery(q, raw); err != nil {
		return nil, err
	}
	clean := *u
	clean.RawQuery = q.Encode()
	ropts, err := redis.ParseURL(clean.String())
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBadURL, display(raw), err)
	}
	client := redis.NewClient(ropts)
	st, err := redisstore.New[M](client, opts...)
	if err != nil {
		_ = client.Close()
		// Only the URL's own options can be refused: say which.
		return nil, fmt.Errorf("%w: %s: prefix=%q: %w", ErrBadURL, display(raw), prefix, err)
	}
	if err := client.Ping(ctx).Err(); err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("%w: Redis at %s: %w", ErrConnect, display(raw), err)
	}
	return redisStore[M]{Store: st, client: client}, nil
}

// redisStore is a Redis store opened from a URL: every method of
// redisstore's (Watch and MayLoseRecords included), and Close.
type redisStore[M any] struct {
	*redisstore.Store[M]
	client *redis.Client
}

// Close closes the Redis client.
func (s redisStore[M]) Close() error { return s.client.Close() }

// openPostgres opens postgres:// URLs in pgx's syntax. The query parameter
// tenure_table (TABLE or SCHEMA.TABLE, at most one dot) is Tenure's and is
// taken out first. The URL needs a host, in its authority or as ?host=,
// unless PGHOST names one: pgx would otherwise try a local socket or
// localhost.
func openPostgres[M any](ctx context.Context, u *url.URL, raw string) (Store[M], error) {
	q := u.Query()
	if u.Hostname() == "" && q.Get("host") == "" && os.Getenv("PGHOST") == "" {
		return nil, fmt.Errorf("%w: %s: the host is empty: want %s://[USER@]HOST[:PORT]/DB, ?host=/SOCKET/DIR, or PGHOST set", ErrBadURL, display(raw), u.Scheme)
	}
	var opts []pgstore.Option
	if t := q.Get("tenure_table"); t != "" {
		parts, err := splitTable(t)
		if err != nil {
			return nil, fmt.Errorf("%w: %w in %s", ErrBadURL, err, display(raw))
		}
		opts = append(opts, pgstore.WithTable(parts...))
	}
	q.Del("tenure_table")
	clean := *u
	clean.RawQuery = q.Encode()
	cfg, err := pgxpool.ParseConfig(clean.String())
	if err != nil {
		return nil, fmt.Errorf("%w: %s cannot be parsed as a PostgreSQL URL: %w", ErrBadURL, display(raw), err)
	}
	if err := checkPostgresPool(cfg, raw); err != nil {
		return nil, err
	}
	cfg.ShouldPing = pgstore.ShouldPing(cfg.ShouldPing) // a follower's reads send no ping
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: PostgreSQL at %s: %w", ErrConnect, display(raw), err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("%w: PostgreSQL at %s: %w", ErrConnect, display(raw), err)
	}
	st, err := pgstore.New[M](pool, opts...)
	if err != nil {
		pool.Close()
		return nil, err
	}
	return postgresStore[M]{Store: st, pool: pool}, nil
}

// postgresStore is a PostgreSQL store opened from a URL: every method of
// pgstore's (Watch included), MayLoseRecords, and Close.
type postgresStore[M any] struct {
	*pgstore.Store[M]
	pool *pgxpool.Pool
}

// Close closes the connection pool.
func (s postgresStore[M]) Close() error {
	s.pool.Close()
	return nil
}

// MayLoseRecords is false: PostgreSQL keeps committed rows.
func (s postgresStore[M]) MayLoseRecords() bool { return mayLose(s.Store, false) }

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
