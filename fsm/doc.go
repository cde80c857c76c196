// Package fsm is the pure state machine at the core of Tenure: events in,
// actions out.
//
// A [Machine] is one node's view of one election. The driver (package lead,
// or the simulator in package sim) feeds it [Event]s stamped with
// the node's monotonic time, performs the [Action]s that [Machine.Step]
// returns (read the record, compare-and-swap it, started leading with
// token N, stopped leading because ...), feeds the results back, and sends
// a Tick when the time [Machine.NextWake] names has come. The machine starts no goroutine, does no I/O, reads no clock and
// draws randomness only from the source its caller gives it, so the same
// events always give the same actions.
//
// # States
//
//	Follower  -> Candidate  the lease is free, or expired by local time, or
//	                        a read shows our own acquire whose outcome was
//	                        unknown (a renewing swap confirms it)
//	Candidate -> Leader     the acquiring swap succeeded (the term starts
//	                        when the request was sent)
//	Candidate -> Follower   conflict, or the outcome is unknown, or a
//	                        create in a store that can lose records
//	                        (only a claim: see Options.LossyStore)
//	                        that the store did not vouch for
//	                        (Event.Vouched), even if the node is
//	                        stopping: a released claim would be free
//	Candidate -> Expiring   the swap succeeded too late to lead, or the
//	                        node is stopping: release what was taken
//	Leader    -> Leader     a renewal succeeded
//	Leader    -> Follower   the store does not hold the term: another
//	                        holder or token, no record, a rollback, or a
//	                        record the machine refuses
//	Leader    -> Expiring   no renewal within RenewDeadline, stop, or
//	                        resign (a handover: a resign whose release
//	                        names a successor)
//	Expiring  -> Follower   released, taken by another, or surely expired
//
// After Stop the machine is stopping: a leader's term ends (Expiring), the
// lease is released unless Stop said to keep it, and the machine then
// emits Done and has stopped ([Machine.Stopped]). After Resign a leader's
// term ends and the lease is released as after Stop, but the machine goes
// on as a Follower that starts no term until it has accepted a record held
// by another node, or LeaseDuration has passed. A Resign with a Successor
// is a handover: the release names the successor (Lease.Successor), which
// alone takes it as a free lease; every other node waits it out as a held
// record, LeaseDuration from when it received it (openTo).
//
// # Safety
//
// A leader believes it leads until confirmed + RenewDeadline, where
// confirmed ([Machine.LastConfirmed]) is the moment, on its own clock, it
// sent the last renewal that succeeded. A
// follower takes a held lease over only after it has seen the same revision
// for the lease's LeaseDuration on its own clock, counted from when it first
// received that revision, and only with a compare-and-swap from that
// revision. Since RenewDeadline < LeaseDuration, the leader's belief ends
// before any follower's patience does, whatever the offset between clocks;
// their rates may drift apart by a bounded margin (see docs/design.md).
//
// # Untrusted input
//
// Whatever a store returns, and whatever a driver feeds it, the machine
// neither overflows nor panics: every sum of times saturates (a wait that
// does not fit in a time.Duration never ends; a leader's belief still does),
// and nothing it writes leaves the bounds of a stored record.
//
//   - Watch events are hints. They never change what the node believes or
//     waits for; one that claims something that would change what the node
//     does (another holder or token, a record gone) makes it read the
//     record (a leader renews instead), at once or after the request in
//     flight, and the answer is what counts. An answer that does not
//     confirm the hint (the record it claimed, or a newer revision someone
//     else wrote) proves it stale or forged: hints are then ignored for a
//     RetryInterval. The one exception is a store whose events are
//     authentic (Options.AuthenticWatch: only the store can produce them):
//     there a follower with no request in flight takes in an event showing
//     the record released at a newer revision as it would a read's answer,
//     and swaps from that revision at once.
//   - A hint that shows the record the node follows (same holder and
//     token) at a newer revision is a renewal: it triggers no read and only
//     postpones a follower's scheduled read, until the watch has been
//     silent for RetryInterval·(1+RetryJitter) + RetryInterval/2, and never
//     past LeaseDuration after the store's last answer; before taking over
//     from a revision a renewal was heard after, the follower reads once.
//     So a forged renewal costs liveness, bounded (one LeaseDuration), and
//     a watch that silently stops delivering degrades to polling; the
//     driver reports a broken watch with WatchLost, and the follower polls
//     until renewals are heard again.
//   - The one thing a renewal hint may move is the start of a wait, and
//     only once a read confirms it: a read that shows the revision and
//     record of the latest renewal heard, on an authentic watch or with
//     the same nonzero Event.Stamp, proves the write existed when the
//     hint arrived, and the follower counts its wait from then. While
//     renewals are still heard, the read before taking over such a
//     wait's revision waits for the quiet to end.
//   - A record out of bounds (see InBounds) or flagged Event.Corrupt is
//     refused: none of its fields enters the state, a leader that meets it
//     steps down, and nobody takes the lease over until the record is
//     replaced or removed. The machine reports ProblemCorrupt.
//   - Answers (reads and swap replies) come one at a time, each sent after
//     the previous one returned, so a revision older than one accepted (or
//     no record after one, in a store that keeps its records) means the
//     store went back in time. The machine reports ProblemRollback, steps
//     down if it leads, follows what the store holds now, and starts no
//     term before a full lease has passed (HoldUntil).
//   - A new term's token is one above the largest token accepted. When that
//     is lease.MaxToken no new term starts (TokensExhausted), and the
//     machine reports ProblemTokensExhausted whenever it would have started
//     one.
//
// # Shortcuts
//
// Two options let a follower act on a watch event showing the lease
// released without reading the record first (shortcuts.go). Each does so
// only while every one of its guards holds; otherwise a read decides.
//
// witnessed (Options.AuthenticWatch) takes the event in as a read's answer:
//
//   - authentic: only the store can make the event; a forged release taken
//     as an answer would let the follower take a live lease at once.
//   - following: only a follower takes a free lease over; other states
//     wait for the answer to their own swap.
//   - idle: an answer to a request sent before the event may show an older
//     revision, and would then be taken for a rollback, or hide one.
//   - holdOver: after a rollback, an event written before it may still be
//     on its way; taken in, it brings back the history the store left.
//   - showsRelease: only a readable released record (present, not corrupt,
//     at a revision, no holder, in bounds) is free to take at once.
//   - openTo: a release naming another successor is not free to this
//     node: a read decides, and the node waits it out.
//   - aboveAccepted: at or below a revision ever accepted (topRev), the
//     event is old news, or was written before a rollback the node saw.
//   - aboveEvents: at or below a revision another event showed and no
//     answer settled, the event came late or the store went back.
//
// takeHeardRelease (Options.GuardedRelease) sends a swap guarded by the
// released record the hint shows instead of the read:
//
//   - guarded: without the store checking the record at the write, a
//     forged or stale release would be taken over.
//   - showsRelease: the guard can vouch only for a readable release.
//   - openTo: only a release free to this node; the guard checks the
//     successor too, so a forged plain release fails against a named one.
//   - aboveAccepted: a release at or below a revision ever accepted is old
//     news, or from the history a rollback left.
//   - aboveRenewals: a release older than a renewal heard and not settled
//     stands only if a rollback lost that renewal, whose writer may lead.
//   - notBelowEvents: likewise for a revision any event showed and no
//     answer settled (the hint's own event shows the hint's revision).
//   - waitsOver: a rollback's or a resign's wait holds for every term; the
//     guard proves the record, not that the wait is over.
//   - tokenLeft: the new token must exceed every token seen and the
//     hint's, and still fit in a record (lease.MaxToken).
//
// # Request budget
//
// One request is scheduled per retry pause (at least RetryInterval); a
// follower that hears renewals on its watch postpones its scheduled reads
// (to one per LeaseDuration while the watch is healthy), and a leader sends
// one request per renewal. Before
// the next one is due, at most two more may follow an answer (an acquire
// after a read showed the lease free, one retry after a conflict, a release
// after a term ended), and one read per watch hint; a hint contradicted by
// the store mutes hints for a RetryInterval. No store behaviour makes the
// machine loop. docs/design.md states the bound.
package fsm
