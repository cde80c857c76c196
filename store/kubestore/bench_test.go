package kubestore_test

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// BenchmarkHandoverAfterRelease measures the time from a leader being told
// to stop (it releases the Lease) to its successor leading, with three
// contenders and the same timings (electorConfig: 2s lease, 1.5s renew
// deadline, 200ms retry interval) for Tenure, whose followers learn of the
// release through a watch, and for client-go's leaderelection
// (ReleaseOnCancel: true), whose followers poll every RetryPeriod.
func BenchmarkHandoverAfterRelease(b *testing.B) {
	for _, side := range []string{"tenure", "client-go"} {
		b.Run(side, func(b *testing.B) {
			e := newEnv(b, "bench-handover")
			c := newContenders(b, e, electorConfig())
			spawn := func(id string) {
				if side == "tenure" {
					c.tenure(id, true)
				} else {
					c.clientGo(id, true)
				}
			}
			for _, id := range []string{"a", "b", "c"} {
				spawn(id)
			}
			leader, _ := c.led.next(b, eventTimeout)
			var took []time.Duration
			b.ResetTimer()
			for range b.N {
				stopping := time.Now()
				c.stop[leader]()
				next, at := c.led.next(b, eventTimeout)
				took = append(took, at.Sub(stopping))
				b.StopTimer()
				spawn(leader)
				leader = next
				b.StartTimer()
			}
			b.StopTimer()
			c.led.check(b)
			reportDurations(b, took, "handover")
		})
	}
}

// reportDurations reports the mean, median and 90th percentile of ds in
// milliseconds.
func reportDurations(b *testing.B, ds []time.Duration, what string) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(sum/time.Duration(len(ds))), "ms/"+what)
	b.ReportMetric(ms(ds[len(ds)/2]), "p50-ms/"+what)
	b.ReportMetric(ms(ds[len(ds)*9/10]), "p90-ms/"+what)
}

// counter counts the HTTP requests of one client by kind ("PUT", "GET",
// "WATCH", ...) and signals every PUT (a renewal) on puts.
type counter struct {
	mu    sync.Mutex
	kinds map[string]int
	puts  chan struct{}
}

func newCounter() *counter {
	return &counter{kinds: map[string]int{}, puts: make(chan struct{}, 1<<16)}
}

func (c *counter) wrap(cfg *rest.Config) {
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			kind := r.Method
			if r.URL.Query().Get("watch") == "true" || strings.Contains(r.URL.Path, "/watch/") {
				kind = "WATCH"
			}
			c.mu.Lock()
			c.kinds[kind]++
			c.mu.Unlock()
			if kind == http.MethodPut {
				select {
				case c.puts <- struct{}{}:
				default:
				}
			}
			return rt.RoundTrip(r)
		})
	}
}

// reset zeroes the counts and drops pending signals.
func (c *counter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.kinds)
	for len(c.puts) > 0 {
		<-c.puts
	}
}

func (c *counter) snapshot() (total int, kinds map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	kinds = map[string]int{}
	for k, n := range c.kinds {
		kinds[k] = n
		if k != "WATCH" {
			total += n
		}
	}
	return total, kinds
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// BenchmarkRoundTripsPerRenewal counts the requests a leader makes per
// renewal (one PUT each), and those a follower makes meanwhile, for Tenure
// and for client-go's leaderelection with the same timings. Watch requests
// are long-running and counted apart. b.N is the number of renewals
// waited for: run with -benchtime=50x or so.
func BenchmarkRoundTripsPerRenewal(b *testing.B) {
	for _, side := range []string{"tenure", "client-go"} {
		b.Run(side, func(b *testing.B) {
			e := newEnv(b, "bench-renewal")
			c := newContenders(b, e, electorConfig())
			counters := map[string]*counter{"leader": newCounter(), "follower": newCounter()}
			c.wrap = func(id string, cfg *rest.Config) { counters[id].wrap(cfg) }
			spawn := func(id string) {
				if side == "tenure" {
					c.tenure(id, true)
				} else {
					c.clientGo(id, true)
				}
			}
			spawn("leader")
			if id, _ := c.led.next(b, eventTimeout); id != "leader" {
				b.Fatalf("%s leads", id)
			}
			spawn("follower")
			// Settle: let the follower start watching or polling.
			leader := counters["leader"]
			for range 3 {
				<-leader.puts
			}
			for _, cnt := range counters {
				cnt.reset()
			}
			b.ResetTimer()
			for range b.N {
				<-leader.puts
			}
			b.StopTimer()
			total, kinds := leader.snapshot()
			ftotal, fkinds := counters["follower"].snapshot()
			renewals := kinds["PUT"]
			b.ReportMetric(float64(total)/float64(renewals), "requests/renewal")
			b.ReportMetric(float64(ftotal)/float64(renewals), "follower-requests/renewal")
			b.Logf("%d renewals: leader %v, follower %v", renewals, kinds, fkinds)
			c.led.check(b)
		})
	}
}
