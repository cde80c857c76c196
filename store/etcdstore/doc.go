// Package etcdstore keeps Tenure lease records in etcd (v3 API), through a
// *clientv3.Client the application already has. A [Store] implements
// [store.Store], [store.Watcher], [store.Lossy], [store.MetadataChecker]
// and [store.Validator], and passes the storetest suite and the elector
// tests against a real etcd server. docs/backends/etcd.md says more.
//
//	cli, _ := clientv3.New(clientv3.Config{Endpoints: []string{"etcd:2379"}})
//	st, err := etcdstore.New[Meta](cli, etcdstore.WithPrefix("myapp/"))
//	e, err := lead.New("nightly-report", st, lead.WithIdentity(podName))
//
// # Layout
//
// Two keys per election name:
//
//	<prefix>leases/<name>   the record: a JSON object (holder, token, acquiredAt,
//	                        renewedAt, leaseDurationNs, transitions, metadata
//	                        as base64 of the codec's bytes; claim, true, only
//	                        on a claim)
//	<prefix>tokens/<name>   the highest token issued under the name, in decimal
//
// The prefix is "tenure/" unless [WithPrefix] says otherwise. The record's
// revision is the key's mod revision: etcd's cluster-wide revision of the
// write, which only grows, including across a delete and a re-create of the
// key, but not across a restore from a backup: writes after "etcdutl
// snapshot restore" without --bump-revision are given again the revisions
// the lost history had, a swap expecting one of them succeeds against a
// record its sender never saw, and two electors may lead. Restore with
// "--bump-revision N --mark-compacted", N above the revisions the backup
// lost (docs/design.md, "The threat model"). The token key outlives the
// record, so deleting a record by hand does not reset its tokens.
//
// # Compare-and-swap
//
// CompareAndSwap is one etcd transaction: if the record key's mod revision
// is the expected one (0: the key is absent) and, for a new term, the token
// key's mod revision is the one the Store last saw, put the record (and
// raise the token key); else get both keys. So a loser learns the winner's
// record in the same round trip. A Store remembers the last state it saw
// of each name, which is what lets it decide, before sending, whether the
// write continues the stored term ([store.Renews]) and which token a new
// term gets ([store.NewToken]); when it knows nothing of the expected
// revision it reads first (one more round trip). Every assumption is
// compared in the transaction, so a stale memory costs a retry, never a
// wrong write.
//
// # Watch
//
// Watch reads the record and watches its key from the next revision, with
// clientv3.WithRequireLeader. When etcd ends the watch (a compaction, a
// member without a leader), the channel is closed and the caller watches
// again.
//
// # Corrupt records
//
// A value that is not a record of this package, a record out of the bounds
// of [store.ValidateStored], or metadata the codec cannot decode is
// reported with [store.ErrCorruptRecord] by Get, CompareAndSwap and Watch,
// and never overwritten. A token key that does not hold a token stops new
// terms (the same error) but not the renewals of the current one.
package etcdstore
