package redisstore_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/redisstore"
)

// counter is a go-redis hook that counts the round trips a client makes (a
// command alone, or a pipeline: the Store pipelines its reads and swaps)
// and the script runs among their commands.
type counter struct {
	roundTrips atomic.Int64
	scripts    atomic.Int64
}

func (c *counter) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return next(ctx, network, addr)
	}
}

func (c *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.roundTrips.Add(1)
		c.countScript(cmd)
		return next(ctx, cmd)
	}
}

func (c *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.roundTrips.Add(1)
		for _, cmd := range cmds {
			c.countScript(cmd)
		}
		return next(ctx, cmds)
	}
}

// countScript counts cmd if it runs a script.
func (c *counter) countScript(cmd redis.Cmder) {
	if name := strings.ToLower(cmd.Name()); name == "evalsha" || name == "eval" {
		c.scripts.Add(1)
	}
}

// countedStore returns a store, under a prefix of the benchmark's own, on a
// client of the package's server with a counter hooked in.
func countedStore(b *testing.B) (*redisstore.Store[meta], *counter, *testcluster.Redis) {
	srv := testcluster.PackageRedis(b)
	c := srv.Client(b)
	n := &counter{}
	c.AddHook(n)
	st, err := redisstore.New[meta](c, redisstore.WithPrefix(uniquePrefix(b)))
	if err != nil {
		b.Fatal(err)
	}
	return st, n, srv
}

// One renewal is one CompareAndSwap: one round trip.
func BenchmarkRenew(b *testing.B) {
	st, n, srv := countedStore(b)
	ctx := context.Background()
	r, rev, err := st.CompareAndSwap(ctx, "renew", 0, rec("a", 1))
	if err != nil {
		b.Fatal(err)
	}
	// Counted from here, not reset: CONFIG RESETSTAT would turn the create
	// gate off on the package's server until it restarts.
	admin := srv.Client(b)
	calls0, usec0 := scriptStats(b, admin)
	n.roundTrips.Store(0)
	b.ResetTimer()
	for b.Loop() {
		r.RenewedAt = time.Now()
		if r, rev, err = st.CompareAndSwap(ctx, "renew", rev, r); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n.roundTrips.Load())/float64(b.N), "roundtrips/op")
	// What the server spent in the script, from INFO commandstats.
	calls, usec := scriptStats(b, admin)
	calls, usec = calls-calls0, usec-usec0
	b.ReportMetric(float64(calls)/float64(b.N), "scripts/op")
	b.ReportMetric(float64(usec)/float64(calls), "server-µs/op")
}

// scriptStats returns the calls of EVALSHA and EVAL and the microseconds the
// server spent in them since the last CONFIG RESETSTAT.
func scriptStats(b *testing.B, c *redis.Client) (calls, usec int64) {
	b.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(info) {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "cmdstat_evalsha:") && !strings.HasPrefix(line, "cmdstat_eval:") {
			continue
		}
		_, stats, _ := strings.Cut(line, ":")
		for field := range strings.SplitSeq(stats, ",") {
			k, v, _ := strings.Cut(field, "=")
			var x int64
			fmt.Sscan(v, &x)
			switch k {
			case "calls":
				calls += x
			case "usec":
				usec += x
			}
		}
	}
	return calls, usec
}

// Renewals per second for 1,000 elections sharing one client, from 64
// goroutines: the capacity of one client and one server.
func BenchmarkRenewThousandElections(b *testing.B) {
	const elections = 1000
	st, n, _ := countedStore(b)
	ctx := context.Background()
	type held struct {
		mu  sync.Mutex
		r   lease.Record[meta]
		rev lease.Revision
	}
	all := make([]*held, elections)
	for i := range all {
		r, rev, err := st.CompareAndSwap(ctx, fmt.Sprint("election-", i), 0, rec(fmt.Sprint("holder-", i), 1))
		if err != nil {
			b.Fatal(err)
		}
		all[i] = &held{r: r, rev: rev}
	}
	var next atomic.Int64
	n.roundTrips.Store(0)
	b.SetParallelism(32) // 32 * GOMAXPROCS goroutines
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := int(next.Add(1)) % elections
			h := all[i]
			h.mu.Lock()
			h.r.RenewedAt = time.Now()
			r, rev, err := st.CompareAndSwap(ctx, fmt.Sprint("election-", i), h.rev, h.r)
			if err == nil {
				h.r, h.rev = r, rev
			}
			h.mu.Unlock()
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
	elapsed := time.Since(start)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "renewals/s")
	b.ReportMetric(float64(n.roundTrips.Load())/float64(b.N), "roundtrips/op")
}

