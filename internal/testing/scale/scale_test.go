//go:build linux

package scale_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/memstore"
	"github.com/tenure-go/tenure/store/pgstore"
	"github.com/tenure-go/tenure/store/redisstore"
)

type meta struct{}

// groups stands for the three processes the leaders are spread over.
const groups = 3

// backend makes the store of one group, and counts the connections all
// groups hold to the server (-1 when there is no server).
type backend struct {
	name  string
	store func(b *testing.B, group int) store.Store[meta]
	conns func(b *testing.B) int
	// requests counts the server's requests that write (script calls
	// on Redis, committed transactions on PostgreSQL); nil: no server.
	requests func(b *testing.B) int64
}

func TestMain(m *testing.M) { testcluster.Main(m) }

func backends() []backend {
	return []backend{
		{
			name: "memstore",
			store: func() func(*testing.B, int) store.Store[meta] {
				var shared *memstore.Store[meta]
				return func(_ *testing.B, group int) store.Store[meta] {
					if group == 0 {
						shared = memstore.New[meta]()
					}
					return shared
				}
			}(),
			conns: func(*testing.B) int { return -1 },
		},
		redisBackend(),
		postgresBackend(),
	}
}

func redisBackend() backend {
	prefix := fmt.Sprintf("scale-%d:", time.Now().UnixNano())
	return backend{
		name: "redis",
		store: func(b *testing.B, group int) store.Store[meta] {
			srv := testcluster.PackageRedis(b)
			opts := srv.Options()
			opts.ClientName = "scale"
			c := redis.NewClient(opts)
			b.Cleanup(func() { _ = c.Close() })
			st, err := redisstore.New[meta](c, redisstore.WithPrefix(prefix))
			if err != nil {
				b.Fatal(err)
			}
			return st
		},
		conns: func(b *testing.B) int {
			admin := testcluster.PackageRedis(b).Client(b)
			list, err := admin.Do(context.Background(), "CLIENT", "LIST").Text()
			if err != nil {
				b.Fatal(err)
			}
			return strings.Count(list, " name=scale ")
		},
		requests: func(b *testing.B) int64 {
			admin := testcluster.PackageRedis(b).Client(b)
			info, err := admin.Info(context.Background(), "commandstats").Result()
			if err != nil {
				b.Fatal(err)
			}
			var n int64
			for line := range strings.SplitSeq(info, "\n") {
				for _, cmd := range []string{"cmdstat_evalsha:calls=", "cmdstat_eval:calls="} {
					if v, ok := strings.CutPrefix(strings.TrimSpace(line), cmd); ok {
						k, _ := strconv.ParseInt(strings.SplitN(v, ",", 2)[0], 10, 64)
						n += k
					}
				}
			}
			return n
		},
	}
}

func postgresBackend() backend {
	table := fmt.Sprintf("scale_%d", time.Now().UnixNano())
	return backend{
		name: "postgres",
		store: func(b *testing.B, group int) store.Store[meta] {
			pg := testcluster.PackagePostgres(b)
			cfg, err := pgxpool.ParseConfig(pg.DSN())
			if err != nil {
				b.Fatal(err)
			}
			cfg.ConnConfig.RuntimeParams["application_name"] = "scale"
			pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(pool.Close)
			st, err := pgstore.New[meta](pool, pgstore.WithTable(table))
			if err != nil {
				b.Fatal(err)
			}
			return st
		},
		conns: func(b *testing.B) int {
			pg := testcluster.PackagePostgres(b)
			pool, err := pgxpool.New(context.Background(), pg.DSN())
			if err != nil {
				b.Fatal(err)
			}
			defer pool.Close()
			var n int
			if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'scale'").Scan(&n); err != nil {
				b.Fatal(err)
			}
			return n
		},
		requests: func(b *testing.B) int64 {
			pg := testcluster.PackagePostgres(b)
			pool, err := pgxpool.New(context.Background(), pg.DSN())
			if err != nil {
				b.Fatal(err)
			}
			defer pool.Close()
			var n int64
			if err := pool.QueryRow(context.Background(), "SELECT pg_stat_force_next_flush(), xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()").Scan(nil, &n); err != nil {
				b.Fatal(err)
			}
			return n
		},
	}
}

