package storetest

import (
	"slices"
	"strings"
	"testing"

	"github.com/tenure-go/tenure/store"
)

// The recorder notes each breach of a WatchFunc callback's contract.
func TestRecorderNotesBreaches(t *testing.T) {
	has := func(r *recorder[int], want string) {
		t.Helper()
		ps := r.report()
		if !slices.ContainsFunc(ps, func(p string) bool { return strings.Contains(p, want) }) {
			t.Errorf("problems %q, want one saying %q", ps, want)
		}
	}
	r := &recorder[int]{out: make(chan store.Event[int], recorderRoom)}
	r.call(store.Event[int]{Absent: true}, true)
	if ps := r.report(); len(ps) != 0 {
		t.Fatalf("problems after one good call: %q", ps)
	}
	r.running.Add(1) // as if another call were running
	r.call(store.Event[int]{Revision: 1}, true)
	r.running.Add(-1)
	has(r, "while another call")
	r.call(store.Event[int]{}, false)
	if _, ok := <-r.out; !ok {
		t.Fatal("the events before false were not kept")
	}
	<-r.out
	if _, ok := <-r.out; ok {
		t.Fatal("out not closed at the call with false")
	}
	r.call(store.Event[int]{Revision: 2}, true)
	has(r, "after the call with false")
	r.call(store.Event[int]{}, false)
	has(r, "false twice")

	r = &recorder[int]{out: make(chan store.Event[int], recorderRoom)}
	r.call(store.Event[int]{Revision: 3}, false)
	has(r, "non-zero event")

	r = &recorder[int]{out: make(chan store.Event[int], 1)}
	r.call(store.Event[int]{Revision: 1}, true)
	r.call(store.Event[int]{Revision: 2}, true)
	has(r, "not yet read")

	r = &recorder[int]{out: make(chan store.Event[int], recorderRoom)}
	r.refuse()
	r.call(store.Event[int]{}, false)
	has(r, "returned an error")
}
