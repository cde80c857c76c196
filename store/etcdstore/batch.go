package etcdstore

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/internal/edge"
)

var _ store.Batcher[struct{}] = (*Store[struct{}])(nil)

// maxTxnSwaps is the most swaps one transaction of CompareAndSwapBatch
// carries: etcd refuses a transaction of more than --max-txn-ops
// operations at one level (128 by default).
const maxTxnSwaps = 64

// BatchesSwaps reports true: CompareAndSwapBatch sends many renewals in
// one transaction. It is part of [store.Batcher].
func (s *Store[M]) BatchesSwaps() bool { return s != nil }

// CompareAndSwapBatch runs each swap as CompareAndSwap does and returns
// their results in order. The renewals of a term whose record the Store
// knows to be at the expected revision (it wrote or saw that revision)
// go in one transaction per 64 swaps, whose Then holds one nested
// transaction per name, each with its own comparisons (the record's
// revision, and the token key's when the renewal raises it) and its own
// writes: etcd applies each nested transaction whose comparisons hold and
// none other, atomically per name and independently of the others (etcd
// 3.3 and later). A renewal whose comparisons fail wrote nothing, and is
// then run by CompareAndSwap, which reads and reports the conflict. Every
// other swap (a new term, a create, a record not known) and a name's
// second swap in the batch go through CompareAndSwap, after the swaps
// before them. It implements [store.Batcher].
func (s *Store[M]) CompareAndSwapBatch(ctx context.Context, swaps []store.Swap[M]) []store.SwapResult[M] {
	out := make([]store.SwapResult[M], len(swaps))
	for _, round := range edge.Rounds(swaps) {
		var fast []renewal[M]
		for _, i := range round {
			sw := swaps[i]
			if r, ok := s.renewal(ctx, i, sw); ok {
				fast = append(fast, r)
				continue
			}
			out[i].Record, out[i].Revision, out[i].Err = s.CompareAndSwap(ctx, sw.Name, sw.Expected, sw.Next)
		}
		for len(fast) > 0 {
			chunk := fast[:min(len(fast), maxTxnSwaps)]
			fast = fast[len(chunk):]
			s.renewAll(ctx, swaps, chunk, out)
		}
	}
	return out
}

// renewal is a swap of a batch that renews a term from a revision the
// Store knows: its position, what the Store knows of its name, its token
// and the value it writes.
type renewal[M any] struct {
	i     int
	k     known
	token uint64
	value []byte
	m     M
}

// renewal returns the renewal of sw (at position i), and false when sw is
// no renewal of a record the Store knows at sw.Expected, or when
// CompareAndSwap would refuse it before sending (it then does so itself).
func (s *Store[M]) renewal(ctx context.Context, i int, sw store.Swap[M]) (renewal[M], bool) {
	if s.check(ctx, "CompareAndSwap", sw.Name) != nil || sw.Expected == 0 || sw.Expected == store.MaxRevision {
		return renewal[M]{}, false
	}
	k, ok := s.recall(sw.Name)
	if !ok || k.bad || k.rev != sw.Expected || !store.Renews(lease.Record[struct{}]{Holder: k.holder, Token: k.token}, sw.Next) {
		return renewal[M]{}, false
	}
	enc, m, err := store.EncodeRecord(s.codec, sw.Next)
	if err != nil {
		return renewal[M]{}, false
	}
	if _, _, err := edge.FormatTimes(sw.Next); err != nil {
		return renewal[M]{}, false
	}
	value, err := encodeRecord(sw.Next, sw.Next.Token, enc.Metadata)
	if err != nil {
		return renewal[M]{}, false
	}
	return renewal[M]{i: i, k: k, token: sw.Next.Token, value: value, m: m}, true
}

// renewAll sends rs (distinct names) in one transaction, and fills out at
// their positions.
func (s *Store[M]) renewAll(ctx context.Context, swaps []store.Swap[M], rs []renewal[M], out []store.SwapResult[M]) {
	ops := make([]clientv3.Op, len(rs))
	for j, r := range rs {
		name := swaps[r.i].Name
		cmps := []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(s.key(name)), "=", int64(swaps[r.i].Expected))}
		puts := []clientv3.Op{clientv3.OpPut(s.key(name), string(r.value))}
		if r.k.raises(r.token) {
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(s.tokenKey(name)), "=", r.k.floorRev))
			puts = append(puts, clientv3.OpPut(s.tokenKey(name), formatCounter(r.token)))
		}
		ops[j] = clientv3.OpTxn(cmps, puts, nil)
	}
	resp, err := s.client.Txn(ctx).Then(ops...).Commit()
	if err == nil && (len(resp.Responses) != len(rs) || resp.Header == nil) {
		err = fmt.Errorf("%w: a batch of %d renewals returned %d responses", ErrUnexpectedReply, len(rs), len(resp.Responses))
	}
	for j, r := range rs {
		sw := swaps[r.i]
		if err != nil {
			out[r.i].Err = fail(ctx, "CompareAndSwap", sw.Name, err)
			continue
		}
		nested := resp.Responses[j].GetResponseTxn()
		if nested == nil || !nested.Succeeded {
			// Nothing written for this name: CompareAndSwap reads and
			// reports what it finds.
			s.forget(sw.Name)
			out[r.i].Record, out[r.i].Revision, out[r.i].Err = s.CompareAndSwap(ctx, sw.Name, sw.Expected, sw.Next)
			continue
		}
		rev := lease.Revision(0) // a negative header revision is no revision
		if resp.Header.Revision > 0 {
			rev = lease.Revision(resp.Header.Revision)
		}
		if rev <= sw.Expected {
			out[r.i].Err = fmt.Errorf("etcdstore: CompareAndSwap %q: %w: the write's revision %d is not above %d", sw.Name, ErrUnexpectedReply, rev, sw.Expected)
			continue
		}
		s.remember(sw.Name, r.k.after(rev, sw.Next.Holder, r.token))
		out[r.i].Record, out[r.i].Revision = swappedRecord(sw.Next, r.token, r.m), rev
	}
}
