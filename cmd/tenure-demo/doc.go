// Command tenure-demo is what `make demo` runs: the same scripted demo as
// `tenure demo` (several workers in one process on the in-memory store,
// leaders handing over), in a command that imports nothing but the demo.
// tenure links every backend's client library (client-go, pgx, go-redis);
// tenure-demo links none, so that a fresh clone shows the demo after
// compiling a fraction of what tenure needs.
//
//	go run ./cmd/tenure-demo [-workers N] [-step D]
package main
