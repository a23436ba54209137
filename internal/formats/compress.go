package formats

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync/atomic"

	"github.com/klauspost/compress/gzip"
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
	n atomic.Int64
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

// decompressor is an io.Reader over the decompressed stream plus what it
// takes to release it.
type decompressor struct {
	io.Reader
	close func() error
}

// openDecompressed wraps r so that it yields decompressed bytes, choosing
// the codec from mode (see Options.Compression), the name's extension and
// the stream's first bytes. It streams: nothing is buffered beyond the
// codecs' own windows.
func openDecompressed(r io.Reader, name, mode string) (*decompressor, error) {
	switch mode {
	case "", CompressionAuto:
		mode = extCompression(name)
		if mode == "" {
			// Sniffing costs a 64 KiB buffer we would want anyway.
			br := bufio.NewReaderSize(r, 64<<10)
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
		return &decompressor{Reader: r, close: func() error { return nil }}, nil
	case CompressionGzip:
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, fmt.Errorf("%s: opening gzip stream: %w", name, err)
		}
		return &decompressor{Reader: zr, close: zr.Close}, nil
	case CompressionZstd:
		// Two decoder goroutines overlap decoding with parsing without
		// taking over a small machine.
		zr, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(2))
		if err != nil {
			return nil, fmt.Errorf("%s: opening zstd stream: %w", name, err)
		}
		return &decompressor{Reader: zr, close: func() error { zr.Close(); return nil }}, nil
	}
	return nil, fmt.Errorf("%s: unknown compression %q (use auto, none, gzip or zstd)", name, mode)
}

// checkParquetNotCompressed refuses a Parquet file wrapped in gzip or zstd:
// Parquet needs random access and compresses its pages itself.
func checkParquetNotCompressed(src Source, mode string) error {
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
