package kubestore

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/watchutil"
)

// hubMaxFailures is how many watch requests in a row may fail before the
// shared watch gives up and closes its watchers' channels: about 73 s of
// backoff, enough for an API server to restart on a busy machine (23 s
// measured in the tests). Meanwhile the electors' safety net reads go on.
const hubMaxFailures = 40

// errNamespaceForbidden ends a shared watch whose namespace-wide watch
// request RBAC refused: the Store then watches each name on its own.
var errNamespaceForbidden = errors.New("kubestore: watching the Leases of the namespace is forbidden")

// change is one state of a Lease as the shared watch learns it: the Lease
// of an event, a deletion at rev (0 when unknown), or what a GET found
// (read; l nil for none).
type change struct {
	l       *coordinationv1.Lease
	deleted bool
	read    bool
	rev     lease.Revision
}

// source is the API-server watch of the Leases of a Store's namespace,
// through which all the Store's Watch calls receive their changes (a
// watchutil.Source). Events go, by the Lease's name, to the watchers of
// that name only; Leases nobody watches (other programs') are dropped.
type source[M any] struct {
	s *Store[M]
	// perName is set once the namespace watch was refused: the Store
	// watches each name on its own from then on.
	perName atomic.Bool
}

// conn is one watch request of the shared watch.
type conn struct {
	s interface {
		forget(name string, rev lease.Revision)
		inNamespace(l *coordinationv1.Lease) bool
	}
	kw watch.Interface
	rv string // where to resume from; "0": afresh, from the watch cache
}

// Connect sends a watch request: from the resourceVersion the last
// connection reached, or afresh from the watch cache ("0").
func (src *source[M]) Connect(ctx context.Context, a watchutil.Attempt[string, change]) (watchutil.Conn[string, change], error) {
	prev, _ := a.Prev.(*conn)
	rv := "0"
	if prev != nil {
		rv = prev.rv
	}
	kw, err := src.s.leases.Watch(ctx, metav1.ListOptions{
		ResourceVersion: rv,
		// Bookmarks keep rv fresh while nothing changes; not from "0"
		// (see watcher.watch).
		AllowWatchBookmarks: rv != "0",
	})
	if err == nil {
		return &conn{s: src.s, kw: kw, rv: rv}, nil
	}
	switch {
	case ctx.Err() != nil:
		return nil, err
	case apierrors.IsForbidden(err):
		src.perName.Store(true)
		return nil, watchutil.End(errors.Join(errNamespaceForbidden, err))
	case tooOld(err) && prev != nil:
		// Compacted: start afresh from the cache; every watched Lease is
		// read again once the new watch is up.
		prev.rv = "0"
	}
	if a.Prev == nil && a.Failures == 0 || a.Failures+1 >= hubMaxFailures {
		// A first request that fails fails the Watch calls waiting for
		// it, as a watch of their own would.
		return nil, watchutil.End(err)
	}
	return nil, err
}

// Stream dispatches the events of the watch until it ends. A watch that
// started afresh may have missed a deletion: every watcher's Lease is
// read again.
func (c *conn) Stream(ctx context.Context, f *watchutil.Feed[string, change]) error {
	if c.rv == "0" {
		if err := f.ReadyAll(ctx); err != nil {
			return err
		}
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case kev, ok := <-c.kw.ResultChan():
			if !ok {
				return nil
			}
			switch kev.Type {
			case watch.Added, watch.Modified, watch.Deleted:
				f.Progress()
				l, ok := kev.Object.(*coordinationv1.Lease)
				if !ok {
					continue
				}
				if l.ResourceVersion != "" {
					c.rv = l.ResourceVersion
				}
				if !c.s.inNamespace(l) {
					continue
				}
				if kev.Type == watch.Deleted {
					d := deletion(l)
					c.s.forget(l.Name, d.rev)
					f.Put(l.Name, d)
				} else {
					f.Put(l.Name, change{l: l})
				}
			case watch.Bookmark:
				f.Progress()
				if m, err := metaOf(kev.Object); err == nil && m.GetResourceVersion() != "" {
					c.rv = m.GetResourceVersion()
				}
			case watch.Error:
				err := apierrors.FromObject(kev.Object)
				if tooOld(err) {
					c.rv = "0"
				}
				return err
			}
		}
	}
}

// deletion is the change of a deleted Lease.
func deletion(l *coordinationv1.Lease) change {
	rev, err := parseRevision(l.ResourceVersion)
	if err != nil {
		rev = 0
	}
	return change{l: l, deleted: true, rev: rev}
}

// Close ends the watch request.
func (c *conn) Close() { c.kw.Stop() }

// Reread reads the watched Leases again; the watchers of one that cannot
// be read start over.
func (src *source[M]) Reread(ctx context.Context, names []string, f *watchutil.Feed[string, change]) error {
	for _, name := range names {
		l, err := src.s.get(ctx, name)
		if err != nil {
			f.End(name)
			continue
		}
		f.Put(name, change{l: l, read: true})
	}
	return nil
}

// watcher is how one Watch or WatchFunc of name for op reads its Lease
// and filters the changes: revisions strictly increase, a change of
// another namespace or name is dropped.
func (s *Store[M]) watcher(ctx context.Context, op, name string) watchutil.Watcher[change, store.Event[M], store.Event[M]] {
	var (
		last   lease.Revision // the revision of the newest event offered
		absent bool           // the newest event offered is Absent
	)
	gone := func() (store.Event[M], bool) {
		if absent {
			return store.Event[M]{}, false
		}
		absent = true
		return store.Event[M]{Absent: true}, true
	}
	return watchutil.Watcher[change, store.Event[M], store.Event[M]]{
		Read: func(ctx context.Context) (change, error) {
			l, err := s.get(ctx, name)
			if err != nil {
				return change{}, s.fail(ctx, op, name, "get", err)
			}
			return change{l: l, read: true}, nil
		},
		Next: func(c change) (store.Event[M], bool) {
			switch {
			case c.l != nil && c.l.Name != name:
				return store.Event[M]{}, false
			case c.read && c.l == nil:
				return gone()
			case c.deleted:
				if c.rev != 0 && c.rev <= last {
					return store.Event[M]{}, false // older than what was delivered
				}
				last = max(last, c.rev)
				return gone()
			}
			rev, err := parseRevision(c.l.ResourceVersion)
			if err != nil {
				// Not an etcd-backed server: nothing can be ordered.
				return store.Event[M]{Err: fmt.Errorf("kubestore: Watch %q: %w", name, err)}, true
			}
			if rev <= last {
				return store.Event[M]{}, false
			}
			last, absent = rev, false
			rec, _, _, err := s.decode(c.l)
			if err != nil {
				return store.Event[M]{Revision: rev, Err: fmt.Errorf("kubestore: Watch %q: %w", name, err)}, true
			}
			return store.Event[M]{Record: rec, Revision: rev}, true
		},
		Conv: func(ev store.Event[M]) store.Event[M] { return ev },
		Fail: func(err error) error {
			if errors.Is(err, errNamespaceForbidden) {
				return err
			}
			return s.fail(ctx, op, name, "watch", err)
		},
	}
}

// inNamespace reports whether l is in the Store's namespace.
func (s *Store[M]) inNamespace(l *coordinationv1.Lease) bool {
	return l.Namespace == "" || l.Namespace == s.namespace
}
