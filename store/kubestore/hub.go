package kubestore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/internal/fnsink"
	"github.com/tenure-go/tenure/store/watchutil"
)

// The timings of the shared watch's retries.
const (
	hubMinBackoff = 50 * time.Millisecond
	hubMaxBackoff = 2 * time.Second
	// hubMaxFailures is how many watch requests in a row may fail before
	// the shared watch gives up and closes its watchers' channels: about
	// 73 s of backoff, enough for an API server to restart on a busy
	// machine (23 s measured in the tests). Meanwhile the electors' safety
	// net reads go on.
	hubMaxFailures = 40
)

// errNamespaceForbidden ends a shared watch whose namespace-wide watch
// request RBAC refused: the Store then watches each name on its own.
var errNamespaceForbidden = errors.New("kubestore: watching the Leases of the namespace is forbidden")

// hub is the one API-server watch of the Leases of a Store's namespace
// through which all the Store's Watch calls receive their changes. It
// runs while something is watched: the first Watch starts it and the end
// of the last stops it. Events go, by the Lease's name, to the watchers of
// that name only; Leases nobody watches (other programs') are dropped.
type hub[M any] struct {
	s *Store[M]

	mu      sync.Mutex
	subs    map[string]map[*sub[M]]struct{} // by name
	r       *hubRun                         // the running watch; nil when none
	perName bool                            // the namespace watch was refused: watch per name

	// requests, when set, is called before each watch request (tests).
	requests func(rv string)
}

// hubRun is one life of the shared watch, from the first watcher to its
// end.
type hubRun struct {
	cancel context.CancelFunc
	// up is closed while the watch's starting point is known, so that a
	// GET made afterwards and the watch miss no change between them; a new
	// one replaces it when the watch must start afresh from the cache.
	up     chan struct{}
	isUp   bool
	done   chan struct{} // closed when the run ends; err is then set
	err    error
	expire int // how many times the server answered 410 (tests)
}

func newHub[M any](s *Store[M]) *hub[M] {
	return &hub[M]{s: s, subs: make(map[string]map[*sub[M]]struct{})}
}

// sub is one Watch or WatchFunc served by the hub.
type sub[M any] struct {
	h    *hub[M]
	name string
	to   offerer[M] // takes the events that are new
	// cancel ends the watch: the end of its ctx, or of the hub's run.
	cancel context.CancelFunc

	mu     sync.Mutex
	last   lease.Revision // the revision of the newest event offered
	absent bool           // the newest event offered is Absent
}

// offerer takes the events of a sub: a Box that a goroutine empties
// (Watch), or a Sink that calls the function of WatchFunc.
type offerer[M any] interface{ Offer(ev store.Event[M]) }

// watch serves Watch through the shared watch. It returns an error
// wrapping errNamespaceForbidden when the namespace may not be watched.
func (h *hub[M]) watch(ctx context.Context, name string) (<-chan store.Event[M], error) {
	box := watchutil.NewBox[store.Event[M]]()
	b, sctx, err := h.join(ctx, "Watch", name, box)
	if err != nil {
		return nil, err
	}
	out := make(chan store.Event[M])
	go func() {
		defer close(out) // after b is forgotten
		defer h.remove(b)
		watchutil.Serve(sctx, box, out, func(ev store.Event[M]) store.Event[M] { return ev })
	}()
	return out, nil
}

// watchFunc serves WatchFunc through the shared watch, with no goroutine:
// the hub's calls fn as it dispatches. It returns an error wrapping
// errNamespaceForbidden when the namespace may not be watched.
func (h *hub[M]) watchFunc(ctx context.Context, name string, fn func(ev store.Event[M], ok bool)) error {
	sink := fnsink.New(fn)
	b, sctx, err := h.join(ctx, "WatchFunc", name, sink)
	if err != nil {
		return err
	}
	sink.Start()
	context.AfterFunc(sctx, func() {
		h.remove(b)
		sink.End()
	})
	return nil
}

