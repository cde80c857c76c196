// Package oracle judges a leader election's safety from a recorded history
// alone: every store write with its send and apply instants, every record
// delivered to each process, what an adversary did to the store, and each
// process's belief sampled through the calls its users make (Leading and
// Term on a machine, IsLeader and Term on an elector). It never reads
// what a process reports about itself: no internal field, no report, no
// log line.
//
// It checks two properties:
//
//   - One leader. Two terms never overlap in real time. A term is one
//     interval: between two samples of one incarnation leading with one
//     token, it led throughout. A term that ended earlier in the history
//     than another began, at the same instant, does not overlap it.
//   - Tokens. A term's token is one its own incarnation's write stored,
//     and terms, in the order their acquiring writes were stored, have
//     tokens that grow.
//
// Each has exactly one excuse, a physical impossibility stated with its
// bound:
//
//   - Erased history. The store forgot what it acknowledged (a rollback,
//     a restore of a stale backup, a loss in a store that keeps its
//     records) or someone else stored the release of a held lease, between
//     the acquiring writes of two terms (a rollback to the revision the
//     store holds, or a restore of the record it holds, forgot nothing and
//     is none). The later term's acquirer could
//     not have known: if its acquire expected the revision the last
//     erasure made current, it had been delivered no record that erasure
//     made the store forget (before the erasure, or late); if it rests on
//     a stored release or on a write stored after the erasure, nothing it
//     was told showed what was forgotten. Bound: the earlier term stops
//     leading within MaxRenewDeadline/(1−Drift) of its last write the
//     store applied, since a process leads only on a write it sent, for
//     at most RenewDeadline of its own clock from the send.
//   - Lost floors. A term's token may be at or below an earlier term's
//     only when the earlier token lay above the store's clock when it was
//     stored (someone else's write had raised the floor) and a rollback,
//     restore or loss in a store that keeps its records came after it: a
//     restored copy takes back a floor the clock does not cover.
//
// A genuine record is a (revision, record) pair the store held at some
// instant at or before its delivery; anything else delivered (a forged
// watch event) is no knowledge.
//
// Events must be given in non-decreasing time order. The caller samples
// the belief of every live incarnation at each instant any of them may
// start a term (after each step of a machine), and again at the instant
// Pending returns, so that an excused overlap is held to its bound.
package oracle
