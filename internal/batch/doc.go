// Package batch sends the calls a store gets at about the same time in one
// round trip: a call made while a store's round trips are all busy waits
// for the next, which takes every call waiting. Idle, a call goes out at
// once and alone, so batching costs no latency; under load, the calls of a
// round trip share its system calls, its connection and its goroutine.
//
// Every call keeps its own answer and its own context: a call whose context
// ends returns at once, with the outcome of its question unknown, as the
// store contract allows; one whose context ended before its batch went out
// is not sent.
//
// It is used by store/redisstore and store/pgstore, and by the simulator's
// runtime mode (sim/internal/rt), which sends some Groups' store calls in
// batches so that the same code meets its faults.
package batch
