package latest

import (
	"context"
	"testing"
	"time"
)

func TestSlowReceiverGetsNewestNeverOlder(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	b := New[int]()
	out := make(chan int)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(out)
		Serve(ctx, b, out, func(v int) int { return v })
	}()
	for i := 1; i <= 1000; i++ {
		b.Offer(i) // never blocks, though nobody receives yet
	}
	last := 0
	for last != 1000 {
		select {
		case v := <-out:
			if v <= last {
				t.Fatalf("received %d after %d", v, last)
			}
			last = v
		case <-time.After(10 * time.Second):
			t.Fatalf("newest value not delivered; last %d", last)
		}
	}
	cancel()
	<-done
	if _, ok := <-out; ok {
		t.Fatal("out not closed after ctx ended")
	}
}
