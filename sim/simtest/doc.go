// Package simtest is the runtime mode of Tenure's simulator: it runs the
// real lead.Electors, with their Lead and Every bodies, their observers
// and their watchdog, on a real store.Store (memstore by default, or
// yours) in virtual time, with the faults of package sim injected around
// them, and checks what users' jobs see.
//
// Each seed runs in a bubble of testing/synctest, so that virtual time
// advances exactly when every goroutine of the electors and the store is
// idle: ten virtual minutes take a fraction of a second. That is why the
// package imports testing and is called from tests (Check, Run). The
// harness itself (schedule, fault wrappers, checks, clocks) imports neither
// testing nor synctest; package realtime runs it in real time on a scaled
// clock, for "tenure sim -runtime", which does not link this package.
//
// What runs: Nodes electors built with lead.New, each with a drifting
// clock (lead.WithClock), a log handler and an observer that a pause
// blocks (a stalled elector loop), lead.WithReleaseOnStop chosen per
// process (false: a crash; true: a graceful release), and behind a
// fault-injecting wrapper of the shared store: per-call latency, lost
// requests, lost replies (the outcome is unknown to the caller), partitions
// (aimed at the current leader half of the time), a slow store, broken and
// (with WatchChaos) reordered watch streams, data loss (through the store's
// Delete method). The wrapper forwards store.Watcher and store.Lossy
// exactly when the store has them. Each elector runs a Lead body (Repeat)
// and an Every body that write through one fence.Register.
//
// What is checked: at most one elector leads at any instant, and terms'
// tokens grow in the order the store stored them, both judged by an
// independent oracle from the run's recorded history (the store's writes,
// what each elector was delivered, the data losses, and each elector's
// Term at every term start and at every CheckEvery of virtual time); a
// body's context is live only while its elector leads with the body's
// token; observers are told Started and Stopped in alternation, with the
// tokens Term reports, at the instants Term changes (unless a pause delayed
// them); a term that ended never comes back (Term never reports its token
// again); no token is the token of two electors' terms; the
// fenced register never accepts an older token after a newer one, never
// accepts a token no term had, and never refuses an elector that still
// leads; the store's revisions grow and its tokens never go down; Run,
// Lead and Every return only when told to; and, once faults heal, an
// elector leads within sim.LivenessBound.
//
// Reproducibility: the schedule, the latencies and every random choice
// come from the seed, and faults are applied at instants when everything
// is idle, but goroutines that wake at the same virtual instant run in an
// order Go's scheduler picks. The same seed gives the same trace in most
// runs, not all (docs/benchmarks.md has the measurement); a violation
// found by a seed is replayed by that seed in practice, and its timeline
// is printed when it is found.
package simtest
