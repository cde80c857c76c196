package redisstore_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/redisstore"
)

// batchSwap runs swaps in one batch call and fails the test on any error.
func batchSwap(t *testing.T, st *redisstore.Store[meta], swaps []store.Swap[meta]) []store.SwapResult[meta] {
	t.Helper()
	res := st.CompareAndSwapBatch(t.Context(), swaps)
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("swap %d (%s): %v", i, swaps[i].Name, r.Err)
		}
	}
	return res
}

// The records of one batch call, published together, each reach the
// watches of their own name, and only those, as a record published alone
// would: every event of a name's watch carries that name's holder.
func TestBatchedRecordsReachTheirOwnNamesWatches(t *testing.T) {
	srv := testcluster.PackageRedis(t)
	st, _ := newStore(t, srv)
	names := []string{"a", "b", "c"}
	var swaps []store.Swap[meta]
	for i, n := range names {
		swaps = append(swaps, store.Swap[meta]{Name: n, Next: rec(n+"-holder", uint64(i+1))})
	}
	res := batchSwap(t, st, swaps)
	watches := make([]<-chan store.Event[meta], len(names))
	for i, n := range names {
		ch, err := st.Watch(t.Context(), n)
		if err != nil {
			t.Fatal(err)
		}
		if ev := nextEvent(t, ch); ev.Revision != res[i].Revision || ev.Record.Holder != n+"-holder" {
			t.Fatalf("%s: first event %+v, want revision %d", n, ev, res[i].Revision)
		}
		watches[i] = ch
	}
	for round := range 3 {
		for i := range swaps {
			swaps[i].Expected = res[i].Revision
			swaps[i].Next.RenewedAt = swaps[i].Next.RenewedAt.Add(time.Second)
		}
		res = batchSwap(t, st, swaps)
		for i, n := range names {
			ev := waitRevision(t, watches[i], res[i].Revision)
			if ev.Revision != res[i].Revision || ev.Record.Holder != n+"-holder" || !ev.Record.RenewedAt.Equal(res[i].Record.RenewedAt) {
				t.Fatalf("round %d, %s: event %+v, want the record of revision %d", round, n, ev, res[i].Revision)
			}
		}
	}
}

