package endpointstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	endpointstore "github.com/tenure-go/tenure/examples/customstore"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/storetest"
)

// The store passes the conformance suite with its own metadata type.
func TestConformance(t *testing.T) {
	samples := []endpointstore.Endpoint{{}, {Addr: "10.0.0.1:8080", Zones: []string{"eu-west-1a", "eu-west-1b"}}, {Addr: "[::1]:443", Zones: []string{}}}
	for i := range 4 { // a generator
		samples = append(samples, endpointstore.Endpoint{Addr: fmt.Sprintf("10.0.1.%d:80", i), Zones: []string{fmt.Sprint("zone-", i)}})
	}
	storetest.Run(t, func(t *testing.T) store.Store[endpointstore.Endpoint] { return endpointstore.New() },
		storetest.WithSamples(samples...),
		storetest.WithOversized(func() endpointstore.Endpoint {
			return endpointstore.Endpoint{Addr: strings.Repeat("a", store.MaxMetadataBytes)}
		}),
		storetest.WithShared(
			func() endpointstore.Endpoint { return endpointstore.Endpoint{Zones: []string{"before"}} },
			func(e *endpointstore.Endpoint) { e.Zones[0] = "after" }),
	)
}

// The JSON view, which the tenure command uses, passes too. The store keeps
// its records and token floors in its *Store, so a process restart loses
// them (as with memstore) and there is no server to open again; a new
// JSON view over the same *Store is what opening it again means here,
// which storetest.WithReopen checks: the floor lives in the *Store, not in
// a view.
func TestRawConformance(t *testing.T) {
	shared := endpointstore.New()
	storetest.Run(t, func(t *testing.T) store.Store[json.RawMessage] { return endpointstore.Raw(endpointstore.New()) },
		storetest.WithReopen(func(t *testing.T) store.Store[json.RawMessage] { return endpointstore.Raw(shared) }),
		storetest.WithSamples(json.RawMessage(`{"addr":""}`), json.RawMessage(`{"addr":"10.0.0.1:8080","zones":["a","b"]}`)),
		storetest.WithOversized(func() json.RawMessage {
			return json.RawMessage(`{"addr":"` + strings.Repeat("a", store.MaxMetadataBytes) + `"}`)
		}),
	)
}

func TestNilArguments(t *testing.T) {
	var nilStore *endpointstore.Store
	if _, _, err := nilStore.Get(context.Background(), "job"); err == nil {
		t.Fatal("Get on a nil *Store succeeded")
	}
	//lint:ignore SA1012 the nil context is the point
	if _, err := endpointstore.New().Watch(nil, "job"); err == nil {
		t.Fatal("Watch with a nil ctx succeeded")
	}
}