// BenchmarkElections runs N elections with one elector in each of three
// groups (each group its own store client: three stand-ins for three
// processes) at the default timings: each election starts in one group
// (election i in group i%3), and once every election has a leader (its
// leaders spread evenly), in the two others; then it waits
// TENURE_SCALE_SETTLE (default 20s) more, and measures over
// TENURE_SCALE_WINDOW (default 30s): CPU of the whole process, and per
// elector the heap and stacks it adds, RSS, goroutines. If not every
// election has a leader within TENURE_SCALE_WAIT (default 3m) it measures
// the state reached. The numbers of elections are TENURE_SCALE_ELECTIONS
// (default 1000; say "1000,10000"). Each runs twice: driver=run, each
// elector with a Run of its own (a goroutine each), and driver=group, one
// lead.Group per process. Run it with -benchtime 1x; pick a backend and a
// driver with -bench 'Elections/redis/.*/driver=group'.
// TENURE_SCALE_HEAPPROFILE and TENURE_SCALE_CPUPROFILE name files for the
// heap profile of the steady state and the CPU profile of the window; the
// heap profile at the window's start goes to the first name plus
// ".start", so that go tool pprof -sample_index=alloc_space -diff_base
// F.start F shows what the window allocated.
// TENURE_SCALE_START=together starts every election in the three groups
// at once, as three processes started together would.
// TENURE_SCALE_OPSTATS=1 counts the store operations of the window by
// kind (lead.WithInstruments), with their failures and times, and the
// round trips of the renewals (lead.BatchInstruments) beside the
// server's requests that write (Redis script calls, PostgreSQL
// transactions).
// TENURE_SCALE_MAXOPS sets each Group's lead.WithMaxStoreOps.
func BenchmarkElections(b *testing.B) {
	settle := envDuration(b, "TENURE_SCALE_SETTLE", 20*time.Second)
	window := envDuration(b, "TENURE_SCALE_WINDOW", 30*time.Second)
	wait := envDuration(b, "TENURE_SCALE_WAIT", 3*time.Minute)
	sizes := []int{1000}
	if v := os.Getenv("TENURE_SCALE_ELECTIONS"); v != "" {
		sizes = nil
		for f := range strings.SplitSeq(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 {
				b.Fatalf("TENURE_SCALE_ELECTIONS: %q is not a positive number", f)
			}
			sizes = append(sizes, n)
		}
	}
	for _, be := range backends() {
		for _, n := range sizes {
			for _, grouped := range []bool{false, true} {
				driver := "run"
				if grouped {
					driver = "group"
				}
				b.Run(fmt.Sprintf("%s/electors=%d/driver=%s", be.name, n, driver), func(b *testing.B) {
					for b.Loop() {
						runElections(b, be, n, grouped, wait, settle, window)
					}
				})
			}
		}
	}
}

func envDuration(b *testing.B, key string, def time.Duration) time.Duration {
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		b.Fatalf("%s: %v", key, err)
	}
	return d
}

