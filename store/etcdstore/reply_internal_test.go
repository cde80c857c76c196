package etcdstore

import (
	"context"
	"errors"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

// replyKV is an etcd KV whose every transaction commits with resp.
type replyKV struct {
	clientv3.KV
	resp *clientv3.TxnResponse
}

func (k replyKV) Txn(context.Context) clientv3.Txn { return replyTxn(k) }

type replyTxn replyKV

func (t replyTxn) If(...clientv3.Cmp) clientv3.Txn  { return t }
func (t replyTxn) Then(...clientv3.Op) clientv3.Txn { return t }
func (t replyTxn) Else(...clientv3.Op) clientv3.Txn { return t }
func (t replyTxn) Commit() (*clientv3.TxnResponse, error) {
	return t.resp, nil
}

// A batch renewal's reply whose header revision is negative (a server or
// proxy that misbehaves) is refused as unexpected, as a single swap's is,
// rather than taken as a revision above store.MaxRevision.
func TestBatchRefusesANegativeHeaderRevision(t *testing.T) {
	resp := &clientv3.TxnResponse{Header: &pb.ResponseHeader{Revision: -1}, Succeeded: true,
		Responses: []*pb.ResponseOp{{Response: &pb.ResponseOp_ResponseTxn{ResponseTxn: &pb.TxnResponse{Succeeded: true}}}}}
	s, err := New[string](&clientv3.Client{KV: replyKV{resp: resp}, Watcher: struct{ clientv3.Watcher }{}})
	if err != nil {
		t.Fatal(err)
	}
	s.remember("job", known{rev: 5, holder: "a", token: 7, floor: 7, floorRev: 3})
	res := s.CompareAndSwapBatch(t.Context(), []store.Swap[string]{{Name: "job", Expected: 5,
		Next: lease.Record[string]{Holder: "a", Token: 7, LeaseDuration: time.Second}}})
	if !errors.Is(res[0].Err, ErrUnexpectedReply) {
		t.Fatalf("CompareAndSwapBatch = %+v at revision %d, want ErrUnexpectedReply", res[0].Err, res[0].Revision)
	}
}