// join adds a watcher of name for op, whose events go to to, waits until
// the shared watch is up, and offers it the Lease a GET reads then. The
// watch ends when the context returned ends: the end of ctx, or of the
// run (whose end cancels it), after which the caller forgets b.
func (h *hub[M]) join(ctx context.Context, op, name string, to offerer[M]) (*sub[M], context.Context, error) {
	sctx, cancel := context.WithCancel(ctx)
	b := &sub[M]{h: h, name: name, to: to, cancel: cancel}
	r, up := h.add(b)
	fail := func(err error) (*sub[M], context.Context, error) {
		h.remove(b)
		cancel()
		return nil, nil, err
	}
	select {
	case <-up:
	case <-r.done:
		if errors.Is(r.err, errNamespaceForbidden) {
			return fail(r.err)
		}
		return fail(h.s.fail(ctx, op, name, "watch", r.err))
	case <-ctx.Done():
		return fail(h.s.fail(ctx, op, name, "watch", ctx.Err()))
	}
	// The watch is up: a change after this GET reaches b through it.
	l, err := h.s.get(ctx, name)
	if err != nil {
		return fail(h.s.fail(ctx, op, name, "get", err))
	}
	b.read(l)
	return b, sctx, nil
}

// add registers b and returns the run it joined and the channel closed
// once a GET may be made; the first watcher starts the run.
func (h *hub[M]) add(b *sub[M]) (*hubRun, chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := h.subs[b.name]
	if m == nil {
		m = make(map[*sub[M]]struct{})
		h.subs[b.name] = m
	}
	m[b] = struct{}{}
	if h.r == nil {
		ctx, cancel := context.WithCancel(context.Background())
		h.r = &hubRun{cancel: cancel, up: make(chan struct{}), done: make(chan struct{})}
		go h.run(ctx, h.r)
	}
	return h.r, h.r.up
}

// remove forgets b; the last watcher stops the run.
func (h *hub[M]) remove(b *sub[M]) {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := h.subs[b.name]
	if _, ok := m[b]; !ok {
		return
	}
	delete(m, b)
	if len(m) == 0 {
		delete(h.subs, b.name)
	}
	if len(h.subs) == 0 && h.r != nil {
		h.r.cancel()
		h.r = nil
	}
}

// setUp marks the watch's starting point known (up) or not.
func (h *hub[M]) setUp(r *hubRun, up bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case up && !r.isUp:
		close(r.up)
	case !up && r.isUp:
		r.up = make(chan struct{}) // watchers joining now wait for the new start
	}
	r.isUp = up
}

// end ends run r with err: its watchers' channels close.
func (h *hub[M]) end(r *hubRun, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r.err = err
	close(r.done)
	r.cancel()
	if errors.Is(err, errNamespaceForbidden) {
		h.perName = true
	}
	if h.r != r {
		return // stopped by its last watcher
	}
	h.r = nil
	for name, m := range h.subs {
		for b := range m {
			b.cancel()
		}
		delete(h.subs, name)
	}
}

// snapshot returns the watchers of name (all names when all is set).
func (h *hub[M]) snapshot(name string, all bool) []*sub[M] {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*sub[M]
	for n, m := range h.subs {
		if !all && n != name {
			continue
		}
		for b := range m {
			out = append(out, b)
		}
	}
	return out
}

// run keeps the namespace watch going until ctx ends or it cannot be
// resumed.
func (h *hub[M]) run(ctx context.Context, r *hubRun) {
	rv := "0" // where to watch from; "0": the API server's watch cache
	first := true
	fails := 0
	backoff := hubMinBackoff
	wait := func() bool {
		t := time.NewTimer(backoff)
		defer t.Stop()
		backoff = min(2*backoff, hubMaxBackoff)
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return true
		}
	}
	for {
		if h.requests != nil {
			h.requests(rv)
		}
		kw, err := h.s.leases.Watch(ctx, metav1.ListOptions{
			ResourceVersion: rv,
			// Bookmarks keep rv fresh while nothing changes; not from
			// "0" (see watcher.watch).
			AllowWatchBookmarks: rv != "0",
		})
		if err != nil {
			switch {
			case ctx.Err() != nil:
				h.end(r, ctx.Err())
				return
			case apierrors.IsForbidden(err):
				h.end(r, errors.Join(errNamespaceForbidden, err))
				return
			case tooOld(err):
				// Compacted: start afresh from the cache, and read every
				// watched Lease again once the new watch is up.
				h.expired(r)
				rv = "0"
				h.setUp(r, false)
			}
			fails++
			if first || fails >= hubMaxFailures {
				// A first request that fails fails the Watch calls
				// waiting for it, as a watch of their own would.
				h.end(r, err)
				return
			}
			if !wait() {
				h.end(r, ctx.Err())
				return
			}
			continue
		}
		fails = 0
		if rv == "0" {
			h.setUp(r, true)
			if !first {
				h.reread(ctx)
			}
		}
		first = false
		next, progress := h.consume(ctx, r, kw, rv)
		kw.Stop()
		if ctx.Err() != nil {
			h.end(r, ctx.Err())
			return
		}
		if next == "0" {
			// Starting from the cache again may skip a deletion: the
			// watchers read their Leases again once the new watch is up.
			h.setUp(r, false)
		}
		rv = next
		if progress {
			backoff = hubMinBackoff
		} else if !wait() {
			h.end(r, ctx.Err())
			return
		}
	}
}

