// Package demo is the scripted demo of Tenure: several workers in one
// process electing a leader on the in-memory store, a graceful handover, a
// crash failover and a fenced resource, printed as it happens. Both `tenure
// demo` and the small command behind `make demo` (cmd/tenure-demo) run it.
//
// It imports only lead, lease, fence and store/memstore besides the
// standard library, so that `make demo` on a fresh clone compiles none of
// the backends' client libraries (client-go, pgx, go-redis).
package demo
