package lead_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-go/tenure/store/memstore"
)

// Every write an elector makes carries a Stamp of its own, so that a
// follower that heard a renewal can tell that very write in a read.
func TestEveryWriteCarriesAFreshStamp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New[meta]()
		n := start(t, st, "a")
		<-n.e.Ready()
		n.next(t) // started
		seen := map[uint64]bool{}
		for range 4 {
			rec, _, err := st.Get(context.Background(), "job")
			if err != nil {
				t.Fatal(err)
			}
			if rec.Stamp == 0 || seen[rec.Stamp] {
				t.Fatalf("Stamp %x: zero, or the Stamp of an earlier write (%d seen)", rec.Stamp, len(seen))
			}
			seen[rec.Stamp] = true
			time.Sleep(fastConfig().MaxRetryInterval() + time.Millisecond) // the next renewal
			synctest.Wait()
		}
	})
}
