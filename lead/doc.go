// Package lead runs leader elections: an [Elector] drives the pure state
// machine of package fsm with a real clock and a store.Store, and runs work
// only while it leads.
//
//	e, err := lead.New("nightly-report", st, lead.WithIdentity(podName))
//	if err != nil { ... }
//	go e.Run(ctx) // drives the election until ctx ends, then releases
//
//	// One long-lived body, cancelled the instant leadership is lost:
//	err = e.Lead(ctx, func(ctx context.Context, t lead.Term) error {
//		return compact(ctx, t.Token)
//	}, lead.Repeat())
//
//	// Or a periodic task on the leader only: at the start of each term,
//	// then every minute; a failed run is logged and the schedule goes on.
//	err = e.Every(ctx, time.Minute, func(ctx context.Context, t lead.Term) error {
//		return sendReminders(ctx)
//	})
//
// Many elections in one process run in a [Group]; a [Shards] spreads a set
// of them evenly over every live replica, moving only what a replica
// joining or leaving requires.
//
// Every elector, follower or leader, can follow who leads with
// [Elector.Leaders]: a channel of each change of holder, with the record and
// its metadata (client-go's OnNewLeader).
//
// A leader believes it leads until RenewDeadline after it sent its last
// successful renewal; its work is cancelled at that moment even if the
// store cannot be reached. Each term carries a fencing token (see package
// fence) that a resource can use to refuse writes from a term that ended.
// The lease is released (when Run's ctx ends, or by [Elector.Resign], which
// steps down and stays in the election) only once the term's work has
// returned, so that the next leader's work never runs beside it; work that
// outruns the term's deadline leaves the lease to expire instead (see
// [Elector.Run]).
//
// What a store returns is untrusted: every record is checked with
// store.ValidateStored, a record out of bounds is reported (Err, and the
// log at Error) and never led on, a store that goes back in time is
// reported as ErrRevisionRollback and waited out for a full lease, and watch
// events only make the elector read the record (see docs/design.md).
package lead
