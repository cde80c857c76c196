package watchutil_test

import (
	"context"
	"fmt"

	"github.com/tenure-go/tenure/store/watchutil"
)

// A store that keeps its states itself (here the holder's name, "" for
// none) publishes each new one; watchers receive store.Event values, or
// anything else, built by conv as each is delivered.
func ExampleHub() {
	type event struct {
		Name, Holder string
		Absent       bool
	}
	h := watchutil.NewHub[string, string](nil, watchutil.HubOptions{})
	conv := func(holder string) event {
		return event{Name: "billing", Holder: holder, Absent: holder == ""}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// Under the store's lock: the current state, then each new one.
	events, err := watchutil.Watch(ctx, h, "billing", watchutil.Every("", conv))
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
