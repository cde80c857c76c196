package lead_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/store/memstore"
)

// assertNotLeading fails unless every query says e does not lead.
func assertNotLeading(t *testing.T, e *lead.Elector[meta], when string) {
	t.Helper()
	if e.IsLeader() {
		t.Fatalf("%s: IsLeader is true", when)
	}
	if term, ok := e.Term(); ok {
		t.Fatalf("%s: Term = %+v, true", when, term)
	}
	if e.ConfirmedWithin(time.Hour) {
		t.Fatalf("%s: ConfirmedWithin(1h) is true", when)
	}
	if s := e.Status(); s.Leading {
		t.Fatalf("%s: Status().Leading is true", when)
	}
}

// The moment Run's ctx ends the elector stops saying it leads, before Run's
// loop has had a chance to step down.
func TestNotLeaderTheMomentRunsContextEnds(t *testing.T) {
	for i := range 1000 {
		synctest.Test(t, func(t *testing.T) {
			e, err := lead.New("job", memstore.New[meta](), lead.WithIdentity("a"), lead.WithConfig(fastConfig()), lead.WithLookupEnv(nil))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer func() { cancel(); <-e.Done() }()
			go e.Run(ctx)
			synctest.Wait()
			if !e.IsLeader() {
				t.Fatalf("iteration %d: not leader once the elector settled", i)
			}
			cancel()
			assertNotLeading(t, e, "right after cancel")
			<-e.Done()
			assertNotLeading(t, e, "after Run returned")
		})
	}
}

// gateClock is the real clock, except that AfterFunc, which only Run's loop
// and its timers call, blocks while the gate is shut: it holds Run's loop
// still without holding anyone else.
type gateClock struct {
	mu     sync.Mutex
	shut   chan struct{} // nil while open; closed to open
	caught chan struct{} // gets one value when the loop is held
}

func (c *gateClock) Now() time.Time { return time.Now() }

func (c *gateClock) AfterFunc(d time.Duration, f func()) lead.Timer {
	c.mu.Lock()
	shut := c.shut
	c.mu.Unlock()
	if shut != nil {
		select {
		case c.caught <- struct{}{}:
		default:
		}
		<-shut
	}
	return time.AfterFunc(d, f)
}

// With Run's loop held still, ending Run's ctx still ends the leadership at
// once: the queries say so, and Lead's body is cancelled.
func TestRunContextEndCancelsWorkWithoutTheLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := &gateClock{caught: make(chan struct{}, 1)}
		e, err := lead.New("job", memstore.New[meta](), lead.WithIdentity("a"), lead.WithConfig(fastConfig()),
			lead.WithLookupEnv(nil), lead.WithClock(clock))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		open := make(chan struct{})
		var reopen sync.Once
		defer func() { reopen.Do(func() { close(open) }); cancel(); <-e.Done() }()
		go e.Run(ctx)
		body := make(chan context.Context, 1)
		led := make(chan error, 1)
		go func() {
			led <- e.Lead(context.Background(), func(ctx context.Context, _ lead.Term) error {
				body <- ctx
				<-ctx.Done()
				return nil
			})
		}()
		bodyCtx := <-body
		clock.mu.Lock()
		clock.shut = open
		clock.mu.Unlock()
		<-clock.caught // the loop is held in its next AfterFunc (a renewal)
		if !e.IsLeader() {
			t.Fatal("not leader while the loop is held before ctx ended")
		}
		cancel()
		assertNotLeading(t, e, "right after cancel, the loop held")
		synctest.Wait() // everything but the held loop has run
		if bodyCtx.Err() == nil {
			t.Fatal("Lead's body still runs after Run's ctx ended")
		}
		if err := <-led; !errors.Is(err, lead.ErrLeadershipLost) {
			t.Fatalf("Lead = %v, want ErrLeadershipLost", err)
		}
		reopen.Do(func() { close(open) })
	})
}
