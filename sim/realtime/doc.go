// Package realtime runs the simulator's runtime mode outside tests: the
// real lead.Electors, their Lead and Every bodies, observers and watchdog,
// on a real store.Store (memstore by default) behind the fault-injecting
// wrapper of package simtest, with the same fault schedule and the same
// checks, but in real time on a scaled clock instead of in a
// testing/synctest bubble. It imports neither testing nor testing/synctest,
// which is why "tenure sim -runtime" uses it.
//
// Time: every elector's lead.Clock, the store's latencies and the fault
// schedule run at Options.Speed times real time (DefaultSpeed: 10 seconds
// of the electors' time in one real second), so a run of Duration takes
// Duration/Speed of wall-clock time. lead bounds store calls with a real
// time context.WithTimeout, not its clock; the wrapper ends each call at
// BackendTimeout of the run's time, as lead's timeout does in virtual time.
//
// Not reproducible byte for byte: goroutines run when the Go scheduler and
// the operating system run them, and a scheduling delay of d real time is
// Speed×d of the electors' time. A seed draws the same fault schedule,
// latencies and random choices every time, but what the electors do with
// them depends on scheduling, so the verdicts and timelines of one seed
// can differ from run to run (docs/benchmarks.md has the measurement).
// simtest.Check and simtest.Run, from go test, are the reproducible way.
//
// What the checks tolerate: the checks that compare two electors (at most
// one leads; tokens go up; fenced writes go forward; the register never
// refuses a leader) report only what the reads prove, whatever the
// scheduling: each elector's Term is stamped with the instant after its
// read, strictly after the read before, and a term is taken to span only
// the instants between its first and last reads, so two terms found to
// overlap both led at one instant. A violation they report is real;
// scheduling can only make them miss one. The checks of timely notification (observers told
// what Term says, a body's context live only in its term, Status agreeing
// with Term) report a disagreement once it has lasted longer than
// Result.Tolerance: 2×CheckEvery plus 4× the largest scheduling delay
// measured in the run (how late the harness's own timers fired, in the
// electors' time). The liveness bound grows by the same tolerance. A
// disagreement that lasts is reported; one shorter than the tolerance is
// only caught by simtest.
package realtime
