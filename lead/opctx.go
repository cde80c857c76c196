package lead

import (
	"context"
	"slices"
	"sync"
	"time"
)

// opContext is the context of one store operation: the values and the
// cancellation of its parent (Run's operation context), and a deadline. It
// does what context.WithDeadline does, but makes its timer and its Done
// channel only when Done is called: a store that answers at once and only
// asks Err (memstore) costs no timer, no channel and no registration with
// the parent. Err compares the deadline with the time itself, so a
// deadline that passed is reported whether or not Done was ever called.
// Time is the real clock, as context.WithDeadline's is (inside a
// testing/synctest bubble, the bubble's).
//
// Once end has been called (the operation returned) it is cancelled, as
// the context of context.WithDeadline is once its cancel function runs.
type opContext struct {
	parent   context.Context
	deadline time.Time // the earlier of the parent's and its own

	mu     sync.Mutex
	err    error         // set once: DeadlineExceeded, Canceled or the parent's
	done   chan struct{} // made by Done; closed when err is set
	timer  *time.Timer   // made by Done, to close done at the deadline
	unhook func() bool   // made by Done, to close done when the parent ends
}

// newOpContext returns a context that ends when parent does, at the latest
// timeout from now.
func newOpContext(parent context.Context, timeout time.Duration) *opContext {
	d := time.Now().Add(timeout)
	if pd, ok := parent.Deadline(); ok && pd.Before(d) {
		d = pd
	}
	return &opContext{parent: parent, deadline: d}
}

// Deadline returns the deadline.
func (c *opContext) Deadline() (time.Time, bool) { return c.deadline, true }

// Value returns the parent's value for key.
func (c *opContext) Value(key any) any { return c.parent.Value(key) }

// Err returns nil until the context ends, then why, for good.
func (c *opContext) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.checkLocked()
}

// Done returns a channel closed when the context ends.
func (c *opContext) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done != nil {
		return c.done
	}
	err := c.checkLocked() // with c.done nil: it closes nothing
	c.done = make(chan struct{})
	if err != nil {
		close(c.done)
		return c.done
	}
	c.timer = time.AfterFunc(time.Until(c.deadline), func() { c.end(context.DeadlineExceeded) })
	ended := func() { c.end(c.parent.Err()) }
	if p, ok := c.parent.(interface{ AfterFunc(func()) func() bool }); ok {
		// An opsContext: registered without the Done channel that
		// context.AfterFunc would ask it for.
		c.unhook = p.AfterFunc(ended)
	} else {
		c.unhook = context.AfterFunc(c.parent, ended)
	}
	return c.done
}

// checkLocked ends the context if its deadline passed or its parent ended,
// and returns its error. c.mu is held.
func (c *opContext) checkLocked() error {
	if c.err != nil {
		return c.err
	}
	if err := c.parent.Err(); err != nil {
		c.endLocked(err)
	} else if !time.Now().Before(c.deadline) {
		c.endLocked(context.DeadlineExceeded)
	}
	return c.err
}

// end ends the context with err, unless it has ended already.
func (c *opContext) end(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.endLocked(err)
}

func (c *opContext) endLocked(err error) {
	if c.err != nil {
		return
	}
	c.err = err
	if c.done != nil {
		close(c.done)
	}
	if c.timer != nil {
		c.timer.Stop()
	}
	if c.unhook != nil {
		c.unhook()
	}
}

// String names the context, as the context package's own do.
func (c *opContext) String() string { return "lead.opContext" }

// opsContext is the parent of a runner's store operations and of its
// watch: it carries the values of the elector's ctx but not its end (the
// release is written after that), and it ends when the runner has stopped
// (end). It is context.WithCancel(context.WithoutCancel(ctx)) made for
// many electors (a Group's, or as many Runs): its Done channel is made only
// when asked for, and
// the calls to make when it ends (AfterFunc, which the context package uses
// for the contexts derived from it, and opContext for its own) are kept in
// a slice that is emptied as they are removed, where a context of the
// context package keeps a map of its children for good once one was
// derived (a heap profile of 10,000 elections on PostgreSQL, whose client
// asks every operation's Done, showed about 600 bytes an elector in those
// maps and channels; with one operation's context derived and ended, the
// context package's keep about 510 bytes, this one 80).
type opsContext struct {
	values context.Context // the elector's ctx: for Value only

	mu    sync.Mutex
	ended bool
	done  chan struct{} // made by Done; closed by end
	hooks []*opsHook    // to call when it ends
}

// opsHook is one call registered by AfterFunc.
type opsHook struct {
	c *opsContext
	f func()
}

// newOpsContext returns the operations' context of an elector whose ctx is
// values.
func newOpsContext(values context.Context) *opsContext {
	return &opsContext{values: values}
}

// Deadline returns no deadline: an operation sets its own.
func (c *opsContext) Deadline() (time.Time, bool) { return time.Time{}, false }

// Value returns the value of the elector's ctx for key.
func (c *opsContext) Value(key any) any { return c.values.Value(key) }

// Err returns nil until the runner has stopped, then context.Canceled.
func (c *opsContext) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return context.Canceled
	}
	return nil
}

// Done returns a channel closed when the runner has stopped.
func (c *opsContext) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		if c.ended {
			close(c.done)
		}
	}
	return c.done
}

// AfterFunc arranges to call f in its own goroutine once c has ended (at
// once if it has), as context.AfterFunc does; the context package calls it
// for the contexts derived from c. stop stops the call and reports whether
// it did.
func (c *opsContext) AfterFunc(f func()) (stop func() bool) {
	h := &opsHook{c: c, f: f}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		go f()
		return func() bool { return false }
	}
	c.hooks = append(c.hooks, h)
	return h.stop
}

// stop takes h out of its context's calls, and reports whether it was in.
func (h *opsHook) stop() bool {
	c := h.c
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.Index(c.hooks, h)
	if i < 0 {
		return false
	}
	last := len(c.hooks) - 1
	c.hooks[i] = c.hooks[last]
	c.hooks[last] = nil
	c.hooks = c.hooks[:last]
	if last == 0 {
		c.hooks = nil // what a Done once asked for left: give it back
	}
	return true
}

// end ends c: Err reports context.Canceled, Done is closed, and the calls
// registered run.
func (c *opsContext) end() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return
	}
	c.ended = true
	if c.done != nil {
		close(c.done)
	}
	for _, h := range c.hooks {
		go h.f()
	}
	c.hooks = nil
}

// String names the context, as the context package's own do.
func (c *opsContext) String() string { return "lead.opsContext" }
