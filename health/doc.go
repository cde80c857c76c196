// Package health serves an elector's health over HTTP, for liveness probes.
//
// The handler reports unhealthy in one case: the elector believes it leads
// (it has an open term) but has not sent a successful renewal for longer
// than RenewDeadline plus a slack. That is a stuck leader — its loop or its
// process is wedged — which a supervisor should restart. A follower, or a
// leader that steps down as designed when the store is unreachable, is
// healthy.
package health