// receive returns the next message of ps, failing after a while.
func receive(t *testing.T, ps *redis.PubSub) *redis.Message {
	t.Helper()
	for {
		m, err := ps.ReceiveTimeout(t.Context(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if msg, ok := m.(*redis.Message); ok {
			return msg
		}
	}
}

// A batch call publishes a record on its name's channel too only while
// that channel has a subscriber that does not hear batch messages (a
// watcher of a version without them): a new watcher alone gets the batch
// message and no copy; a subscriber of the name's channel alone gets the
// record there, in the layout it knows.
func TestBatchPublishesOnTheNamesChannelOnlyForSubscribersWithoutBatches(t *testing.T) {
	srv := testcluster.PackageRedis(t)
	st, _ := newStore(t, srv)
	ctx := t.Context()
	res := batchSwap(t, st, []store.Swap[meta]{{Name: "n", Next: rec("x", 1)}})
	w, err := st.Watch(ctx, "n")
	if err != nil {
		t.Fatal(err)
	}
	nextEvent(t, w)
	channel, err := st.Channel("n")
	if err != nil {
		t.Fatal(err)
	}
	// A pattern subscriber hears everything and counts as no subscriber
	// of the name's channel.
	spy := srv.Client(t).PSubscribe(ctx, channel[:strings.LastIndex(channel, "tenure:{")]+"*")
	t.Cleanup(func() { _ = spy.Close() })
	if _, err := spy.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	const sentinel = "sentinel"
	renew := func() lease.Revision {
		t.Helper()
		next := res[0].Record
		next.RenewedAt = next.RenewedAt.Add(time.Second)
		res = batchSwap(t, st, []store.Swap[meta]{{Name: "n", Expected: res[0].Revision, Next: next}})
		waitRevision(t, w, res[0].Revision)
		return res[0].Revision
	}
	renew()
	if err := srv.Client(t).Publish(ctx, channel+sentinel, "").Err(); err != nil {
		t.Fatal(err)
	}
	if m := receive(t, spy); !strings.HasSuffix(m.Channel, "tenure:changes") {
		t.Fatalf("first message on %q, want the batch channel", m.Channel)
	}
	if m := receive(t, spy); m.Channel != channel+sentinel {
		t.Fatalf("then a message on %q, want none before the sentinel", m.Channel)
	}

	old := srv.Client(t).Subscribe(ctx, channel)
	t.Cleanup(func() { _ = old.Close() })
	if _, err := old.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	rev := renew()
	m := receive(t, old)
	revText := strconv.FormatUint(uint64(rev), 10)
	if !strings.HasPrefix(m.Payload, strconv.Itoa(len(revText))+":"+revText) || !strings.Contains(m.Payload, "1:x") {
		t.Fatalf("the name's channel carried %q, want the record of revision %d", m.Payload, rev)
	}
}

// A record published on its name's channel alone, as a single swap and a
// batch of a version without batch messages publish it, reaches the
// watches of the name.
func TestWatchHearsARecordPublishedOnTheNamesChannelAlone(t *testing.T) {
	srv := testcluster.PackageRedis(t)
	st, _ := newStore(t, srv)
	_, rev := mustSwap(t, st, "n", 0, rec("x", 1))
	w, err := st.Watch(t.Context(), "n")
	if err != nil {
		t.Fatal(err)
	}
	waitRevision(t, w, rev)
	raw, err := st.Channel("n")
	if err != nil {
		t.Fatal(err)
	}
	spy := srv.Client(t).Subscribe(t.Context(), raw)
	t.Cleanup(func() { _ = spy.Close() })
	if _, err := spy.Receive(t.Context()); err != nil {
		t.Fatal(err)
	}
	// The message of a batch renewal to an old subscriber, published again
	// as an old version's batch would publish it.
	res := batchSwap(t, st, []store.Swap[meta]{{Name: "n", Expected: rev, Next: rec("y", 2)}})
	m := receive(t, spy)
	waitRevision(t, w, res[0].Revision)
	_ = spy.Close()
	_, rev = mustSwap(t, st, "n", res[0].Revision, rec("z", 3))
	if ev := waitRevision(t, w, rev); ev.Record.Holder != "z" {
		t.Fatalf("event %+v, want holder z", ev)
	}
	// Replayed, the older record is no news: never an older after a newer.
	if err := srv.Client(t).Publish(t.Context(), raw, m.Payload).Err(); err != nil {
		t.Fatal(err)
	}
	_, rev = mustSwap(t, st, "n", rev, rec("z", 3))
	if ev := nextEvent(t, w); ev.Revision != rev {
		t.Fatalf("event %+v after a replayed older record, want revision %d", ev, rev)
	}
}

// A watch hands out the metadata of every heard record as its own value:
// with references (a slice), a receiver that changes what it got changes
// nothing a later event carries, though the encoding repeats.
func TestHeardMetadataWithReferencesIsDecodedAnew(t *testing.T) {
	srv := testcluster.PackageRedis(t)
	st, err := redisstore.New[[]string](srv.Client(t), redisstore.WithPrefix(uniquePrefix(t)))
	if err != nil {
		t.Fatal(err)
	}
	next := lease.Record[[]string]{Holder: "x", Token: 1, AcquiredAt: time.Now(), RenewedAt: time.Now(), LeaseDuration: time.Second, Metadata: []string{"m"}}
	_, rev, err := st.CompareAndSwap(t.Context(), "n", 0, next)
	if err != nil {
		t.Fatal(err)
	}
	w, err := st.Watch(t.Context(), "n")
	if err != nil {
		t.Fatal(err)
	}
	<-w
	for range 2 {
		next.RenewedAt = next.RenewedAt.Add(time.Second)
		if _, rev, err = st.CompareAndSwap(t.Context(), "n", rev, next); err != nil {
			t.Fatal(err)
		}
		ev := testcluster.NextEvent(t, w, eventTimeout)
		if ev.Revision != rev {
			t.Fatalf("event %+v, want revision %d", ev, rev)
		}
		if len(ev.Record.Metadata) != 1 || ev.Record.Metadata[0] != "m" {
			t.Fatalf("metadata %q, want [m] (a receiver's change to an earlier event's shows)", ev.Record.Metadata)
		}
		ev.Record.Metadata[0] = "changed"
	}
}

// A Store hands out again the metadata it decoded last when a swap
// writes the same encoding; a swap of other metadata returns its own,
// alone or in a batch.
func TestSwapsReturnTheMetadataTheyWrote(t *testing.T) {
	st, _ := newStore(t, testcluster.PackageRedis(t))
	ctx := t.Context()
	var rev lease.Revision
	for i, addr := range []string{"a:1", "b:2", "b:2", "a:1"} {
		next := rec("x", 1)
		next.Metadata = meta{Addr: addr}
		var got lease.Record[meta]
		if i%2 == 0 {
			var err error
			if got, rev, err = st.CompareAndSwap(ctx, "n", rev, next); err != nil {
				t.Fatal(err)
			}
		} else {
			r := st.CompareAndSwapBatch(ctx, []store.Swap[meta]{{Name: "n", Expected: rev, Next: next}})
			if r[0].Err != nil {
				t.Fatal(r[0].Err)
			}
			got, rev = r[0].Record, r[0].Revision
		}
		if got.Metadata.Addr != addr {
			t.Fatalf("swap %d returned metadata %+v, want Addr %q", i, got.Metadata, addr)
		}
	}
}
