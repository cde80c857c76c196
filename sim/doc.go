// Package sim is Tenure's deterministic simulator, for Tenure's own tests
// and for users' CI. It has two modes.
//
// Model mode (this package) runs the real state machine (package fsm) on N
// simulated nodes that share a simulated store, in virtual time, with
// faults drawn from a seed: clock drift, crashes and restarts, process
// pauses, partitions, lost requests and replies, a slow store, data loss,
// graceful releases and live reconfiguration. After every event it checks
// that at most one node believes it leads, that tokens and fenced writes
// only go forward, that nobody accepts an older record, that only legal
// transitions happen, and that a leader appears within LivenessBound once
// faults heal. A run is single-threaded and byte-for-byte reproducible
// from its Options: the same seed gives the same trace. It runs millions
// of events a second, so thousands of ten-minute schedules fit in seconds.
// Build a run with New and call Run, or call RunSeed; sweep many seeds
// from a test with Check. A failed check is a Violation naming the check;
// WriteTimeline, WriteSVG and WriteHTML (a self-contained page that
// Check keeps for each failing seed) render what happened.
//
// Runtime mode (package sim/simtest) runs the real lead.Electors, with
// their Lead and Every bodies, observers and watchdog, on any
// store.Store (memstore by default, or yours) in virtual time under
// testing/synctest, behind a fault-injecting wrapper. It shares this
// package's Faults, Fault, Latency, Violation and check names.
//
// What each mode proves, and what it does not: model mode explores the
// state machine's decisions under many more schedules than runtime mode
// can, but with a model of the driver and of the store; runtime mode
// exercises the code users run (lead, and the user's store through its
// public interface) with fewer schedules, and is reproducible only as far
// as Go's scheduler allows. Neither proves anything about a real network
// or a real server's failover: they check the code against the faults
// they model.
//
// The package imports neither testing nor any store client, so programs
// (the tenure CLI) and users' tests can both link it; Check takes the
// small TB interface that *testing.T satisfies.
package sim
