package etcdstore

import (
	"context"
	"errors"
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// samePageKV answers every range request with the same page, whatever
// range it asks for, and says there is more: a proxy that ignores the
// range's start. It counts the requests, and fails from the 101st.
type samePageKV struct {
	clientv3.KV
	key   string
	calls *int
}

func (k samePageKV) Get(context.Context, string, ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	*k.calls++
	if *k.calls > 100 {
		return nil, errors.New("the 101st request: List did not stop")
	}
	return &clientv3.GetResponse{More: true, Kvs: []*mvccpb.KeyValue{{Key: []byte(k.key), ModRevision: 5, Value: []byte("x")}}}, nil
}

// A server that answers a page outside the range List asked for (the
// first page again, for ever) is refused at once, not listed from until
// memory runs out.
func TestListRefusesAPageThatDoesNotMoveOn(t *testing.T) {
	calls := 0
	s, err := New[string](&clientv3.Client{KV: samePageKV{key: DefaultPrefix + "leases/a", calls: &calls}, Watcher: struct{ clientv3.Watcher }{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(t.Context(), ""); !errors.Is(err, ErrUnexpectedReply) || calls != 2 {
		t.Fatalf("List = %v after %d requests; want ErrUnexpectedReply at the second", err, calls)
	}
}
