package lead_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/memstore"
)

// sixSecondConfig: a 6 s lease, renewed every second: a follower hearing
// the renewals through its watch reads the record about once per
// LeaseDuration.
func sixSecondConfig() lease.Config {
	return lease.Config{
		LeaseDuration:  6 * time.Second,
		RenewDeadline:  4 * time.Second,
		RetryInterval:  time.Second,
		RetryJitter:    0.1,
		BackendTimeout: time.Second,
		ErrorInterval:  10 * time.Second,
	}
}

// metaReport is one Leader a MetadataChanges channel gave, and when.
type metaReport struct {
	at time.Time
	l  lead.Leader[meta]
}

// metaLog collects what a MetadataChanges channel of e reports.
type metaLog struct {
	mu   sync.Mutex
	seen []metaReport
}

func followMetadata(t *testing.T, ctx context.Context, e *lead.Elector[meta]) *metaLog {
	t.Helper()
	ch, err := e.Leaders(ctx, lead.MetadataChanges())
	if err != nil {
		t.Fatal(err)
	}
	l := &metaLog{}
	go func() {
		for x := range ch {
			l.mu.Lock()
			l.seen = append(l.seen, metaReport{time.Now(), x})
			l.mu.Unlock()
		}
	}()
	return l
}

func (l *metaLog) reports() []metaReport {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]metaReport(nil), l.seen...)
}

// setEvery has leader set the metadata V=1..n, every apart, and returns
// when it set each (index 1..n).
func setEvery(t *testing.T, leader *lead.Elector[meta], n int, every time.Duration) []time.Time {
	t.Helper()
	set := make([]time.Time, n+1)
	for v := 1; v <= n; v++ {
		time.Sleep(every)
		if err := leader.SetMetadata(meta{Addr: fmt.Sprintf("V=%d", v)}); err != nil {
			t.Fatal(err)
		}
		set[v] = time.Now()
	}
	time.Sleep(every)
	synctest.Wait()
	return set
}

// checkEveryValue returns what is wrong with reports, which should hold
// each of V=1..n of holder a in term 1, in order, each within late of
// the write that carried it (its RenewedAt) and within the leader's next
// renewal (MaxRetryInterval) plus late of the SetMetadata that set it.
func checkEveryValue(reports []metaReport, set []time.Time, cfg lease.Config, late time.Duration) error {
	var got []string
	found := map[string]metaReport{}
	for _, r := range reports {
		if r.l.Holder != "a" || r.l.Token != 1 {
			return fmt.Errorf("reported %s in term %d, want a in term 1", r.l.Holder, r.l.Token)
		}
		got = append(got, r.l.Record.Metadata.Addr)
		found[r.l.Record.Metadata.Addr] = r
	}
	want := []string{""}
	for v := 1; v < len(set); v++ {
		want = append(want, fmt.Sprintf("V=%d", v))
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		return fmt.Errorf("reported metadata %q, want %q", got, want)
	}
	for v := 1; v < len(set); v++ {
		r := found[want[v]]
		if d := r.at.Sub(r.l.Record.RenewedAt); d < 0 || d > late {
			return fmt.Errorf("%s reported %v after the renewal that wrote it, want within %v", want[v], d, late)
		}
		if d := r.at.Sub(set[v]); d > cfg.MaxRetryInterval()+late {
			return fmt.Errorf("%s reported %v after SetMetadata, want within the next renewal (%v)", want[v], d, cfg.MaxRetryInterval())
		}
	}
	return nil
}

// metadataScenario: a leads on leaderStore with a 6 s lease, b follows on
// followerStore (the same records), and a sets V=1..4 two seconds apart.
// It returns what b's MetadataChanges channel reported and when each
// value was set. fromReadsOnly turns off what b learns from its watch.
// With inGroup, b is an elector of a lead.Group.
func metadataScenario(t *testing.T, leaderStore, followerStore store.Store[meta], fromReadsOnly, inGroup bool) ([]metaReport, []time.Time) {
	cfg := sixSecondConfig()
	a := start(t, leaderStore, "a", lead.WithConfig(cfg))
	firstLeader(t, a)
	var (
		b   *lead.Elector[meta]
		run func(context.Context) error
		err error
	)
	if inGroup {
		var g *lead.Group[meta]
		if g, err = lead.NewGroup(followerStore, lead.WithConfig(cfg), lead.WithLookupEnv(nil)); err != nil {
			t.Fatal(err)
		}
		b, err = g.Add("job", lead.WithIdentity("b"))
		run = g.Run
	} else {
		b, err = lead.New("job", followerStore, lead.WithIdentity("b"), lead.WithConfig(cfg), lead.WithLookupEnv(nil))
		run = func(ctx context.Context) error { return b.Run(ctx) }
	}
	if err != nil {
		t.Fatal(err)
	}
	if fromReadsOnly {
		lead.MetadataFromReadsOnly(b)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("b: Run = %v", err)
		}
	}()
	log := followMetadata(t, ctx, b)
	synctest.Wait()
	began := time.Now()
	set := setEvery(t, a.e, 4, 2*time.Second)
	reports := log.reports()
	var seen []string
	for _, r := range reports {
		seen = append(seen, fmt.Sprintf("%q at %v", r.l.Record.Metadata.Addr, r.at.Sub(began)))
	}
	t.Logf("V=1..4 set at 2, 4, 6, 8 s: b reported %s", strings.Join(seen, ", "))
	return reports, set
}

