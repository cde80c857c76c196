package controllerruntime

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// termGroup is the leader-only runnables running in one term.
type termGroup struct {
	name   string
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	closed bool
	errs   []error
}

// newTermGroup returns a group whose runnables get a context that ends
// with ctx, or when one of them fails.
func newTermGroup(ctx context.Context, name string) *termGroup {
	g := &termGroup{name: name}
	g.ctx, g.cancel = context.WithCancel(ctx)
	return g
}

// start starts r in the group, unless the group's term has ended.
func (g *termGroup) start(r manager.Runnable) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed || g.ctx.Err() != nil {
		return
	}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		err := r.Start(g.ctx)
		switch {
		case err == nil:
			return
		case g.ctx.Err() != nil && errors.Is(err, context.Canceled):
			return // stopped as asked
		}
		g.mu.Lock()
		g.errs = append(g.errs, fmt.Errorf("controllerruntime: %q: leader-only runnable %T: %w", g.name, r, err))
		g.mu.Unlock()
		g.cancel() // one fails: the term's runnables stop, as a manager's do
	}()
}

// wait waits until the group's context ends, then until every runnable has
// returned, and returns their errors.
func (g *termGroup) wait() error {
	<-g.ctx.Done()
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.wg.Wait()
	g.cancel()
	g.mu.Lock()
	defer g.mu.Unlock()
	return errors.Join(g.errs...)
}
