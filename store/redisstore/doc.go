// Package redisstore keeps Tenure lease records in Redis, through a go-redis
// v9 client the application already has (a *redis.Client, a
// *redis.ClusterClient or a failover client; a *redis.Ring works, but its
// clients can disagree on which shard holds a name, so it is not
// recommended).
//
// A [Store] implements [store.Store], [store.Watcher] and
// [store.FuncWatcher] and passes
// [github.com/tenure-go/tenure/store/storetest]. docs/backends/redis.md
// describes the layout, the script and the failure behaviour at length,
// including what is and is not safe with replication, Sentinel and Cluster.
//
// # Layout
//
// The record of an election name is one hash at
//
//	<prefix>tenure:{<escaped name>}
//
// where the prefix is set with [WithPrefix] (default "") and the escaped
// name is the name with '%', '{' and '}' percent-encoded. The braces are a
// Redis Cluster hash tag: every name hashes to a slot of its own choosing,
// whatever braces or colons it contains, and the escaping keeps a name from
// closing its braces early, so no name can reach another name's key. Every
// change is published on the channel <key>:changes, which carries the same
// hash tag, except those of a batch ([Store.CompareAndSwapBatch]): they go
// out together, as one message on the channel <prefix>tenure:changes, which
// a [Hub] subscribes beside the names' channels. A batch publishes a record
// on its name's channel too while that channel has a subscriber that has
// not subscribed <key>:changes:batched, as a Hub does: one of a version
// without batch messages, or a tool of your own.
//
// The hash holds the fields rev (the revision), op, holder, token, acquired,
// renewed (RFC 3339, UTC), duration (nanoseconds), transitions, meta (the
// metadata as the codec encodes it, JSON by default) and sum, a SHA-1 of all
// the others. A hash whose sum does not match (edited by hand), whose fields
// do not parse, or a key of another type is reported as
// [store.ErrCorruptRecord] by Get, Watch and CompareAndSwap, and is never
// overwritten. To clear a record by hand, delete the key.
//
// # Watching
//
// All the watches of a Store share one Pub/Sub connection, its [Hub], which
// subscribes and unsubscribes the names' channels as watches come and go;
// Stores on one client can share a Hub too ([NewHub], [WithHub]). So many
// elections in one process hold the client's pool plus one connection, and,
// watching with [Store.WatchFunc], no goroutine per watch: the Hub's
// reading goroutine calls each watch's function.
//
// # Compare-and-swap
//
// CompareAndSwap is one Lua script, sent with EVALSHA (and again with EVAL
// when the server answers NOSCRIPT): it checks the record, compares
// the revision, writes the hash and publishes the change, atomically. On a
// mismatch the same reply carries the current record.
//
// # Pipelines
//
// Get and CompareAndSwap go out through the Store's pipelines, at most two
// in flight: a call made while both are out waits for the next, which
// carries every call waiting, in one round trip. Idle, a call goes out at
// once and alone. Under load (a lead.Group renewing thousands of names) a
// round trip carries many calls, which share its system calls and its
// connection. A pipeline is not a transaction: each command runs, succeeds
// or fails as if sent alone, and each call keeps its own context (one whose
// context ended before its pipeline went out is not sent).
//
// # Revisions and tokens across data loss
//
// Redis without persistence forgets every record when it restarts, and a
// failover or a restored snapshot can roll a record back. Revisions and
// fencing tokens still never repeat or go backwards, because the script
// takes every new revision as max(old+1, now) and every new token (a record
// created where there was none, or a write whose token differs from the
// stored one, that is, a new term) as max(proposed, now), where now is the
// server's TIME in microseconds. This holds as long as the server's clock
// does not step back by more than the data lost, and a name is written
// fewer than a million times a second (one script run takes longer than a
// microsecond). Tokens are therefore large numbers; only their order
// matters.
package redisstore
