// Package storetest is the conformance suite of the [store.Store] contract,
// in the manner of testing/fstest. Every store of Tenure passes it, and so
// must a custom one before an elector relies on it:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store[storetest.Meta] {
//			return mystore.New[storetest.Meta](...)
//		})
//	}
//
// Run is generic over the metadata type. A store tied to one metadata type
// passes sample values of it (a generator is a loop filling the slice):
//
//	storetest.Run(t, func(t *testing.T) store.Store[Pin] { return pinstore.New() },
//		storetest.WithSamples(Pin{}, Pin{Addr: "10.0.0.1:80"}),
//		storetest.WithOversized(func() Pin { return Pin{Addr: strings.Repeat("a", store.MaxMetadataBytes)} }))
//
// With [Meta] the suite brings its own values. For another type, the checks
// of metadata that need more than samples (oversized metadata, metadata the
// caller mutates after a write) run when [WithOversized] and [WithShared]
// give what they need, and are skipped, saying so, otherwise.
//
// [Run] runs each check as a subtest with a fresh store from newStore. Names
// carry a random prefix, unique to each Run, so a store may be a shared server
// that outlives the test; the suite deletes nothing it wrote, except one
// name through [WithDelete]. The checks
// that use Watch run when the store implements [store.Watcher], and those of
// WatchFunc when it implements [store.FuncWatcher]; they are skipped
// otherwise.
//
// # What is checked
//
//   - CompareAndSwap with the zero revision creates only if absent; a second
//     create gets ErrConflict with the first record and its revision.
//   - Get of a missing name gets ErrNotFound; a swap that expects a revision
//     on a missing name gets ErrConflict with a zero record and revision.
//   - A stale revision gets ErrConflict with the current record and revision,
//     and writes nothing.
//   - 16 goroutines racing CompareAndSwap from one revision (and 16 racing to
//     create): exactly one wins, every loser gets ErrConflict with the
//     winner's holder, token and revision.
//   - Creates of 16 names of their own made at once, each followed by a Get,
//     each get their own answer (for a store that sends calls made at the
//     same time together, in a pipeline or a batch).
//   - Revisions are non-zero and strictly increase over many writes; Get
//     returns the revision and record that CompareAndSwap returned.
//   - A release (Holder "") keeps Token and Transitions.
//   - Typed metadata round trips (the zero value, empty maps and slices,
//     nested structs, a pointer, unicode and JSON-hostile strings, a large
//     integer, a large blob), and a caller mutating a map after a write or
//     after a read changes nothing stored.
//   - LeaseDuration, Token and Transitions round trip exactly: 0 (a
//     released record; its Token 0 is raised, since 0 is never issued), the
//     largest values a record may hold (lease.MaxToken, lease.MaxDuration)
//     and durations in whole milliseconds (1.5s); finer durations are not
//     tried. Times in a zone other than UTC read back as the same instants.
//   - Claim round trips: a store persists it with every record (true on a
//     create marked so, false again on the write that takes the claim
//     over), though no elector reads it to decide anything: it is how
//     people and other processes tell a claim from a term.
//   - Every swap returns a revision of at most store.MaxRevision and a
//     Token in [1, lease.MaxToken].
//   - Tokens of new terms (see store.Renews and store.NewToken): a new term
//     proposed with a lower token, token 0, or the stored token under
//     another holder gets a token above the stored one, which renewals then
//     keep; acquiring a released record with its token gets a larger one.
//     A Token above lease.MaxToken (lease.MaxToken+1, 1<<63+5, 2^64-1) gets
//     ErrTokenExhausted, as does every new term once the stored token is
//     lease.MaxToken, whatever token it proposes (0, as a token computed
//     with uint64 arithmetic wraps to, among them); such a swap writes
//     nothing, while renewals and the release of that last term go on.
//   - A cancelled context, or one past its deadline, makes Get and
//     CompareAndSwap fail with an error wrapping context.Canceled or
//     context.DeadlineExceeded, and such a CompareAndSwap writes nothing.
//   - Bad names ("", 254 bytes, a NUL byte, a control character, invalid
//     UTF-8) get ErrInvalidName from Get, CompareAndSwap and Watch.
//   - Metadata larger than store.MaxMetadataBytes gets ErrMetadataTooLarge;
//     a negative LeaseDuration, one above lease.MaxDuration, a holder with a
//     zero LeaseDuration, Transitions above lease.MaxToken, or a bad holder
//     gets ErrInvalidRecord; and the record stored before is still there,
//     unchanged.
//   - With [WithReopen], the token floor is kept with the data, not in a
//     Store value: terms written through one store, then new terms,
//     proposed with token 1, through stores opened again on the same data
//     (over a held record, over a released one) get tokens above every
//     token issued before, and Get through a store opened again returns the
//     record and revision written. With [WithDelete] as well, after the
//     record is deleted behind the store's back, creating it again through
//     a store opened again gets a token above every token issued before
//     and a revision the name never had.
//   - CreateVouched, for a store that implements store.CreateVoucher:
//     it creates as CompareAndSwap expecting revision 0 does, storing a
//     create it vouches for with Claim false and any other as given; a
//     create meeting a record gets ErrConflict with that record, leaves it
//     as it was, and is not vouched for.
//   - CompareAndSwapBatch, for a store that implements store.Batcher: in
//     a batch mixing a renewal, a stale revision, an absent name, a
//     create, an invalid name, an invalid record, a create over a record,
//     a token above lease.MaxToken and one name twice, each swap has the
//     outcome a single CompareAndSwap has (the record written, or found
//     with its revision) and the names whose swap failed keep their
//     record; a batch of one and an empty batch work; with an ended
//     context every swap reports it and nothing is written.
//   - Watch: a fresh subscriber first gets the current record, or an Absent
//     event; later changes arrive with strictly increasing revisions up to
//     the last write (intermediate ones may be skipped), each with the record
//     written at that revision; a watch on one name sees nothing of another
//     (as far as a check can tell without waiting for silence: events are
//     received as soon as the store sends them, and any of the other name
//     fails); two subscribers both see a change; cancelling the watch's
//     context closes its channel. Watch with a context already cancelled
//     or past its deadline returns an error or a channel that closes.
//   - WatchFunc: the checks of Watch, each event being a call of the
//     callback and the closed channel its one call with false. Besides:
//     calls never overlap (checked while watches start and end and four
//     goroutines write); no call follows the call with false (as far as a
//     check can tell: none came by the time another watcher saw a later
//     write); the call with false carries a zero event; WatchFunc with an
//     ended context returns an error or calls the callback with false;
//     after an error (a bad name gets ErrInvalidName) the callback is never
//     called. The callback never waits: it queues up to 1024 events for
//     the check.
//
// Not checked, since the Store interface cannot cause it: what happens when
// the backend loses its data (revisions must still never repeat). A store
// tests that itself, as memstore does with its Delete method.
//
// # Latitude a store has
//
// Records are compared field by field with go-cmp, with these allowances,
// which the store contract grants:
//
//   - Token: a store may raise the token of a record it writes (to keep
//     tokens increasing across data loss), never lower it. The suite checks
//     Token >= the one written, and that the token of a record read back is
//     the one CompareAndSwap returned. Rewriting a record with the token
//     CompareAndSwap returned (a renewal, a release) must keep that token
//     exactly.
//   - AcquiredAt and RenewedAt: a store may keep the times written, to at
//     least millisecond precision, or set them from its own clock. The suite
//     writes times taken from time.Now just before the call and checks only
//     that they read back non-zero and within one second of those written;
//     a zero time written is not checked. Locations are ignored (times are
//     compared with time.Time.Equal).
//   - Metadata: nil and empty maps and slices are treated as equal, since a
//     codec need not tell them apart.
//
// Everything else must read back exactly as written. Waits on a Watch
// channel time out after [WatchTimeout]; the suite never sleeps.
package storetest
