package formats

import (
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"

	"github.com/lakepipe/lakepipe/internal/rowio"
)

// arrow-go decodes a compressed Parquet page into a buffer of the size its
// header declares (bounded by MaxParquetPageBytes), but two of its codecs
// look past that buffer: Snappy allocates whatever length the block's own
// header states (up to 4 GiB, from a few bytes) when it exceeds the
// buffer, and zstd grows the buffer for as long as the frame decodes (up to
// 64 GiB). The codecs registered here hold both to the declared page size;
// a page that decodes to more is corrupt either way. Encoding is left to
// arrow-go's codecs. The registry is process-wide, and this package is
// the process's one Parquet reader.
func init() {
	for _, c := range []compress.Compression{compress.Codecs.Snappy, compress.Codecs.Zstd} {
		orig, err := compress.GetCodec(c)
		if err != nil {
			continue // not built in: nothing to bound
		}
		stream, _ := orig.(compress.StreamingCodec)
		compress.RegisterCodec(c, boundedCodec{Codec: orig, StreamingCodec: stream, zstd: c == compress.Codecs.Zstd})
	}
}

type boundedCodec struct {
	compress.Codec
	compress.StreamingCodec
	zstd bool
}

var boundedZstdDecoder = sync.OnceValues(func() (*zstd.Decoder, error) {
	// The window is bounded like the page: a frame needs no history
	// beyond its own content.
	return zstd.NewReader(nil, zstd.WithDecoderLowmem(true), zstd.WithDecodeAllCapLimit(true),
		zstd.WithDecoderMaxWindow(rowio.DefaultMaxReaderMemory), zstd.WithDecoderMaxMemory(rowio.DefaultMaxReaderMemory))
})

func (c boundedCodec) DecodeWithError(dst, src []byte) ([]byte, error) {
	if c.zstd {
		dec, err := boundedZstdDecoder()
		if err != nil {
			return nil, err
		}
		// With the cap limit, DecodeAll writes at most cap(dst) bytes.
		out, err := dec.DecodeAll(src, dst[:0])
		if err != nil {
			return nil, fmt.Errorf("zstd page: %w", err)
		}
		return out, nil
	}
	n, err := snappy.DecodedLen(src)
	if err != nil {
		return nil, err
	}
	if n > len(dst) {
		return nil, fmt.Errorf("a snappy block of %d bytes in a page of %d", n, len(dst))
	}
	return snappy.Decode(dst, src)
}

func (c boundedCodec) Decode(dst, src []byte) []byte {
	out, err := c.DecodeWithError(dst, src)
	if err != nil {
		panic(err)
	}
	return out
}
