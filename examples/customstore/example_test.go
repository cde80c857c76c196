package endpointstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	endpointstore "github.com/tenure-go/tenure/examples/customstore"
	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/storeurl"
)

// TestMain registers the endpoints:// scheme once, as a program's main
// does.
func TestMain(m *testing.M) {
	if err := endpointstore.Register(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// Electors on the custom store, opened by URL: the follower learns where
// the leader serves from its Leaders channel.
func Example() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// endpointstore.Register() ran once, in main (TestMain here).
	st, err := storeurl.Open[endpointstore.Endpoint](ctx, &storeurl.Opener{}, "endpoints://demo")
	if err != nil {
		panic(err)
	}
	start := func(id, addr string) *lead.Elector[endpointstore.Endpoint] {
		e, err := lead.New("api", st, lead.WithIdentity(id), lead.WithLookupEnv(nil))
		if err != nil {
			panic(err)
		}
		if err := e.SetMetadata(endpointstore.Endpoint{Addr: addr}); err != nil {
			panic(err)
		}
		go e.Run(ctx)
		return e
	}
	a := start("api-1", "10.0.0.1:8080")
	_ = a.Lead(ctx, func(context.Context, lead.Term) error { return nil }) // api-1 leads
	b := start("api-2", "10.0.0.2:8080")

	leaders, err := b.Leaders(ctx)
	if err != nil {
		panic(err)
	}
	for l := range leaders {
		if l.Holder != "" {
			fmt.Printf("api-2 sends writes to %s at %s\n", l.Holder, l.Record.Metadata.Addr)
			break
		}
	}
	// Output:
	// api-2 sends writes to api-1 at 10.0.0.1:8080
}

// The same stores open as JSON, as the tenure command reads them.
func TestOpensForTheCommand(t *testing.T) {
	ctx := context.Background()
	st, err := storeurl.Open[endpointstore.Endpoint](ctx, &storeurl.Opener{}, "endpoints://cli")
	if err != nil {
		t.Fatal(err)
	}
	e, err := lead.New("api", st, lead.WithIdentity("api-1"), lead.WithLookupEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.SetMetadata(endpointstore.Endpoint{Addr: "10.0.0.1:8080"}); err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	go e.Run(runCtx)
	if err := e.Lead(runCtx, func(context.Context, lead.Term) error { return nil }); err != nil {
		t.Fatal(err)
	}
	raw, err := storeurl.Open[[]byte](ctx, &storeurl.Opener{}, "endpoints://cli")
	if err == nil {
		t.Fatalf("opened for []byte, which nothing registered: %T", raw)
	}
	js, err := storeurl.Open[json.RawMessage](ctx, &storeurl.Opener{}, "endpoints://cli")
	if err != nil {
		t.Fatal(err)
	}
	rec, _, err := js.Get(ctx, "api")
	if err != nil || rec.Holder != "api-1" || string(rec.Metadata) != `{"addr":"10.0.0.1:8080"}` {
		t.Fatalf("Get through the JSON view: %+v %s %v", rec, rec.Metadata, err)
	}
	cancel()
	<-e.Done()
}
