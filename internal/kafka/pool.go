package kafka

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Pool keeps the Client of each source between a pipe's batches, so that
// a batch reuses the connections, metadata and consumer of the last one
// instead of dialling the brokers again: one client per pipe per worker.
// A client is lent to one batch at a time (a zombie attempt beside its
// retry gets a client of its own), and one left unused for the idle time
// is closed, so the pool holds at most one client per pipe that ran on
// this worker within that time.
type Pool struct {
	idle time.Duration
	mu   sync.Mutex
	free map[[32]byte]*pooled
}

type pooled struct {
	c     *Client
	timer *time.Timer
}

// NewPool returns a pool closing clients left unused for idle.
func NewPool(idle time.Duration) *Pool {
	return &Pool{idle: idle, free: map[[32]byte]*pooled{}}
}

// key identifies a source by everything that makes its client: the
// settings hold credentials, so only their hash is kept.
func (s Source) key() [32]byte {
	h := sha256.New()
	fmt.Fprintf(h, "%q\x00%q\x00%q\x00%d", s.Bootstrap, s.Topic, s.Group, s.MaxBatchBytes)
	keys := make([]string, 0, len(s.Config))
	for k := range s.Config {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(h, "\x00%q=%q", k, s.Config[k])
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// Get lends the source's idle client, or opens one. Give it back with Put.
func (p *Pool) Get(src Source) (*Client, error) {
	k := src.key()
	p.mu.Lock()
	if f, ok := p.free[k]; ok && f.timer.Stop() {
		delete(p.free, k)
		p.mu.Unlock()
		return f.c, nil
	}
	p.mu.Unlock()
	return Open(src)
}

// Put gives a client back. broken says the batch failed: its client is
// closed rather than trusted with the next one.
func (p *Pool) Put(c *Client, broken bool) {
	if broken {
		c.Close()
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.free[c.key]; ok {
		c.Close() // a zombie's client: the pipe needs only one
		return
	}
	f := &pooled{c: c}
	f.timer = time.AfterFunc(p.idle, func() {
		p.mu.Lock()
		if p.free[c.key] == f {
			delete(p.free, c.key)
		}
		p.mu.Unlock()
		c.Close()
	})
	p.free[c.key] = f
}

// Close closes every idle client.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, f := range p.free {
		if f.timer.Stop() {
			f.c.Close()
		}
		delete(p.free, k)
	}
}