func runElections(b *testing.B, be backend, n int, grouped bool, wait, settle, window time.Duration) {
	stores := make([]store.Store[meta], groups)
	for g := range stores {
		stores[g] = be.store(b, g)
	}
	before := snapshot()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	var leading [groups]atomic.Int64
	allLed := make(chan struct{})
	var total, changes atomic.Int64
	var reasonsMu sync.Mutex
	reasons := map[string]int{} // why terms stopped
	var once sync.Once
	cfg := lease.DefaultConfig()
	ops := &opStats{}
	instruments := lead.WithInstruments(nil)
	if os.Getenv("TENURE_SCALE_OPSTATS") != "" {
		instruments = lead.WithInstruments(ops)
	}
	var grps [groups]*lead.Group[meta]
	if grouped {
		for g := range grps {
			opts := []lead.Option{lead.WithIdentity(fmt.Sprint("process-", g)), lead.WithConfig(cfg), lead.WithLookupEnv(nil), instruments}
			if v := os.Getenv("TENURE_SCALE_MAXOPS"); v != "" {
				n, err := strconv.Atoi(v)
				if err != nil {
					b.Fatalf("TENURE_SCALE_MAXOPS: %v", err)
				}
				opts = append(opts, lead.WithMaxStoreOps(n))
			}
			grp, err := lead.NewGroup(stores[g], opts...)
			if err != nil {
				b.Fatal(err)
			}
			grps[g] = grp
			// Running before the names are added: each name starts in
			// each group as it is added, so that leaders spread as
			// with Run.
			wg.Go(func() { _ = grp.Run(ctx) })
		}
	}
	// add starts the elector of election i in group g.
	add := func(i, g int) {
		observe := lead.WithObserver(func(c lead.Change) {
			changes.Add(1)
			d := int64(1)
			if c.Kind == lead.Stopped {
				d = -1
				reasonsMu.Lock()
				reasons[fmt.Sprint(c.Reason)]++
				reasonsMu.Unlock()
			}
			leading[g].Add(d)
			if total.Add(d) == int64(n) {
				once.Do(func() { close(allLed) })
			}
		})
		name := fmt.Sprint("election-", i)
		if grouped {
			if _, err := grps[g].Add(name, observe); err != nil {
				b.Fatal(err)
			}
			return
		}
		e, err := lead.New(name, stores[g], lead.WithIdentity(fmt.Sprint("process-", g)),
			lead.WithConfig(cfg), lead.WithLookupEnv(nil), instruments, observe)
		if err != nil {
			b.Fatal(err)
		}
		wg.Go(func() { _ = e.Run(ctx) })
	}
	// Leaders spread evenly: election i starts in group i%3 alone, and in
	// the two others once every election has its leader. (Started in all
	// three at once, the client that answers first takes most: 0 / 10,000
	// / 0 on PostgreSQL.)
	together := os.Getenv("TENURE_SCALE_START") == "together"
	began := time.Now()
	for i := range n {
		if together {
			// Every group at once, each in turn first: three processes
			// started together.
			for k := range groups {
				add(i, (i+k)%groups)
			}
			continue
		}
		add(i, i%groups)
	}
	select {
	case <-allLed:
		b.Logf("every election led %v after the start", time.Since(began).Round(time.Second))
	case <-time.After(wait):
		// That is a finding too: measure the state reached.
		b.Logf("only %d of %d elections led %v after the start", total.Load(), n, wait)
	}
	for i := range n {
		for k := 1; k < groups && !together; k++ {
			add(i, (i+k)%groups)
		}
	}
	time.Sleep(settle) // steady state: no event to wait on
	changes0 := changes.Load()
	var requests0 int64
	if be.requests != nil {
		requests0 = be.requests(b)
	}
	ops.reset()
	if path := os.Getenv("TENURE_SCALE_HEAPPROFILE"); path != "" {
		writeHeapProfile(b, path+".start")
	}
	stopProfile := startCPUProfile(b)
	cpu0, wall0 := cpuTime(), time.Now()
	time.Sleep(window)
	cpu, wall := cpuTime()-cpu0, time.Since(wall0)
	stopProfile()
	changed := changes.Load() - changes0
	var requests int64
	if be.requests != nil {
		requests = be.requests(b) - requests0
	}
	after := snapshot()
	if path := os.Getenv("TENURE_SCALE_HEAPPROFILE"); path != "" {
		writeHeapProfile(b, path)
	}
	electors := float64(groups * n)
	perProc := 100 * cpu.Seconds() / wall.Seconds() / groups
	var load [3]string
	if raw, err := os.ReadFile("/proc/loadavg"); err == nil {
		copy(load[:], strings.Fields(string(raw)))
	}
	b.Logf("%s, %d elections x %d groups: leaders per group %d/%d/%d, leadership changes in the window %d; CPU %.2f%% of a core per group (process %.2f%%); heap+stacks %.0f B (stacks %.0f B), RSS %.0f B, goroutines %.2f per elector; store connections %d; load average %s %s %s",
		be.name, n, groups, leading[0].Load(), leading[1].Load(), leading[2].Load(), changed, perProc, perProc*groups,
		float64(after.mem-before.mem)/electors, float64(after.stack-before.stack)/electors, float64(after.rss-before.rss)/electors,
		float64(after.goroutines-before.goroutines)/electors, be.conns(b), load[0], load[1], load[2])
	if os.Getenv("TENURE_SCALE_OPSTATS") != "" {
		b.Logf("store operations in the window (as Instruments times them: from when they run, not from when they were asked): %s", ops)
		renewals, trips := ops.renewalTrips()
		b.Logf("renewals %d, their round trips %d (%.3f per renewal); server requests that write %d (%.3f per renewal)",
			renewals, trips, float64(trips)/float64(max(renewals, 1)), requests, float64(requests)/float64(max(renewals, 1)))
		b.ReportMetric(float64(trips)/float64(max(renewals, 1)), "trips/renewal")
	}
	reasonsMu.Lock()
	b.Logf("terms stopped since the start, by reason: %v", reasons)
	reasonsMu.Unlock()
	b.ReportMetric(float64(total.Load()), "elections-led")
	b.ReportMetric(float64(changed), "changes-in-window")
	b.ReportMetric(perProc, "cpu%/group")
	b.ReportMetric(float64(after.mem-before.mem)/electors, "heap+stack-B/elector")
	b.ReportMetric(float64(after.rss-before.rss)/electors, "rss-B/elector")
	b.ReportMetric(float64(after.goroutines-before.goroutines)/electors, "goroutines/elector")
}

