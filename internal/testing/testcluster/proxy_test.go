package testcluster

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// echoServer accepts connections on loopback, echoes what it reads and
// sends every chunk it reads, and an "EOF" or "ERR" when a connection ends,
// on got.
type echoServer struct {
	ln  net.Listener
	got chan string
}

func newEchoServer(t *testing.T) *echoServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &echoServer{ln: ln, got: make(chan string, 100)}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 4096)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						s.got <- string(buf[:n])
						_, _ = c.Write(buf[:n])
					}
					if errors.Is(err, io.EOF) {
						s.got <- "EOF"
						return
					}
					if err != nil {
						s.got <- "ERR"
						return
					}
				}
			}()
		}
	}()
	return s
}

// next returns what the server got next, or "" after d.
func (s *echoServer) next(d time.Duration) string {
	select {
	case g := <-s.got:
		return g
	case <-time.After(d):
		return ""
	}
}

func newProxy(t *testing.T, target string) *Proxy {
	t.Helper()
	p, err := StartProxy("tcp", target, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	return p
}

func dialProxy(t *testing.T, p *Proxy) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// roundTrip writes msg and reads as many bytes back, within d.
func roundTrip(c net.Conn, msg string, d time.Duration) (string, error) {
	if err := c.SetDeadline(time.Now().Add(d)); err != nil {
		return "", err
	}
	if _, err := c.Write([]byte(msg)); err != nil {
		return "", err
	}
	buf := make([]byte, len(msg))
	_, err := io.ReadFull(c, buf)
	return string(buf), err
}

const quiet = 300 * time.Millisecond // how long "nothing happens" is watched

func TestProxyForwards(t *testing.T) {
	s := newEchoServer(t)
	p := newProxy(t, s.ln.Addr().String())
	c := dialProxy(t, p)
	if got, err := roundTrip(c, "hello", 5*time.Second); err != nil || got != "hello" {
		t.Fatalf("round trip: %q, %v", got, err)
	}
	if got := s.next(time.Second); got != "hello" {
		t.Fatalf("server got %q", got)
	}
	if n := p.Conns(); n != 1 {
		t.Fatalf("Conns = %d, want 1", n)
	}
}

// Latency is added in each direction: a round trip takes at least twice
// it.
func TestProxyLatency(t *testing.T) {
	s := newEchoServer(t)
	p := newProxy(t, s.ln.Addr().String())
	p.SetFaults(NetFaults{Latency: 100 * time.Millisecond, Jitter: 50 * time.Millisecond})
	c := dialProxy(t, p)
	start := time.Now()
	if got, err := roundTrip(c, "ping", 5*time.Second); err != nil || got != "ping" {
		t.Fatalf("round trip: %q, %v", got, err)
	}
	if took := time.Since(start); took < 200*time.Millisecond {
		t.Fatalf("round trip took %v, want at least 200ms", took)
	}
}

// HoldDown: the request reaches the server, the reply never reaches the
// client, and the end of the hold resets the connection instead of
// delivering it late.
func TestProxyHoldDown(t *testing.T) {
	s := newEchoServer(t)
	p := newProxy(t, s.ln.Addr().String())
	c := dialProxy(t, p)
	p.SetFaults(NetFaults{HoldDown: true})
	if _, err := roundTrip(c, "write", quiet); !isTimeout(err) {
		t.Fatalf("reply under HoldDown: %v, want a timeout", err)
	}
	if got := s.next(time.Second); got != "write" {
		t.Fatalf("server got %q, want the request", got)
	}
	p.SetFaults(NetFaults{})
	if got, err := roundTrip(c, "x", 5*time.Second); err == nil || isTimeout(err) {
		t.Fatalf("after the hold: %q, %v; want the connection reset", got, err)
	}
	// A new connection works.
	if got, err := roundTrip(dialProxy(t, p), "again", 5*time.Second); err != nil || got != "again" {
		t.Fatalf("new connection: %q, %v", got, err)
	}
}

// HoldUp: the request never reaches the server, not even after the hold.
func TestProxyHoldUp(t *testing.T) {
	s := newEchoServer(t)
	p := newProxy(t, s.ln.Addr().String())
	c := dialProxy(t, p)
	if _, err := roundTrip(c, "a", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if got := s.next(time.Second); got != "a" {
		t.Fatalf("server got %q", got)
	}
	p.SetFaults(NetFaults{HoldUp: true})
	if _, err := roundTrip(c, "lost", quiet); !isTimeout(err) {
		t.Fatalf("under HoldUp: %v, want a timeout", err)
	}
	p.SetFaults(NetFaults{})
	// The server sees the connection end, never the held bytes.
	if got := s.next(5 * time.Second); got != "ERR" && got != "EOF" {
		t.Fatalf("server got %q after the hold, want the connection to end", got)
	}
}

func TestProxyResetAll(t *testing.T) {
	s := newEchoServer(t)
	p := newProxy(t, s.ln.Addr().String())
	c := dialProxy(t, p)
	if _, err := roundTrip(c, "a", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if n := p.ResetAll(); n != 1 {
		t.Fatalf("ResetAll reset %d connections, want 1", n)
	}
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	_, err := c.Read(make([]byte, 1))
	if err == nil || isTimeout(err) || errors.Is(err, io.EOF) {
		t.Fatalf("read after reset: %v, want a connection reset", err)
	}
}

// HalfOpenAll: the server side ends, the client hears nothing, not even a
// close, and its writes still succeed.
func TestProxyHalfOpen(t *testing.T) {
	s := newEchoServer(t)
	p := newProxy(t, s.ln.Addr().String())
	c := dialProxy(t, p)
	if _, err := roundTrip(c, "a", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	_ = s.next(time.Second)
	if n := p.HalfOpenAll(); n != 1 {
		t.Fatalf("HalfOpenAll: %d, want 1", n)
	}
	if got := s.next(5 * time.Second); got != "EOF" {
		t.Fatalf("server got %q, want EOF", got)
	}
	if _, err := roundTrip(c, "anyone?", quiet); !isTimeout(err) {
		t.Fatalf("client on a half-open connection: %v, want a timeout", err)
	}
	_ = c.Close()
	waitFor(t, func() bool { return p.Conns() == 0 })
}

// A slow link delivers at the rate set.
func TestProxyBandwidth(t *testing.T) {
	s := newEchoServer(t)
	p := newProxy(t, s.ln.Addr().String())
	p.SetFaults(NetFaults{BytesPerSecond: 20000})
	c := dialProxy(t, p)
	msg := strings.Repeat("x", 2000) // 100ms each way at 20000 B/s
	start := time.Now()
	if got, err := roundTrip(c, msg, 10*time.Second); err != nil || !bytes.Equal([]byte(got), []byte(msg)) {
		t.Fatalf("round trip: %d bytes, %v", len(got), err)
	}
	if took := time.Since(start); took < 150*time.Millisecond {
		t.Fatalf("2000 bytes each way at 20000 B/s took %v, want at least 150ms", took)
	}
}

func TestProxyRefuse(t *testing.T) {
	s := newEchoServer(t)
	p := newProxy(t, s.ln.Addr().String())
	p.SetFaults(NetFaults{Refuse: true})
	// The reset may come as soon as the dial.
	if c, err := net.Dial("tcp", p.Addr()); err == nil {
		defer c.Close()
		if _, err := roundTrip(c, "a", 5*time.Second); err == nil || isTimeout(err) {
			t.Fatalf("refused connection: %v, want it closed", err)
		}
	}
	p.SetFaults(NetFaults{})
	if got, err := roundTrip(dialProxy(t, p), "b", 5*time.Second); err != nil || got != "b" {
		t.Fatalf("after Refuse ended: %q, %v", got, err)
	}
}

// Close ends every connection and returns.
func TestProxyClose(t *testing.T) {
	s := newEchoServer(t)
	p, err := StartProxy("tcp", s.ln.Addr().String(), 1)
	if err != nil {
		t.Fatal(err)
	}
	c := dialProxy(t, p)
	if _, err := roundTrip(c, "a", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	p.SetFaults(NetFaults{HoldUp: true})
	_, _ = c.Write([]byte("held"))
	p.HalfOpenAll()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := net.Dial("tcp", p.Addr()); err == nil {
		t.Fatal("dialled a closed proxy")
	}
}

func isTimeout(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }

// waitFor polls cond (the proxy has no event for it) for up to 5s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(5 * time.Second)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatal("condition not met within 5s")
		}
	}
}
