package pgstore

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

// One notification at the highest revision, sent by anyone who may NOTIFY
// on the Store's channel, does not silence a watch: the next renewal,
// heard below it, makes the watch read the row, and that read and every
// renewal after it are delivered.
func TestWatchHearsRenewalsAfterAForgedHighestRevision(t *testing.T) {
	for _, viaFunc := range []bool{false, true} {
		t.Run(fmt.Sprintf("viaFunc=%v", viaFunc), func(t *testing.T) {
			st := internalStore(t, func(*pgxpool.Config) {})
			ctx := t.Context()
			name := "forged"
			held, rev, err := st.CompareAndSwap(ctx, name, 0, lease.Record[string]{Holder: "a", LeaseDuration: time.Second, Metadata: "m"})
			if err != nil {
				t.Fatal(err)
			}
			w, err := testcluster.WatchChan(t, ctx, st, name, viaFunc)
			if err != nil {
				t.Fatal(err)
			}
			if ev := testcluster.NextEvent(t, w, 10*time.Second); ev.Err != nil || ev.Revision != rev {
				t.Fatalf("first event: %+v; want the record at %d", ev, rev)
			}
			// Twice: the read that heals the watch leaves it ready for another.
			for round := range 2 {
				us := func(t time.Time) string { return strconv.FormatInt(t.UnixMicro(), 10) }
				forged := fmt.Sprintf("r1:%d:%d:%d:%d:%s:%s:%s:%d:%s%s", store.MaxRevision, held.Token, held.Transitions,
					int64(held.LeaseDuration), us(held.AcquiredAt), us(held.RenewedAt), hex.EncodeToString([]byte(`"m"`)), len(held.Holder), held.Holder, name)
				if _, err := st.pool.Exec(ctx, "SELECT pg_notify($1, $2)", st.Channel(), forged); err != nil {
					t.Fatal(err)
				}
				if ev := testcluster.NextEvent(t, w, 10*time.Second); ev.Err != nil || ev.Revision != store.MaxRevision {
					t.Fatalf("round %d, after the forged record: %+v; want it delivered", round, ev)
				}
				for i := range 3 {
					held, rev, err = st.CompareAndSwap(ctx, name, rev, held)
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
