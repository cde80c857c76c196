// Package fsm is the pure state machine at the core of Tenure: events in,
// actions out.
//
// A [Machine] is one node's view of one election. The driver (package lead,
// or the simulator in package sim) feeds it [Event]s stamped with
// the node's monotonic time, performs the [Action]s that [Machine.Step]
// returns (read the record, compare-and-swap it, wake me at T, started
// leading with token N, stopped leading because ...), and feeds the results
// back. The machine starts no goroutine, does no I/O, reads no clock and
// draws randomness only from the source its caller gives it, so the same
// events always give the same actions.
//
// # States
//
//	Follower  -> Candidate  the lease is free, or expired by local time
//	Candidate -> Leader     the acquiring swap succeeded (the term starts
//	                        when the request was sent)
//	Candidate -> Follower   conflict, or the outcome is unknown, or a
//	                        create in a store that can lose records
//	                        (only a claim: see Options.LossyStore)
//	Candidate -> Expiring   the swap succeeded too late to lead, or the
//	                        node is stopping: release what was taken
//	Leader    -> Leader     a renewal succeeded
//	Leader    -> Follower   someone else holds the lease
//	Leader    -> Expiring   no renewal within RenewDeadline, or stop
//	Expiring  -> Follower   released, taken by another, or surely expired
//
// # Safety
//
// A leader believes it leads until lastRenewSent + RenewDeadline, measured on
// its own clock from the moment it sent the last renewal that succeeded. A
// follower takes a held lease over only after it has seen the same revision
// for the lease's LeaseDuration on its own clock, counted from when it first
// received that revision, and only with a compare-and-swap from that
// revision. Since RenewDeadline < LeaseDuration, the leader's belief ends
// before any follower's patience does, whatever the offset between clocks;
// their rates may drift apart by a bounded margin (see docs/design.md).
package fsm
