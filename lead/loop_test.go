package lead

import (
	"fmt"
	"testing"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

// A watch event showing the record at the revision the machine holds is
// not posted to the loop; every other event is.
func TestPostWatchDropsOnlyTheRevisionAccepted(t *testing.T) {
	rec := lease.Record[struct{}]{Holder: "a", Token: 3}
	corrupt := fmt.Errorf("%w: bad field", store.ErrCorruptRecord)
	for _, tc := range []struct {
		name     string
		accepted lease.Revision
		ev       store.Event[struct{}]
		posted   bool
	}{
		{"the revision accepted", 7, store.Event[struct{}]{Record: rec, Revision: 7}, false},
		{"a newer revision", 7, store.Event[struct{}]{Record: rec, Revision: 8}, true},
		{"an older revision", 7, store.Event[struct{}]{Record: rec, Revision: 6}, true},
		{"an unreadable record at the revision accepted", 7, store.Event[struct{}]{Revision: 7, Err: corrupt}, true},
		{"no record, with a record accepted", 7, store.Event[struct{}]{Absent: true}, true},
		{"no record, with none accepted", 0, store.Event[struct{}]{Absent: true}, true},
		{"a record, with none accepted", 0, store.Event[struct{}]{Record: rec, Revision: 1}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLoop[struct{}]()
			r := &runner[struct{}]{loop: l}
			r.accepted.Store(uint64(tc.accepted))
			l.postWatch(r, 1, tc.ev, true)
			if got := len(l.queue) == 1; got != tc.posted {
				t.Fatalf("posted %v (queue %d), want %v", got, len(l.queue), tc.posted)
			}
		})
	}
}
