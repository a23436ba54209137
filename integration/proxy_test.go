//go:build integration

package integration

import (
	"errors"
	"io"
	"maps"
	"math/rand"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// tcpProxy forwards connections to a server. Cut closes every connection
// and refuses new ones (a network partition, as seen from the client);
// Restore ends it. With rate > 0, bytes from client to server pass at
// about rate bytes a second (a slow link), through a small window so
// that little waits in buffers.
type tcpProxy struct {
	ln     net.Listener
	target string
	rate   int

	mu    sync.Mutex
	conns map[net.Conn]bool
	cut   bool
}

func newTCPProxy(t testing.TB, target string, rate int) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln, target: target, rate: rate, conns: map[net.Conn]bool{}}
	go p.serve()
	t.Cleanup(func() {
		ln.Close()
		p.Cut()
	})
	return p
}

func (p *tcpProxy) Addr() string { return p.ln.Addr().String() }

// Cut closes every connection through the proxy and refuses new ones.
func (p *tcpProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// Restore lets connections through again.
func (p *tcpProxy) Restore() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
}

func (p *tcpProxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		return false
	}
	for _, c := range cs {
		p.conns[c] = true
	}
	return true
}

func (p *tcpProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.forward(c)
	}
}

func (p *tcpProxy) forward(c net.Conn) {
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	if !p.track(c, s) {
		c.Close()
		s.Close()
		return
	}
	if p.rate > 0 {
		// A small receive buffer keeps the client's bytes in the client
		// until the link takes them, as on a real slow network.
		_ = c.(*net.TCPConn).SetReadBuffer(16 << 10)
		_ = s.(*net.TCPConn).SetWriteBuffer(16 << 10)
	}
	go func() {
		p.copy(s, c)
		s.Close()
		c.Close()
	}()
	_, _ = io.Copy(c, s)
	c.Close()
	s.Close()
}

// copy sends src to dst, at p.rate when set.
func (p *tcpProxy) copy(dst, src net.Conn) {
	if p.rate <= 0 {
		_, _ = io.Copy(dst, src)
		return
	}
	buf := make([]byte, 8<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
			time.Sleep(time.Duration(n) * time.Second / time.Duration(p.rate))
		}
		if err != nil {
			return
		}
	}
}

// rrProxy spreads connections over several servers in turn (a balancer
// without session affinity) and, once Faults is set, breaks some of them
// the ways a network does to an HTTP request: reset while the request is
// sent, reset when the answer comes back (a lost answer), or reset toward
// the client only while the server goes on, unaware (an abandoned attempt
// that keeps writing). Each connection should carry one request (clients
// without keep-alive).
type rrProxy struct {
	ln      net.Listener
	targets []string
	next    atomic.Int64
	Faults  atomic.Bool

	mu     sync.Mutex
	rnd    *rand.Rand
	counts map[string]int
}

func newRRProxy(t testing.TB, seed int64, targets ...string) *rrProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &rrProxy{ln: ln, targets: targets, rnd: rand.New(rand.NewSource(seed)), counts: map[string]int{}}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.forward(c)
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return p
}

func (p *rrProxy) Addr() string { return p.ln.Addr().String() }

// Counts says how many connections met each fault.
func (p *rrProxy) Counts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.counts)
}

func (p *rrProxy) pick() (mode string, cutAt int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	mode = "pass"
	if p.Faults.Load() {
		switch r := p.rnd.Intn(100); {
		case r < 15:
			mode = "cut-request"
		case r < 30:
			mode = "lose-answer"
		case r < 40:
			mode = "abandon"
		}
	}
	p.counts[mode]++
	return mode, 1 + p.rnd.Intn(3000)
}

// reset closes a TCP connection with RST, as a broken network does.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	c.Close()
}

func (p *rrProxy) forward(c net.Conn) {
	target := p.targets[int(p.next.Add(1))%len(p.targets)]
	s, err := net.Dial("tcp", target)
	if err != nil {
		c.Close()
		return
	}
	mode, cutAt := p.pick()
	// Client to server. An abandoned request is cut from the client once
	// the client stops sending (its request is whole); its last bytes
	// reach the server only later, so that the server writes it while the
	// client's retry is written elsewhere.
	go func() {
		buf := make([]byte, 32<<10)
		var held []byte // abandon: the latest bytes, not yet sent
		sent := 0
		for {
			if mode == "abandon" && sent > 0 {
				_ = c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
			}
			n, err := c.Read(buf)
			if n > 0 && mode == "cut-request" && sent+n >= cutAt {
				_, _ = s.Write(buf[:cutAt-sent])
				reset(c)
				reset(s)
				return
			}
			if n > 0 {
				out := buf[:n]
				if mode == "abandon" {
					out, held = held, append([]byte(nil), buf[:n]...)
				}
				if _, werr := s.Write(out); werr != nil {
					reset(c)
					return
				}
				sent += n
			}
			if err != nil {
				var ne net.Error
				if mode == "abandon" && errors.As(err, &ne) && ne.Timeout() {
					reset(c)
					time.Sleep(time.Duration(100+cutAt/10) * time.Millisecond)
					_, _ = s.Write(held)
					_, _ = io.Copy(io.Discard, s)
					s.Close()
					return
				}
				s.(*net.TCPConn).CloseWrite()
				return
			}
		}
	}()
	// Server to client.
	buf := make([]byte, 32<<10)
	for {
		n, err := s.Read(buf)
		if n > 0 && mode == "lose-answer" {
			reset(c)
			reset(s)
			return
		}
		if n > 0 {
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			c.Close()
			return
		}
	}
}
