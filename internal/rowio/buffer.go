package rowio

import (
	"bytes"
	"errors"
	"io"
)

const (
	// chunkSize is the size of the blocks the text readers read into.
	ChunkSize = 1 << 20
	// minRead is the least free space worth a Read call.
	minRead = 64 << 10
)

// ChunkBuf is the input buffer of the text readers. Fields of a batch are
// slices straight into its chunks, so a chunk that holds data of the
// current batch is never overwritten: when it is full, the unfinished
// record moves to a fresh chunk and the old one is kept until the next
// batch starts. That gives zero-copy fields with memory bounded by the
// batch.
type ChunkBuf struct {
	r   io.Reader
	Buf []byte
	// buf[pos:end] is data not yet consumed.
	Pos, End int
	AtEOF    bool
	Err      error // read error, reported once the buffered data is used up
	// owned: buf[:pos] holds bytes the current batch points into.
	Owned bool
	held  [][]byte // full chunks the current batch points into
	spare [][]byte // chunks free for reuse
	// fits: Buf was sized to hold the whole input (NewChunkBufFor), so a
	// fill reads into what is left of it instead of growing it first.
	fits bool
}

func NewChunkBuf(r io.Reader) *ChunkBuf {
	// Small first: many files are small, and the first full chunk
	// switches to chunkSize anyway.
	return &ChunkBuf{r: r, Buf: make([]byte, 2*minRead)}
}

// NewChunkBufFor is NewChunkBuf for an input of size bytes (0: unknown).
// A small input gets a buffer of its size (and one byte, to see its end
// without another buffer), not the usual 128 KiB: a batch of a thousand
// one-line files would otherwise allocate and clear 128 MiB. An input
// longer than it said grows the buffer as usual.
func NewChunkBufFor(r io.Reader, size int64) *ChunkBuf {
	if size <= 0 || size >= 2*minRead-1 {
		return NewChunkBuf(r)
	}
	return &ChunkBuf{r: r, Buf: make([]byte, size+1), fits: true}
}

// Release marks every chunk reusable; called when a new batch starts and
// the previous one is dead.
func (c *ChunkBuf) Release() {
	for _, h := range c.held {
		if len(h) >= ChunkSize {
			c.spare = append(c.spare, h)
		}
	}
	clear(c.held)
	c.held = c.held[:0]
	c.Owned = false
}

// Fill reads more input after buf[end], keeping buf[pos:end] (it may move
// to a new chunk, so callers must work with offsets from pos). It returns
// false when no more data will come; c.err then says whether that is EOF or
// a failure.
func (c *ChunkBuf) Fill() bool {
	if c.AtEOF {
		return false
	}
	if len(c.Buf)-c.End < minRead && !(c.fits && c.End < len(c.Buf)) {
		c.makeRoom()
	}
	// Callers re-scan the pending data after each fill, so reading at
	// least as much as is pending keeps a long record's cost linear even
	// when the source returns small pieces.
	want := min(len(c.Buf)-c.End, max(minRead, c.End-c.Pos))
	got, empty := 0, 0
	for got < want {
		n, err := c.r.Read(c.Buf[c.End:])
		c.End += n
		got += n
		if err != nil {
			c.AtEOF = true
			if !errors.Is(err, io.EOF) {
				c.Err = err
			}
			return got > 0
		}
		if n == 0 {
			if empty++; empty >= 100 {
				c.AtEOF, c.Err = true, io.ErrNoProgress
				return got > 0
			}
		}
	}
	return true
}

func (c *ChunkBuf) makeRoom() {
	c.fits = false // the input was longer than said: grow as usual
	n := c.End - c.Pos
	if !c.Owned && len(c.Buf)-n >= minRead && n <= len(c.Buf)/2 {
		copy(c.Buf, c.Buf[c.Pos:c.End])
		c.Pos, c.End = 0, n
		return
	}
	// Doubling keeps re-scanning a long record from the start linear
	// overall.
	size := max(ChunkSize, 2*n+minRead)
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
	copy(nb, c.Buf[c.Pos:c.End])
	if c.Owned {
		c.held = append(c.held, c.Buf)
	} else if len(c.Buf) == ChunkSize {
		c.spare = append(c.spare, c.Buf)
	}
	c.Buf, c.Pos, c.End = nb, 0, n
	c.Owned = false
}

// SkipLine consumes input up to and including the next newline, reporting
// whether one was found.
func (c *ChunkBuf) SkipLine() bool {
	for {
		if j := bytes.IndexByte(c.Buf[c.Pos:c.End], '\n'); j >= 0 {
			c.Pos += j + 1
			return true
		}
		c.Pos = c.End
		if !c.Fill() {
			return false
		}
	}
}
