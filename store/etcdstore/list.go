package etcdstore

import (
	"context"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/internal/edge"
)

var _ store.Lister[struct{}] = (*Store[struct{}])(nil)

// listPage is how many keys each range request of List returns (a variable for the tests).
var listPage int64 = 1000

// List returns the records whose names start with prefix, sorted by name:
// range requests over <prefix>leases/<name prefix> of up to 1,000 keys
// each, all at the revision of the first, so the listing is one snapshot
// (unless that revision is compacted away during it: List then fails). The
// token keys are not read. Each record reads as Get reads it; one that
// cannot be read is listed with Err wrapping [store.ErrCorruptRecord]. It
// is part of [store.Lister].
func (s *Store[M]) List(ctx context.Context, prefix string) ([]store.Listed[M], error) {
	if err := edge.CheckList(ctx, "etcdstore", prefix, s.Validate()); err != nil {
		return nil, err
	}
	head := s.key("")
	from := head + prefix
	end := clientv3.GetPrefixRangeEnd(from)
	var (
		out []store.Listed[M]
		rev int64
	)
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(listPage)}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err := s.client.Get(ctx, from, opts...)
		if err != nil {
			return nil, fail(ctx, "List", prefix, err)
		}
		if rev == 0 && resp.Header != nil {
			rev = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			if k := string(kv.Key); k < from || k >= end && end != "\x00" {
				// Outside the range asked for (a proxy that ignores it):
				// taken as the next page's start, a key that does not move
				// on would list the same page for ever.
				return nil, fmt.Errorf("etcdstore: List %q: %w: key %q outside the range [%q, %q) asked for", prefix, ErrUnexpectedReply, k, from, end)
			}
			name := strings.TrimPrefix(string(kv.Key), head)
			if store.ValidateName(name) != nil {
				continue
			}
			r, rec, err := s.decodeKV(name, kv.ModRevision, kv.Value)
			out = append(out, store.Listed[M]{Name: name, Record: rec, Revision: r, Err: err})
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return out, nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}