// On a store whose watch events are authentic (memstore), a follower's
// MetadataChanges channel reports every value the leader sets, even values
// that last a third of a LeaseDuration, as the renewal that writes each
// reaches the store: from the watch event, with no read.
func TestMetadataChangesOnFollowerFromAuthenticWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New[meta]()
		reports, set := metadataScenario(t, st, st, false, false)
		if err := checkEveryValue(reports, set, sixSecondConfig(), 5*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	})
}

// On a store whose watch events are hints, a follower's MetadataChanges
// channel reports every value too, from a read the hint starts; also for
// an elector of a Group, whose reads wait their turn among the Group's.
func TestMetadataChangesOnFollowerFromHintsAndARead(t *testing.T) {
	for _, inGroup := range []bool{false, true} {
		t.Run(fmt.Sprintf("group=%v", inGroup), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := memstore.New[meta]()
				var reads atomic.Int32
				hints := readCounting{forwardingWrapper{st}, &reads, false}
				reports, set := metadataScenario(t, st, hints, false, inGroup)
				if err := checkEveryValue(reports, set, sixSecondConfig(), 5*time.Millisecond); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

// Without what the watch tells (MetadataFromReadsOnly), a follower learns
// the leader's metadata at its own reads only, about once per
// LeaseDuration, and misses values that last less: the tests above catch
// it, on both kinds of store.
func TestMetadataChangesFromReadsOnlyMissesValues(t *testing.T) {
	for _, authentic := range []bool{true, false} {
		t.Run(fmt.Sprintf("authentic=%v", authentic), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := memstore.New[meta]()
				var follower store.Store[meta] = st
				if !authentic {
					var reads atomic.Int32
					follower = readCounting{forwardingWrapper{st}, &reads, false}
				}
				reports, set := metadataScenario(t, st, follower, true, false)
				err := checkEveryValue(reports, set, sixSecondConfig(), 5*time.Millisecond)
				if err == nil {
					t.Fatal("every value reported in time without the watch: the variant went unnoticed")
				}
				t.Log(err)
			})
		})
	}
}

// forger is memstore seen through a watch that also delivers forged
// events while forging is set: every 50 ms, the last real record with
// made-up metadata at a far newer revision. It says its events are hints,
// and keeps the time of every read.
type forger struct {
	forwardingWrapper
	forging atomic.Bool
	mu      sync.Mutex
	reads   []time.Time
	forged  int
}

func (f *forger) WatchCapabilities() store.WatchCapabilities { return store.WatchCapabilities{} }

func (f *forger) Get(ctx context.Context, name string) (lease.Record[meta], lease.Revision, error) {
	f.mu.Lock()
	f.reads = append(f.reads, time.Now())
	f.mu.Unlock()
	return f.forwardingWrapper.Get(ctx, name)
}

func (f *forger) readsBetween(from, to time.Time) []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []time.Time
	for _, at := range f.reads {
		if !at.Before(from) && at.Before(to) {
			out = append(out, at)
		}
	}
	return out
}

