package lead

import (
	"context"
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
	c.unhook = context.AfterFunc(c.parent, func() { c.end(c.parent.Err()) })
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
