package kubestore_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
)

// watchMeter counts, on a client's transport, the watch requests sent, the
// watches open (answered and not yet closed), and the distinct Leases read
// with a GET.
type watchMeter struct {
	next    http.RoundTripper
	started atomic.Int64
	open    atomic.Int64

	mu  sync.Mutex
	got map[string]struct{}
}

func (m *watchMeter) RoundTrip(req *http.Request) (*http.Response, error) {
	if w := req.URL.Query().Get("watch"); w != "true" && w != "1" {
		if req.Method == http.MethodGet {
			m.mu.Lock()
			m.got[req.URL.Path] = struct{}{}
			m.mu.Unlock()
		}
		return m.next.RoundTrip(req)
	}
	m.started.Add(1)
	resp, err := m.next.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	m.open.Add(1)
	resp.Body = &watchBody{ReadCloser: resp.Body, m: m}
	return resp, nil
}

func (m *watchMeter) reads() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.got)
}

// watchBody is a watch's response body; closing it ends the watch.
type watchBody struct {
	io.ReadCloser
	m    *watchMeter
	once sync.Once
}

func (b *watchBody) Close() error {
	b.once.Do(func() { b.m.open.Add(-1) })
	return b.ReadCloser.Close()
}

// BenchmarkWatchRequests counts the API-server watches held by 1,000
// electors in one process on one Store, each following an election of its
// own (a holder outside the benchmark holds every Lease): the most open at
// once over ten seconds, once every elector has read its Lease, and the
// watch requests sent by then. Run it once: -benchtime 1x.
func BenchmarkWatchRequests(b *testing.B) {
	const elections = 1000
	e := newEnv(b, "watches")
	meter := &watchMeter{got: map[string]struct{}{}}
	cfg := rest.CopyConfig(e.k.Config())
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		meter.next = rt
		return meter
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	st := newStore[meta](b, client, e.ns)
	holder := newStore[meta](b, e.client, e.ns)
	// Long timings: the figure is about watches, not speed, and the
	// machine is shared.
	lc := lease.Config{
		LeaseDuration:  time.Hour,
		RenewDeadline:  40 * time.Minute,
		RetryInterval:  10 * time.Minute,
		RetryJitter:    0.1,
		BackendTimeout: 10 * time.Second,
		ErrorInterval:  time.Minute,
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	b.Cleanup(func() { cancel(); wg.Wait() })
	held := record("outsider", 1)
	held.LeaseDuration = time.Hour
	for i := range elections {
		if _, _, err := holder.CompareAndSwap(ctx, fmt.Sprint("e-", i), 0, held); err != nil {
			b.Fatal(err)
		}
	}
	for i := range elections {
		el, err := lead.New(fmt.Sprint("e-", i), st, lead.WithIdentity(fmt.Sprint("node-", i)), lead.WithConfig(lc), lead.WithLookupEnv(nil))
		if err != nil {
			b.Fatal(err)
		}
		wg.Go(func() { _ = el.Run(ctx) })
	}
	// Every elector has read its Lease. There is no event for that: poll.
	deadline := time.Now().Add(2 * time.Minute)
	for meter.reads() < elections {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d Leases read after two minutes", meter.reads(), elections)
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.ResetTimer()
	most := int64(0)
	for range 100 {
		most = max(most, meter.open.Load())
		time.Sleep(100 * time.Millisecond)
	}
	b.StopTimer()
	b.ReportMetric(float64(most), "open-watches")
	b.ReportMetric(float64(meter.started.Load()), "watch-requests")
}
