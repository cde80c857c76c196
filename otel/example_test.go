package tenureotel_test

import (
	"context"
	"fmt"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/tenure-go/tenure/lead"
	tenureotel "github.com/tenure-go/tenure/otel"
	"github.com/tenure-go/tenure/store/memstore"
)

// An elector's acquire and release, as spans. In a service the providers
// carry an exporter's reader and span processor instead.
func Example() {
	spans := tracetest.NewSpanRecorder()
	tel, err := tenureotel.New(
		tenureotel.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))),
		tenureotel.WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))))
	if err != nil {
		panic(err)
	}
	started := make(chan struct{}, 1)
	opts := append(tel.Options(), lead.WithLookupEnv(nil), lead.WithObserver(func(c lead.Change) {
		if c.Kind == lead.Started {
			started <- struct{}{}
		}
	}))
	e, err := lead.New("nightly", memstore.New[struct{}](), opts...)
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go e.Run(ctx)
	<-started
	cancel()
	<-e.Done()
	for _, s := range spans.Ended() {
		if s.Name() == "tenure.renew" {
			continue // how many depends on timing
		}
		fmt.Print(s.Name())
		for _, a := range s.Attributes() {
			fmt.Printf(" %s=%s", a.Key, a.Value.String())
		}
		fmt.Println()
	}
	// Output:
	// tenure.acquire tenure.election.name=nightly tenure.token=1 tenure.outcome=ok
	// tenure.release tenure.election.name=nightly tenure.token=1 tenure.outcome=ok
}
