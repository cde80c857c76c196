package testcluster

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

// PeerConfig is the timing of the comparison with client-go and etcd:
// a 3s lease, a 2s renew deadline, 400ms retries (10% jitter), a 1s backend
// timeout.
func PeerConfig() lease.Config {
	return lease.Config{
		LeaseDuration:  3 * time.Second,
		RenewDeadline:  2 * time.Second,
		RetryInterval:  400 * time.Millisecond,
		RetryJitter:    0.1,
		BackendTimeout: time.Second,
		ErrorInterval:  time.Minute,
	}
}

// Counted is the store of one elector of a traffic measurement, with a
// count of the requests it has sent to its server so far (on the wire: a
// store's own reads, such as a watch reading the record, count too).
type Counted[M any] struct {
	Store    store.Store[M]
	Requests func() int64
}

// Traffic is what the electors of one election sent in steady state.
type Traffic struct {
	// FollowerPerSecond is the mean number of requests per second each
	// follower sent.
	FollowerPerSecond float64
	// LeaderPerRenewal is the number of requests the leader sent per
	// renewal it made.
	LeaderPerRenewal float64
	// Renewals is the number of renewals the leader made.
	Renewals int64
}

// String formats t for a log.
func (t Traffic) String() string {
	return fmt.Sprintf("followers %.3f requests/s each, leader %.3f requests per renewal (%d renewals)", t.FollowerPerSecond, t.LeaderPerRenewal, t.Renewals)
}

// renewCounter is a lead.Instruments that counts renewals.
type renewCounter struct{ n atomic.Int64 }

func (r *renewCounter) StoreOp(_, op string, _ time.Duration, _ error) {
	if op == lead.OpRenew {
		r.n.Add(1)
	}
}

// MeasureTraffic runs one elector of the election name on each of stores
// with timings cfg, waits until one leads and two leases have passed (every
// follower watches and has read), then counts for window what each sent:
// requests per second per follower, and the leader's requests per renewal.
// It fails if the leadership changes meanwhile.
func MeasureTraffic[M any](tb testing.TB, name string, cfg lease.Config, stores []Counted[M], window time.Duration) Traffic {
	tb.Helper()
	next := 0
	c := NewElectors(tb, name, time.Minute, func(testing.TB) store.Store[M] {
		st := stores[next].Store
		next++
		return st
	})
	renewals := make([]*renewCounter, len(stores))
	ids := make([]string, len(stores))
	for i := range stores {
		renewals[i] = &renewCounter{}
		ids[i] = fmt.Sprint("node-", i)
		c.Start(ids[i], cfg, lead.WithInstruments(renewals[i]))
	}
	first := c.NextLeader()
	settle := time.NewTimer(2 * cfg.LeaseDuration)
	<-settle.C
	before := make([]int64, len(stores))
	renewed := renewals[slices.Index(ids, first.ID)].n.Load()
	for i, s := range stores {
		before[i] = s.Requests()
	}
	start := time.Now()
	// The measurement is a window of time: there is no event to wait for.
	if ch, ok := c.Next(window); ok {
		tb.Fatalf("leadership changed while measuring: %s %v (token %d)", ch.ID, ch.Kind, ch.Term.Token)
	}
	elapsed := time.Since(start).Seconds()
	var t Traffic
	var followers int
	for i, s := range stores {
		sent := s.Requests() - before[i]
		if ids[i] == first.ID {
			t.Renewals = renewals[i].n.Load() - renewed
			t.LeaderPerRenewal = float64(sent) / float64(max(t.Renewals, 1))
			continue
		}
		followers++
		t.FollowerPerSecond += float64(sent) / elapsed
	}
	t.FollowerPerSecond /= float64(max(followers, 1))
	return t
}

