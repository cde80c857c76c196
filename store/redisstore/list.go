package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/internal/edge"
)

var _ store.Lister[struct{}] = (*Store[struct{}])(nil)

// listScanCount is the COUNT hint of each SCAN of List, and listBatch how
// many HGETALLs go out in one pipeline: a listing of 10,000 names is about
// ten SCANs and ten round trips of reads. They are variables for the
// tests.
var (
	listScanCount int64 = 1000
	listBatch           = 1000
)

// List returns the records whose names start with prefix, sorted by name.
// It finds their keys with SCAN (never KEYS, which blocks the server) over
// <prefix>tenure:{<escaped name prefix>*, on every master of a Redis
// Cluster, skipping the create gate's marker and any key that is not a
// record's, then reads them with HGETALL in pipelines of up to 1,000. Each
// record reads as Get reads it; one that cannot be read is listed with Err
// wrapping [store.ErrCorruptRecord]. A record deleted between the SCAN and
// its read is not listed. It is part of [store.Lister].
func (s *Store[M]) List(ctx context.Context, prefix string) ([]store.Listed[M], error) {
	if err := edge.CheckList(ctx, "redisstore", prefix, s.Validate()); err != nil {
		return nil, err
	}
	out, err := call(ctx, func() ([]store.Listed[M], error) { return s.list(ctx, prefix) })
	if err != nil {
		return nil, fmt.Errorf("redisstore: List %q: %w", prefix, err)
	}
	return out, nil
}

// list is List, without its checks.
func (s *Store[M]) list(ctx context.Context, prefix string) ([]store.Listed[M], error) {
	keyHead := s.cfg.prefix + "tenure:{"
	match := globEscape(keyHead+escape(prefix)) + "*"
	names := map[string]string{} // by key; SCAN may return a key twice
	scan := func(ctx context.Context, c *redis.Client) error {
		it := c.Scan(ctx, 0, match, listScanCount).Iterator()
		for it.Next(ctx) {
			key := it.Val()
			if name, ok := nameOfKey(key, keyHead); ok && strings.HasPrefix(name, prefix) {
				names[key] = name
			}
		}
		return it.Err()
	}
	var err error
	switch c := s.client.(type) {
	case *redis.ClusterClient:
		err = forEachSerially(ctx, c.ForEachMaster, scan)
	case *redis.Ring:
		err = forEachSerially(ctx, c.ForEachShard, scan)
	case *redis.Client:
		err = scan(ctx, c)
	default:
		return nil, fmt.Errorf("a client of type %T, which List cannot SCAN", s.client)
	}
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(names))
	for k := range names {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return strings.Compare(names[a], names[b]) })
	out := make([]store.Listed[M], 0, len(keys))
	for batch := range slices.Chunk(keys, listBatch) {
		cmds := make([]*redis.MapStringStringCmd, len(batch))
		// Each command carries its own error; Pipelined's is the first of them.
		_, _ = s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, k := range batch {
				cmds[i] = p.HGetAll(ctx, k)
			}
			return nil
		})
		for i, k := range batch {
			name := names[k]
			m, err := cmds[i].Result()
			if err != nil && !isWrongType(err) {
				return nil, err
			}
			rec, rev, err := s.fromHash(name, m, err)
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			out = append(out, store.Listed[M]{Name: name, Record: rec, Revision: rev, Err: err})
		}
	}
	return out, nil
}

// forEachSerially calls each with f, one node at a time: each's calls may
// run concurrently, and List's key set is not guarded.
func forEachSerially(ctx context.Context, each func(context.Context, func(context.Context, *redis.Client) error) error, f func(context.Context, *redis.Client) error) error {
	nodes := make(chan *redis.Client)
	done := make(chan error, 1)
	go func() {
		done <- each(ctx, func(ctx context.Context, c *redis.Client) error {
			select {
			case nodes <- c:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		close(nodes)
	}()
	var first error
	for c := range nodes {
		if err := f(ctx, c); err != nil && first == nil {
			first = err
		}
	}
	if err := <-done; err != nil && first == nil {
		first = err
	}
	return first
}

// nameOfKey returns the election name whose record key is key, whose
// part before the name is head (<prefix>tenure:{): false for a key that
// is no record's (the create gate's marker, a key of someone else's).
func nameOfKey(key, head string) (string, bool) {
	inner, ok := strings.CutPrefix(key, head)
	if !ok {
		return "", false
	}
	inner, ok = strings.CutSuffix(inner, "}")
	if !ok || strings.ContainsAny(inner, "{}") {
		return "", false
	}
	name, ok := unescape(inner)
	if !ok || store.ValidateName(name) != nil {
		return "", false
	}
	return name, true
}

// unescape undoes escape: false for a string escape cannot have written.
func unescape(s string) (string, bool) {
	if !strings.Contains(s, "%") {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+3 > len(s) {
			return "", false
		}
		switch s[i+1 : i+3] {
		case "25":
			b.WriteByte('%')
		case "7B":
			b.WriteByte('{')
		case "7D":
			b.WriteByte('}')
		default:
			return "", false
		}
		i += 2
	}
	return b.String(), true
}

// globEscape escapes the characters special in a Redis glob pattern
// (SCAN's MATCH), so that s matches only itself.
func globEscape(s string) string {
	if !strings.ContainsAny(s, `*?[]\^`) {
		return s
	}
	var b strings.Builder
	for i := range len(s) {
		if strings.IndexByte(`*?[]\^`, s[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
