package etcdstore

import (
	"context"
	"errors"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

// chanWatcher is an etcd Watcher whose every watch is ch.
type chanWatcher struct {
	clientv3.Watcher
	ch chan clientv3.WatchResponse
}

func (w chanWatcher) Watch(context.Context, string, ...clientv3.OpOption) clientv3.WatchChan {
	return w.ch
}

// A record read with no usable mod revision (zero, from a server that
// misbehaves) is reported as corrupt, and does not silence the watch: it
// carries no revision to order later events by, so the next change is
// delivered. (Taken as store.MaxRevision, it made the watch drop every
// later event until it ended.)
func TestWatchHearsChangesAfterARecordWithoutARevision(t *testing.T) {
	key := DefaultPrefix + "leases/job"
	read := &clientv3.TxnResponse{Header: &pb.ResponseHeader{Revision: 10}, Succeeded: true, Responses: []*pb.ResponseOp{
		{Response: &pb.ResponseOp_ResponseRange{ResponseRange: &pb.RangeResponse{Kvs: []*mvccpb.KeyValue{{Key: []byte(key), ModRevision: 0, Value: []byte("not a record")}}}}},
		{Response: &pb.ResponseOp_ResponseRange{ResponseRange: &pb.RangeResponse{}}},
	}}
	ch := make(chan clientv3.WatchResponse, 1)
	s, err := New[string](&clientv3.Client{KV: replyKV{resp: read}, Watcher: chanWatcher{ch: ch}})
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Watch(t.Context(), "job")
	if err != nil {
		t.Fatal(err)
	}
	if ev := testcluster.NextEvent(t, w, 10*time.Second); !errors.Is(ev.Err, store.ErrCorruptRecord) {
		t.Fatalf("first event %+v, want one wrapping ErrCorruptRecord", ev)
	}
	value, err := encodeRecord(lease.Record[string]{Holder: "a", Token: 7, LeaseDuration: time.Second}, 7, []byte(`"m"`))
	if err != nil {
		t.Fatal(err)
	}
	ch <- clientv3.WatchResponse{Events: []*clientv3.Event{{Type: mvccpb.PUT, Kv: &mvccpb.KeyValue{Key: []byte(key), ModRevision: 11, Value: value}}}}
	if ev := testcluster.NextEvent(t, w, 10*time.Second); ev.Err != nil || ev.Revision != 11 || ev.Record.Holder != "a" {
		t.Fatalf("after a put at revision 11: %+v, want a's record at 11", ev)
	}
}
