package kafka

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// recordsOf is the records section of recordBatch's batch (uncompressed).
func recordsOf(values [][]byte) []byte { return recordBatch(0, values, 0)[61:] }

func TestDecodedCost(t *testing.T) {
	// attributes, timestamp and offset deltas, no key, a value "v", three
	// headers of an empty key and value.
	rec := []byte{0, 0, 0, 1, 2, 'v', 6, 0, 0, 0, 0, 0, 0}
	withHeaders := append(binary.AppendVarint(nil, int64(len(rec))), rec...)

	for _, c := range []struct {
		name string
		recs []byte
		want int64
	}{
		{"empty", nil, 0},
		{"three records", recordsOf([][]byte{[]byte("one"), nil, {}}), int64(len(recordsOf([][]byte{[]byte("one"), nil, {}}))) + 3*recordCost},
		{"headers", withHeaders, int64(len(withHeaders)) + recordCost + 3*headerCost},
		// A legacy message set begins with an 8-byte offset: read as a
		// length, its first byte is 0.
		{"legacy message set", append(make([]byte, 8), 0, 0, 0, 30), 12},
		// The second record claims more bytes than there are: the client
		// stops there too.
		{"truncated", append(recordsOf([][]byte{[]byte("one")}), 40, 1, 2), int64(len(recordsOf([][]byte{[]byte("one")}))+3) + recordCost},
		{"too short to be a record", []byte{2, 0, 0}, 3},
	} {
		if got := decodedCost(c.recs); got != c.want {
			t.Errorf("%s: cost %d, want %d", c.name, got, c.want)
		}
	}
}

// TestFetchBudget: through the client's own decoding of a partition's
// batches, the budget passes what fits and stops at the batch that passes
// it (the client fetches it again), which a poll lets through; a first
// batch that passes it fails as the client's bound fails (naming its
// offsets) and tripped says it was the budget; uncompressed batches are
// not counted.
func TestFetchBudget(t *testing.T) {
	big := [][]byte{bytes.Repeat([]byte{' '}, 100<<10)} // 100 KiB, under fuzzBatchLimit
	fetch := func(first int64, batches int, codec int16) []byte {
		var raw []byte
		for i := range batches {
			raw = append(raw, recordBatch(first+int64(i), big, codec)...)
		}
		return raw
	}
	read := func(dec kgo.Decompressor, from int64, raw []byte) kgo.FetchPartition {
		rp := &kmsg.FetchResponseTopicPartition{HighWatermark: 1 << 20, LastStableOffset: 1 << 20, RecordBatches: raw}
		fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Topic: "t", Offset: from}, rp, dec, nil)
		return fp
	}
	b := newFetchBudget(consumerDecompressor(t), 350<<10)

	// Five batches of 100 KiB: three fit in 350 KiB, the fourth does not,
	// and the client stops before it.
	fp := read(b, 0, fetch(0, 5, 4))
	if fp.Err != nil || len(fp.Records) != 3 || !b.tripped() {
		t.Fatalf("five batches of 100 KiB under a budget of 350 KiB: %d records, err %v; want 3", len(fp.Records), fp.Err)
	}
	if b.tripped() {
		t.Fatal("tripped tells a failure once")
	}
	// Without a poll, the next fetch's first batch does not fit: an error
	// naming it.
	fp = read(b, 3, fetch(3, 2, 4))
	if tooLarge, ok := errors.AsType[*kgo.ErrDecompressTooLarge](fp.Err); !ok || tooLarge.Offset != 3 || len(fp.Records) != 0 || !b.tripped() {
		t.Fatalf("a first batch over what is left of the budget: %d records, err %v", len(fp.Records), fp.Err)
	}
	// After a poll, it does.
	b.polled()
	if fp := read(b, 3, fetch(3, 2, 4)); fp.Err != nil || len(fp.Records) != 2 {
		t.Fatalf("after a poll: %d records, err %v", len(fp.Records), fp.Err)
	}
	// Uncompressed batches cost nothing here (fetch.max.bytes bounds them).
	b.polled()
	if fp := read(b, 0, fetch(0, 5, 0)); fp.Err != nil || len(fp.Records) != 5 || b.used.Load() != 0 {
		t.Fatalf("uncompressed: %d records, err %v, %d bytes counted", len(fp.Records), fp.Err, b.used.Load())
	}

	// One batch of 30,000 empty records: 210 KB decompressed, ~5 MB decoded.
	tiny := make([][]byte, 30_000)
	b = newFetchBudget(consumerDecompressor(t), 1<<20)
	if fp := read(b, 0, recordBatch(0, tiny, 4)); fp.Err == nil || !b.tripped() {
		t.Fatalf("30,000 records under a budget of 1 MiB: %d records, err %v", len(fp.Records), fp.Err)
	}
	b = newFetchBudget(consumerDecompressor(t), 8<<20)
	if fp := read(b, 0, recordBatch(0, tiny, 4)); fp.Err != nil || len(fp.Records) != len(tiny) {
		t.Fatalf("30,000 records under a budget of 8 MiB: %d records, err %v", len(fp.Records), fp.Err)
	}
	// The client's own bound is not the budget's.
	b.polled()
	if fp := read(b, 0, recordBatch(0, [][]byte{bytes.Repeat([]byte{' '}, 1<<20)}, 4)); fp.Err == nil || b.tripped() {
		t.Fatalf("a batch over the client's bound: err %v, tripped %v", fp.Err, b.tripped())
	}
}

