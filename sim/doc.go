// Package sim is Tenure's deterministic simulator: it runs the real state
// machine (package fsm) on N simulated nodes that share a simulated store, in
// virtual time, with faults drawn from a seed, and checks after every event
// that at most one node believes it leads, that tokens and fenced writes only
// go forward, that nobody accepts an older record, that only legal
// transitions happen, and that a leader appears within the liveness bound
// once faults heal.
//
// A run is single-threaded and byte-for-byte reproducible from its Options:
// the same seed gives the same trace. Build a run with New and call Run, or
// call RunSeed; a failed check is a Violation naming the check, and Timeline
// and WriteSVG render what happened.
//
// The package imports neither testing nor any store client, so programs
// (the tenure CLI) and users' own tests can both link it.
package sim
