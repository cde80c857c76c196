// Package storeurl opens a store from a URL, so that applications and the
// tenure command pick a backend from configuration:
//
//	memory://NAME                         an in-process store, shared by NAME within one Opener
//	redis://[user:pass@]host:port/db      Redis (also rediss:// and unix://); ?prefix=P sets the key prefix
//	postgres://user:pass@host:port/db     PostgreSQL (also postgresql://); ?tenure_table=T or SCHEMA.T sets the table
//	kubernetes://NAMESPACE                Kubernetes Leases, in-cluster config or KUBECONFIG (?context=C)
//	etcd://[user:pass@]host:port/PREFIX   etcd (also etcds:// for TLS; several host:port separated by commas)
//
// The Store that Open returns is the backend's own store with Close added:
// it keeps every capability of the backend (store.Watcher, store.Lossy and
// any other optional interface), so pass it to lead.New as it is.
//
// Register adds a scheme served by a custom store, for every Opener of the
// program, as database/sql.Register adds a driver: a build of the tenure
// command that imports a package registering its scheme opens that store
// by URL too.
//
// Unknown schemes, malformed URLs and URLs without the host their scheme
// needs give errors that name the problem. So do the client libraries'
// pool and timer parameters out of the ranges a process survives: go-redis's
// connection counts (pool_size and the like) outside [0, 10000], its
// buffer sizes above 64 MiB, max_retries outside [-1, 100], and durations
// given as more seconds than a time.Duration holds; pgxpool's connection
// counts above 10000 (a minimum above pool_max_conns included),
// pool_health_check_period below 100ms, and negative lifetimes, idle
// times, jitter and ping timeouts. Credentials never appear in
// errors, whatever the form of the URL or keyword/value string: they are
// shown as xxxxx.
package storeurl
