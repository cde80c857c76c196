package testcluster

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"time"
)

// NetFaults are the faults a Proxy injects into the bytes it forwards. The
// zero value forwards everything at once.
type NetFaults struct {
	// Latency is added to every chunk of bytes, in each direction.
	Latency time.Duration
	// Jitter, if positive, adds a uniform random delay in [0, Jitter) to
	// every chunk on top of Latency.
	Jitter time.Duration
	// HoldUp holds every byte from the client to the server (requests
	// vanish): nothing is forwarded that way while it is set. HoldDown does
	// the same from the server to the client (replies vanish: the request
	// took effect, the client cannot know). Held bytes are never
	// delivered: when the hold ends, every connection that held bytes is
	// reset, as a connection across a partition times out.
	HoldUp, HoldDown bool
	// BytesPerSecond, if positive, limits each direction of each connection
	// to that rate.
	BytesPerSecond int
	// Refuse resets every new connection at once.
	Refuse bool
}

// Proxy is a fault-injecting TCP proxy for tests: it listens on a free port
// of 127.0.0.1 and forwards every connection to a target (a TCP address or
// a Unix socket), with the faults of SetFaults, ResetAll and HalfOpenAll.
// Put one between each client and the real server.
//
// Its methods are safe for concurrent use.
type Proxy struct {
	network, target string
	ln              net.Listener

	mu      sync.Mutex
	faults  NetFaults
	changed chan struct{} // closed and replaced when faults change
	conns   map[*proxyConn]struct{}
	rng     *rand.Rand
	closed  bool
	wg      sync.WaitGroup
}

type proxyConn struct {
	client, server net.Conn
	once           sync.Once
	dead           chan struct{}

	// Guarded by Proxy.mu.
	held     bool // bytes were held by HoldUp or HoldDown
	doomed   bool // a hold ended: the held bytes must never be delivered
	halfOpen bool // the server side is gone; the client is never told
}

// ErrProxyClosed is returned by a Proxy used after Close.
var ErrProxyClosed = errors.New("testcluster: proxy closed")

// StartProxy starts a proxy to target on network ("tcp" or "unix"). seed
// draws its jitter. The caller must Close it.
func StartProxy(network, target string, seed uint64) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("testcluster: proxy: %w", err)
	}
	p := &Proxy{
		network: network, target: target, ln: ln,
		changed: make(chan struct{}),
		conns:   map[*proxyConn]struct{}{},
		rng:     rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
	}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's address, 127.0.0.1:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Port is the proxy's port on 127.0.0.1.
func (p *Proxy) Port() int { return p.ln.Addr().(*net.TCPAddr).Port }

// Faults returns the faults in force.
func (p *Proxy) Faults() NetFaults {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.faults
}

// SetFaults replaces the faults in force. A hold that ends resets the
// connections that held bytes; SetFaults(NetFaults{}) heals everything.
func (p *Proxy) SetFaults(f NetFaults) {
	p.mu.Lock()
	old := p.faults
	p.faults = f
	close(p.changed)
	p.changed = make(chan struct{})
	var reset []*proxyConn
	if (old.HoldUp && !f.HoldUp) || (old.HoldDown && !f.HoldDown) {
		for c := range p.conns {
			if c.held {
				c.doomed = true
				reset = append(reset, c)
			}
		}
	}
	p.mu.Unlock()
	for _, c := range reset {
		p.drop(c, true)
	}
}

// ResetAll resets every open connection: both sides see a TCP reset.
func (p *Proxy) ResetAll() int {
	cs := p.snapshot()
	for _, c := range cs {
		p.drop(c, true)
	}
	return len(cs)
}

// HalfOpenAll makes every open connection half-open: the server side is
// closed, while the client side stays open and hears nothing, neither data
// nor a close, as when the peer's machine vanished. The client learns only
// by timing out.
func (p *Proxy) HalfOpenAll() int {
	p.mu.Lock()
	var cs []*proxyConn
	for c := range p.conns {
		if !c.halfOpen {
			c.halfOpen = true
			cs = append(cs, c)
		}
	}
	p.mu.Unlock()
	for _, c := range cs {
		_ = c.server.Close()
	}
	return len(cs)
}

