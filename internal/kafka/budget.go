package kafka

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The Kafka client bounds each record batch it decompresses
// (MaxDecompressBatchBytes), not what the batches of one fetch take
// together once decoded, and that is what a hostile producer aims at: a
// fetch of 1 MiB holds hundreds of zstd batches of a few KiB, each
// decompressing to the per-batch bound, and a record that points into
// each keeps its whole buffer alive (32 GiB at 64 MiB a batch). Decoding
// adds its own: the client makes a Record of ~170 bytes for every record
// a batch holds, so 64 MiB of the smallest records (7 bytes each) becomes
// 1.6 GiB of structs.
//
// fetchBudget is the consumer's decompressor: the client's own, bounded
// per batch, and a budget over what the batches decompressed since the
// consumer's last poll take decoded, their bytes plus recordCost a record
// and headerCost a header, counted by walking the records' lengths. A
// batch that would pass the budget fails as the client's own bound fails:
// after batches of its partition that fit, the client takes it for a
// fetch cut short and fetches it again next time (a new budget); as the
// partition's first batch of the fetch, it is a *kgo.ErrDecompressTooLarge
// naming partition and offsets, and tripped tells the consumer it was the
// budget. Real fetches (1 MiB compressed, records of hundreds of bytes)
// take a tenth of the default budget at most. Batches sent uncompressed are
// not seen here: fetch.max.bytes, kept within the budget over
// uncompressedFactor, bounds them.
type fetchBudget struct {
	inner kgo.Decompressor
	limit int64
	used  atomic.Int64
	trips atomic.Int64 // budget failures not yet told (tripped)
}

// recordCost is what the client allocates for each record it decodes: the
// Record and the pointer to it in the fetch's record slice.
const recordCost = int64(unsafe.Sizeof(kgo.Record{}) + unsafe.Sizeof(uintptr(0)))

// headerCost is the client's RecordHeader: a string and a byte slice.
const headerCost = int64(unsafe.Sizeof(kgo.RecordHeader{}))

// uncompressedFactor bounds what batches sent uncompressed, which the
// budget does not see, take decoded per byte of them: the byte, and a
// Record for each record of at least 7 bytes (a header, 2 bytes at least,
// costs less a byte). Source.settings keeps fetch.max.bytes at most the
// budget over it (10 MiB at 256 MiB), so that a fetch of them decodes
// within the budget as well.
const uncompressedFactor = 1 + recordCost/7

func newFetchBudget(inner kgo.Decompressor, limit int64) *fetchBudget {
	return &fetchBudget{inner: inner, limit: limit}
}

// Decompress decompresses one batch and charges it to the budget.
func (b *fetchBudget) Decompress(src []byte, codec kgo.CompressionCodecType) ([]byte, error) {
	out, err := b.inner.Decompress(src, codec)
	if err != nil || codec == kgo.CodecNone {
		return out, err
	}
	if cost := decodedCost(out); b.used.Add(cost) > b.limit {
		b.used.Add(-cost) // not decoded: what fits still may be
		b.trips.Add(1)
		// The client turns this into a *kgo.ErrDecompressTooLarge for the
		// partition and the batch's offsets.
		return nil, fmt.Errorf("the record batches fetched together take more than %d bytes decoded: %w", b.limit, kgo.ErrMaxDecompress)
	}
	return out, nil
}

// polled starts a new count: the consumer took what was fetched so far.
// What it took stays in memory while it is read, so a consumer holds at
// most about twice the budget.
func (b *fetchBudget) polled() { b.used.Store(0) }

// tripped reports whether a batch failed on the budget since the last
// call (rather than on the client's per-batch bound).
func (b *fetchBudget) tripped() bool { return b.trips.Swap(0) > 0 }

// decodedCost is what a v2 record batch's decompressed records take once
// the client decodes them: their bytes, recordCost a record and headerCost
// a header claimed. It walks the records as the client does, by their
// length prefixes, and stops where the client would (a record too short or
// past the end); legacy (v0/v1) message sets stop it at once (their first
// bytes, an offset, read as a length of 0) and cost their bytes.
func decodedCost(recs []byte) int64 {
	cost := int64(len(recs))
	for len(recs) > 0 {
		length, n := binary.Varint(recs)
		// The smallest record: attributes, timestamp and offset deltas,
		// key and value lengths, header count.
		if n <= 0 || length < 6 || length > int64(len(recs)-n) {
			break
		}
		rec := recs[n : n+int(length)]
		recs = recs[n+int(length):]
		cost += recordCost + headerCost*headerCount(rec)
	}
	return cost
}

// headerCount is the number of headers a record claims, as far as its
// bytes could hold them (the client refuses a count past them).
func headerCount(rec []byte) int64 {
	rec = rec[1:] // attributes
	for range 2 { // timestamp and offset deltas
		_, n := binary.Varint(rec)
		if n <= 0 {
			return 0
		}
		rec = rec[n:]
	}
	for range 2 { // key, value
		l, n := binary.Varint(rec)
		if n <= 0 || l > int64(len(rec)-n) {
			return 0
		}
		rec = rec[n+int(max(l, 0)):]
	}
	h, n := binary.Varint(rec)
	if n <= 0 || h <= 0 {
		return 0
	}
	return min(h, int64(len(rec)-n))
}
