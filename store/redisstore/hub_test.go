package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/redisstore"
)

// waitPubsubClients polls until the server counts want Pub/Sub
// connections: the server drops a closed connection when it reads the
// close, and there is no event for that.
func waitPubsubClients(t *testing.T, admin *redis.Client, want int) {
	t.Helper()
	deadline := time.Now().Add(eventTimeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		got := pubsubClients(t, admin)
		if len(got) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d Pub/Sub connections (%q), want %d", len(got), got, want)
		}
		<-tick.C
	}
}

// waitHolder reads events from ch until one shows holder, checking that
// revisions never go back between Absent events.
func waitHolder(t *testing.T, ch <-chan store.Event[meta], holder string) store.Event[meta] {
	t.Helper()
	var last lease.Revision
	for {
		ev := nextEvent(t, ch)
		if ev.Err != nil {
			t.Fatalf("event %+v while waiting for holder %q", ev, holder)
		}
		if ev.Absent {
			last = 0
			continue
		}
		if ev.Revision <= last {
			t.Fatalf("revision %d after %d", ev.Revision, last)
		}
		last = ev.Revision
		if ev.Record.Holder == holder {
			return ev
		}
	}
}

// Many watches of distinct names, from two Stores with different prefixes
// and metadata types sharing one Hub, use one Pub/Sub connection. A
// receiver that reads nothing holds up no other watch. When the server
// restarts without its data, every watch hears that its record is gone and
// sees the next one, still on one connection; ended watches leave the
// connection, and the last one closes it; a name can be watched again.
func TestHubSharesOneConnection(t *testing.T) {
	const names = 40
	srv := testcluster.NewRedis(t)
	c := srv.Client(t)
	admin := srv.Client(t)
	hub, err := redisstore.NewHub(c, redisstore.WithWatchBackoff(10*time.Millisecond, 100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	st, err := redisstore.New[meta](c, redisstore.WithPrefix("a:"), redisstore.WithHub(hub))
	if err != nil {
		t.Fatal(err)
	}
	other, err := redisstore.New[string](c, redisstore.WithPrefix("b:"), redisstore.WithHub(hub))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	// A watch nobody reads, on the name every round writes first.
	if _, err := st.Watch(ctx, "n0"); err != nil {
		t.Fatal(err)
	}
	chans := make([]<-chan store.Event[meta], names)
	for i := range chans {
		ch, err := st.Watch(ctx, fmt.Sprintf("n%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if ev := nextEvent(t, ch); !ev.Absent {
			t.Fatalf("first event of n%d: %+v, want Absent", i, ev)
		}
		chans[i] = ch
	}
	otherCh, err := other.Watch(ctx, "n0")
	if err != nil {
		t.Fatal(err)
	}
	if ev := testcluster.NextEvent(t, otherCh, eventTimeout); !ev.Absent {
		t.Fatalf("first event of the other store: %+v, want Absent", ev)
	}
	waitPubsubClients(t, admin, 1)

	revs := make([]lease.Revision, names)
	for round := range 3 {
		for i := range chans {
			_, revs[i] = mustSwap(t, st, fmt.Sprintf("n%d", i), revs[i], rec(fmt.Sprintf("h%d-%d", i, round), 1))
		}
		for i, ch := range chans {
			waitRevision(t, ch, revs[i])
		}
	}
	_, orev, err := other.CompareAndSwap(ctx, "n0", 0, lease.Record[string]{Holder: "o", LeaseDuration: time.Second, Metadata: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if ev := testcluster.NextEvent(t, otherCh, eventTimeout); ev.Revision != orev || ev.Record.Metadata != "m" {
		t.Fatalf("other store's event %+v, want revision %d", ev, orev)
	}
	if n := len(pubsubClients(t, admin)); n != 1 {
		t.Fatalf("%d Pub/Sub connections with %d watches, want 1", n, names+2)
	}

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	for i, ch := range chans {
		if ev := nextEvent(t, ch); !ev.Absent {
			t.Fatalf("n%d after the restart: %+v, want Absent", i, ev)
		}
	}
	for i := range chans {
		mustSwap(t, st, fmt.Sprintf("n%d", i), 0, rec(fmt.Sprintf("after-%d", i), 1))
	}
	for i, ch := range chans {
		waitHolder(t, ch, fmt.Sprintf("after-%d", i))
	}
	waitPubsubClients(t, admin, 1)

	cancel()
	for _, ch := range chans {
		for range ch { // drain until closed
		}
	}
	for range otherCh { // drain until closed
	}
	waitPubsubClients(t, admin, 0)

	// Watching again opens the connection again.
	ch, err := st.Watch(t.Context(), "n1")
	if err != nil {
		t.Fatal(err)
	}
	waitHolder(t, ch, "after-1")
	waitPubsubClients(t, admin, 1)
}

// The same name watched twice through one Hub: both watches get every
// change, and ending one leaves the other subscribed.
func TestHubSameNameTwice(t *testing.T) {
	srv := testcluster.PackageRedis(t)
	st, _ := newStore(t, srv)
	ctx := t.Context()
	first, cancelFirst := context.WithCancel(ctx)
	a, err := st.Watch(first, "twice")
	if err != nil {
		t.Fatal(err)
	}
	b, err := st.Watch(ctx, "twice")
	if err != nil {
		t.Fatal(err)
	}
	nextEvent(t, a)
	nextEvent(t, b)
	r, rev := mustSwap(t, st, "twice", 0, rec("x", 1))
	waitRevision(t, a, rev)
	waitRevision(t, b, rev)
	cancelFirst()
	for range a { // drain until closed
	}
	_, rev = mustSwap(t, st, "twice", rev, r)
	waitRevision(t, b, rev)
}

// A Hub serves only Stores on its own client.
func TestHubOfAnotherClient(t *testing.T) {
	srv := testcluster.PackageRedis(t)
	hub, err := redisstore.NewHub(srv.Client(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := redisstore.New[meta](srv.Client(t), redisstore.WithHub(hub)); !errors.Is(err, redisstore.ErrInvalidOption) {
		t.Fatalf("New with the Hub of another client: %v, want ErrInvalidOption", err)
	}
	if _, err := redisstore.NewHub(nil); !errors.Is(err, store.ErrNilArgument) {
		t.Fatalf("NewHub(nil): %v, want ErrNilArgument", err)
	}
}

// Watches of one name that end and start again at once, while another name
// stays watched: the UNSUBSCRIBE of the ended watch never overtakes the
// SUBSCRIBE of the next, so the last watch still gets the changes.
func TestHubWatchAgainAtOnce(t *testing.T) {
	srv := testcluster.PackageRedis(t)
	st, _ := newStore(t, srv)
	ctx := t.Context()
	if _, err := st.Watch(ctx, "anchor"); err != nil { // keeps the connection up
		t.Fatal(err)
	}
	r, rev := mustSwap(t, st, "again", 0, rec("a", 1))
	for i := range 50 {
		wctx, cancel := context.WithCancel(ctx)
		ch, err := st.Watch(wctx, "again")
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			nextEvent(t, ch)
		}
		cancel()
	}
	ch, err := st.Watch(ctx, "again")
	if err != nil {
		t.Fatal(err)
	}
	waitRevision(t, ch, rev)
	_, rev = mustSwap(t, st, "again", rev, r)
	waitRevision(t, ch, rev)
}

// A Hub not made by NewHub is refused, and a nil one keeps the default.
func TestHubNotMadeByNewHub(t *testing.T) {
	c := testcluster.PackageRedis(t).Client(t)
	if _, err := redisstore.New[meta](c, redisstore.WithHub(&redisstore.Hub{})); !errors.Is(err, redisstore.ErrInvalidOption) {
		t.Fatalf("New with a zero Hub: %v, want ErrInvalidOption", err)
	}
	if _, err := redisstore.New[meta](c, redisstore.WithHub(nil)); err != nil {
		t.Fatalf("New with a nil Hub: %v", err)
	}
}