// precreateReleased writes a released record for name, so that the first
// electors need not wait out an absent record (the store may lose records,
// so electors wait LeaseDuration before they create one).
func precreateReleased(b *testing.B, st *redisstore.Store[meta], name string) {
	b.Helper()
	r := rec("", 1)
	if _, _, err := st.CompareAndSwap(context.Background(), name, 0, r); err != nil {
		b.Fatal(err)
	}
}

// Round trips per renewal of a real elector (all its traffic, watch
// included, divided by its renewals), and renewals per second of 1,000
// electors, each leading an election of its own, on one client.
func BenchmarkElectorRenewals(b *testing.B) {
	for _, elections := range []int{1, 1000} {
		b.Run(fmt.Sprintf("elections=%d", elections), func(b *testing.B) {
			benchElectors(b, elections)
		})
	}
}

func benchElectors(b *testing.B, elections int) {
	st, n, _ := countedStore(b)
	cfg := lease.Config{
		LeaseDuration:  10 * time.Second,
		RenewDeadline:  5 * time.Second,
		RetryInterval:  100 * time.Millisecond,
		RetryJitter:    0.1,
		BackendTimeout: 2 * time.Second,
		ErrorInterval:  time.Minute,
	}
	if elections == 1 {
		cfg.RetryInterval = time.Millisecond // as fast as it goes
	}
	started := make(chan struct{}, elections)
	var stopped atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	b.Cleanup(func() { cancel(); wg.Wait() })
	for i := range elections {
		precreateReleased(b, st, fmt.Sprint("election-", i))
	}
	for i := range elections {
		name := fmt.Sprint("election-", i)
		e, err := lead.New(name, st, lead.WithIdentity(fmt.Sprint("node-", i)), lead.WithConfig(cfg), lead.WithLookupEnv(nil),
			lead.WithObserver(func(ch lead.Change) {
				if ch.Kind == lead.Started {
					started <- struct{}{}
				} else {
					stopped.Add(1)
				}
			}))
		if err != nil {
			b.Fatal(err)
		}
		wg.Go(func() { _ = e.Run(ctx) })
	}
	for range elections {
		select {
		case <-started:
		case <-time.After(time.Minute):
			b.Fatal("not every elector leads after a minute")
		}
	}
	b.ResetTimer()
	trips0, scripts0 := n.roundTrips.Load(), n.scripts.Load()
	start := time.Now()
	// Wait until the electors have renewed b.N times. There is no event
	// per renewal to wait on, so poll the counter.
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for n.scripts.Load()-scripts0 < int64(b.N) {
		<-tick.C
	}
	elapsed := time.Since(start)
	b.StopTimer()
	renewals := n.scripts.Load() - scripts0
	b.ReportMetric(float64(n.roundTrips.Load()-trips0)/float64(renewals), "roundtrips/renewal")
	b.ReportMetric(float64(renewals)/elapsed.Seconds(), "renewals/s")
	if s := stopped.Load(); s != 0 {
		b.Fatalf("%d electors stopped leading during the benchmark", s)
	}
}

// Handover after a release, with the default timings (RetryInterval 2s) and
// with a RetryInterval twenty times shorter: the successor hears of the
// release through Watch and leads within about a millisecond, however long
// RetryInterval is.
func BenchmarkHandoverAfterRelease(b *testing.B) {
	for _, retry := range []time.Duration{2 * time.Second, 100 * time.Millisecond} {
		b.Run(fmt.Sprint("RetryInterval=", retry), func(b *testing.B) {
			cfg := lease.DefaultConfig()
			cfg.RetryInterval = retry
			benchHandover(b, cfg)
		})
	}
}

