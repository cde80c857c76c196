package etcdstore

import (
	"context"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/watchutil"
)

// Watch delivers the current state of name first (an Absent event when there
// is no record), then every later change, in revision order.
//
// It reads the record (and the token key) in one transaction, then watches
// the record key from the revision after that read, so no change falls
// between the two. A put arrives as the record it wrote, with the key's mod
// revision; a delete as an Absent event; a value that cannot be read as an
// event whose Err wraps [store.ErrCorruptRecord], with its revision. A
// receiver that falls behind skips intermediate states and gets the latest,
// never an older revision after a newer one.
//
// The watch runs with clientv3.WithRequireLeader, so a member cut off from
// its cluster's leader ends it instead of going silent. The etcd client
// resumes a watch across reconnections by itself; when it cannot (the
// revision to resume from was compacted, the member lost its leader, the
// server cancelled the watch), the channel is closed and the caller may
// watch again, which reads the current state anew. The channel is also
// closed when ctx ends; until then two goroutines serve it, so cancel ctx
// when done. Watch returns an error when the name is bad
// ([store.ErrInvalidName]), ctx has ended, or the first read fails.
func (s *Store[M]) Watch(ctx context.Context, name string) (<-chan store.Event[M], error) {
	if err := s.check(ctx, "Watch", name); err != nil {
		return nil, err
	}
	st, err := s.read(ctx, name)
	if err != nil {
		return nil, fail(ctx, "Watch", name, err)
	}
	s.remember(name, st.known)
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	w := &watch[M]{s: s, name: name, box: watchutil.NewBox[store.Event[M]](), out: make(chan store.Event[M])}
	switch {
	case st.err != nil && st.noRev:
		// No revision to order later events by: taking store.MaxRevision
		// for one would drop every later event.
		w.offer(store.Event[M]{Err: st.err})
	case st.err != nil:
		w.offer(store.Event[M]{Err: st.err, Revision: st.rev})
	case st.rev == 0:
		w.offer(store.Event[M]{Absent: true})
	default:
		w.offer(store.Event[M]{Record: st.rec, Revision: st.rev})
	}
	wch := s.client.Watch(wctx, s.key(name), clientv3.WithRev(st.at+1))
	go w.receive(wctx, cancel, wch)
	go func() {
		defer close(w.out)
		defer cancel()
		watchutil.Serve(wctx, w.box, w.out, func(ev store.Event[M]) store.Event[M] { return ev })
	}()
	return w.out, nil
}

// watch is one Watch: receive reads etcd's watch and offers states, the
// goroutine started by Watch hands the latest one to the receiver.
type watch[M any] struct {
	s    *Store[M]
	name string
	box  *watchutil.Box[store.Event[M]]
	out  chan store.Event[M]

	mu      sync.Mutex
	lastRev lease.Revision // the highest revision offered
	absent  bool           // the last state offered is Absent
}

// offer makes ev the next state to deliver, unless it would repeat an
// absence or go back to a revision already offered. An unreadable record
// without a revision (ev.Err, ev.Revision 0) is delivered and orders
// nothing.
func (w *watch[M]) offer(ev store.Event[M]) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if ev.Absent {
		if w.absent {
			return
		}
		w.absent = true
	} else if ev.Err != nil && ev.Revision == 0 {
		w.absent = false
	} else {
		if ev.Revision <= w.lastRev {
			return
		}
		w.lastRev, w.absent = ev.Revision, false
	}
	w.box.Offer(ev)
}

// receive offers every change etcd reports until the watch ends, then
// cancels the watch's context, which closes the channel.
func (w *watch[M]) receive(ctx context.Context, cancel context.CancelFunc, wch clientv3.WatchChan) {
	defer cancel()
	for {
		var wr clientv3.WatchResponse
		var ok bool
		select {
		case <-ctx.Done():
			return
		case wr, ok = <-wch:
		}
		if !ok || wr.Canceled || wr.Err() != nil {
			return // compacted, no leader, cancelled: the caller watches again
		}
		for _, ev := range wr.Events {
			if ev.Kv == nil {
				continue
			}
			if ev.Type == clientv3.EventTypeDelete {
				if ev.Kv.ModRevision > 0 && lease.Revision(ev.Kv.ModRevision) > w.lastRevision() {
					w.s.forget(w.name)
					w.offer(store.Event[M]{Absent: true})
				}
				continue
			}
			rev, rec, err := w.s.decodeKV(w.name, ev.Kv.ModRevision, ev.Kv.Value)
			if rev == 0 {
				continue // no usable revision: nothing to order it by
			}
			w.s.saw(w.name, rev, rec, err != nil)
			if err != nil {
				w.offer(store.Event[M]{Err: err, Revision: rev})
				continue
			}
			w.offer(store.Event[M]{Record: rec, Revision: rev})
		}
	}
}

// lastRevision returns the highest revision offered.
func (w *watch[M]) lastRevision() lease.Revision {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastRev
}
