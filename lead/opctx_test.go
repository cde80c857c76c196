package lead

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

type ctxKey struct{}

// opContext behaves as context.WithTimeout: it ends at its deadline whether
// or not Done was called, when its parent ends, and when the operation
// ends; it passes values through; once ended it stays ended.
func TestOpContext(t *testing.T) {
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
