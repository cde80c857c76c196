package watchutil_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-go/tenure/store/watchutil"
)

// fakeSource is a server of int states by key. Each connection reports
// the changes sent on its channel; closing it breaks the connection.
type fakeSource struct {
	mu       sync.Mutex
	state    map[string]int
	fail     int   // how many Connect calls fail next
	end      error // returned by Connect when set
	attempts []time.Time
	conns    []*fakeConn
	byKey    bool // connections subscribe key by key
	reads    int  // keys reread
}

type fakeConn struct {
	src    *fakeSource
	events chan string // a key whose state changed; closed: the connection breaks
	closed bool

	mu      sync.Mutex
	subs    []string
	confirm chan string // keys whose subscription the server confirms
}

func newFake() *fakeSource { return &fakeSource{state: map[string]int{}} }

func (s *fakeSource) Connect(ctx context.Context, a watchutil.Attempt[string, int]) (watchutil.Conn[string, int], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attempts = append(s.attempts, time.Now())
	if s.end != nil {
		return nil, s.end
	}
	if s.fail > 0 {
		s.fail--
		return nil, errors.New("refused")
	}
	c := &fakeConn{src: s, events: make(chan string, 16), confirm: make(chan string, 16)}
	s.conns = append(s.conns, c)
	if s.byKey {
		for _, k := range a.Keys {
			c.Subscribe(k)
		}
		return byKeyConn{c}, nil
	}
	return c, nil
}

func (s *fakeSource) Reread(_ context.Context, keys []string, f *watchutil.Feed[string, int]) error {
	for _, k := range keys {
		s.mu.Lock()
		v := s.state[k]
		s.reads++
		s.mu.Unlock()
		f.Put(k, v)
	}
	return nil
}

// set changes the state of key, announced on the current connection when
// tell is set.
func (s *fakeSource) set(key string, v int, tell bool) {
	s.mu.Lock()
	s.state[key] = v
	c := s.conns[len(s.conns)-1]
	s.mu.Unlock()
	if tell {
		c.events <- key
	}
}

func (s *fakeSource) conn(i int) *fakeConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns[i]
}

func (c *fakeConn) Stream(ctx context.Context, f *watchutil.Feed[string, int]) error {
	if err := f.ReadyAll(ctx); err != nil {
		return err
	}
	return c.read(ctx, f)
}

func (c *fakeConn) read(ctx context.Context, f *watchutil.Feed[string, int]) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case k := <-c.confirm:
			if err := f.Ready(ctx, k); err != nil {
				return err
			}
		case k, ok := <-c.events:
			if !ok {
				return errors.New("broken")
			}
			c.src.mu.Lock()
			v := c.src.state[k]
			c.src.mu.Unlock()
			f.Put(k, v)
		}
	}
}

func (c *fakeConn) Close() {
	c.src.mu.Lock()
	defer c.src.mu.Unlock()
	c.closed = true
}

func (c *fakeConn) Subscribe(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.subs = append(c.subs, "+"+key)
}

func (c *fakeConn) Unsubscribe(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.subs = append(c.subs, "-"+key)
}

// byKeyConn is a fakeConn that subscribes key by key: a key is ready once
// its subscription is confirmed.
type byKeyConn struct{ *fakeConn }

func (c byKeyConn) Stream(ctx context.Context, f *watchutil.Feed[string, int]) error {
	return c.read(ctx, f)
}

// newer is a Watcher of src's key that delivers only states above the
// last one delivered.
func newer(src *fakeSource, key string) watchutil.Watcher[int, int, int] {
	last := -1
	return watchutil.Watcher[int, int, int]{
		Read: func(context.Context) (int, error) {
			src.mu.Lock()
			defer src.mu.Unlock()
			return src.state[key], nil
		},
		Next: func(v int) (int, bool) {
			if v <= last {
				return 0, false
			}
			last = v
			return v, true
		},
		Conv: same,
	}
}