// Handover is one handover after a release, step by step: the time from
// the leader's stop to its successor leading (Total), and the store
// operations on the way as lead's Instruments timed them: the old leader's
// release, then the successor's read (the one that found the lease free)
// and its acquire. What is left of Total is the watch event's way from the
// store to the successor, and the hand-offs between goroutines.
type Handover struct {
	Total, Release, Read, Acquire time.Duration
}

// Rest is Total less the three store operations. Read is 0 when the
// successor did not read during the handover (on a store whose watch
// events are authentic it acquires on the release's event).
func (h Handover) Rest() time.Duration { return h.Total - h.Release - h.Read - h.Acquire }

// opLog is a lead.Instruments that keeps the last duration of each kind of
// operation.
type opLog struct {
	mu   sync.Mutex
	last map[string]time.Duration
}

func (o *opLog) StoreOp(_, op string, took time.Duration, _ error) {
	o.mu.Lock()
	o.last[op] = took
	o.mu.Unlock()
}

// reset forgets every duration kept: an operation not made since is 0.
func (o *opLog) reset() {
	o.mu.Lock()
	clear(o.last)
	o.mu.Unlock()
}

func (o *opLog) get(op string) time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.last[op]
}

// MeasureHandover runs one elector of the election name on each of the
// stores newStore makes (three electors), with timings cfg, then n times
// stops the leader (which releases the lease), takes the time until
// another leads, and starts the stopped one again. It returns the
// handovers, sorted by Total.
func MeasureHandover[M any](tb testing.TB, name string, cfg lease.Config, n int, newStore func(tb testing.TB) store.Store[M]) []Handover {
	tb.Helper()
	out, _ := MeasureHandoverPaired(tb, name, cfg, n, newStore, nil)
	slices.SortFunc(out, byTotal)
	return out
}

// MeasureHandoverPaired is MeasureHandover that, before each handover and
// once the followers have settled, takes one handover with floor (if not
// nil; the client library's alone) and lets FloorSettle pass: so that
// both meet the machine at the same moments, where a host that takes CPU
// from the machine for a minute and not the next would fall on one
// benchmark's run and not the other's. It returns the electors'
// handovers and floor's, both in the order taken (floors[i] just before
// hs[i]).
func MeasureHandoverPaired[M any](tb testing.TB, name string, cfg lease.Config, n int, newStore func(tb testing.TB) store.Store[M], floor func() Handover) (hs, floors []Handover) {
	tb.Helper()
	c := NewElectors(tb, name, time.Minute, newStore)
	logs := map[string]*opLog{}
	start := func(id string) {
		logs[id] = &opLog{last: map[string]time.Duration{}}
		c.Start(id, cfg, lead.WithInstruments(logs[id]))
	}
	for _, id := range []string{"node-0", "node-1", "node-2"} {
		start(id)
	}
	leader := c.NextLeader()
	hs = make([]Handover, 0, n)
	for range n {
		// Let the followers settle on the new term (watching, read).
		settle := time.NewTimer(cfg.MaxRetryInterval() + cfg.RetryInterval)
		<-settle.C
		if floor != nil {
			floors = append(floors, floor())
			// Let the floor's events and its loser's write pass.
			settle := time.NewTimer(FloorSettle)
			<-settle.C
		}
		old := logs[leader.ID]
		for _, l := range logs {
			// Only the operations of this handover count: a successor
			// that acquires on the release's watch event reads nothing
			// (its read is 0).
			l.reset()
		}
		next, took := c.Handover(leader.ID)
		succ := logs[next.ID]
		hs = append(hs, Handover{Total: took, Release: old.get(lead.OpRelease), Read: succ.get(lead.OpRead), Acquire: succ.get(lead.OpAcquire)})
		start(leader.ID)
		leader = next
	}
	return hs, floors
}

