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
//   - Each operation is one round trip to the backend and honours its
//     context.
//   - Names are checked with ValidateName, metadata is limited to
//     MaxMetadataBytes once encoded, and a stored record that cannot be
//     decoded is reported with ErrCorruptRecord and never overwritten.
package store
