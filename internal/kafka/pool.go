package kafka

import (
	"context"
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
//
// End offsets are read otherwise (EndOffsets): with one client per
// cluster, shared by all its pipes' topics.
type Pool struct {
	idle   time.Duration
	mu     sync.Mutex
	free   map[[32]byte]*pooled
	shared map[[32]byte]*sharedClient
}

// sharedClient is a cluster's client for end offsets; users and last say
// whether its idle time has passed.
type sharedClient struct {
	c     *Client
	users int
	last  time.Time
}

type pooled struct {
	c     *Client
	timer *time.Timer
}

// NewPool returns a pool closing clients left unused for idle.
func NewPool(idle time.Duration) *Pool {
	return &Pool{idle: idle, free: map[[32]byte]*pooled{}, shared: map[[32]byte]*sharedClient{}}
}

// EndOffsets reads where src's topic ends (Client.EndOffsets) with a
// client shared by every source of the same brokers and settings,
// whatever their topic and group. An idle Kafka pipe reads its topic's
// ends every batch interval: on the pipe's own client (two kgo clients,
// their connections and buffers) that kept 1,000 idle pipes' clients
// open, 315 MB of one worker's memory; this way they close once the
// pipes are idle for the pool's idle time, and idle pipes share one
// connection per broker. The shared client closes too once unused for
// that long.
func (p *Pool) EndOffsets(ctx context.Context, src Source) (Offsets, error) {
	cluster := src
	cluster.Topic, cluster.Group, cluster.MaxBatchBytes, cluster.MaxFetchMemory = "", "", 0, 0
	k := cluster.key()
	p.mu.Lock()
	sc := p.shared[k]
	if sc == nil {
		c, err := Open(src)
		if err != nil {
			p.mu.Unlock()
			return nil, err
		}
		sc = &sharedClient{c: c}
		p.shared[k] = sc
		p.closeIdle(k, sc, p.idle)
	}
	sc.users++
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		sc.users--
		sc.last = time.Now()
		p.mu.Unlock()
	}()
	return sc.c.endOffsets(ctx, src.Topic)
}

// closeIdle closes the shared client once nobody used it for the idle
// time, checking again after after.
func (p *Pool) closeIdle(k [32]byte, sc *sharedClient, after time.Duration) {
	time.AfterFunc(after, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.shared[k] != sc {
			return // closed by Close
		}
		if idle := time.Since(sc.last); sc.users > 0 || idle < p.idle {
			p.closeIdle(k, sc, max(p.idle-idle, p.idle/10))
			return
		}
		delete(p.shared, k)
		sc.c.Close()
	})
}

// key identifies a source by everything that makes its client: the
// settings hold credentials, so only their hash is kept.
func (s Source) key() [32]byte {
	h := sha256.New()
	fmt.Fprintf(h, "%q\x00%q\x00%q\x00%d\x00%d", s.Bootstrap, s.Topic, s.Group, s.MaxBatchBytes, s.MaxFetchMemory)
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

// Close closes every idle client, and the shared ones.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, f := range p.free {
		if f.timer.Stop() {
			f.c.Close()
		}
		delete(p.free, k)
	}
	for k, sc := range p.shared {
		sc.c.Close()
		delete(p.shared, k)
	}
}
