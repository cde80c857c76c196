package controllerruntime

import (
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// electedManager is the manager that Election.Manager returns: the wrapped
// manager, with Add and Elected routed to the Election.
type electedManager[M any] struct {
	manager.Manager
	x *Election[M]
}

// Add adds r: leader-only runnables run in the Election's terms (see
// Election.Add).
func (m *electedManager[M]) Add(r manager.Runnable) error { return m.x.Add(r) }

// Elected is closed at the Election's first term (see Election.Elected).
func (m *electedManager[M]) Elected() <-chan struct{} { return m.x.Elected() }

// hasCache is what the manager takes for a cache: it runs on every
// replica.
type hasCache interface {
	GetCache() cache.Cache
}

// needsLeader reports whether the manager would run r only on the leader:
// the same sorting as the manager's own Add.
func needsLeader(r manager.Runnable) bool {
	switch r := r.(type) {
	case *manager.Server:
		return r.NeedLeaderElection()
	case hasCache:
		return false
	case webhook.Server:
		return false
	case manager.LeaderElectionRunnable:
		return r.NeedLeaderElection()
	}
	return true
}
