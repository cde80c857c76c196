package pgstore

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/watchutil"
)

// defaultListenIdle is how long the listener waits for a notification
// before it checks, with a ping, that its connection still works.
const defaultListenIdle = 10 * time.Second

// defaultListenLinger is how long the listening connection stays open after
// the last watcher of its Store left; a watcher that comes meanwhile takes
// it as it is. While PostgreSQL ends a session that was listening, the
// commits that notify and the delivery of notifications wait: closing it
// as an elector stops, the moment its release has gone through, makes the
// successor's acquiring write take 2-3 ms longer in about a quarter of
// handovers (docs/benchmarks.md). A second puts the close after the
// handover.
const defaultListenLinger = time.Second

// listenOpTimeout bounds connecting, LISTEN, the ping and a watcher's read.
const listenOpTimeout = 5 * time.Second

// note is one state of a name as the listener learns it: a notification
// of revision rev, with the record it carried (r, nil if none), or a read
// of the row (read; r nil when there is none).
type note struct {
	rev   int64
	r     *row
	read  bool
	first bool // the read of a watch that starts
}

// listener is the one listening connection a Store keeps while it has
// watchers (and for its linger after the last one left): a
// watchutil.Source. It LISTENs on the Store's channel, and hands each
// notification to the watchers of the name it carries; a watcher delivers
// the record the notification carried, and when that does not check out
// the listener reads the row. After every (re)connection it reads every
// watched row again, so that a notification missed while the connection
// was down cannot leave a watcher stale.
type listener[M any] struct {
	s *Store[M]

	mu  sync.Mutex
	due map[string]bool // names a watcher must read, noted by its Next
}

// listening is one listening connection.
type listening[M any] struct {
	l       *listener[M]
	conn    *pgx.Conn
	channel string
}

// Connect takes a connection out of the pool for good (so that LISTEN
// state never leaks back into it) and listens on the Store's channel.
func (l *listener[M]) Connect(ctx context.Context, _ watchutil.Attempt[string, note]) (watchutil.Conn[string, note], error) {
	// Watch and WatchFunc check the table first, which sets the channel.
	channel := l.s.Channel()
	if channel == "" {
		return nil, errors.New("pgstore: Watch: the channel is not known before the table is checked")
	}
	ctx, cancel := context.WithTimeout(ctx, listenOpTimeout)
	defer cancel()
	pc, err := l.s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("pgstore: Watch: connecting: %w", err)
	}
	conn := pc.Hijack()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		_ = conn.Close(context.Background())
		return nil, fmt.Errorf("pgstore: Watch: LISTEN: %w", err)
	}
	return &listening[M]{l: l, conn: conn, channel: channel}, nil
}

// Reread reads the rows of names and hands them to their watchers. Its
// error, that of a read, breaks the connection: the next one reads every
// watched row again, after the backoff.
func (l *listener[M]) Reread(ctx context.Context, names []string, f *watchutil.Feed[string, note]) error {
	for _, name := range names {
		n, err := l.s.readNote(ctx, name)
		if err != nil {
			return err
		}
		f.Put(name, n)
	}
	return nil
}

// readNote reads the row of name.
func (s *Store[M]) readNote(ctx context.Context, name string) (note, error) {
	ctx, cancel := context.WithTimeout(ctx, listenOpTimeout)
	defer cancel()
	r, found, err := s.read(ctx, name)
	if err != nil {
		return note{}, err
	}
	if !found {
		return note{read: true}, nil
	}
	return note{rev: r.rev(), r: &r, read: true}, nil
}

// markDue notes that a watcher of name must read its row.
func (l *listener[M]) markDue(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.due == nil {
		l.due = make(map[string]bool)
	}
	l.due[name] = true
}

// takeDue reports whether a watcher of name must read its row, and
// forgets it.
func (l *listener[M]) takeDue(name string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	due := l.due[name]
	delete(l.due, name)
	return due
}