// Conns is the number of open connections.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

func (p *Proxy) snapshot() []*proxyConn {
	p.mu.Lock()
	defer p.mu.Unlock()
	cs := make([]*proxyConn, 0, len(p.conns))
	for c := range p.conns {
		cs = append(cs, c)
	}
	return cs
}

// Close stops listening, closes every connection and waits for the
// proxy's goroutines.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	err := p.ln.Close()
	for _, c := range p.snapshot() {
		p.drop(c, false)
	}
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		refuse, closed := p.faults.Refuse, p.closed
		p.mu.Unlock()
		if refuse || closed {
			resetConn(client)
			continue
		}
		server, err := net.DialTimeout(p.network, p.target, 5*time.Second)
		if err != nil {
			resetConn(client)
			continue
		}
		c := &proxyConn{client: client, server: server, dead: make(chan struct{})}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.kill(false)
			continue
		}
		p.conns[c] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pump(c, true)
		go p.pump(c, false)
	}
}

// resetConn closes conn with a TCP reset rather than a FIN.
func resetConn(conn net.Conn) {
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// drop closes c (with a reset if reset) and forgets it.
func (p *Proxy) drop(c *proxyConn, reset bool) {
	c.kill(reset)
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

func (c *proxyConn) kill(reset bool) {
	c.once.Do(func() {
		close(c.dead)
		if reset {
			resetConn(c.client)
			resetConn(c.server)
			return
		}
		_ = c.client.Close()
		_ = c.server.Close()
	})
}

// pump forwards one direction of c: up is client to server.
func (p *Proxy) pump(c *proxyConn, up bool) {
	defer p.wg.Done()
	src, dst := c.client, c.server
	if !up {
		src, dst = c.server, c.client
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.forward(c, up, dst, buf[:n]) {
			p.drop(c, true)
			return
		}
		if err != nil {
			p.mu.Lock()
			half := c.halfOpen
			p.mu.Unlock()
			if half && !up {
				// The server side was closed on purpose: the client
				// must not hear of it. The up pump keeps reading the
				// client until it gives up.
				return
			}
			p.drop(c, !errors.Is(err, io.EOF))
			return
		}
	}
}

// forward delivers b to dst under the faults in force, and reports
// whether the connection lives on.
func (p *Proxy) forward(c *proxyConn, up bool, dst net.Conn, b []byte) bool {
	for {
		p.mu.Lock()
		f, changed, half, doomed := p.faults, p.changed, c.halfOpen, c.doomed
		hold := (up && f.HoldUp) || (!up && f.HoldDown)
		if hold {
			c.held = true
		}
		var delay time.Duration
		if !hold {
			delay = f.Latency
			if f.Jitter > 0 {
				delay += time.Duration(p.rng.Int64N(int64(f.Jitter)))
			}
		}
		p.mu.Unlock()
		if doomed {
			return false
		}
		if half {
			return true // swallowed: nobody hears anything
		}
		if hold {
			select {
			case <-changed:
				continue
			case <-c.dead:
				return false
			}
		}
		if delay > 0 && !c.sleep(delay) {
			return false
		}
		if f.BytesPerSecond > 0 {
			// A chunk at a time, each after the time it takes to send.
			for len(b) > 0 {
				chunk := min(len(b), max(1, f.BytesPerSecond/20))
				if !c.sleep(time.Duration(chunk) * time.Second / time.Duration(f.BytesPerSecond)) {
					return false
				}
				if _, err := dst.Write(b[:chunk]); err != nil {
					return false
				}
				b = b[chunk:]
			}
			return true
		}
		_, err := dst.Write(b)
		return err == nil
	}
}

// sleep waits d, or until c dies (false).
func (c *proxyConn) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.dead:
		return false
	}
}