func benchHandover(b *testing.B, cfg lease.Config) {
	srv := testcluster.PackageRedis(b)
	admin := srv.Client(b)
	prefix := uniquePrefix(b)
	st, err := redisstore.New[meta](admin, redisstore.WithPrefix(prefix))
	if err != nil {
		b.Fatal(err)
	}
	precreateReleased(b, st, "job")
	channel, err := st.Channel("job")
	if err != nil {
		b.Fatal(err)
	}
	type node struct {
		cancel context.CancelFunc
		done   <-chan struct{}
	}
	changes := make(chan testcluster.Change, 100)
	nodes := map[string]node{}
	count := 0
	startNode := func() {
		count++
		id := fmt.Sprint("node-", count)
		st, err := redisstore.New[meta](srv.Client(b), redisstore.WithPrefix(prefix))
		if err != nil {
			b.Fatal(err)
		}
		e, err := lead.New("job", st, lead.WithIdentity(id), lead.WithConfig(cfg), lead.WithLookupEnv(nil),
			lead.WithObserver(func(ch lead.Change) { changes <- testcluster.Change{ID: id, Change: ch, At: time.Now()} }))
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		go func() { _ = e.Run(ctx) }()
		nodes[id] = node{cancel, e.Done()}
		b.Cleanup(func() { cancel(); <-e.Done() })
	}
	// watching waits until k electors watch the election: a follower that
	// does not watch yet would find the release only at its next poll.
	// There is no event for "subscribed", so poll the server.
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	watching := func(k int64) {
		deadline := time.Now().Add(time.Minute)
		for ; ; <-tick.C {
			m, err := admin.PubSubNumSub(context.Background(), channel).Result()
			if err != nil {
				b.Fatal(err)
			}
			if m[channel] == k {
				return
			}
			if time.Now().After(deadline) {
				b.Fatalf("%d watchers, want %d", m[channel], k)
			}
		}
	}
	nextStarted := func() testcluster.Change {
		for {
			select {
			case ch := <-changes:
				if ch.Kind == lead.Started {
					return ch
				}
			case <-time.After(time.Minute):
				b.Fatal("nobody started leading within a minute")
			}
		}
	}
	for range 3 {
		startNode()
	}
	leader := nextStarted()
	var total time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		watching(3)
		b.StartTimer()
		stopAt := time.Now()
		nodes[leader.ID].cancel()
		next := nextStarted()
		took := next.At.Sub(stopAt)
		b.StopTimer()
		total += took
		<-nodes[leader.ID].done
		delete(nodes, leader.ID)
		startNode()
		leader = next
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N), "µs/handover")
}

// Connections to the server held by 1,000 and 10,000 electors, each
// following an election of its own (a holder outside the benchmark holds
// every lease), on one client: the most seen in CLIENT LIST over three
// seconds, once every elector watches, against the client's pool size.
// Run it once: -benchtime 1x.
func BenchmarkWatchConnections(b *testing.B) {
	for _, elections := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("elections=%d", elections), func(b *testing.B) {
			benchWatchConnections(b, elections)
		})
	}
}

