// Package scale holds the benchmark of many elections in one process (issue
// 13): N elections, each with one elector in each of three groups (three
// stand-ins for three processes, each with its own store client), at the
// default timings, on memstore, Redis and PostgreSQL. It measures, in
// steady state, CPU, memory, goroutines and store connections per elector.
// It has no code outside its test; see docs/benchmarks.md.
package scale