func (h *hub[M]) expired(r *hubRun) {
	h.mu.Lock()
	r.expire++
	h.mu.Unlock()
}

// consume dispatches the events of kw until it ends, and returns the
// resourceVersion to resume from ("0" after a 410) and whether anything
// arrived.
func (h *hub[M]) consume(ctx context.Context, r *hubRun, kw watch.Interface, rv string) (string, bool) {
	progress := false
	for {
		select {
		case <-ctx.Done():
			return rv, progress
		case kev, ok := <-kw.ResultChan():
			if !ok {
				return rv, progress
			}
			switch kev.Type {
			case watch.Added, watch.Modified, watch.Deleted:
				progress = true
				l, ok := kev.Object.(*coordinationv1.Lease)
				if !ok {
					continue
				}
				if l.ResourceVersion != "" {
					rv = l.ResourceVersion
				}
				h.dispatch(kev.Type, l)
			case watch.Bookmark:
				progress = true
				if m, err := metaOf(kev.Object); err == nil && m.GetResourceVersion() != "" {
					rv = m.GetResourceVersion()
				}
			case watch.Error:
				if tooOld(apierrors.FromObject(kev.Object)) {
					h.expired(r)
					return "0", progress
				}
				return rv, progress
			}
		}
	}
}

// dispatch hands the Lease of one event to the watchers of its name, and
// to nobody else.
func (h *hub[M]) dispatch(t watch.EventType, l *coordinationv1.Lease) {
	if l.Namespace != "" && l.Namespace != h.s.namespace {
		return
	}
	subs := h.snapshot(l.Name, false)
	if t == watch.Deleted {
		rev, err := parseRevision(l.ResourceVersion)
		if err != nil {
			rev = 0
		}
		h.s.forget(l.Name, rev)
		for _, b := range subs {
			b.deleted(rev)
		}
		return
	}
	for _, b := range subs {
		b.offer(l)
	}
}

// reread reads every watched Lease again, after the watch started afresh.
func (h *hub[M]) reread(ctx context.Context) {
	byName := make(map[string][]*sub[M])
	for _, b := range h.snapshot("", true) {
		byName[b.name] = append(byName[b.name], b)
	}
	for name, subs := range byName {
		l, err := h.s.get(ctx, name)
		if err != nil {
			// Not readable now: these watchers start over.
			for _, b := range subs {
				b.cancel()
			}
			continue
		}
		for _, b := range subs {
			b.read(l)
		}
	}
}

// read offers the state a GET found: l, or nil for none.
func (b *sub[M]) read(l *coordinationv1.Lease) {
	if l != nil {
		b.offer(l)
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.absent {
		b.absent = true
		b.to.Offer(store.Event[M]{Absent: true})
	}
}

// offer offers the event of l if l is newer than what was offered.
func (b *sub[M]) offer(l *coordinationv1.Lease) {
	if l.Name != b.name {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	rev, err := parseRevision(l.ResourceVersion)
	if err != nil {
		// Not an etcd-backed server: nothing can be ordered.
		b.to.Offer(store.Event[M]{Err: fmt.Errorf("kubestore: Watch %q: %w", b.name, err)})
		return
	}
	if rev <= b.last {
		return
	}
	b.last, b.absent = rev, false
	rec, _, _, err := b.h.s.decode(l)
	if err != nil {
		b.to.Offer(store.Event[M]{Revision: rev, Err: fmt.Errorf("kubestore: Watch %q: %w", b.name, err)})
		return
	}
	b.to.Offer(store.Event[M]{Record: rec, Revision: rev})
}

// deleted offers Absent for a deletion at rev (0 when unknown).
func (b *sub[M]) deleted(rev lease.Revision) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if rev != 0 && rev <= b.last {
		return // a deletion older than what was delivered
	}
	b.last = max(b.last, rev)
	if !b.absent {
		b.absent = true
		b.to.Offer(store.Event[M]{Absent: true})
	}
}