// A change made while the connection was down is not lost: after the
// Hub connects again, every watched key is read again.
func TestHubReadsAgainAfterReconnecting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFake()
		h := watchutil.NewHub[string, int](src, watchutil.HubOptions{})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ch, err := watchutil.Watch(ctx, h, "job", newer(src, "job"))
		if err != nil {
			t.Fatal(err)
		}
		if v := <-ch; v != 0 {
			t.Fatalf("first state %d, want 0", v)
		}
		src.set("job", 1, true)
		if v := <-ch; v != 1 {
			t.Fatalf("announced change: %d, want 1", v)
		}
		close(src.conn(0).events) // the connection breaks
		src.set("job", 2, false)  // a change nobody announces
		synctest.Wait()
		select {
		case v := <-ch:
			if v != 2 {
				t.Fatalf("after reconnecting: %d, want 2", v)
			}
		case <-time.After(time.Minute):
			t.Fatal("a change made while the connection was down was never delivered")
		}
	})
}

// Failed attempts back off from 50 ms doubling up to 2 s; a connection
// that made progress is followed at once by the next attempt.
func TestHubBacksOffBetween50msAnd2s(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFake()
		h := watchutil.NewHub[string, int](src, watchutil.HubOptions{})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if _, err := watchutil.Watch(ctx, h, "job", newer(src, "job")); err != nil {
			t.Fatal(err)
		}
		src.mu.Lock()
		src.fail = 8
		src.mu.Unlock()
		close(src.conn(0).events)
		time.Sleep(time.Minute)
		src.mu.Lock()
		defer src.mu.Unlock()
		var gaps []time.Duration
		for i := 2; i < len(src.attempts); i++ {
			gaps = append(gaps, src.attempts[i].Sub(src.attempts[i-1]))
		}
		ms := time.Millisecond
		want := []time.Duration{50 * ms, 100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms, 2000 * ms, 2000 * ms}
		if !slices.Equal(gaps, want) {
			t.Fatalf("pauses between attempts %v, want %v", gaps, want)
		}
		if d := src.attempts[1].Sub(src.attempts[0]); d != 0 {
			t.Fatalf("the attempt after a connection that worked came after %v, want at once", d)
		}
		if len(src.conns) != 2 {
			t.Fatalf("%d connections, want 2", len(src.conns))
		}
	})
}

// A Watch waiting for its key fails with the error of the attempt that
// failed; a Source that gives up ends every watch.
func TestHubFailuresReachWatchers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFake()
		src.fail = 1
		h := watchutil.NewHub[string, int](src, watchutil.HubOptions{})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if _, err := watchutil.Watch(ctx, h, "job", newer(src, "job")); err == nil || err.Error() != "refused" {
			t.Fatalf("Watch over a refused connection: %v, want its error", err)
		}
		ch, err := watchutil.Watch(ctx, h, "job", newer(src, "job"))
		if err != nil {
			t.Fatal(err)
		}
		<-ch
		ended := false
		if err := watchutil.WatchFunc(ctx, h, "other", newer(src, "other"), func(_ int, ok bool) { ended = ended || !ok }); err != nil {
			t.Fatal(err)
		}
		src.mu.Lock()
		src.end = watchutil.End(errors.New("forbidden"))
		src.mu.Unlock()
		close(src.conn(0).events)
		synctest.Wait()
		if _, ok := <-ch; ok {
			t.Fatal("a watch goes on after its Source gave up")
		}
		if !ended {
			t.Fatal("a WatchFunc goes on after its Source gave up")
		}
		if n := h.Watchers("job") + h.Watchers("other"); n != 0 {
			t.Fatalf("%d watchers left", n)
		}
	})
}

// The connection outlives the last watcher by the linger, and serves a
// watcher that comes meanwhile; then it closes.
func TestHubLingers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFake()
		h := watchutil.NewHub[string, int](src, watchutil.HubOptions{Linger: time.Second})
		for range 2 {
			ctx, cancel := context.WithCancel(context.Background())
			ch, err := watchutil.Watch(ctx, h, "job", newer(src, "job"))
			if err != nil {
				t.Fatal(err)
			}
			<-ch
			cancel()
			for range ch {
			}
			time.Sleep(time.Second / 2)
		}
		src.mu.Lock()
		n, closed := len(src.attempts), src.conns[0].closed
		src.mu.Unlock()
		if n != 1 || closed {
			t.Fatalf("%d connections, closed %v; want one, open within the linger", n, closed)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		src.mu.Lock()
		closed = src.conns[0].closed
		src.mu.Unlock()
		if !closed {
			t.Fatal("the connection outlived the linger")
		}
	})
}

