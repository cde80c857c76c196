// Package kubestore keeps lease records in Kubernetes: one
// coordination.k8s.io/v1 Lease per election name, in one namespace, through
// client-go's coordination/v1 client ([coordinationclient.LeasesGetter], as
// client-go's own LeaseLock takes). It implements [store.Store],
// [store.Watcher] and [store.FuncWatcher] and passes
// [github.com/tenure-go/tenure/store/storetest] against a real API server.
//
//	st, err := kubestore.New[Meta](clientset.CoordinationV1(), "my-namespace")
//	e, err := lead.New("billing-cron", st, lead.WithIdentity(podName))
//
// A program that needs no other API group builds that client alone, and so
// compiles and links only the coordination/v1 part of client-go, not the
// whole clientset:
//
//	leases, err := coordinationv1.NewForConfig(restConfig) // k8s.io/client-go/kubernetes/typed/coordination/v1
//	st, err := kubestore.New[Meta](leases, "my-namespace")
//
// # Layout of a Lease
//
// The election name is the Lease's name, used as it is: it must be an RFC
// 1123 subdomain (see [ValidateName]), so that `kubectl get lease NAME`
// finds it. The record is kept where Kubernetes users and client-go's
// leaderelection look for it:
//
//	spec.holderIdentity        Holder (absent when released)
//	spec.leaseDurationSeconds  LeaseDuration, rounded up to whole seconds
//	spec.acquireTime           AcquiredAt (microseconds)
//	spec.renewTime             RenewedAt (microseconds)
//	spec.leaseTransitions      Transitions (capped at the int32 maximum)
//
// and what Kubernetes has no field for goes into annotations under
// tenure.dev/ ([AnnotationToken], [AnnotationHolder], [AnnotationMetadata],
// and, only when the spec cannot hold a value exactly,
// [AnnotationLeaseDuration] and [AnnotationTransitions]). Labels,
// annotations and spec fields that others wrote (spec.strategy, say) are
// kept on every update.
//
// LeaseDuration is counted in whole seconds by Kubernetes: a duration
// between 0 and 1s is refused with [store.ErrInvalidRecord]; a duration that
// is not a whole number of seconds is written to the spec rounded up (so a
// client-go reader waits at least as long as promised) and kept exactly in
// an annotation.
//
// # Revisions and round trips
//
// The revision is the Lease's resourceVersion read as a uint64. On an
// etcd-backed API server it is the etcd revision of the last write, which
// grows with every write to the cluster and is never reused, so it strictly
// increases per name as the store contract requires; a server that hands
// out non-numeric resourceVersions cannot be used (the store says so). It
// is not reused after a Lease is deleted and created again either, but it
// goes back if etcd is restored from an older backup, and writes after
// such a restore are given again the revisions the lost history had: a
// swap expecting one of them then succeeds against a record its sender
// never saw, and two electors may lead. Restore etcd with
// "etcdutl snapshot restore --bump-revision N --mark-compacted", N above
// the revisions the backup lost (docs/design.md, "The threat model").
//
//   - Get is one GET.
//   - CompareAndSwap with revision 0 is one POST (create); an existing Lease
//     answers 409 AlreadyExists, and a GET fetches it for the conflict.
//   - CompareAndSwap with a revision is one PUT carrying that
//     resourceVersion, built from the copy of the Lease the Store saw last
//     at that revision (a renewal is one round trip). A stale revision
//     answers 409 Conflict, and a GET fetches the current Lease for the
//     conflict: a conflict costs a second round trip, as the API server does
//     not return the current object with a 409. When the Store has not seen
//     the expected revision itself, it reads the Lease before the PUT.
//   - Watch is a GET; all the Watch calls of a Store share one
//     long-running WATCH of the namespace's Leases (one per name when RBAC
//     allows only named Leases; see [Store.Watch]), whose goroutine calls
//     the functions of [Store.WatchFunc] directly.
//
// # Fencing tokens
//
// The token lives in the tenure.dev/token annotation and is checked by
// CompareAndSwap like the rest of the record. Tenure never deletes a Lease,
// so tokens keep growing. If someone deletes it, a Store that saw the old
// Lease raises the token of the record that re-creates it above every
// token it saw there; a process that never saw the old Lease cannot know
// its tokens, and a new term may then get a token that was used before.
// Do not delete Leases in use, and do not grant "delete" (the minimal Role
// below does not).
//
// # Leases that Tenure did not write
//
// A Lease whose spec someone else wrote last (client-go's leaderelection
// with a LeaseLock, kubectl) is recognised by its tenure.dev/holder
// annotation missing or not matching spec.holderIdentity (client-go keeps
// annotations it does not know, so they can be stale). It reads naturally:
// Holder, times, LeaseDuration and Transitions from the spec, Token 0 (the
// term has no token of Tenure's) and zero metadata. Tenure can take it over
// only as it takes over any held lease: once its holder has not renewed it
// for its leaseDurationSeconds, by the follower's own clock (or at once
// when holderIdentity is empty, as client-go's release leaves it). When
// Tenure takes it over, the token of the new term is raised above the
// tenure.dev/token annotation left by an earlier term of Tenure's, if any,
// and above every token the Store saw under the name.
//
// Both sides compare and swap on resourceVersion, so a Tenure elector and a
// client-go elector contending for one Lease never both win a write; see
// docs/backends/kubernetes.md for the timings that keep their beliefs
// apart as well.
//
// # Errors
//
// A Lease whose tenure.dev/ annotations cannot be read (a token that is not
// a number, metadata the codec cannot decode), or that is outside the
// bounds of [store.ValidateStored] (a token or transitions annotation above
// lease.MaxToken, a leaseDurationSeconds above lease.MaxDuration or missing
// while held, a holder with control characters), is reported with
// [store.ErrCorruptRecord] and never overwritten. A new term that would need
// a token above lease.MaxToken writes nothing and fails with
// [store.ErrTokenExhausted]. A 403 answer becomes an
// error wrapping [ErrForbidden] that names the verb the credentials lack.
//
// # RBAC
//
// The Store needs get, create, update and watch on leases in its namespace;
// not list (after a 410 the Store reads each watched Lease with a GET) and
// not delete. Only [Store.List] (tenure ls) needs list. One watch of the namespace serves all the names of a Store;
// under a Role that restricts watch by resourceNames, the namespace watch
// is refused and the Store watches each name on its own (a metadata.name
// field selector, authorized as "watch" of that one Lease):
//
//	apiVersion: rbac.authorization.k8s.io/v1
//	kind: Role
//	metadata: {name: tenure, namespace: my-namespace}
//	rules:
//	- apiGroups: [coordination.k8s.io]
//	  resources: [leases]
//	  verbs: [get, create, update, watch]
package kubestore
