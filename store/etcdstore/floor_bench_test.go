package etcdstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/etcdstore"
)

// BenchmarkHandoverPaired alternates the handovers of clientv3 alone (no
// Tenure) with BenchmarkHandoverPeerConfig's, one of each, in one run:
// each of the electors' handovers comes testcluster.FloorSettle after one
// of the floor's, so that both meet the machine at the same moments. It
// reports the p50 and p90 of each, the floor's as floor-p50-ms and
// floor-p90-ms; -test.v prints each pair in the order taken.
//
// The floor is three clients of their own, each watching one key whose
// value is its holder. The leader releases in one transaction guarded by
// the key's ModRevision; each follower, on the watch event of the
// release, writes itself as holder in one transaction guarded by that
// event's ModRevision (one wins, the other's comparison fails). A
// handover is the time from the release's transaction to the winner's
// returning.
func BenchmarkHandoverPaired(b *testing.B) {
	e := testcluster.PackageEtcd(b)
	prefix := uniquePrefix(b)
	for b.Loop() {
		f := newEtcdFloor(b, e)
		hs, floor := testcluster.MeasureHandoverPaired(b, "handover", testcluster.PeerConfig(), testcluster.Handovers(b), func(tb testing.TB) store.Store[meta] {
			st, err := etcdstore.New[meta](newClient(tb, e), etcdstore.WithPrefix(prefix))
			if err != nil {
				tb.Fatal(err)
			}
			return st
		}, func() testcluster.Handover { return f.handover(b) })
		testcluster.ReportPairedHandover(b, "clientv3 alone", floor, "etcdstore", hs)
	}
}

// floorWin is a follower's successful acquire: who, when it returned, the
// revision it wrote, and how long it took.
type floorWin struct {
	id   int
	at   time.Time
	rev  int64
	took time.Duration
}

// etcdFloor is BenchmarkHandoverPaired's three clients (clientv3 alone)
// and their key.
type etcdFloor struct {
	key     string
	clients []*clientv3.Client
	rev     int64        // the key's ModRevision, as the leader last wrote it
	leader  atomic.Int32 // the stopped leader does not take part
	wins    chan floorWin
	errs    chan error
}

// newEtcdFloor makes the floor's key held by node-0, its three clients,
// and a follower on each that watches the key until b's Cleanup, which
// ends the watches and waits for the followers.
func newEtcdFloor(b *testing.B, e *testcluster.Etcd) *etcdFloor {
	b.Helper()
	c, cancel := context.WithCancel(context.Background())
	f := &etcdFloor{key: uniquePrefix(b) + "floor", clients: make([]*clientv3.Client, 3), wins: make(chan floorWin, 3), errs: make(chan error, 3)}
	for i := range f.clients {
		f.clients[i] = newClient(b, e)
	}
	var followers sync.WaitGroup
	b.Cleanup(func() {
		cancel()
		followers.Wait()
	})
	put, err := f.clients[0].Put(c, f.key, "node-0")
	if err != nil {
		b.Fatal(err)
	}
	f.rev = put.Header.Revision
	for i, cl := range f.clients {
		w := cl.Watch(clientv3.WithRequireLeader(c), f.key, clientv3.WithRev(f.rev+1))
		followers.Go(func() { followEtcdFloor(c, i, &f.leader, cl, f.key, w, f.wins, f.errs) })
	}
	return f
}

// handover releases the key as its leader and returns when a follower
// took it.
func (f *etcdFloor) handover(b *testing.B) testcluster.Handover {
	b.Helper()
	c := b.Context()
	id := f.leader.Load()
	start := time.Now()
	resp, err := f.clients[id].Txn(c).
		If(clientv3.Compare(clientv3.ModRevision(f.key), "=", f.rev)).
		Then(clientv3.OpPut(f.key, "")).
		Commit()
	if err != nil {
		b.Fatalf("release: %v", err)
	}
	if !resp.Succeeded {
		b.Fatalf("release: the key is no longer at revision %d", f.rev)
	}
	releaseTook := time.Since(start)
	win := testcluster.Await(b, f.wins, f.errs, eventTimeout)
	f.leader.Store(int32(win.id))
	f.rev = win.rev
	return testcluster.Handover{Total: win.at.Sub(start), Release: releaseTook, Acquire: win.took}
}

// followEtcdFloor takes the key on every watch event that shows it
// released, guarded by that event's ModRevision, as a watching follower
// would without reading first.
func followEtcdFloor(c context.Context, id int, leader *atomic.Int32, cl *clientv3.Client, key string, w clientv3.WatchChan, wins chan<- floorWin, errs chan<- error) {
	me := fmt.Sprintf("node-%d", id)
	for resp := range w {
		if err := resp.Err(); err != nil {
			if c.Err() == nil {
				errs <- fmt.Errorf("follower %d: watch: %w", id, err)
			}
			return
		}
		for _, ev := range resp.Events {
			if ev.Type != clientv3.EventTypePut || len(ev.Kv.Value) != 0 || leader.Load() == int32(id) {
				continue
			}
			start := time.Now()
			tr, err := cl.Txn(c).
				If(clientv3.Compare(clientv3.ModRevision(key), "=", ev.Kv.ModRevision)).
				Then(clientv3.OpPut(key, me)).
				Commit()
			switch {
			case err == nil && tr.Succeeded:
				wins <- floorWin{id: id, at: time.Now(), rev: tr.Header.Revision, took: time.Since(start)}
			case err == nil, errors.Is(err, context.Canceled), c.Err() != nil:
			default:
				errs <- fmt.Errorf("follower %d: acquire: %w", id, err)
				return
			}
		}
	}
}
