// Package codec names and opens the stream compressions the write service
// accepts in Content-Encoding: identity, deflate (RFC 1950 zlib), snappy
// (the framed Snappy format) and lz4 (the LZ4 frame format). The client in
// package tunnel compresses flush bodies with NewWriter; the server
// decompresses them with NewReader.
package codec

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zlib"
	"github.com/pierrec/lz4/v4"
)

// Canonical encoding names, as the client sends them in Content-Encoding.
const (
	Identity = "identity"
	Deflate  = "deflate"
	Snappy   = "snappy"
	LZ4      = "lz4"
)

// aliases maps every accepted spelling (lower case) to its canonical name.
var aliases = map[string]string{
	"":         Identity,
	"none":     Identity,
	"identity": Identity,
	"deflate":  Deflate,
	"zlib":     Deflate,
	"snappy":   Snappy,
	"lz4":      LZ4,
}

// Names lists the canonical encoding names, identity first.
func Names() []string {
	return []string{Identity, Deflate, Snappy, LZ4}
}

// Canonical returns the canonical name of encoding: "", "none" and
// "identity" are identity, "zlib" and "deflate" are deflate. Names are
// matched case-insensitively, as HTTP content codings are. An unknown
// name is an error that lists the known ones.
func Canonical(encoding string) (string, error) {
	if c, ok := aliases[strings.ToLower(strings.TrimSpace(encoding))]; ok {
		return c, nil
	}
	return "", fmt.Errorf("unknown content encoding %q (known: %s, and none, zlib as aliases)",
		encoding, strings.Join(Names(), ", "))
}

// NewWriter returns a writer that compresses what is written to it into w.
// Close writes the end of the compressed stream (trailer, checksum) and
// must be called; it does not close w. The writers favour speed: zlib at
// level 1, Snappy and LZ4 at their default (fast) levels.
func NewWriter(encoding string, w io.Writer) (io.WriteCloser, error) {
	name, err := Canonical(encoding)
	if err != nil {
		return nil, err
	}
	switch name {
	case Deflate:
		return zlib.NewWriterLevel(w, zlib.BestSpeed)
	case Snappy:
		// Snappy-compatible framing (64 KiB blocks, Snappy chunk types);
		// blocks are compressed on up to GOMAXPROCS goroutines.
		return s2.NewWriter(w, s2.WriterSnappyCompat()), nil
	case LZ4:
		return lz4.NewWriter(w), nil
	}
	return nopWriteCloser{w}, nil
}

// Memory bounds of the readers, whatever the input claims.
const (
	// SnappyMaxBlock is the largest Snappy block a reader accepts (the
	// framing format's own limit, 64 KiB); a stream claiming a larger one
	// is a read error, so a reader holds at most about two blocks.
	SnappyMaxBlock = 64 << 10
	// LZ4MaxBlock is the largest LZ4 frame block (4 MiB, the format's
	// largest block size); a reader holds one block and its compressed
	// form, decoded on the calling goroutine.
	LZ4MaxBlock = 4 << 20
)

// NewReader returns a reader of the decompressed bytes of r. Corrupt or
// truncated input is a read error. Close releases the decompressor; it
// does not close r.
//
// A reader's memory is bounded whatever the input: a 32 KiB window for
// deflate, SnappyMaxBlock and LZ4MaxBlock blocks for the others. The
// decompressed size is not bounded (deflate expands up to 1032-fold):
// callers that must bound it count what they read.
func NewReader(encoding string, r io.Reader) (io.ReadCloser, error) {
	name, err := Canonical(encoding)
	if err != nil {
		return nil, err
	}
	switch name {
	case Deflate:
		zr, err := zlib.NewReader(r)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, fmt.Errorf("deflate: %w", err)
		}
		return zr, nil
	case Snappy:
		// The Snappy framing format's 64 KiB blocks (S2 allows 4 MiB).
		return io.NopCloser(s2.NewReader(r, s2.ReaderMaxBlockSize(SnappyMaxBlock))), nil
	case LZ4:
		// Blocks are at most 4 MiB in the frame format; one goroutine, so
		// one block at a time.
		zr := lz4.NewReader(r)
		if err := zr.Apply(lz4.ConcurrencyOption(1)); err != nil {
			return nil, fmt.Errorf("lz4: %w", err)
		}
		return io.NopCloser(zr), nil
	}
	return io.NopCloser(r), nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// ReadFrom lets io.Copy into an identity writer use w's ReadFrom.
func (n nopWriteCloser) ReadFrom(r io.Reader) (int64, error) {
	return io.Copy(n.Writer, r)
}
