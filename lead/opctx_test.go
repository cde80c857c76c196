package lead

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

type ctxKey struct{}

// opContext behaves as context.WithTimeout: it ends at its deadline whether
// or not Done was called, when its parent ends, and when the operation
// ends; it passes values through; once ended it stays ended.
func TestOpContextEndsAsContextWithTimeoutDoes(t *testing.T) {
	t.Run("deadline, Err only", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := newOpContext(context.Background(), time.Second)
			if d, ok := c.Deadline(); !ok || !d.Equal(time.Now().Add(time.Second)) {
				t.Fatalf("Deadline = %v, %v", d, ok)
			}
			if err := c.Err(); err != nil {
				t.Fatalf("Err before the deadline = %v", err)
			}
			time.Sleep(time.Second)
			if err := c.Err(); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Err at the deadline = %v", err)
			}
			select {
			case <-c.Done():
			default:
				t.Fatal("Done not closed after Err reported the deadline")
			}
			c.end(context.Canceled)
			if err := c.Err(); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Err after end = %v, want the first error kept", err)
			}
		})
	})
	t.Run("deadline, Done", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := newOpContext(context.Background(), time.Second)
			start := time.Now()
			<-c.Done()
			if waited := time.Since(start); waited != time.Second {
				t.Fatalf("Done closed after %v, want 1s", waited)
			}
			if err := c.Err(); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Err = %v", err)
			}
			if err := context.Cause(c); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Cause = %v", err)
			}
		})
	})
	t.Run("Done first called after the deadline", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := newOpContext(context.Background(), time.Second)
			time.Sleep(2 * time.Second)
			<-c.Done()
			if err := c.Err(); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Err = %v", err)
			}
		})
	})
	t.Run("Done first called after the parent ended", func(t *testing.T) {
		parent, cancel := context.WithCancel(context.Background())
		c := newOpContext(parent, time.Hour)
		cancel()
		<-c.Done()
		if err := c.Err(); !errors.Is(err, context.Canceled) {
			t.Fatalf("Err = %v", err)
		}
	})
	t.Run("parent ends", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			parent, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "v"))
			c := newOpContext(parent, time.Hour)
			if c.Value(ctxKey{}) != "v" {
				t.Fatal("value of the parent not passed through")
			}
			done := c.Done()
			cancel()
			<-done
			if err := c.Err(); !errors.Is(err, context.Canceled) {
				t.Fatalf("Err = %v", err)
			}
			// A parent that ended before Done was called.
			c2 := newOpContext(parent, time.Hour)
			if err := c2.Err(); !errors.Is(err, context.Canceled) {
				t.Fatalf("Err of a child of an ended parent = %v", err)
			}
			<-c2.Done()
		})
	})
	t.Run("parent deadline is earlier", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			parent, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			c := newOpContext(parent, time.Hour)
			if d, _ := c.Deadline(); !d.Equal(time.Now().Add(time.Second)) {
				t.Fatalf("Deadline = %v, want the parent's", d)
			}
			<-c.Done()
			if err := c.Err(); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Err = %v", err)
			}
		})
	})
	t.Run("end", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := newOpContext(context.Background(), time.Hour)
			done := c.Done()
			child, cancel := context.WithCancel(c)
			defer cancel()
			c.end(context.Canceled)
			<-done
			<-child.Done() // a context derived from it ends too
			if err := c.Err(); !errors.Is(err, context.Canceled) {
				t.Fatalf("Err = %v", err)
			}
		})
	})
}

// opsContext is context.WithCancel(context.WithoutCancel(ctx)) for a
// runner's operations: it keeps ctx's values, not its end nor its cause,
// ends with end,
// and ends what was derived from it and the calls registered on it, but
// not those whose registration was stopped.
func TestOpsContextKeepsValuesAndEndsOnlyWithTheRunner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent, cancel := context.WithCancelCause(context.WithValue(context.Background(), ctxKey{}, "v"))
		c := newOpsContext(parent)
		cancel(errors.New("the elector's ctx ended"))
		if c.Value(ctxKey{}) != "v" {
			t.Fatal("value of the elector's ctx not passed through")
		}
		if err := c.Err(); err != nil {
			t.Fatalf("Err after the elector's ctx ended = %v, want nil", err)
		}
		if err := context.Cause(c); err != nil {
			t.Fatalf("Cause after the elector's ctx ended = %v, want nil", err)
		}
		if _, ok := c.Deadline(); ok {
			t.Fatal("Deadline reported")
		}
		child, cancelChild := context.WithCancel(c)
		defer cancelChild()
		op := newOpContext(c, time.Hour)
		opDone := op.Done()
		var fired, stopped, late atomic.Bool
		context.AfterFunc(c, func() { fired.Store(true) })
		stop := context.AfterFunc(c, func() { stopped.Store(true) })
		if !stop() {
			t.Fatal("stop of a pending AfterFunc = false")
		}
		finished := newOpContext(c, time.Hour)
		_ = finished.Done()
		finished.end(context.Canceled)
		if n := len(c.hooks); n != 3 {
			t.Fatalf("%d calls registered, want 3 (child, op, AfterFunc): a stopped one or an ended operation is kept", n)
		}
		done := c.Done()
		select {
		case <-done:
			t.Fatal("Done closed before end")
		default:
		}
		c.end()
		<-done
		<-child.Done()
		<-opDone
		synctest.Wait()
		if !fired.Load() || stopped.Load() {
			t.Fatalf("AfterFunc called: %v, the stopped one: %v; want true, false", fired.Load(), stopped.Load())
		}
		for what, ctx := range map[string]context.Context{"opsContext": c, "child": child, "operation": op} {
			if err := ctx.Err(); !errors.Is(err, context.Canceled) {
				t.Fatalf("%s: Err after end = %v, want Canceled", what, err)
			}
		}
		if len(c.hooks) != 0 {
			t.Fatalf("%d calls kept after end", len(c.hooks))
		}
		context.AfterFunc(c, func() { late.Store(true) })
		synctest.Wait()
		if !late.Load() {
			t.Fatal("AfterFunc on an ended opsContext not called")
		}
		if stop := c.AfterFunc(func() {}); stop() {
			t.Fatal("stop of an AfterFunc registered after the end = true")
		}
	})
}
