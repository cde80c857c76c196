package controllerruntime

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

type electable bool

func (electable) Start(context.Context) error { return nil }
func (e electable) NeedLeaderElection() bool  { return bool(e) }

type cached struct{ electable }

func (cached) GetCache() cache.Cache { return nil }

// needsLeader sorts runnables as the manager's Add does.
func TestNeedsLeader(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    manager.Runnable
		want bool
	}{
		{"RunnableFunc", manager.RunnableFunc(func(context.Context) error { return nil }), true},
		{"NeedLeaderElection true", electable(true), true},
		{"NeedLeaderElection false", electable(false), false},
		{"cache, even if it asks", cached{electable(true)}, false},
		{"webhook server", webhook.NewServer(webhook.Options{}), false},
		{"Server", &manager.Server{}, false},
		{"Server only when leader", &manager.Server{OnlyServeWhenLeader: true}, true},
	} {
		if got := needsLeader(tc.r); got != tc.want {
			t.Errorf("%s: needsLeader = %v, want %v", tc.name, got, tc.want)
		}
	}
}
