package kubestore

import (
	"context"
	"errors"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/watchutil"
)

// Watch delivers the state of the Lease name first, then every later change
// in revision order.
//
// All the Watch calls of one Store share one API-server watch of the
// Leases of its namespace: the first Watch starts it, and it stops when the
// ctx of the last one ends. Its events go, by the Lease's name, to the
// watchers of that name only; other Leases in the namespace (other
// programs') reach no watcher. Each Watch waits until that watch is up,
// then reads its Lease with a GET (the first event: its record, or an
// Absent event): a change made after the GET arrives through the watch.
// The shared watch starts from resourceVersion "0" (the API server's watch
// cache, which may first send Leases as they were a little earlier: they
// are dropped when not newer than what was delivered). When the API server
// ends it, it resumes from the last resourceVersion received (bookmarks on);
// when the server answers that this version is too old (410 Gone, after a
// compaction or an API server restart), or when it must start from the
// cache again, it starts afresh and every watcher reads its Lease again
// with a GET, delivered if it is newer. A failed watch request is retried
// with a backoff (50 ms doubling up to 2 s); after 40 failures in a row
// (about 73 s) the channels of all the Store's watchers are closed. (When
// the first request of a shared watch fails, the Watch calls waiting for
// it return its error at once.)
//
// Revisions delivered strictly increase per watcher: events older than one
// delivered are dropped, and a receiver that falls behind gets the latest
// state, skipping those in between. A deleted Lease arrives as an Absent
// event; a Lease that cannot be read as an event with its Revision and an
// Err wrapping [store.ErrCorruptRecord]. After an Absent event read by a
// GET (which has no revision), the watch cache may still send the Lease as
// it was before its deletion, followed by the deletion.
//
// When RBAC refuses a watch of the whole namespace (a Role restricted by
// resourceNames), the Store watches each name on its own instead, as
// before: a GET, then a watch of that one Lease (a field selector on
// metadata.name), with the same guarantees; it keeps doing so for the
// Store's life.
//
// Watch returns an error for a bad name, an ended ctx, or when the first
// read or the watch request fails (wrapping [ErrForbidden] when RBAC
// refuses "get" or "watch"). The channel is closed when ctx ends, or when
// the watch breaks and cannot be resumed (the API server is unreachable,
// say); the caller may watch again.
func (s *Store[M]) Watch(ctx context.Context, name string) (<-chan store.Event[M], error) {
	if err := s.check(ctx, "Watch", name); err != nil {
		return nil, err
	}
	if !s.src.perName.Load() {
		ch, err := watchutil.Watch(ctx, s.hub, name, s.watcher(ctx, "Watch", name))
		if !errors.Is(err, errNamespaceForbidden) {
			return ch, err
		}
	}
	return s.watchOne(ctx, name)
}

var _ store.FuncWatcher[struct{}] = (*Store[struct{}])(nil)

// WatchFunc delivers what Watch would send, under the same rules, by
// calling fn: fn(ev, true) for each event, then fn(Event{}, false) once
// when ctx ends or the watch breaks and cannot be resumed (when the shared
// watch gives up, or a watcher cannot read its Lease again after the
// shared watch started afresh). Through the shared watch it needs no
// goroutine of its own: the shared watch's goroutine calls fn as it
// dispatches an event (and decodes the Lease for each watcher), so fn must
// return quickly and must not call the Store; calls never overlap. Like
// Watch, it returns once the shared watch is up and the Lease read (the
// first call, with that state or a newer one, comes before it returns),
// with the same errors, or one wrapping [store.ErrNilArgument] for a nil
// fn; fn is then never called. When RBAC refuses the namespace-wide watch,
// the Store watches each name on its own (see Watch), and WatchFunc then
// calls fn from a goroutine that serves that watch's channel. It
// implements [store.FuncWatcher].
func (s *Store[M]) WatchFunc(ctx context.Context, name string, fn func(ev store.Event[M], ok bool)) error {
	if err := s.check(ctx, "WatchFunc", name); err != nil {
		return err
	}
	if fn == nil {
		return fmt.Errorf("kubestore: WatchFunc %q: %w: fn is nil", name, store.ErrNilArgument)
	}
	if !s.src.perName.Load() {
		err := watchutil.WatchFunc(ctx, s.hub, name, s.watcher(ctx, "WatchFunc", name), fn)
		if !errors.Is(err, errNamespaceForbidden) {
			return err
		}
	}
	return store.WatchFuncVia[M](ctx, oneWatcher[M]{s}, name, fn)
}

