package tunnel

import (
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// bufferPool is the Arrow allocator of one pack: it hands the large
// buffers of a flushed batch to the builders of the next, so a pack that
// is filled and flushed again and again does not ask the Go heap (and the
// kernel) for fresh tens of megabytes each time. Buffers are zeroed when
// reused, as the Go allocator's are. Safe for concurrent use.
type bufferPool struct {
	mu   sync.Mutex
	free [][]byte // full capacity
	heap memory.GoAllocator
}

const (
	poolMinBuffer = 64 << 10 // smaller buffers go back to the heap
	poolMaxFree   = 64
)

func (p *bufferPool) Allocate(size int) []byte {
	if size >= poolMinBuffer {
		p.mu.Lock()
		best := -1
		for i, b := range p.free {
			// Not more than twice the size: a small request must not
			// pin a huge buffer.
			if c := cap(b); c >= size && c <= 2*size && (best < 0 || c < cap(p.free[best])) {
				best = i
			}
		}
		if best >= 0 {
			b := p.free[best]
			p.free[best] = p.free[len(p.free)-1]
			p.free[len(p.free)-1] = nil
			p.free = p.free[:len(p.free)-1]
			p.mu.Unlock()
			clear(b)
			return b[:size]
		}
		p.mu.Unlock()
	}
	return p.heap.Allocate(size)
}

func (p *bufferPool) Reallocate(size int, b []byte) []byte {
	if cap(b) >= size {
		return b[:size]
	}
	nb := p.Allocate(size)
	copy(nb, b)
	p.Free(b)
	return nb
}

func (p *bufferPool) Free(b []byte) {
	if cap(b) < poolMinBuffer {
		return
	}
	p.mu.Lock()
	if len(p.free) < poolMaxFree {
		p.free = append(p.free, b[:cap(b)])
	}
	p.mu.Unlock()
}

// drain lets the garbage collector have the pooled buffers.
func (p *bufferPool) drain() {
	p.mu.Lock()
	clear(p.free)
	p.free = nil
	p.mu.Unlock()
}
