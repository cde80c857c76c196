// Package controllerruntime runs the leader-only runnables of a
// controller-runtime manager (sigs.k8s.io/controller-runtime) under a
// Tenure election, on any Tenure store: a Kubernetes Lease (kubestore),
// Redis, PostgreSQL or etcd (storeurl).
//
//	e, err := lead.New("my-operator", st, lead.WithIdentity(podName))
//	x, err := controllerruntime.NewManager(restConfig, manager.Options{...}, e)
//	err = ctrl.NewControllerManagedBy(x.Manager()).For(&appsv1.Deployment{}).Complete(r)
//	err = x.Manager().Start(ctx) // until ctx ends, or leadership is lost
//
// # Design
//
// The manager runs with controller-runtime's own leader election off, and
// Election.Manager wraps it: its Add sorts runnables as the manager does.
// Those that need leader election (controllers, and any runnable that does
// not say otherwise with NeedLeaderElection) are kept by the Election;
// every other one (caches, webhooks, metrics and health servers, runnables
// whose NeedLeaderElection is false) goes to the manager and runs on every
// replica. The Election adds one runnable of its own to the manager,
// which runs on every replica once the caches have synced: it runs the
// elector (lead.Elector.Run) and, in each term (lead.Elector.Lead), starts
// the leader-only runnables with the term's context. That context carries
// the term (TermFromContext) and its fencing token (fence.FromContext), as
// does every context derived from it, a reconciler's included, so writes
// can be fenced; it is cancelled the instant the term ends (at the renew
// deadline when the store cannot be reached), and the next term starts
// only after every runnable of this one has returned.
//
// This path does not go through client-go's resourcelock.Interface (the
// manager's LeaderElectionResourceLockInterface): that interface updates a
// record without an expected version, so Tenure's compare-and-swap, its
// tokens and its checks of what the store returns could not be kept. The
// manager's own hooks are not needed: a runnable that needs no leader
// election is exactly what the manager already runs on every replica.
//
// Elected is closed at the first term, like the manager's Elected. On a
// clean stop (the manager's context ends) the leader-only runnables are
// cancelled and waited for, and only then does the elector release the
// lease, so that a successor starts at once and never overlaps with them.
// Errors are returned, not only logged: a leader-only runnable that fails
// while its term runs stops the term's other runnables and the manager
// (its Start returns the error), as the manager does with its own; an
// elector whose Run fails stops the manager with that error, also when it
// fails at once. Once the manager is stopping, controller-runtime logs a
// runnable's error instead of returning it: Start returns nil after a
// clean stop even if a term's runnables outlived its deadline or the
// lease could not be released (it then expires in the store).
//
// When the term ends while the manager runs, the policy decides (see
// WithOnLoss): Exit, the default, stops the manager with an error wrapping
// ErrLeadershipLost, as controller-runtime exits on a lost election; its
// controllers cannot be started twice. Rejoin keeps the manager and starts
// the leader-only runnables again in the next term, for runnables that
// can be started more than once.
//
// Do not call the elector's Run yourself: the Election runs it. The
// elector's Err and Status tell why a replica does not lead (a store that
// cannot be reached, a rollback).
package controllerruntime
