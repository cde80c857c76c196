// Package demo is the scripted demo of Tenure: several workers in one
// process electing a leader on the in-memory store, printed as it happens.
// A leader stops gracefully and its successor leads at once; a late write
// of the ended term is refused by the fence, with both tokens shown; a
// leader crashes and says nothing, and its successor tells of the expired
// lease, from the store, when it takes over; each leader sets its address
// as metadata, and a follower shows it with the leader it sees through
// Elector.Leaders. It ends with a line that sums up what it showed. Both
// `tenure demo` and the small command behind `make demo`
// (cmd/tenure-demo) run it.
//
// It imports only lead, lease, fence, store and store/memstore besides the
// standard library, so that `make demo` on a fresh clone compiles none of
// the backends' client libraries (client-go, pgx, go-redis).
package demo
