package rowio

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"

	"github.com/klauspost/compress/zstd"
)

var (
	gzipMagic = []byte{0x1f, 0x8b}
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
)

// CountingReader counts the bytes that pass through it (compressed bytes,
// when it wraps the raw source); Count may be called from other goroutines
// for progress reports.
type CountingReader struct {
	R io.Reader
	// Size is the length of R when known (0 otherwise): small inputs
	// then get small buffers.
	Size int64
	n    atomic.Int64
}

func (c *CountingReader) Read(p []byte) (int, error) {
	n, err := c.R.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// Count is the number of bytes read so far.
func (c *CountingReader) Count() int64 { return c.n.Load() }

// extCompression names the compression a file name's extension implies, or
// "" if it implies none.
func extCompression(name string) string {
	n := strings.ToLower(name)
	switch {
	case strings.HasSuffix(n, ".gz"), strings.HasSuffix(n, ".gzip"):
		return CompressionGzip
	case strings.HasSuffix(n, ".zst"), strings.HasSuffix(n, ".zstd"):
		return CompressionZstd
	}
	return ""
}

func magicCompression(head []byte) string {
	switch {
	case bytes.HasPrefix(head, gzipMagic):
		return CompressionGzip
	case bytes.HasPrefix(head, zstdMagic):
		return CompressionZstd
	}
	return ""
}

// Decompressor is an io.Reader over the decompressed stream plus what it
// takes to release it.
type Decompressor struct {
	io.Reader
	Close func() error
	// Size is how many bytes it yields, when known (an uncompressed
	// source of known size); 0 otherwise.
	Size int64
}

// OpenDecompressed wraps cnt so that it yields decompressed bytes, choosing
// the codec from mode (see Options.Compression), the name's extension and
// the stream's first bytes. It streams: nothing is buffered beyond the
// codecs' own windows, which lim bounds, as it bounds the output per byte
// of input (see Limits).
func OpenDecompressed(cnt *CountingReader, name, mode string, lim Limits) (*Decompressor, error) {
	var r io.Reader = cnt
	switch mode {
	case "", CompressionAuto:
		mode = extCompression(name)
		if mode == "" {
			// Sniffing costs a 64 KiB buffer we would want anyway (a
			// smaller one for a smaller input).
			size := 64 << 10
			if cnt.Size > 0 && cnt.Size < int64(size) {
				size = int(cnt.Size)
			}
			br := bufio.NewReaderSize(r, size)
			head, _ := br.Peek(4)
			mode = magicCompression(head)
			r = br
			if mode == "" {
				mode = CompressionNone
			}
		}
	}
	switch mode {
	case CompressionNone:
		return &Decompressor{Reader: r, Close: func() error { return nil }, Size: cnt.Size}, nil
	case CompressionGzip:
		// gzip's window is a fixed 32 KiB: only the output needs a bound.
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, fmt.Errorf("%s: opening gzip stream: %w", name, err)
		}
		return &Decompressor{Reader: &boundedReader{r: zr, in: cnt, ratio: lim.MaxCompressionRatio}, Close: zr.Close}, nil
	case CompressionZstd:
		// Two decoder goroutines overlap decoding with parsing without
		// taking over a small machine. The window is allocated as the
		// frame header declares it, so it is bounded before anything is
		// decoded; low-memory mode grows buffers as data arrives rather
		// than up front.
		zr, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(2), zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxWindow(uint64(lim.ZstdMaxWindow)), zstd.WithDecoderMaxMemory(uint64(lim.ZstdMaxWindow)))
		if err != nil {
			return nil, fmt.Errorf("%s: opening zstd stream: %w", name, err)
		}
		br := &boundedReader{r: zr, in: cnt, ratio: lim.MaxCompressionRatio, window: lim.ZstdMaxWindow}
		return &Decompressor{Reader: br, Close: func() error { zr.Close(); return nil }}, nil
	}
	return nil, fmt.Errorf("%s: unknown compression %q (use auto, none, gzip or zstd)", name, mode)
}

// boundedReader is the output of a decompressor: it fails, with a
// *LimitError, once the output passes compressionRatioGrace and exceeds
// ratio times the compressed bytes read so far, and it names a zstd
// window over the limit as such. The compressed count includes the
// codec's read-ahead, which errs on the file's side.
type boundedReader struct {
	r      io.Reader
	in     *CountingReader
	ratio  int64
	window int64 // zstd's window limit; 0 for gzip
	out    int64
	err    error
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.r.Read(p)
	b.out += int64(n)
	if b.out > compressionRatioGrace {
		if in := max(b.in.Count(), 1); b.out/in > b.ratio {
			b.err = &LimitError{Limit: "MaxCompressionRatio", Value: b.ratio,
				What: fmt.Sprintf("%s decompressed from %s is a ratio of %d:1", ByteSize(b.out), ByteSize(in), b.out/in)}
			return 0, b.err
		}
	}
	if err != nil && b.window > 0 && (errors.Is(err, zstd.ErrWindowSizeExceeded) || errors.Is(err, zstd.ErrDecoderSizeExceeded)) {
		b.err = &LimitError{Limit: "ZstdMaxWindow", Value: b.window, What: "a zstd frame declares a larger window"}
		return n, b.err
	}
	return n, err
}

// CheckParquetNotCompressed refuses a Parquet file wrapped in gzip or zstd:
// Parquet needs random access and compresses its pages itself.
func CheckParquetNotCompressed(src Source, mode string) error {
	if mode == CompressionGzip || mode == CompressionZstd {
		return fmt.Errorf("%s: Parquet files cannot be read through %s; Parquet compresses its pages internally, so store the file uncompressed", src.Name, mode)
	}
	if c := extCompression(src.Name); c != "" {
		return fmt.Errorf("%s: a %s-compressed Parquet file cannot be read; Parquet compresses its pages internally, so store the file uncompressed (without the .%s wrapper)", src.Name, c, extOf(src.Name))
	}
	if src.At != nil && src.Size >= 4 {
		head := make([]byte, 4)
		if _, err := src.At.ReadAt(head, 0); err == nil {
			if c := magicCompression(head); c != "" {
				return fmt.Errorf("%s: the file is %s-compressed, not Parquet; Parquet compresses its pages internally, so store the file uncompressed", src.Name, c)
			}
		}
	}
	return nil
}

func extOf(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return name[i+1:]
	}
	return ""
}