// oneWatcher watches with watches of its own (watchOne), for WatchFunc.
type oneWatcher[M any] struct{ s *Store[M] }

func (o oneWatcher[M]) Watch(ctx context.Context, name string) (<-chan store.Event[M], error) {
	return o.s.watchOne(ctx, name)
}

func (o oneWatcher[M]) WatchCapabilities() store.WatchCapabilities { return o.s.WatchCapabilities() }

// watchOne serves Watch with a watch of its own of the Lease name.
func (s *Store[M]) watchOne(ctx context.Context, name string) (<-chan store.Event[M], error) {
	w := &watcher[M]{s: s, name: name}
	if err := w.relist(ctx); err != nil {
		return nil, err
	}
	kw, err := w.watch(ctx)
	if err != nil {
		return nil, err
	}
	out := make(chan store.Event[M])
	go w.serve(ctx, kw, out)
	return out, nil
}

// watcher is the state of one Watch of its own (see watchOne).
type watcher[M any] struct {
	s    *Store[M]
	name string

	resume string         // resourceVersion to watch from; "0" for any
	last   lease.Revision // the revision of the newest event queued
	absent bool           // the newest event queued is Absent

	pending store.Event[M] // the event to send next
	dirty   bool           // pending holds an event not yet sent

	// expired, when set, is called each time the API server answers that
	// the resourceVersion to watch from is too old (tests count them).
	expired func()
}

// queue makes ev the event sent next, replacing one not yet sent.
func (w *watcher[M]) queue(ev store.Event[M]) {
	w.pending, w.dirty = ev, true
}

// relist reads the Lease and queues its state when it is newer than what
// was queued, and watches from its revision next.
func (w *watcher[M]) relist(ctx context.Context) error {
	l, err := w.s.get(ctx, w.name)
	if err != nil {
		return w.s.fail(ctx, "Watch", w.name, "get", err)
	}
	if l == nil {
		// Absent has no resourceVersion. "0" starts the watch at the API
		// server's watch cache, with an ADDED event for a Lease created
		// since. ("" would ask for a consistent start, which needs
		// progress notifications from etcd and hangs on etcd 3.4.)
		w.resume = "0"
		if !w.absent {
			w.queue(store.Event[M]{Absent: true})
			w.absent = true
		}
		return nil
	}
	w.offer(l)
	w.resume = l.ResourceVersion
	return nil
}

