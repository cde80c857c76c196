// Package testcluster holds the real-server harness of Tenure's own tests:
// helpers that start real Redis, PostgreSQL and Kubernetes API servers on
// loopback for the backend tests, and the elector-test bodies the backends
// share. The deterministic simulator is the public package sim.
//
// For the chaos runs (package internal/testing/chaos) it also holds a
// fault-injecting TCP proxy (Proxy), an independent checker of the
// electors' beliefs and of writes through a fenced resource (Checker), and
// a recorder of store operations checked for linearizability against a
// model of the store contract (History, RecordStore, StoreModel).
//
// A helper that cannot get its server calls Unavailable, which skips the
// test, or fails it when TENURE_REQUIRE_BACKENDS=1.
package testcluster