// Over a connection that subscribes key by key, a Watch waits for its
// key's subscription to be confirmed, and keys are subscribed and
// unsubscribed as watchers come and go.
func TestHubSubscribesKeyByKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFake()
		src.byKey = true
		h := watchutil.NewHub[string, int](src, watchutil.HubOptions{ReadyTimeout: time.Second, ErrReadyTimeout: errors.New("not confirmed")})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if _, err := watchutil.Watch(ctx, h, "job", newer(src, "job")); err == nil || err.Error() != "not confirmed" {
			t.Fatalf("Watch of a key never confirmed: %v, want the timeout", err)
		}
		done := make(chan error)
		var ch <-chan int
		go func() {
			var err error
			ch, err = watchutil.Watch(ctx, h, "job", newer(src, "job"))
			done <- err
		}()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("Watch returned before its key was confirmed: %v", err)
		default:
		}
		c := src.conn(len(src.conns) - 1)
		c.confirm <- "job"
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		<-ch
		// A key watched while the connection is up waits for its own
		// confirmation too.
		wctx, stop := context.WithCancel(ctx)
		otherDone := make(chan error, 1)
		go func() {
			_, err := watchutil.Watch(wctx, h, "other", newer(src, "other"))
			otherDone <- err
		}()
		synctest.Wait()
		select {
		case err := <-otherDone:
			t.Fatalf("a Watch on the open connection returned before its key was confirmed: %v", err)
		default:
		}
		stop()
		if err := <-otherDone; !errors.Is(err, context.Canceled) {
			t.Fatalf("Watch ended by its ctx: %v", err)
		}
		synctest.Wait()
		c.mu.Lock()
		defer c.mu.Unlock()
		if want := []string{"+job", "+other", "-other"}; !slices.Equal(c.subs[len(c.subs)-3:], want) {
			t.Fatalf("subscriptions %q, want to end with %q", c.subs, want)
		}
	})
}

// A state offered while the watch reads its first is delivered after it,
// in the order offered.
func TestHubDeliversWhatCameDuringTheFirstRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := watchutil.NewHub[string, int](nil, watchutil.HubOptions{})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		w := watchutil.Every(0, same)
		w.Read = func(context.Context) (int, error) {
			h.Publish("job", 5) // a change made as the read runs
			return 3, nil
		}
		var got []int
		if err := watchutil.WatchFunc(ctx, h, "job", w, func(v int, ok bool) {
			if ok {
				got = append(got, v)
			}
		}); err != nil {
			t.Fatal(err)
		}
		if want := []int{3, 5}; !slices.Equal(got, want) {
			t.Fatalf("delivered %v, want the state read, then what came during the read: %v", got, want)
		}
	})
}

// A watch the Hub ends while its first read runs still delivers the state
// read, then ends: fn(v, true) once, then fn(zero, false) once.
func TestHubEndingAWatchDuringItsFirstReadDeliversTheReadFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFake()
		h := watchutil.NewHub[string, int](src, watchutil.HubOptions{})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		src.mu.Lock()
		src.state["job"] = 4
		src.mu.Unlock()
		w := newer(src, "job")
		read := w.Read
		w.Read = func(ctx context.Context) (int, error) {
			src.mu.Lock()
			src.end = watchutil.End(errors.New("forbidden"))
			src.mu.Unlock()
			close(src.conn(0).events)
			synctest.Wait() // the Hub gives up and ends every watch
			return read(ctx)
		}
		var mu sync.Mutex
		var calls []string
		err := watchutil.WatchFunc(ctx, h, "job", w, func(v int, ok bool) {
			mu.Lock()
			defer mu.Unlock()
			calls = append(calls, fmt.Sprint(v, ok))
		})
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if want := []string{"4 true", "0 false"}; !slices.Equal(calls, want) {
			t.Fatalf("calls %v, want %v", calls, want)
		}
		if n := h.Watchers("job"); n != 0 {
			t.Fatalf("%d watchers left", n)
		}
	})
}