// watch starts watching the Lease from w.resume. When that version is too
// old it reads the Lease again and watches from there.
func (w *watcher[M]) watch(ctx context.Context) (watch.Interface, error) {
	for range 3 {
		kw, err := w.s.leases.Watch(ctx, metav1.ListOptions{
			FieldSelector:   fields.OneTermEqualSelector("metadata.name", w.name).String(),
			ResourceVersion: w.resume,
			// Bookmarks keep w.resume fresh while the Lease does not
			// change. Not from "0": the server turns such a watch into a
			// watch-list, which with bookmarks needs progress
			// notifications that etcd 3.4 lacks.
			AllowWatchBookmarks: w.resume != "0",
		})
		if err == nil {
			return kw, nil
		}
		if !tooOld(err) {
			return nil, w.s.fail(ctx, "Watch", w.name, "watch", err)
		}
		w.tooOld()
		if err := w.relist(ctx); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("kubestore: Watch %q: the API server keeps answering that the resourceVersion is too old", w.name)
}

// tooOld reports whether err says the resourceVersion to watch from was
// compacted away.
func tooOld(err error) bool { return apierrors.IsResourceExpired(err) || apierrors.IsGone(err) }

func (w *watcher[M]) tooOld() {
	if w.expired != nil {
		w.expired()
	}
}

// offer queues the event of l if l is newer than what was queued.
func (w *watcher[M]) offer(l *coordinationv1.Lease) {
	rev, err := parseRevision(l.ResourceVersion)
	if err != nil {
		// Not an etcd-backed server: nothing can be ordered.
		w.queue(store.Event[M]{Err: fmt.Errorf("kubestore: Watch %q: %w", w.name, err)})
		return
	}
	if rev <= w.last {
		return
	}
	w.last, w.absent = rev, false
	rec, _, _, err := w.s.decode(l)
	if err != nil {
		w.queue(store.Event[M]{Revision: rev, Err: fmt.Errorf("kubestore: Watch %q: %w", w.name, err)})
		return
	}
	w.queue(store.Event[M]{Record: rec, Revision: rev})
}

// serve feeds out from the watch kw, resuming it when the server ends it,
// until ctx ends or the watch cannot be resumed. A watch that ended
// without an event is resumed after a backoff (as the shared watch's), so
// that a server that ends each watch at once gets no busy loop.
func (w *watcher[M]) serve(ctx context.Context, kw watch.Interface, out chan<- store.Event[M]) {
	defer close(out)
	defer func() {
		if kw != nil {
			kw.Stop()
		}
	}()
	var (
		events   = kw.ResultChan() // nil while waiting to resume
		retry    <-chan time.Time  // the end of the backoff; nil when none
		progress bool              // an event moved w.resume since the watch request
		backoff  = watchutil.DefaultMinBackoff
	)
	timer := time.NewTimer(0)
	timer.Stop()
	defer timer.Stop()
	for {
		var send chan<- store.Event[M]
		if w.dirty {
			send = out
		}
		select {
		case <-ctx.Done():
			return
		case send <- w.pending:
			w.pending, w.dirty = store.Event[M]{}, false
		case <-retry:
			retry = nil
			nkw, err := w.watch(ctx)
			if err != nil {
				return
			}
			kw, events, progress = nkw, nkw.ResultChan(), false
		case kev, ok := <-events:
			next := resume
			if ok {
				from := w.resume
				next = w.handle(ctx, kev)
				// Progress is an event that moves the watch on, not
				// one of another Lease or one repeated.
				progress = progress || kev.Type != watch.Error && w.resume != from
			}
			switch next {
			case end:
				return
			case resume:
				// The server ended the watch (a timeout, a lost
				// connection, an error): watch again from the last
				// version received, at once if it sent something,
				// after a backoff otherwise.
				kw.Stop()
				kw, events = nil, nil
				if progress {
					backoff = watchutil.DefaultMinBackoff
					timer.Reset(0)
				} else {
					timer.Reset(backoff)
					backoff = min(2*backoff, watchutil.DefaultMaxBackoff)
				}
				retry = timer.C
			}
		}
	}
}

// What serve does after an event.
const (
	goOn   = iota // keep reading the watch
	resume        // watch again from w.resume
	end           // close the channel
)

// handle applies one event of the API server's watch and says what to do
// next.
func (w *watcher[M]) handle(ctx context.Context, kev watch.Event) int {
	switch kev.Type {
	case watch.Added, watch.Modified:
		l, ok := kev.Object.(*coordinationv1.Lease)
		if !ok || l.Name != w.name {
			return goOn
		}
		w.offer(l)
		w.resume = l.ResourceVersion
	case watch.Deleted:
		l, ok := kev.Object.(*coordinationv1.Lease)
		if !ok || l.Name != w.name {
			return goOn
		}
		w.resume = l.ResourceVersion
		rev, err := parseRevision(l.ResourceVersion)
		if err == nil && rev > w.last {
			w.last = rev
		}
		w.s.forget(w.name, rev)
		if !w.absent {
			w.queue(store.Event[M]{Absent: true})
			w.absent = true
		}
	case watch.Bookmark:
		if m, err := metaOf(kev.Object); err == nil && m.GetResourceVersion() != "" {
			w.resume = m.GetResourceVersion()
		}
	case watch.Error:
		if !tooOld(apierrors.FromObject(kev.Object)) {
			return end
		}
		// Compacted: read the Lease again and watch from there.
		w.tooOld()
		if w.relist(ctx) != nil {
			return end
		}
		return resume
	}
	return goOn
}

// metaOf returns the object metadata of a bookmark event.
func metaOf(obj any) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("kubestore: a bookmark of type %T", obj)
	}
	return m, nil
}
