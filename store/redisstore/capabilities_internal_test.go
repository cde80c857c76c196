package redisstore

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

// Anyone who can connect to the server can PUBLISH on a Store's channel,
// and Watch delivers what is published as the record: a release nobody
// wrote, at a revision above the stored one, arrives like the Store's own
// event. So the Store does not claim its events authentic: an elector
// reads the record before it acts on one.
func TestWatchDeliversAForgedReleaseSoEventsAreNotAuthentic(t *testing.T) {
	st, c := internalStore(t)
	ctx := t.Context()
	held, rev, err := st.CompareAndSwap(ctx, "n", 0, lease.Record[string]{Holder: "a", LeaseDuration: time.Second, Metadata: "m"})
	if err != nil {
		t.Fatal(err)
	}
	w, err := st.Watch(ctx, "n")
	if err != nil {
		t.Fatal(err)
	}
	if ev := testcluster.NextEvent(t, w, 10*time.Second); ev.Err != nil || ev.Revision != rev {
		t.Fatalf("first event: %+v; want the record at %d", ev, rev)
	}
	forged := raw{strconv.FormatUint(uint64(rev)+1, 10), "forger", "", strconv.FormatUint(held.Token, 10), "", "", "1000000000", "1", `"m"`, "", ""}
	forged[numFields-1] = forged.checksum()
	if err := c.Publish(ctx, st.channel("n"), message(forged)).Err(); err != nil {
		t.Fatal(err)
	}
	ev := testcluster.NextEvent(t, w, 10*time.Second)
	if ev.Err != nil || ev.Revision != rev+1 || ev.Record.Holder != "" {
		t.Fatalf("after a forged release: %+v; want it delivered", ev)
	}
	if got, grev, err := st.Get(ctx, "n"); err != nil || grev != rev || got.Holder != "a" {
		t.Fatalf("Get = %+v at %d, %v; the store still holds a's record at %d", got, grev, err, rev)
	}
	if st.WatchCapabilities().Authentic {
		t.Fatal("the Store claims authentic the events anyone can forge")
	}
}

// One record published at the highest revision by someone else does not
// silence a watch: the next renewal, heard below it, makes the watch read
// the record, and that read and every renewal after it are delivered.
func TestWatchHearsRenewalsAfterAForgedHighestRevision(t *testing.T) {
	for _, viaFunc := range []bool{false, true} {
		t.Run(fmt.Sprintf("viaFunc=%v", viaFunc), func(t *testing.T) {
			st, c := internalStore(t)
			ctx := t.Context()
			held, rev, err := st.CompareAndSwap(ctx, "n", 0, lease.Record[string]{Holder: "a", LeaseDuration: time.Second, Metadata: "m"})
			if err != nil {
				t.Fatal(err)
			}
			w, err := testcluster.WatchChan(t, ctx, st, "n", viaFunc)
			if err != nil {
				t.Fatal(err)
			}
			if ev := testcluster.NextEvent(t, w, 10*time.Second); ev.Err != nil || ev.Revision != rev {
				t.Fatalf("first event: %+v; want the record at %d", ev, rev)
			}
			// Twice: the read that heals the watch leaves it ready for another.
			for round := range 2 {
				forged := raw{strconv.FormatUint(uint64(store.MaxRevision), 10), "a", "", strconv.FormatUint(held.Token, 10), "", "", "1000000000", "1", `"m"`, "", ""}
				forged[numFields-1] = forged.checksum()
				if err := c.Publish(ctx, st.channel("n"), message(forged)).Err(); err != nil {
					t.Fatal(err)
				}
				if ev := testcluster.NextEvent(t, w, 10*time.Second); ev.Err != nil || ev.Revision != store.MaxRevision {
					t.Fatalf("round %d, after the forged record: %+v; want it delivered", round, ev)
				}
				for i := range 3 {
					held, rev, err = st.CompareAndSwap(ctx, "n", rev, held)
					if err != nil {
						t.Fatal(err)
					}
					ev := testcluster.NextEvent(t, w, 10*time.Second)
					if ev.Err != nil || ev.Revision != rev || ev.Record.Holder != "a" {
						t.Fatalf("round %d, renewal %d after the forged record: %+v; want the renewal at %d", round, i, ev, rev)
					}
				}
			}
		})
	}
}
