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
	"github.com/klauspost/compress/snappy"
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

// NewReader returns a reader of the decompressed bytes of r. Corrupt or
// truncated input is a read error. Close releases the decompressor; it
// does not close r.
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
		return io.NopCloser(snappy.NewReader(r)), nil
	case LZ4:
		return io.NopCloser(lz4.NewReader(r)), nil
	}
	return io.NopCloser(r), nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// ReadFrom lets io.Copy into an identity writer use w's ReadFrom.
func (n nopWriteCloser) ReadFrom(r io.Reader) (int64, error) {
	return io.Copy(n.Writer, r)
}
