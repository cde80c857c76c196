// Package simuser is an example of a user of Tenure's simulator: a module
// of its own that runs both modes from its tests, against memstore and
// against MapStore, a small store of its own written against the
// store.Store contract.
//
//	go test ./...                       # model and runtime sweeps
//	TENURE_SIM_SEEDS=17 go test -run TestRuntimeMapStore -v   # replay one seed
package simuser