// FuzzDecodedCost: any bytes cost at least their length and at most what
// records of the smallest size (7 bytes) with headers of 2 bytes each
// could claim; nothing panics.
func FuzzDecodedCost(f *testing.F) {
	f.Add(recordsOf([][]byte{[]byte("one"), nil, {}}))
	f.Add(append(make([]byte, 8), 0, 0, 0, 30))
	f.Add([]byte{0x0c, 0, 0, 0, 1, 1, 0x7e})
	f.Fuzz(func(t *testing.T, recs []byte) {
		cost := decodedCost(recs)
		n := int64(len(recs))
		if cost < n || cost > n+(n/7)*recordCost+(n/2)*headerCost {
			t.Fatalf("%d bytes cost %d", n, cost)
		}
	})
}

// TestUncompressedFetchBound: what the client keeps of a fetch of batches
// sent uncompressed (which the budget does not see), of the smallest
// records, stays within uncompressedFactor a byte of the fetch, and comes
// close to it (so the bound on fetch.max.bytes it sets is not loose).
func TestUncompressedFetchBound(t *testing.T) {
	var raw []byte
	for i := range 2_000 { // 128,000 records of 7 bytes, 64 a batch
		raw = append(raw, recordBatch(int64(i)*64, make([][]byte, 64), 0)...)
	}
	rp := &kmsg.FetchResponseTopicPartition{HighWatermark: 1 << 30, LastStableOffset: 1 << 30, RecordBatches: raw}
	dec := consumerDecompressor(t)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Topic: "t"}, rp, dec, nil)
	runtime.GC()
	runtime.ReadMemStats(&after)
	if fp.Err != nil || len(fp.Records) != 128_000 {
		t.Fatalf("%d records, err %v", len(fp.Records), fp.Err)
	}
	kept := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	runtime.KeepAlive(fp)
	per := float64(kept) / float64(len(raw))
	t.Logf("%d bytes of batches: %d kept decoded (%.1f a byte; the bound %d)", len(raw), kept, per, uncompressedFactor)
	if per > float64(uncompressedFactor) || per < float64(uncompressedFactor)/2 {
		t.Fatalf("%.1f bytes kept a byte of uncompressed batches, want at most uncompressedFactor (%d) and near it", per, uncompressedFactor)
	}
}
