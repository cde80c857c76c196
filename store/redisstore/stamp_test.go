package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store/redisstore"
)

// A record's Stamp comes back from the swap, from Get and on the watch,
// so that a follower can match a renewal it heard with the write a read
// shows; a record written without one shows none.
func TestStampIsKeptAndPublished(t *testing.T) {
	st, err := redisstore.New[meta](testcluster.PackageRedis(t).Client(t), redisstore.WithPrefix(uniquePrefix(t)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
	defer cancel()
	w, err := st.Watch(ctx, "stamped")
	if err != nil {
		t.Fatal(err)
	}
	testcluster.NextEvent(t, w, eventTimeout) // the current state: absent
	var rev lease.Revision
	for _, stamp := range []uint64{0xfedcba9876543210, 0, 1<<64 - 1} {
		rec := lease.Record[meta]{Holder: "a", Token: 1, LeaseDuration: time.Second, Stamp: stamp}
		got, r, err := st.CompareAndSwap(ctx, "stamped", rev, rec)
		if err != nil {
			t.Fatal(err)
		}
		rev = r
		if got.Stamp != stamp {
			t.Errorf("swap: Stamp %x, want %x", got.Stamp, stamp)
		}
		if got, _, err := st.Get(ctx, "stamped"); err != nil || got.Stamp != stamp {
			t.Errorf("Get: Stamp %x (%v), want %x", got.Stamp, err, stamp)
		}
		if ev := testcluster.NextEvent(t, w, eventTimeout); ev.Revision != rev || ev.Record.Stamp != stamp {
			t.Errorf("watch: revision %d Stamp %x, want %d and %x", ev.Revision, ev.Record.Stamp, rev, stamp)
		}
	}
}
