package watchutil_test

import (
	"context"
	"fmt"

	"github.com/tenure-go/tenure/store/watchutil"
)

// A store keeps its states in T (here the holder's name, "" for none) and
// hands watchers store.Event values, or anything else, built by conv.
func ExampleHub() {
	type event struct {
		Name, Holder string
		Absent       bool
	}
	h := watchutil.NewHub(func(name, holder string) event {
		return event{Name: name, Holder: holder, Absent: holder == ""}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// Under the store's lock: the current state, then each new one.
	events, err := h.Watch(ctx, "billing", "")
	if err != nil {
		panic(err)
	}
	fmt.Printf("%+v\n", <-events)
	h.Publish("billing", "pod-a")
	fmt.Printf("%+v\n", <-events)
	// Publish never waits: a state not yet received is replaced by the
	// next one, so a slow watcher skips to the newest.
	h.Publish("billing", "pod-c")
	fmt.Printf("%+v\n", <-events)
	// Output:
	// {Name:billing Holder: Absent:true}
	// {Name:billing Holder:pod-a Absent:false}
	// {Name:billing Holder:pod-c Absent:false}
}
