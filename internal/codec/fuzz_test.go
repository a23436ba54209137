package codec

import (
	"bytes"
	"encoding/binary"
	"io"
	"runtime"
	"testing"
)

// readerMemoryBound is what decoding may allocate, whatever the input: an
// LZ4 block and its compressed form, with room for the rest.
const readerMemoryBound = 3*LZ4MaxBlock + 2<<20

// drain reads r to its end or its first error, at most max bytes, and
// returns how many bytes it read.
func drain(r io.Reader, max int64) (int64, error) {
	return io.CopyBuffer(io.Discard, io.LimitReader(r, max), make([]byte, 32<<10))
}

// allocated returns the bytes fn allocates.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestReaderMemoryBound: decompression bombs (a few KiB that expand to
// 256 MiB) decode in bounded memory, as do inputs that claim the largest
// blocks their format allows.
func TestReaderMemoryBound(t *testing.T) {
	if testing.Short() {
		t.Skip("compresses 256 MiB")
	}
	zeros := make([]byte, 1<<20)
	for _, enc := range []string{Deflate, Snappy, LZ4} {
		var buf bytes.Buffer
		w, err := NewWriter(enc, &buf)
		if err != nil {
			t.Fatal(err)
		}
		for range 256 {
			if _, err := w.Write(zeros); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		bomb := buf.Bytes()
		var n int64
		alloc := allocated(func() {
			r, err := NewReader(enc, bytes.NewReader(bomb))
			if err != nil {
				t.Fatal(err)
			}
			n, err = drain(r, 1<<40)
			if err != nil {
				t.Fatalf("%s: %v", enc, err)
			}
			r.Close()
		})
		if n != 256<<20 {
			t.Errorf("%s: decoded %d bytes, want %d", enc, n, 256<<20)
		}
		if alloc > readerMemoryBound {
			t.Errorf("%s: %d compressed bytes expanding to 256 MiB allocated %d bytes, bound %d", enc, len(bomb), alloc, readerMemoryBound)
		}
		t.Logf("%s: %d bytes → 256 MiB, %d bytes allocated", enc, len(bomb), alloc)
	}
}

// FuzzCodec: every codec reads back what it wrote; and any input, read as
// any encoding, is decoded or refused with an error, never a panic, in
// bounded memory.
func FuzzCodec(f *testing.F) {
	f.Add([]byte("hello, hello, hello"), uint8(0))
	f.Add([]byte{}, uint8(1))
	f.Add(bytes.Repeat([]byte{0}, 5000), uint8(2))
	// Headers that claim the largest blocks: a Snappy chunk of 16 MiB,
	// an LZ4 frame of 4 MiB blocks.
	f.Add([]byte("\xff\x06\x00\x00sNaPpY\x00\xff\xff\xff"), uint8(2))
	lz4Head := []byte{0x04, 0x22, 0x4d, 0x18, 0x64, 0x70, 0xb9}
	f.Add(binary.LittleEndian.AppendUint32(lz4Head, 4<<20), uint8(3))
	f.Add([]byte{0x78, 0x01, 0x00, 0x00, 0xff}, uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, which uint8) {
		names := Names()
		enc := names[int(which)%len(names)]
		if got, err := decompress(enc, compress(t, enc, data)); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s round trip: %v (%d bytes back, %d written)", enc, err, len(got), len(data))
		}
		alloc := allocated(func() {
			r, err := NewReader(enc, bytes.NewReader(data))
			if err != nil {
				return
			}
			_, _ = drain(r, 64<<20)
			r.Close()
		})
		if len(data) <= 1<<16 && alloc > readerMemoryBound {
			t.Fatalf("%s: %d input bytes allocated %d bytes decoding, bound %d", enc, len(data), alloc, readerMemoryBound)
		}
	})
}