// Close closes the connection.
func (c *listening[M]) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = c.conn.Close(ctx)
}

// Stream passes the notifications of the channel on until the connection
// breaks or ctx ends. LISTEN is in force: every watched row is read again
// first.
func (c *listening[M]) Stream(ctx context.Context, f *watchutil.Feed[string, note]) error {
	if err := f.ReadyAll(ctx); err != nil {
		return err
	}
	f.Progress()
	idle := c.l.s.listenIdle
	if idle <= 0 {
		idle = defaultListenIdle
	}
	// One wait context serves until it expires, busy or not: a context per
	// notification (a timer each) was a sixth of what listening cost at
	// thousands of notifications a second. So a busy connection is pinged
	// once per idle period too, which costs nothing that matters.
	var w struct {
		ctx    context.Context
		cancel context.CancelFunc
	}
	defer func() {
		if w.cancel != nil {
			w.cancel()
		}
	}()
	for {
		if w.ctx == nil || w.ctx.Err() != nil {
			if w.cancel != nil {
				w.cancel()
			}
			w.ctx, w.cancel = context.WithTimeout(ctx, idle)
		}
		n, err := c.conn.WaitForNotification(w.ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			if !errors.Is(err, context.DeadlineExceeded) || c.conn.IsClosed() {
				return err
			}
			// Quiet for a while: make sure the connection still works.
			pctx, cancel := context.WithTimeout(ctx, listenOpTimeout)
			err = c.conn.Ping(pctx)
			cancel()
			if err != nil {
				return err
			}
			continue
		}
		if n == nil || n.Channel != c.channel {
			continue
		}
		name, rev, r, ok := parseNotification(n.Payload)
		if !ok {
			continue // not ours: someone else notified on the channel
		}
		f.Put(name, note{rev: rev, r: r})
		if c.l.takeDue(name) {
			if err := f.Reread(ctx, name); err != nil {
				return err
			}
		}
	}
}

// parseNotification reads a payload of the Store's channel: "REVISION:NAME",
// or the whole record, "r1:REVISION:TOKEN:TRANSITIONS:LEASE_NS:ACQUIRED_US:
// RENEWED_US:[~SUCCESSOR_HEX~]METADATA_HEX[.STAMP]:HOLDER_BYTES:HOLDER"
// followed by the name (times in microseconds since 1970, a release's
// lease.Record.Successor in hex between tildes, the metadata as it is
// stored, and a nonzero lease.Record.Stamp in decimal after a dot; a
// payload without one is a record without a stamp, 0, and one without
// tildes names no successor). A listener that knows no stamp or no
// successor finds the dot or the tilde is no hex, drops the record and
// reads the row. Anyone who may
// NOTIFY on the channel can send anything: ok is false for a payload that
// is not one of these, and a record that is not well formed is dropped (r
// is nil: a watcher reads the record). The record is only as good as a
// watch event: a hint, checked by whoever reads it (Store.record).
func parseNotification(payload string) (name string, rev int64, r *row, ok bool) {
	if rest, full := strings.CutPrefix(payload, "r1:"); full {
		f := strings.SplitN(rest, ":", 9)
		if len(f) != 9 {
			return "", 0, nil, false
		}
		rev, err := strconv.ParseInt(f[0], 10, 64)
		n, err2 := strconv.Atoi(f[7])
		if err != nil || err2 != nil || rev < 1 || n < 0 || n > len(f[8]) {
			return "", 0, nil, false
		}
		// The holder outlives the notification in the records made from
		// it (an elector keeps the last it saw): a copy, so that it does not
		// keep the whole payload alive.
		holder, name := strings.Clone(f[8][:n]), f[8][n:]
		acq, err := strconv.ParseInt(f[4], 10, 64)
		ren, err2 := strconv.ParseInt(f[5], 10, 64)
		field := f[6]
		var successor *string
		if named, ok := strings.CutPrefix(field, "~"); ok {
			succHex, after, closed := strings.Cut(named, "~")
			succ, errS := hex.DecodeString(succHex)
			if !closed || errS != nil || len(succ) == 0 {
				return name, rev, nil, true
			}
			text := string(succ)
			successor, field = &text, after
		}
		metaHex, stampText, stamped := strings.Cut(field, ".")
		meta, err3 := hex.DecodeString(metaHex)
		if err != nil || err2 != nil || err3 != nil {
			return name, rev, nil, true
		}
		var stamp *string
		if stamped {
			stampText = strings.Clone(stampText)
			stamp = &stampText
		}
		r := &row{
			holder: &holder, token: &f[1], revision: &f[0], durationNS: &f[3], transitions: &f[2], metadata: &meta, stamp: stamp, successor: successor,
			acquiredAt: pgtype.Timestamptz{Time: time.UnixMicro(acq), Valid: true},
			renewedAt:  pgtype.Timestamptz{Time: time.UnixMicro(ren), Valid: true},
		}
		return name, rev, r, true
	}
	revText, name, ok := strings.Cut(payload, ":")
	rev, err := strconv.ParseInt(revText, 10, 64)
	if !ok || err != nil {
		return "", 0, nil, false
	}
	return name, rev, nil, true
}