// MeasureNamedHandover measures, among three electors with cfg, n
// handovers after a plain release (the leader stops, as MeasureHandover)
// and n handovers to a named successor (the leader calls HandOver naming
// the next follower), alternated, so that both meet the machine at the
// same moments. Each Total runs from the stop or the HandOver call to the
// successor's Started. It returns both, each sorted by Total.
func MeasureNamedHandover[M any](tb testing.TB, name string, cfg lease.Config, n int, newStore func(tb testing.TB) store.Store[M]) (plain, named []Handover) {
	tb.Helper()
	c := NewElectors(tb, name, time.Minute, newStore)
	ids := []string{"node-0", "node-1", "node-2"}
	for _, id := range ids {
		c.Start(id, cfg)
	}
	leader := c.NextLeader()
	settle := func() {
		t := time.NewTimer(cfg.MaxRetryInterval() + cfg.RetryInterval)
		<-t.C
	}
	for range n {
		settle()
		next, took := c.Handover(leader.ID)
		plain = append(plain, Handover{Total: took})
		c.Start(leader.ID, cfg)
		leader = next
		settle()
		succ := ids[(slices.Index(ids, leader.ID)+1)%len(ids)]
		next, took = c.HandOverTo(leader.ID, succ)
		named = append(named, Handover{Total: took})
		leader = next
	}
	slices.SortFunc(plain, byTotal)
	slices.SortFunc(named, byTotal)
	return plain, named
}

// ReportNamedHandover reports MeasureNamedHandover's two sides: the p50
// and p90 of plain's totals as p50-ms and p90-ms, of named's as
// named-p50-ms and named-p90-ms.
func ReportNamedHandover(b *testing.B, label string, plain, named []Handover) {
	b.Helper()
	b.Logf("%s: plain release: %s", label, HandoverReport(plain))
	b.Logf("%s: named successor: %s", label, HandoverReport(named))
	reportQuantiles(b, "", plain)
	reportQuantiles(b, "named-", named)
}

// FloorSettle is how long a floor benchmark (the client library alone)
// lets one handover's events and the loser's write pass before the next.
const FloorSettle = 200 * time.Millisecond

// FloorHandovers takes n handovers with handover, each FloorSettle after
// the last, and returns them in the order taken.
func FloorHandovers(n int, handover func() Handover) []Handover {
	out := make([]Handover, 0, n)
	for range n {
		settle := time.NewTimer(FloorSettle)
		<-settle.C
		out = append(out, handover())
	}
	return out
}

// Handovers is how many handovers one op of a handover benchmark takes:
// TENURE_HANDOVERS, 20 when it is unset. The p90 of 20 handovers is
// their third slowest, so a run of 20 says little about the tail; set it
// to 100 or more to measure one. It fails tb when the variable is not a
// number from 1 to 100000.
func Handovers(tb testing.TB) int {
	tb.Helper()
	v := os.Getenv("TENURE_HANDOVERS")
	if v == "" {
		return 20
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 100000 {
		tb.Fatalf("TENURE_HANDOVERS: %q is not a number from 1 to 100000", v)
	}
	return n
}

// byTotal orders handovers by Total.
func byTotal(a, b Handover) int { return cmp.Compare(a.Total, b.Total) }

// Await returns the next value of ch, failing tb on a value of errs, or when
// neither comes within d: for a benchmark's goroutines that report a result
// or a failure.
func Await[T any](tb testing.TB, ch <-chan T, errs <-chan error, d time.Duration) T {
	tb.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case err := <-errs:
		tb.Fatal(err)
	case <-timer.C:
		tb.Fatalf("nothing within %v", d)
	}
	panic("unreachable: Fatal returned")
}

// HandoverReport sums up handovers (sorted by Total): p50 and p90 of the
// total, and the median of each step. With -test.v it first prints each
// handover on a line of its own.
func HandoverReport(hs []Handover) string {
	if testing.Verbose() {
		for _, h := range hs {
			printHandover("handover", h)
		}
	}
	return handoverSummary(hs)
}