func benchWatchConnections(b *testing.B, elections int) {
	srv := testcluster.PackageRedis(b)
	opts := srv.Options()
	opts.ClientName = fmt.Sprintf("bench-%d", time.Now().UnixNano())
	c := redis.NewClient(opts)
	b.Cleanup(func() { _ = c.Close() })
	admin := srv.Client(b)
	prefix := uniquePrefix(b)
	st, err := redisstore.New[meta](c, redisstore.WithPrefix(prefix))
	if err != nil {
		b.Fatal(err)
	}
	// Long timings: the figure is about connections, not speed, and the
	// machine is shared.
	cfg := lease.Config{
		LeaseDuration:  time.Hour,
		RenewDeadline:  40 * time.Minute,
		RetryInterval:  10 * time.Second,
		RetryJitter:    0.1,
		BackendTimeout: 5 * time.Second,
		ErrorInterval:  time.Minute,
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	b.Cleanup(func() { cancel(); wg.Wait() })
	held := rec("outsider", 1)
	held.LeaseDuration = time.Hour
	for i := range elections {
		if _, _, err := st.CompareAndSwap(ctx, fmt.Sprint("e-", i), 0, held); err != nil {
			b.Fatal(err)
		}
	}
	for i := range elections {
		e, err := lead.New(fmt.Sprint("e-", i), st, lead.WithIdentity(fmt.Sprint("node-", i)), lead.WithConfig(cfg), lead.WithLookupEnv(nil))
		if err != nil {
			b.Fatal(err)
		}
		wg.Go(func() { _ = e.Run(ctx) })
	}
	// Every elector watches once the server counts a subscribed channel
	// per election. There is no event for that: poll.
	pattern := strings.NewReplacer("*", `\*`, "?", `\?`, "[", `\[`, "]", `\]`).Replace(prefix) + "*"
	deadline := time.Now().Add(2 * time.Minute)
	for {
		chans, err := admin.PubSubChannels(ctx, pattern).Result()
		if err != nil {
			b.Fatal(err)
		}
		if len(chans) == elections {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d channels subscribed after two minutes", len(chans), elections)
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.ResetTimer()
	most, mostPubsub := 0, 0
	for range 30 {
		list, err := admin.Do(ctx, "CLIENT", "LIST").Text()
		if err != nil {
			b.Fatal(err)
		}
		total, pubsub := 0, 0
		for line := range strings.Lines(list) {
			if !strings.Contains(line, " name="+opts.ClientName+" ") {
				continue
			}
			total++
			for field := range strings.FieldsSeq(line) {
				if n, ok := strings.CutPrefix(field, "sub="); ok && n != "0" {
					pubsub++
				}
			}
		}
		most, mostPubsub = max(most, total), max(mostPubsub, pubsub)
		time.Sleep(100 * time.Millisecond)
	}
	b.StopTimer()
	b.ReportMetric(float64(most), "connections")
	b.ReportMetric(float64(mostPubsub), "pubsub-connections")
	b.ReportMetric(float64(c.Options().PoolSize), "pool-size")
}

// Time from starting one elector, at the default timings, on a name that
// has never had a record to its first term:
//
//   - dataset=fresh: on a prefix nobody has used (no create gate marker
//     yet, as after FLUSHALL): the create is a claim that must stand a
//     LeaseDuration (15s). Each op takes that long: run it with -benchtime
//     1x.
//   - dataset=healthy: on a prefix where another elector has led for a
//     LeaseDuration (its swaps attested the marker; not timed), through a
//     Store that had not seen the marker before: the store vouches for
//     the create, which leads at once.
//   - mayLoseRecords=false: no gate, every create leads at once.
func BenchmarkFirstLeader(b *testing.B) {
	first := func(b *testing.B, st *redisstore.Store[meta], name string) time.Duration {
		started := make(chan struct{}, 1)
		e, err := lead.New(name, st, lead.WithLookupEnv(nil),
			lead.WithObserver(func(ch lead.Change) {
				if ch.Kind == lead.Started {
					select {
					case started <- struct{}{}:
					default:
					}
				}
			}))
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		begin := time.Now()
		go func() { defer close(done); _ = e.Run(ctx) }()
		b.Cleanup(func() { cancel(); <-done })
		select {
		case <-started:
			return time.Since(begin)
		case <-time.After(time.Minute):
			b.Fatal("no leader after a minute")
		}
		return 0
	}
	srv := testcluster.PackageRedis(b)
	newStore := func(b *testing.B, prefix string, opts ...redisstore.Option) *redisstore.Store[meta] {
		st, err := redisstore.New[meta](srv.Client(b), append([]redisstore.Option{redisstore.WithPrefix(prefix)}, opts...)...)
		if err != nil {
			b.Fatal(err)
		}
		return st
	}
	report := func(b *testing.B, total time.Duration) {
		b.ReportMetric(float64(total)/float64(time.Millisecond)/float64(b.N), "ms/first-leader")
	}
	b.Run("dataset=fresh", func(b *testing.B) {
		var total time.Duration
		for i := range b.N {
			total += first(b, newStore(b, fmt.Sprintf("%s%d:", uniquePrefix(b), i)), "new")
		}
		report(b, total)
	})
	b.Run("dataset=healthy", func(b *testing.B) {
		prefix := uniquePrefix(b)
		// A claim: one LeaseDuration. The swap that takes it over attests
		// the marker for that long (its Store saw the marker before the
		// claim's reply, from which the elector waited).
		first(b, newStore(b, prefix), "warm")
		// Another Store: a process that never saw the marker.
		st := newStore(b, prefix)
		var total time.Duration
		for i := range b.N {
			total += first(b, st, fmt.Sprint("new-", i))
		}
		report(b, total)
	})
	b.Run("mayLoseRecords=false", func(b *testing.B) {
		st := newStore(b, uniquePrefix(b), redisstore.WithMayLoseRecords(false))
		var total time.Duration
		for i := range b.N {
			total += first(b, st, fmt.Sprint("new-", i))
		}
		report(b, total)
	})
}

// BenchmarkSteadyStateTraffic measures what three electors, each on a
// client of its own, send in steady state with the peer timings (L=3s,
// RenewDeadline 2s, RetryInterval 400ms): commands per second per follower
// (Pub/Sub apart), and the leader's commands per renewal. One op is a 30s
// window: run it with -benchtime 1x.
func BenchmarkSteadyStateTraffic(b *testing.B) {
	srv := testcluster.PackageRedis(b)
	prefix := uniquePrefix(b)
	for b.Loop() {
		stores := make([]testcluster.Counted[meta], 3)
		for i := range stores {
			c := srv.Client(b)
			n := &counter{}
			c.AddHook(n)
			st, err := redisstore.New[meta](c, redisstore.WithPrefix(prefix))
			if err != nil {
				b.Fatal(err)
			}
			stores[i] = testcluster.Counted[meta]{Store: st, Requests: n.roundTrips.Load}
		}
		t := testcluster.MeasureTraffic(b, "traffic", testcluster.PeerConfig(), stores, 30*time.Second)
		b.Logf("redisstore: %v", t)
		b.ReportMetric(t.FollowerPerSecond, "follower-req/s")
		b.ReportMetric(t.LeaderPerRenewal, "leader-req/renewal")
	}
}

// BenchmarkHandoverPeerConfig measures the handover after a release among
// three electors, each on a client of its own, with the peer timings:
// p50 and p90 of the time from the leader's stop to its successor leading.
// One op is testcluster.Handovers (20 unless
// TENURE_HANDOVERS says) handovers.
func BenchmarkHandoverPeerConfig(b *testing.B) {
	srv := testcluster.PackageRedis(b)
	prefix := uniquePrefix(b)
	for b.Loop() {
		hs := testcluster.MeasureHandover(b, "handover", testcluster.PeerConfig(), testcluster.Handovers(b), func(tb testing.TB) store.Store[meta] {
			st, err := redisstore.New[meta](srv.Client(tb), redisstore.WithPrefix(prefix))
			if err != nil {
				tb.Fatal(err)
			}
			return st
		})
		testcluster.ReportHandover(b, "redisstore", hs)
	}
}

// BenchmarkHandoverNamed measures, with the peer timings, the handover to
// a named successor (Elector.HandOver) beside the handover after a plain
// release, alternated in one run: p50 and p90 of each, from the stop or
// the HandOver call to the successor leading. One op is
// testcluster.Handovers (20 unless TENURE_HANDOVERS says) of each.
func BenchmarkHandoverNamed(b *testing.B) {
	srv := testcluster.PackageRedis(b)
	prefix := uniquePrefix(b)
	for b.Loop() {
		plain, named := testcluster.MeasureNamedHandover(b, "handover", testcluster.PeerConfig(), testcluster.Handovers(b), func(tb testing.TB) store.Store[meta] {
			st, err := redisstore.New[meta](srv.Client(tb), redisstore.WithPrefix(prefix))
			if err != nil {
				tb.Fatal(err)
			}
			return st
		})
		testcluster.ReportNamedHandover(b, "redisstore", plain, named)
	}
}