func (f *forger) Watch(ctx context.Context, name string) (<-chan store.Event[meta], error) {
	real, err := f.forwardingWrapper.Watch(ctx, name)
	if err != nil {
		return nil, err
	}
	out := make(chan store.Event[meta])
	go func() {
		defer close(out)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		var last store.Event[meta]
		for {
			var ev store.Event[meta]
			select {
			case <-ctx.Done():
				return
			case e, ok := <-real:
				if !ok {
					return
				}
				last, ev = e, e
			case <-tick.C:
				if !f.forging.Load() || last.Absent || last.Revision == 0 {
					continue
				}
				f.mu.Lock()
				f.forged++
				n := f.forged
				f.mu.Unlock()
				ev = last
				ev.Record.Metadata = meta{Addr: fmt.Sprintf("forged-%d", n)}
				ev.Revision = last.Revision + 1000 + lease.Revision(n)
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// A flood of forged hints (20 a second, each with made-up metadata at a
// newer revision) costs at most one read per RetryInterval beyond the
// follower's own, reports no forged metadata, and does not hide the values
// the leader really sets meanwhile.
func TestForgedMetadataHintsCostOneReadPerRetryInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := sixSecondConfig()
		st := memstore.New[meta]()
		hints := &forger{forwardingWrapper: forwardingWrapper{st}}
		a := start(t, st, "a", lead.WithConfig(cfg))
		firstLeader(t, a)
		b := start(t, hints, "b", lead.WithConfig(cfg))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		log := followMetadata(t, ctx, b.e)
		time.Sleep(10 * time.Second) // b settles: it hears a's renewals
		synctest.Wait()
		quiet := len(hints.readsBetween(time.Now().Add(-cfg.LeaseDuration), time.Now()))

		began := time.Now()
		hints.forging.Store(true)
		set := setEvery(t, a.e, 5, 2*time.Second) // V=1..5, 2 s apart
		// The read for V=5 may wait a RetryInterval for the one before.
		time.Sleep(cfg.RetryInterval)
		synctest.Wait()
		hints.forging.Store(false)
		ended := time.Now()
		flood := ended.Sub(began)
		reads := hints.readsBetween(began, ended)
		hints.mu.Lock()
		forged := hints.forged
		hints.mu.Unlock()
		// b's own reads: one per RetryInterval at most (a forged hint
		// the store contradicts makes it poll instead of hearing
		// renewals; quiet of them in the last LeaseDuration before the
		// flood). The flood may add one per RetryInterval.
		own := max(int(flood/cfg.RetryInterval)+1, (int(flood/cfg.LeaseDuration)+1)*max(quiet, 1))
		if limit := own + int(flood/cfg.RetryInterval) + 1; len(reads) > limit {
			t.Errorf("%d forged hints in %v made b read %d times; want at most %d (%d of its own, one per RetryInterval)", forged, flood, len(reads), limit, own)
		}
		if most := busiest(reads, cfg.RetryInterval); most > 2 {
			t.Errorf("b read %d times within a RetryInterval during the flood; want at most 2 (its own and one for the hints)", most)
		}
		t.Logf("%d forged hints in %v: %d reads by b (%d in the %v before)", forged, flood, len(reads), quiet, cfg.LeaseDuration)
		reports := log.reports()
		for _, r := range reports {
			if strings.HasPrefix(r.l.Record.Metadata.Addr, "forged") {
				t.Fatalf("forged metadata reported: %+v", r.l)
			}
		}
		// Every true value, within a read (at most a RetryInterval later).
		if err := checkEveryValue(reports, set, cfg, cfg.RetryInterval+5*time.Millisecond); err != nil {
			t.Error(err)
		}
	})
}

// slowReads is memstore (its watch authentic) whose reads answer what the
// store held when they were sent, delay later.
type slowReads struct {
	forwardingWrapper
	delay time.Duration
}

func (s slowReads) Get(ctx context.Context, name string) (lease.Record[meta], lease.Revision, error) {
	rec, rev, err := s.forwardingWrapper.Get(ctx, name)
	time.Sleep(s.delay)
	return rec, rev, err
}

// A read sent before a renewal that the watch reported answers with an
// older record of the same term: its metadata is not reported again, so
// a MetadataChanges channel never goes back to an older value.
func TestMetadataChangesNeverGoBackToALateReadsRecord(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := sixSecondConfig()
		st := memstore.New[meta]()
		a := start(t, st, "a", lead.WithConfig(cfg))
		firstLeader(t, a)
		b := start(t, slowReads{forwardingWrapper{st}, 900 * time.Millisecond}, "b", lead.WithConfig(cfg))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		log := followMetadata(t, ctx, b.e)
		// A new value every 200 ms: every renewal writes new metadata, and
		// one lands during each of b's reads.
		for v := 1; v <= 200; v++ {
			time.Sleep(200 * time.Millisecond)
			if err := a.e.SetMetadata(meta{Addr: fmt.Sprintf("V=%d", v)}); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		reports := log.reports()
		if len(reports) < 20 {
			t.Fatalf("%d reports in 40 s of renewals with new metadata", len(reports))
		}
		for i := 1; i < len(reports); i++ {
			p, r := reports[i-1].l, reports[i].l
			if r.Token != p.Token || r.Revision <= p.Revision {
				t.Fatalf("report %d: %s at revision %d (token %d) after %s at revision %d (token %d)",
					i, r.Record.Metadata.Addr, r.Revision, r.Token, p.Record.Metadata.Addr, p.Revision, p.Token)
			}
		}
	})
}
