package chaos

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/anishathalye/porcupine"
)

// total is what the schedules of one backend found, summed.
type total struct {
	schedules   int
	faults      map[kind]int
	electorSecs float64
	overlaps    int
	outOfOrder  int
	refused     int // refused while leading
	accepted    int
	stale       int
	histories   int
	ops         int
	illegal     int
	undecided   int // porcupine ran out of time
	watchEvents int
	watchBad    int // deliveries going back or of records nobody wrote
	toLeader    []time.Duration
	// afterAnswer is, for each of toLeader, the time from the store's
	// first answer after the heal to the leader: what the liveness bound
	// holds (see record).
	afterAnswer []time.Duration
	reconnect   time.Duration // longest time from a heal to the store's first answer
	overBound   []string      // heals after which a leader came later than the bound
	noLeader    int           // heals after which no leader came before the run ended
	withLeader  int
	interrupted int // heals after which the next fault came before a leader
	bound       time.Duration
	minGap      time.Duration // between terms of different electors
	maxSample   time.Duration
	wall        time.Duration
}

var (
	totalsMu sync.Mutex
	totals   = map[string]*total{}
)

func record(r result) {
	totalsMu.Lock()
	defer totalsMu.Unlock()
	tt := totals[r.backend]
	if tt == nil {
		tt = &total{faults: map[kind]int{}, minGap: time.Duration(1<<63 - 1)}
		totals[r.backend] = tt
	}
	tt.schedules++
	for k, n := range r.faults {
		tt.faults[k] += n
	}
	rep := r.report
	tt.electorSecs += float64(rep.Electors) * rep.Observed.Seconds()
	tt.overlaps += len(rep.Overlaps)
	tt.outOfOrder += len(rep.FenceOutOfOrder)
	tt.refused += len(rep.FenceRefusedWhileLeading)
	tt.accepted += rep.FenceAccepted
	tt.stale += rep.FenceStale
	tt.histories++
	tt.ops += r.ops
	tt.watchEvents += r.watch.Events
	tt.watchBad += len(r.watch.Backwards) + len(r.watch.Phantoms)
	switch r.check {
	case porcupine.Illegal:
		tt.illegal++
	case porcupine.Unknown:
		tt.undecided++
	}
	for i, h := range rep.ToLeader {
		if h.D < 0 {
			tt.noLeader++
			tt.overBound = append(tt.overBound, fmt.Sprintf("no leader by the end of the run after %s (seed %d)", h.What, r.seed))
			continue
		}
		// The liveness bound counts from when a node is up and connected:
		// the store's first answer after the heal, not the heal itself.
		// Between the two, an operation sent during the fault runs out its
		// BackendTimeout and the client reconnects (a new PostgreSQL
		// connection forks a server process): the bound's max(T, I + R/2)
		// cannot cover that and the first read's round trips with δ = 0
		// (docs/reliability.md, "The liveness bound after a heal").
		reconnect := r.reconnect[i]
		after := h.D
		if reconnect > 0 && reconnect < h.D {
			after = h.D - reconnect
		}
		tt.reconnect = max(tt.reconnect, reconnect)
		tt.toLeader = append(tt.toLeader, h.D)
		tt.afterAnswer = append(tt.afterAnswer, after)
		if after > r.bound {
			tt.overBound = append(tt.overBound, fmt.Sprintf("%v after %s, %v after the store's first answer (seed %d)",
				h.D.Round(time.Millisecond), h.What, after.Round(time.Millisecond), r.seed))
		}
	}
	tt.withLeader += rep.HealsWithLeader
	tt.interrupted += rep.Interrupted
	tt.bound = r.bound
	if rep.MinGapOther >= 0 {
		tt.minGap = min(tt.minGap, rep.MinGapOther)
	}
	tt.maxSample = max(tt.maxSample, rep.MaxSample)
	tt.wall += r.duration
}

func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// printSummary prints the table of every backend run, and writes it to
// TENURE_CHAOS_SUMMARY if set.
func printSummary() {
	totalsMu.Lock()
	defer totalsMu.Unlock()
	if len(totals) == 0 {
		return
	}
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 1, ' ', tabwriter.Debug)
	fmt.Fprintln(w, "backend\tschedules\twall\telector×s\ttwo leaders\tfence accepted/stale\tfence out of order\trefused while leading\thistories (ops)\tnon-linearizable\tundecided\twatch events (bad)\theals: leader kept / new / cut short\tto new leader median/p99/max\tafter first answer median/p99/max (longest reconnect)\tbound\tno leader by end\tmin gap (other elector)\tlongest sample\t")
	for _, name := range backendNames() {
		tt := totals[name]
		if tt == nil {
			continue
		}
		gap := "-"
		if tt.minGap != time.Duration(1<<63-1) {
			gap = tt.minGap.Round(time.Millisecond).String()
		}
		fmt.Fprintf(w, "%s\t%d\t%v\t%.0f\t%d\t%d/%d\t%d\t%d\t%d (%d)\t%d\t%d\t%d (%d)\t%d / %d / %d\t%v / %v / %v\t%v / %v / %v (%v)\t%v\t%d\t%s\t%v\t\n",
			name, tt.schedules, tt.wall.Round(time.Second), tt.electorSecs, tt.overlaps, tt.accepted, tt.stale, tt.outOfOrder, tt.refused,
			tt.histories, tt.ops, tt.illegal, tt.undecided, tt.watchEvents, tt.watchBad, tt.withLeader, len(tt.toLeader), tt.interrupted,
			quantile(tt.toLeader, 0.5).Round(time.Millisecond), quantile(tt.toLeader, 0.99).Round(time.Millisecond), quantile(tt.toLeader, 1).Round(time.Millisecond),
			quantile(tt.afterAnswer, 0.5).Round(time.Millisecond), quantile(tt.afterAnswer, 0.99).Round(time.Millisecond), quantile(tt.afterAnswer, 1).Round(time.Millisecond),
			tt.reconnect.Round(time.Millisecond), tt.bound, tt.noLeader, gap, tt.maxSample)
	}
	_ = w.Flush()
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, "faults injected, by kind:")
	for _, name := range backendNames() {
		tt := totals[name]
		if tt == nil {
			continue
		}
		var ks []string
		for k := range tt.faults {
			ks = append(ks, string(k))
		}
		slices.Sort(ks)
		var parts []string
		for _, k := range ks {
			parts = append(parts, fmt.Sprintf("%s %d", k, tt.faults[kind(k)]))
		}
		fmt.Fprintf(&b, "  %s: %s\n", name, strings.Join(parts, ", "))
	}
	fmt.Fprintln(&b, "heals after which the next leader came later than the liveness bound after the store's first answer (or not before the run ended):")
	for _, name := range backendNames() {
		if tt := totals[name]; tt != nil {
			fmt.Fprintf(&b, "  %s: %d of %d\n", name, len(tt.overBound), len(tt.toLeader)+tt.noLeader)
			for _, o := range tt.overBound {
				fmt.Fprintf(&b, "    %s\n", o)
			}
		}
	}
	fmt.Print("\nchaos summary\n", b.String())
	if path := os.Getenv(summaryEnv); path != "" {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "chaos: writing %s: %v\n", path, err)
		}
	}
}

// backendNames lists the backends in the order they run.
func backendNames() []string {
	names := make([]string, len(backends))
	for i, b := range backends {
		names[i] = b.name
	}
	return names
}
