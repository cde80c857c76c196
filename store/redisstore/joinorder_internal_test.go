package redisstore

import (
	"testing"
	"time"

	"github.com/tenure-go/tenure/lease"
)

// A watch that joins a key already watched reads the record itself while
// the Hub may read it too (after a reconnection, a re-subscription, or a
// read another watcher of the key asked for). The Hub's read, made before
// a renewal, can reach the joining watch after the watch's own first
// read, made after it: the watch holds what the Hub offers while it
// reads, and delivers it after its first state. That Hub read is old
// news and must not be delivered: in normal operation a watch never
// delivers an older revision after a newer one.
func TestWatchJoiningDuringAHubReadNeverGoesBack(t *testing.T) {
	st, c := internalStore(t)
	ctx := t.Context()
	held, rev1, err := st.CompareAndSwap(ctx, "n", 0, lease.Record[string]{Holder: "a", LeaseDuration: time.Second, Metadata: "m"})
	if err != nil {
		t.Fatal(err)
	}
	hubRead, err := c.HGetAll(ctx, st.key("n")).Result() // the Hub's read, at rev1
	if err != nil {
		t.Fatal(err)
	}
	_, rev2, err := st.CompareAndSwap(ctx, "n", rev1, held)
	if err != nil {
		t.Fatal(err)
	}
	first, err := st.current(ctx, "n") // the joining watch's own read, at rev2
	if err != nil || first.Revision != rev2 {
		t.Fatalf("first read %+v, %v; want rev %d", first, err, rev2)
	}
	next := st.watcher("Watch", "n").Next
	if ev, ok := next(msg{first: first}); !ok || ev.Revision != rev2 {
		t.Fatalf("first state: %+v, %v; want rev %d delivered", ev, ok, rev2)
	}
	// What the Hub offered while the watch read: its read, then the
	// renewal it heard after it.
	if ev, ok := next(msg{read: true, hash: hubRead}); ok {
		t.Fatalf("the Hub's read at %d delivered after the first state at %d: %d", rev1, rev2, ev.Revision)
	}
}
