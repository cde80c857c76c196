package controllerruntime

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tenure-go/tenure/lead"
)

// Sharded spreads a controller's work over every replica of a manager:
// each object's key falls in one of the shards of a lead.Shards, which
// balances the shards over the live replicas, and a replica reconciles
// only the objects of the shards it leads, with the shard's term in the
// context (TermFromContext, fence.FromContext) to fence its writes.
//
// The controller runs on every replica: build it with
// NeedLeaderElection false (controller.Options) on a manager whose own
// leader election is off, and give it Reconciler(r). A request for an
// object of a shard another replica leads is requeued after Recheck, so
// that when the shard moves here its objects are reconciled within that
// time; the replica that leads it reconciles them as usual.
//
// Make it with NewSharded; its methods are safe for concurrent use.
type Sharded[M any] struct {
	s       *lead.Shards[M]
	names   []string
	recheck time.Duration
}

// DefaultRecheck is Sharded's Recheck when NewSharded is given 0.
const DefaultRecheck = 30 * time.Second

// MinRecheck is the shortest Recheck NewSharded takes: a replica requeues
// every request for another replica's shard after it, and much shorter
// would have every replica requeue every object of the others' shards
// back to back.
const MinRecheck = 100 * time.Millisecond

// NewSharded adds to mgr a runnable that runs s on every replica (the
// manager runs it from its start until it stops; do not call s.Run
// yourself), and returns the Sharded that filters a controller's requests
// by s's shards. recheck is how long a request for another replica's
// shard waits before it is looked at again (0: DefaultRecheck; at least
// MinRecheck). It returns an error wrapping ErrNilArgument for a nil mgr
// or s, one wrapping ErrBadOption for a recheck below MinRecheck or s
// without shards, and mgr.Add's error.
func NewSharded[M any](mgr manager.Manager, s *lead.Shards[M], recheck time.Duration) (*Sharded[M], error) {
	switch {
	case mgr == nil:
		return nil, fmt.Errorf("%w: NewSharded: mgr is nil", ErrNilArgument)
	case s == nil:
		return nil, fmt.Errorf("%w: NewSharded: s is nil", ErrNilArgument)
	case recheck != 0 && recheck < MinRecheck:
		return nil, fmt.Errorf("%w: NewSharded: recheck is %v, must be 0 (DefaultRecheck) or at least %v (MinRecheck)", ErrBadOption, recheck, MinRecheck)
	}
	if recheck == 0 {
		recheck = DefaultRecheck
	}
	x := &Sharded[M]{s: s, recheck: recheck}
	for _, sh := range s.Config().Shards {
		x.names = append(x.names, sh.Name)
	}
	if len(x.names) == 0 {
		return nil, fmt.Errorf("%w: NewSharded: the Shards has no shards", ErrBadOption)
	}
	if err := mgr.Add(shardsRunnable[M]{s}); err != nil {
		return nil, err
	}
	return x, nil
}

// ShardOf returns the shard of the object whose key is key (for a
// reconcile.Request, req.NamespacedName.String()): a hash of the key over
// the shards, the same on every replica ("" for a Sharded not made by
// NewSharded).
func (x *Sharded[M]) ShardOf(key string) string {
	if x == nil || len(x.names) == 0 {
		return ""
	}
	h := fnv.New32a()
	h.Write([]byte(key))
	return x.names[h.Sum32()%uint32(len(x.names))]
}

// Term returns the term of the shard of key, if this replica leads it now.
func (x *Sharded[M]) Term(key string) (lead.Term, bool) {
	if x == nil || x.s == nil {
		return lead.Term{}, false
	}
	e, ok := x.s.Elector(x.ShardOf(key))
	if !ok {
		return lead.Term{}, false
	}
	return e.Term()
}

// Reconciler returns r restricted to the objects of the shards this
// replica leads: a request for another's is requeued after Recheck
// without calling r. r runs as one of the bodies of the shard's term
// (lead.Elector.InTerm): its context carries the term and its fencing
// token and ends when the term does, and the shard is not released nor
// handed to another replica while r runs (until the term's deadline at
// most), so that two replicas never reconcile an object of one shard at
// once. A request whose shard's term ended while r ran is requeued after
// Recheck. A nil r, or a Sharded not made by NewSharded, gives a
// reconciler whose every call returns an error wrapping ErrNilArgument.
func (x *Sharded[M]) Reconciler(r reconcile.Reconciler) reconcile.Reconciler {
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		switch {
		case x == nil || x.s == nil:
			return reconcile.Result{}, fmt.Errorf("%w: Sharded.Reconciler: the Sharded was not made by NewSharded", ErrNilArgument)
		case r == nil:
			return reconcile.Result{}, fmt.Errorf("%w: Sharded.Reconciler: r is nil", ErrNilArgument)
		}
		e, ok := x.s.Elector(x.ShardOf(req.NamespacedName.String()))
		if !ok {
			return reconcile.Result{RequeueAfter: x.recheck}, nil
		}
		var res reconcile.Result
		err := e.InTerm(ctx, func(ctx context.Context, t lead.Term) error {
			var err error
			res, err = r.Reconcile(withTerm(ctx, t), req)
			return err
		})
		switch {
		case errors.Is(err, lead.ErrNotLeader), errors.Is(err, lead.ErrLeadershipLost):
			return reconcile.Result{RequeueAfter: x.recheck}, nil
		}
		return res, err
	})
}

// shardsRunnable runs a lead.Shards on every replica.
type shardsRunnable[M any] struct{ s *lead.Shards[M] }

// Start runs the shards until ctx ends.
func (r shardsRunnable[M]) Start(ctx context.Context) error { return r.s.Run(ctx, nil) }

// NeedLeaderElection is false: every replica takes part.
func (shardsRunnable[M]) NeedLeaderElection() bool { return false }
