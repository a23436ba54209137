//go:build integration

package integration

import (
	"io"
	"net"
	"sync"
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
