// Package chaos holds the chaos runs of Tenure's own tests: electors on
// real redis-server, PostgreSQL and kube-apiserver (and on memstore), each
// behind a fault-injecting proxy of package testcluster, under schedules of
// network and server faults drawn from a seed. An independent checker
// samples every elector's belief and writes through a fenced resource on a
// connection without faults, and every store operation is checked for
// linearizability with porcupine.
//
// The package has no code of its own outside its tests. `go test` runs a
// short schedule per backend (every fault kind once); `make chaos` runs
// long ones and prints a summary table. See docs/reliability.md.
package chaos