// opStats counts store operations by kind, for lead.WithInstruments.
type opStats struct {
	mu      sync.Mutex
	by      map[string]*opStat
	batches int // renewals' batches (lead.BatchInstruments)
	batched int // renewals in them
}

// StoreBatch counts a batch of renewals sent in one round trip.
func (s *opStats) StoreBatch(op string, n int, _ time.Duration) {
	if op != lead.OpRenew {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batches++
	s.batched += n
}

// renewalTrips returns the renewals counted and the round trips they took:
// one each, save those sent in batches, one per batch.
func (s *opStats) renewalTrips() (renewals, trips int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.by[lead.OpRenew]; st != nil {
		renewals = st.n
	}
	return renewals, renewals - s.batched + s.batches
}

type opStat struct {
	n, conflicts, failed int
	took, most           time.Duration
}

func (s *opStats) StoreOp(_, op string, took time.Duration, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.by == nil {
		s.by = map[string]*opStat{}
	}
	st := s.by[op]
	if st == nil {
		st = &opStat{}
		s.by[op] = st
	}
	st.n++
	st.took += took
	st.most = max(st.most, took)
	switch {
	case errors.Is(err, store.ErrConflict):
		st.conflicts++
	case err != nil:
		st.failed++
	}
}

func (s *opStats) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.by = nil
	s.batches, s.batched = 0, 0
}

// String says, for each kind, how many ran, failed and conflicted, and
// how long they took on average and at most.
func (s *opStats) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, op := range []string{lead.OpRead, lead.OpAcquire, lead.OpRenew, lead.OpRelease} {
		if st := s.by[op]; st != nil {
			out = append(out, fmt.Sprintf("%s %d (failed %d, conflicts %d, mean %v, max %v)", op, st.n, st.failed, st.conflicts,
				(st.took/time.Duration(st.n)).Round(time.Microsecond), st.most.Round(time.Millisecond)))
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, "; ")
}

type usage struct {
	mem, stack, rss int64
	goroutines      int
}

// snapshot measures the process after a collection: heap in use plus
// goroutine stacks, RSS, goroutines.
func snapshot() usage {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return usage{mem: int64(ms.HeapInuse + ms.StackInuse), stack: int64(ms.StackInuse), rss: rss(), goroutines: runtime.NumGoroutine()}
}

// startCPUProfile profiles the CPU into the file TENURE_SCALE_CPUPROFILE
// names, if any, until the returned function is called.
func startCPUProfile(b *testing.B) (stop func()) {
	path := os.Getenv("TENURE_SCALE_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// writeHeapProfile writes the heap profile of the steady state to path.
func writeHeapProfile(b *testing.B, path string) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
}

// rss reads VmRSS from /proc/self/status (0 where there is none).
func rss() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// cpuTime is the user plus system CPU time of the process.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
