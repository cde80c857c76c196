// Package storeurl opens a store from a URL, so that applications and the
// tenure command pick a backend from configuration:
//
//	memory://NAME                         an in-process store, shared by NAME within one Opener
//	redis://[user:pass@]host:port/db      Redis (also rediss:// and unix://); ?prefix=P sets the key prefix
//	postgres://user:pass@host:port/db     PostgreSQL (also postgresql://); ?tenure_table=T or SCHEMA.T sets the table
//	kubernetes://NAMESPACE                Kubernetes Leases, in-cluster config or KUBECONFIG (?context=C)
//
// Unknown schemes and malformed URLs give errors that name the problem.
// Credentials never appear in errors: URLs are shown redacted.
package storeurl
