package memstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/memstore"
)

// Meta is the metadata the examples attach to their records.
type Meta struct {
	Addr string
}

// Two workers race to create the record of an election; the loser learns the
// winner from the conflict, in the same call.
func Example() {
	ctx := context.Background()
	st := memstore.New[Meta]()

	rec, rev, err := st.CompareAndSwap(ctx, "billing-cron", 0, lease.Record[Meta]{
		Holder: "worker-a", Token: 1, LeaseDuration: 15 * time.Second,
		Metadata: Meta{Addr: "10.0.0.1:8080"},
	})
	fmt.Println(rec.Holder, rec.Token, rev, err)

	cur, curRev, err := st.CompareAndSwap(ctx, "billing-cron", 0, lease.Record[Meta]{LeaseDuration: 15 * time.Second, Holder: "worker-b", Token: 1})
	if errors.Is(err, store.ErrConflict) {
		fmt.Printf("conflict: held by %s at %s, revision %d\n", cur.Holder, cur.Metadata.Addr, curRev)
	}

	// The holder releases: Holder is cleared, Token and Transitions stay.
	rec.Holder = ""
	rec, rev, err = st.CompareAndSwap(ctx, "billing-cron", rev, rec)
	fmt.Printf("released: holder %q, token %d, revision %d, err %v\n", rec.Holder, rec.Token, rev, err)
	// Output:
	// worker-a 1 1 <nil>
	// conflict: held by worker-a at 10.0.0.1:8080, revision 1
	// released: holder "", token 1, revision 2, err <nil>
}

// A watch delivers the current state first, then every change.
func ExampleStore_Watch() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := memstore.New[Meta]()

	events, err := st.Watch(ctx, "billing-cron")
	if err != nil {
		panic(err)
	}
	ev := <-events
	fmt.Println("absent:", ev.Absent)

	_, _, _ = st.CompareAndSwap(ctx, "billing-cron", 0, lease.Record[Meta]{LeaseDuration: 15 * time.Second, Holder: "worker-a", Token: 1})
	ev = <-events
	fmt.Println(ev.Record.Holder, ev.Record.Token, ev.Revision)

	st.Delete("billing-cron")
	ev = <-events
	fmt.Println("absent:", ev.Absent)
	// Output:
	// absent: true
	// worker-a 1 1
	// absent: true
}

// Delete simulates data loss: the record is gone, but revisions go on
// growing and the next record gets a token above the lost one.
func ExampleStore_Delete() {
	ctx := context.Background()
	st := memstore.New[Meta]()
	_, _, _ = st.CompareAndSwap(ctx, "billing-cron", 0, lease.Record[Meta]{LeaseDuration: 15 * time.Second, Holder: "worker-a", Token: 7})

	st.Delete("billing-cron")
	_, _, err := st.Get(ctx, "billing-cron")
	fmt.Println(errors.Is(err, store.ErrNotFound))

	rec, rev, _ := st.CompareAndSwap(ctx, "billing-cron", 0, lease.Record[Meta]{LeaseDuration: 15 * time.Second, Holder: "worker-b", Token: 1})
	fmt.Println(rec.Holder, rec.Token, rev)
	// Output:
	// true
	// worker-b 8 2
}

// PutRaw stores metadata bytes the codec cannot decode: the record is
// reported as corrupt and never overwritten.
func ExampleStore_PutRaw() {
	ctx := context.Background()
	st := memstore.New[Meta]()
	rev, _ := st.PutRaw("billing-cron", lease.Record[[]byte]{Holder: "worker-a", Token: 1, LeaseDuration: 15 * time.Second, Metadata: []byte("{not json")})

	_, _, err := st.Get(ctx, "billing-cron")
	fmt.Println(errors.Is(err, store.ErrCorruptRecord))
	_, _, err = st.CompareAndSwap(ctx, "billing-cron", rev, lease.Record[Meta]{LeaseDuration: 15 * time.Second, Holder: "worker-b", Token: 2})
	fmt.Println(errors.Is(err, store.ErrCorruptRecord))
	// Output:
	// true
	// true
}

// upperCodec is a codec of its own: it keeps Addr upper-cased.
type upperCodec struct{ store.JSONCodec[Meta] }

func (c upperCodec) Encode(m Meta) ([]byte, error) {
	m.Addr = strings.ToUpper(m.Addr)
	return c.JSONCodec.Encode(m)
}

// NewWithCodec replaces JSON with a codec of the caller's; the metadata type
// is inferred from it.
func ExampleNewWithCodec() {
	st := memstore.NewWithCodec(upperCodec{})
	rec, _, _ := st.CompareAndSwap(context.Background(), "billing-cron", 0, lease.Record[Meta]{
		Holder: "worker-a", Token: 1, LeaseDuration: 15 * time.Second, Metadata: Meta{Addr: "db.internal:5432"},
	})
	fmt.Println(rec.Metadata.Addr)
	// Output:
	// DB.INTERNAL:5432
}
