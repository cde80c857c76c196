// Package example is an operator whose controller runs only on the replica
// that leads a Tenure election, on a Kubernetes Lease or on any store
// storeurl opens; cmd/operator is its command. Its controller, Stamper,
// stamps every ConfigMap of its namespace with the number of its keys,
// fenced by the term's token: a replica whose term has ended cannot
// overwrite what a later leader wrote.
//
//	go run ./example/cmd/operator -namespace default            # a Lease "example-operator" in default, through kubestore
//	go run ./example/cmd/operator -namespace default -store redis://localhost:6379/0
//	go run ./example/cmd/operator -namespace default -store 'postgres://user:pass@localhost:5432/app'
//
// Run several at once (each with its own -id, or POD_NAME) and stop the
// leader: another takes over at once after a clean stop (SIGTERM), or once
// the lease has expired after a crash.
package example