// Watch delivers the current state of name first (an Absent event when
// there is no record), then every later change in revision order. A
// receiver that falls behind skips intermediate revisions and gets the
// latest, never an older revision after a newer one. A record that cannot be
// decoded arrives as an event with Err wrapping store.ErrCorruptRecord (and,
// as from Get, no revision).
//
// Changes are learned through LISTEN on Channel, over one connection per
// Store shared by all its watchers, taken from the pool. It is closed a
// second after the last watcher leaves, not at once: while the server ends
// a listening session, notifying commits wait, and an elector that stops
// releases its lease just before its watch ends, as its successor writes.
// A write announces its whole record when its metadata takes at most 2
// KiB and it is no claim, and watchers deliver it as it came, without a
// read; otherwise (or when the record in the notification does not check
// out) the listener reads the row for the watchers of its name.
// Anyone who may NOTIFY on the channel can make up a notification: treat
// an event as a hint, as package lead does, and act on it only by a swap
// guarded on what it shows (store.CompareReleasedAndSwap) or after a read.
// When that connection breaks (or a read fails) it is opened again, with a
// backoff from 50 ms doubling to 2 s, and then every watched row is read
// again, so that a change made while it was down is not missed.
//
// Watch returns once LISTEN is in force and the current state has been read,
// or with an error if the first connection attempt fails, if name is bad
// (store.ErrInvalidName), or if ctx ends first. The channel is closed when
// ctx ends; until then a goroutine serves it, so cancel ctx when done.
func (s *Store[M]) Watch(ctx context.Context, name string) (<-chan store.Event[M], error) {
	if err := s.check(ctx, "Watch", name); err != nil {
		return nil, err
	}
	if err := s.ensureSchema(ctx); err != nil {
		return nil, err
	}
	return watchutil.Watch(ctx, s.hub, name, s.watcher(ctx, "Watch", name))
}

var _ store.FuncWatcher[struct{}] = (*Store[struct{}])(nil)

// WatchFunc delivers what Watch would send, under the same rules, by
// calling fn: fn(ev, true) for each event, then fn(Event{}, false) once
// when ctx ends. It holds no goroutine: the listener calls fn as it hands
// on a notification (with the record it carried, or the row it read when
// the record was not there or did not check out). Calls never overlap; fn
// must return quickly and must not call the Store. Like Watch, it returns
// once LISTEN is in force and the current state has been read (the first
// call, with that state, comes before it returns), with the same errors,
// or one wrapping store.ErrNilArgument for a nil fn; fn is then never
// called.
func (s *Store[M]) WatchFunc(ctx context.Context, name string, fn func(ev store.Event[M], ok bool)) error {
	if err := s.check(ctx, "WatchFunc", name); err != nil {
		return err
	}
	if fn == nil {
		return fmt.Errorf("pgstore: WatchFunc %q: %w: fn is nil", name, store.ErrNilArgument)
	}
	if err := s.ensureSchema(ctx); err != nil {
		return err
	}
	return watchutil.WatchFunc(ctx, s.hub, name, s.watcher(ctx, "WatchFunc", name), fn)
}

