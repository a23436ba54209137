package formats

import (
	"errors"
	"io"
)

const (
	// chunkSize is the size of the blocks the text readers read into.
	chunkSize = 1 << 20
	// minRead is the least free space worth a Read call.
	minRead = 64 << 10
)

// chunkBuf is the input buffer of the text readers. Fields of a batch are
// slices straight into its chunks, so a chunk that holds data of the
// current batch is never overwritten: when it is full, the unfinished
// record moves to a fresh chunk and the old one is kept until the next
// batch starts. That gives zero-copy fields with memory bounded by the
// batch.
type chunkBuf struct {
	r   io.Reader
	buf []byte
	// buf[pos:end] is data not yet consumed.
	pos, end int
	eof      bool
	err      error // read error, reported once the buffered data is used up
	// owned: buf[:pos] holds bytes the current batch points into.
	owned bool
	held  [][]byte // full chunks the current batch points into
	spare [][]byte // chunks free for reuse
}

func newChunkBuf(r io.Reader) *chunkBuf {
	// Small first: many files are small, and the first full chunk
	// switches to chunkSize anyway.
	return &chunkBuf{r: r, buf: make([]byte, 2*minRead)}
}

// release marks every chunk reusable; called when a new batch starts and
// the previous one is dead.
func (c *chunkBuf) release() {
	for _, h := range c.held {
		if len(h) >= chunkSize {
			c.spare = append(c.spare, h)
		}
	}
	clear(c.held)
	c.held = c.held[:0]
	c.owned = false
}

// fill reads more input after buf[end], keeping buf[pos:end] (it may move
// to a new chunk, so callers must work with offsets from pos). It returns
// false when no more data will come; c.err then says whether that is EOF or
// a failure.
func (c *chunkBuf) fill() bool {
	if c.eof {
		return false
	}
	if len(c.buf)-c.end < minRead {
		c.makeRoom()
	}
	// Callers re-scan the pending data after each fill, so reading at
	// least as much as is pending keeps a long record's cost linear even
	// when the source returns small pieces.
	want := min(len(c.buf)-c.end, max(minRead, c.end-c.pos))
	got, empty := 0, 0
	for got < want {
		n, err := c.r.Read(c.buf[c.end:])
		c.end += n
		got += n
		if err != nil {
			c.eof = true
			if !errors.Is(err, io.EOF) {
				c.err = err
			}
			return got > 0
		}
		if n == 0 {
			if empty++; empty >= 100 {
				c.eof, c.err = true, io.ErrNoProgress
				return got > 0
			}
		}
	}
	return true
}

func (c *chunkBuf) makeRoom() {
	n := c.end - c.pos
	if !c.owned && len(c.buf)-n >= minRead && n <= len(c.buf)/2 {
		copy(c.buf, c.buf[c.pos:c.end])
		c.pos, c.end = 0, n
		return
	}
	// Doubling keeps re-scanning a long record from the start linear
	// overall.
	size := max(chunkSize, 2*n+minRead)
	var nb []byte
	for i, s := range c.spare {
		if len(s) >= size {
			nb = s
			last := len(c.spare) - 1
			c.spare[i] = c.spare[last]
			c.spare[last] = nil
			c.spare = c.spare[:last]
			break
		}
	}
	if nb == nil {
		nb = make([]byte, size)
	}
	copy(nb, c.buf[c.pos:c.end])
	if c.owned {
		c.held = append(c.held, c.buf)
	} else if len(c.buf) == chunkSize {
		c.spare = append(c.spare, c.buf)
	}
	c.buf, c.pos, c.end = nb, 0, n
	c.owned = false
}

// fail is the error to report once the input is exhausted: nil at a clean
// EOF.
func (c *chunkBuf) fail() error { return c.err }
