package storeurl

import (
	"fmt"
	"math"
	"net/url"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// The bounds a store URL's pool and timer parameters are held to. The
// client libraries take any integer and any duration; some they then
// panic on (a negative pool size, a health check every 0s), allocate for
// up front (a pool of a billion connections), or loop on (a health check
// every nanosecond).
const (
	// maxPoolConns bounds every count of connections.
	maxPoolConns = 10_000
	// maxBufferBytes bounds go-redis's pipeline buffers.
	maxBufferBytes = 64 << 20
	// maxRetries bounds go-redis's retries of a command.
	maxRetries = 100
	// minHealthCheck is the shortest period of pgxpool's health check.
	minHealthCheck = 100 * time.Millisecond
)

// redisIntParams are go-redis's integer query parameters, with the range
// each may take: 0 asks for go-redis's default, -1 turns retries or the
// pipeline pool off.
var redisIntParams = []struct {
	name     string
	min, max int
}{
	{"pool_size", 0, maxPoolConns},
	{"min_idle_conns", 0, maxPoolConns},
	{"max_idle_conns", 0, maxPoolConns},
	{"max_active_conns", 0, maxPoolConns},
	{"max_concurrent_dials", 0, maxPoolConns},
	{"pipeline_pool_size", -1, maxPoolConns},
	{"pipeline_read_buffer_size", 0, maxBufferBytes},
	{"pipeline_write_buffer_size", 0, maxBufferBytes},
	{"max_retries", -1, maxRetries},
	{"protocol", 0, 3},
}

// redisDurationParams are go-redis's duration query parameters. A plain
// integer among them counts seconds, which go-redis multiplies without a
// check.
var redisDurationParams = []string{
	"min_retry_backoff", "max_retry_backoff", "dial_timeout", "read_timeout", "write_timeout",
	"pool_timeout", "conn_max_idle_time", "idle_timeout", "conn_max_lifetime", "max_conn_age",
	"conn_max_lifetime_jitter",
}

// checkRedisQuery refuses a Redis URL's query parameter that go-redis
// would take but then panic on, allocate for without bound, or overflow:
// an integer out of its range (redisIntParams), or a duration given as
// more seconds than a time.Duration holds. raw is the URL, for messages.
func checkRedisQuery(q url.Values, raw string) error {
	for _, p := range redisIntParams {
		for _, v := range q[p.name] {
			n, err := strconv.Atoi(v)
			if err != nil {
				continue // go-redis refuses it, naming the parameter
			}
			if n < p.min || n > p.max {
				return fmt.Errorf("%w: %s: %s=%s is out of range: it must be an integer in [%d, %d]", ErrBadURL, display(raw), p.name, v, p.min, p.max)
			}
		}
	}
	for _, name := range redisDurationParams {
		for _, v := range q[name] {
			n, err := strconv.ParseInt(v, 10, 64)
			if err == nil && n > int64(math.MaxInt64/time.Second) {
				return fmt.Errorf("%w: %s: %s=%s is out of range: a number of seconds must be at most %d (or give a duration such as 30s)", ErrBadURL, display(raw), name, v, int64(math.MaxInt64/time.Second))
			}
		}
	}
	return nil
}

// checkPostgresPool refuses a pool configuration, parsed from a
// PostgreSQL URL, that pgxpool would panic on or loop on: a health check
// period below minHealthCheck (0s panics), counts of connections out of
// [0, maxPoolConns] (a minimum above the maximum included), or a negative
// lifetime, idle time, jitter or ping timeout. raw is the URL, for
// messages.
func checkPostgresPool(cfg *pgxpool.Config, raw string) error {
	bad := func(param, value, rule string) error {
		return fmt.Errorf("%w: %s: %s=%s is out of range: %s", ErrBadURL, display(raw), param, value, rule)
	}
	counts := []struct {
		param string
		n     int32
		max   int32
	}{
		{"pool_max_conns", cfg.MaxConns, maxPoolConns},
		{"pool_min_conns", cfg.MinConns, cfg.MaxConns},
		{"pool_min_idle_conns", cfg.MinIdleConns, cfg.MaxConns},
	}
	for _, c := range counts {
		if c.n < 0 || c.n > min(c.max, maxPoolConns) {
			return bad(c.param, strconv.Itoa(int(c.n)), fmt.Sprintf("it must be an integer in [0, %d] (at most pool_max_conns, %d)", min(c.max, maxPoolConns), cfg.MaxConns))
		}
	}
	if cfg.HealthCheckPeriod < minHealthCheck {
		return bad("pool_health_check_period", cfg.HealthCheckPeriod.String(), "it must be at least "+minHealthCheck.String())
	}
	durations := []struct {
		param string
		d     time.Duration
	}{
		{"pool_max_conn_lifetime", cfg.MaxConnLifetime},
		{"pool_max_conn_idle_time", cfg.MaxConnIdleTime},
		{"pool_max_conn_lifetime_jitter", cfg.MaxConnLifetimeJitter},
		{"pool_ping_timeout", cfg.PingTimeout},
	}
	for _, d := range durations {
		if d.d < 0 {
			return bad(d.param, d.d.String(), "it must not be negative")
		}
	}
	return nil
}
