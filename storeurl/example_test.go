package storeurl_test

import (
	"context"
	"fmt"
	"net/url"

	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/store/memstore"
	"github.com/tenure-go/tenure/storeurl"
)

// inmem is a custom store: here a memstore with Close.
type inmem struct{ *memstore.Store[string] }

func (inmem) Close() error { return nil }

// openInmem opens inmem://NAME: a new store each time (a real opener
// would connect to the server the URL names).
func openInmem() storeurl.OpenFunc[string] {
	return func(_ context.Context, u *url.URL) (storeurl.Store[string], error) {
		if u.Host == "" {
			return nil, fmt.Errorf("want inmem://NAME")
		}
		return inmem{memstore.New[string]()}, nil
	}
}

// A program registers its schemes once, before it opens any URL: in main,
// or in an init function as here.
func init() {
	if err := storeurl.Register("inmem", openInmem()); err != nil {
		panic(err)
	}
}

func ExampleRegister() {
	ctx := context.Background()
	st, err := storeurl.Open[string](ctx, &storeurl.Opener{}, "inmem://jobs")
	if err != nil {
		panic(err)
	}
	e, err := lead.New("nightly", st, lead.WithIdentity("worker-1"), lead.WithLookupEnv(nil))
	if err != nil {
		panic(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go e.Run(runCtx)
	_ = e.Lead(runCtx, func(_ context.Context, t lead.Term) error {
		fmt.Println(t.Identity, "leads through inmem:// with token", t.Token)
		return nil
	})

	// A scheme is registered once per metadata type, and never one that
	// storeurl serves itself.
	fmt.Println(storeurl.Register("inmem", openInmem()))
	fmt.Println(storeurl.Register("redis", openInmem()))
	_, err = storeurl.Open[int](ctx, &storeurl.Opener{}, "inmem://jobs")
	fmt.Println(err)
	// Output:
	// worker-1 leads through inmem:// with token 1
	// storeurl: scheme already registered: "inmem" for metadata of type string
	// storeurl: invalid scheme: "redis" is served by storeurl itself
	// storeurl: unknown scheme: "inmem" in "inmem://jobs" is registered for metadata of type string, not int (see Register)
}