// handoverSummary is HandoverReport without the lines.
func handoverSummary(hs []Handover) string {
	med := func(f func(Handover) time.Duration) time.Duration {
		ds := make([]time.Duration, len(hs))
		for i, h := range hs {
			ds[i] = f(h)
		}
		slices.Sort(ds)
		return Quantile(ds, 0.5)
	}
	totals := make([]time.Duration, len(hs))
	for i, h := range hs {
		totals[i] = h.Total
	}
	return fmt.Sprintf("%d handovers: p50 %v, p90 %v; medians: release %v, successor's read %v, its acquire %v, the rest (watch delivery, goroutine hand-offs) %v",
		len(hs), Quantile(totals, 0.5), Quantile(totals, 0.9),
		med(func(h Handover) time.Duration { return h.Release }), med(func(h Handover) time.Duration { return h.Read }),
		med(func(h Handover) time.Duration { return h.Acquire }), med(Handover.Rest))
}

// ReportHandover logs HandoverReport(hs) after label and reports the p50
// and p90 of the totals as the benchmark's metrics p50-ms and p90-ms. hs
// may be in any order; it is left as it is.
func ReportHandover(b *testing.B, label string, hs []Handover) {
	b.Helper()
	hs = slices.SortedFunc(slices.Values(hs), byTotal)
	b.Logf("%s: %s", label, HandoverReport(hs))
	reportQuantiles(b, "", hs)
}

// reportQuantiles reports the p50 and p90 of the totals of hs (sorted by
// Total) as the metrics prefix+"p50-ms" and prefix+"p90-ms".
func reportQuantiles(b *testing.B, prefix string, hs []Handover) {
	totals := Totals(hs)
	b.ReportMetric(float64(Quantile(totals, 0.5).Microseconds())/1000, prefix+"p50-ms")
	b.ReportMetric(float64(Quantile(totals, 0.9).Microseconds())/1000, prefix+"p90-ms")
}

// ReportPairedHandover reports the two sides of MeasureHandoverPaired:
// floor, the floor's handovers (the client library alone), and hs, the
// electors', in the order taken, floor[i] just before hs[i]. It logs
// the summary HandoverReport gives of each after its label, and reports the p50 and p90 of
// hs's totals as p50-ms and p90-ms, and floor's as floor-p50-ms and
// floor-p90-ms. With -test.v it prints each pair in the order taken (the
// floor's line first), so that a slow handover of one can be set beside
// the other's at the same moment.
func ReportPairedHandover(b *testing.B, floorLabel string, floor []Handover, label string, hs []Handover) {
	b.Helper()
	if len(floor) != len(hs) {
		b.Fatalf("%d handovers of %s against %d of %s: not pairs", len(floor), floorLabel, len(hs), label)
	}
	if testing.Verbose() {
		for i := range hs {
			printHandover("floor", floor[i])
			printHandover("handover", hs[i])
		}
	}
	for _, side := range []struct {
		label, prefix string
		hs            []Handover
	}{{floorLabel, "floor-", floor}, {label, "", hs}} {
		sorted := slices.SortedFunc(slices.Values(side.hs), byTotal)
		b.Logf("%s: %s", side.label, handoverSummary(sorted))
		reportQuantiles(b, side.prefix, sorted)
	}
}

// printHandover prints h on one line after kind, for -test.v.
func printHandover(kind string, h Handover) {
	fmt.Printf("%s %v: release %v, read %v, acquire %v, rest %v\n", kind, h.Total, h.Release, h.Read, h.Acquire, h.Rest())
}

// Totals returns the Total of each handover, in order.
func Totals(hs []Handover) []time.Duration {
	out := make([]time.Duration, len(hs))
	for i, h := range hs {
		out[i] = h.Total
	}
	return out
}

// Quantile returns the q-quantile (0 to 1) of sorted, nearest rank.
func Quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted)) + 0.5)
	return sorted[min(max(i-1, 0), len(sorted)-1)]
}
