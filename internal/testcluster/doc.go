// Package testcluster holds what Tenure's own tests run on: a deterministic
// simulator of many electors sharing one store, and helpers that start real
// Redis, PostgreSQL and Kubernetes API servers on loopback for the backend
// tests.
//
// A helper that cannot get its server calls Unavailable, which skips the
// test, or fails it when TENURE_REQUIRE_BACKENDS=1.
package testcluster
