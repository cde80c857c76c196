// Package store defines the contract between an elector and the place where
// lease records live: a minimal [Store] (Get and CompareAndSwap) plus the
// optional [Watcher], in the manner of io/fs.
//
// Every implementation must pass the conformance suite in
// [github.com/tenure-go/tenure/store/storetest]. That suite is how a custom
// store is made safe to plug in.
//
// The rules a Store keeps:
//
//   - Get returns the current record of a name and its revision, or an
//     error wrapping ErrNotFound.
//   - CompareAndSwap writes only if the stored revision still equals the
//     expected one; the zero revision means "create only if absent". On
//     success it returns the stored record and its new revision. On mismatch
//     it returns an error wrapping ErrConflict together with the record and
//     revision it found (the zero revision if there is none), so that a loser
//     learns the winner in the same round trip.
//   - Revisions of a name strictly increase and are never reused, not even
//     after the store loses its data.
//   - A store may raise the Token (and always assigns the Revision) of a
//     record it writes, to keep tokens increasing across data loss; it never
//     lowers them. The record CompareAndSwap returns is the one stored, and
//     callers take the token from it.
//   - A write that continues the stored term (Renews: the same token, the
//     same holder or none) keeps its token; any other write starts a new
//     term, whose token NewToken issues: above every token stored under the
//     name before, never 0, never above lease.MaxToken. A write that would
//     need a larger token fails with ErrTokenExhausted and writes nothing;
//     a token never wraps around. A store whose data can be restored from
//     an older copy floors the token at a clock no restore takes back, by
//     passing ClockToken as part of NewToken's floor, so that a term after
//     the restore never reuses the token of a term the restore lost.
//   - What a store reads from its backend is untrusted: a record that
//     breaks ValidateStored, or a revision above MaxRevision, is reported
//     with ErrCorruptRecord by Get, CompareAndSwap (which then writes
//     nothing) and Watch, and no arithmetic on stored values may overflow.
//     Revisions may go backwards when someone restores or rewinds the
//     backend; a store reports such a record as it finds it.
//   - Each operation is one round trip to the backend and honours its
//     context.
//   - Names are checked with ValidateName, metadata is limited to
//     MaxMetadataBytes once encoded, and a stored record that cannot be
//     decoded is reported with ErrCorruptRecord and never overwritten.
package store