// watcher is how one Watch or WatchFunc of name for op reads the row and
// turns notes into events: revisions strictly increase, and an absence is
// not repeated. A notification newer than what was delivered whose record
// is missing or does not check out is left to a read, which the listener
// makes once the note has been handed to every watcher. So is one below
// the revision delivered last, unless a read that showed a newer one
// explains it: anyone who may NOTIFY can send a record at a revision the
// table never reached, and a read, which shows what the row holds, is
// delivered even below it; without that, one forged notification at the
// highest revision would silence the watch until it ended.
func (s *Store[M]) watcher(ctx context.Context, op, name string) watchutil.Watcher[note, store.Event[M], store.Event[M]] {
	var (
		lastRev    int64 // the highest revision delivered, or the one a read showed below it
		lastAbsent bool  // the latest state delivered is absence
		started    bool  // something was delivered
		readLast   bool  // the record delivered last came from a read, and no notification since was new
		asked      bool  // a read is due (a notification went back) and has not come
	)
	wrap := func(err error) error { return fmt.Errorf("pgstore: %s %q: %w", op, name, withCtx(ctx, err)) }
	return watchutil.Watcher[note, store.Event[M], store.Event[M]]{
		Read: func(ctx context.Context) (note, error) {
			n, err := s.readNote(ctx, name)
			if err != nil {
				return note{}, wrap(err)
			}
			n.first = true
			return n, nil
		},
		Next: func(n note) (ev store.Event[M], ok bool) {
			first := n.first && !started
			defer func() { started = started || ok }()
			// A read below the revision delivered is delivered only when
			// this watch asked for it: a read made for another watcher
			// before this one's first read (which it may reach after it)
			// is old news.
			wasAsked := asked
			if n.read {
				asked = false
			}
			switch {
			case n.read && n.r == nil:
				if lastAbsent {
					return store.Event[M]{}, false
				}
				lastAbsent = true
				return store.Event[M]{Absent: true}, true
			case n.rev == lastRev && !first, n.read && n.rev < lastRev && !first && !wasAsked:
				return store.Event[M]{}, false
			case n.read:
				lastRev, lastAbsent, readLast = n.rev, false, true
				rec, rev, err := s.record(name, n.r)
				if err != nil {
					return store.Event[M]{Err: err}, true
				}
				return store.Event[M]{Record: rec, Revision: rev}, true
			case n.rev < lastRev && !first:
				// Heard before a read that showed a newer revision, it is
				// old news; heard after a newer record, it is not.
				if readLast || asked {
					return store.Event[M]{}, false
				}
				asked = true
			case n.r != nil:
				// The notification carried the record: no read. A record
				// that does not check out is left to a read.
				if rec, rev, err := s.record(name, n.r); err == nil && int64(rev) == n.rev {
					lastRev, lastAbsent, readLast = n.rev, false, false
					return store.Event[M]{Record: rec, Revision: rev}, true
				}
			}
			s.listener.markDue(name)
			return store.Event[M]{}, false
		},
		Conv: func(ev store.Event[M]) store.Event[M] { return ev },
		Fail: wrap,
	}
}

// setLinger makes the listening connection stay open d after the last
// watcher left. It must be called before anything is watched.
func (s *Store[M]) setLinger(d time.Duration) {
	s.hub = watchutil.NewHub[string, note](s.listener, watchutil.HubOptions{Linger: d})
}
