package kafka

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"runtime"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fuzzBatchLimit is LAKEPIPE_MAX_KAFKA_BATCH_BYTES in FuzzRecordBatches,
// small so that a bomb the fuzzer finds stays cheap.
const fuzzBatchLimit = 256 << 10

// countingDecompressor counts what a decompressor hands back.
type countingDecompressor struct {
	kgo.Decompressor
	out int
}

func (d *countingDecompressor) Decompress(src []byte, codec kgo.CompressionCodecType) ([]byte, error) {
	out, err := d.Decompressor.Decompress(src, codec)
	d.out += len(out)
	return out, err
}

// FuzzRecordBatches feeds bytes to the Kafka client as the record batches
// of one partition in a fetch answer, decoded as a pipe's consumer decodes
// them (its settings, its bounded decompressor under a fetch budget of
// four batches; CRC checks off so that
// mutations reach the decoding): nothing panics, and what decoding
// allocates stays within 170 bytes per byte the batches hold decompressed
// (the client sizes its record slice from the record count a batch
// claims, clamped to those bytes, at 160 bytes a record; see
// docs/security.md), plus the decompressed bytes themselves.
func FuzzRecordBatches(f *testing.F) {
	recs := [][]byte{[]byte(`{"time":"2026-12-06 10:00:00","level":"INFO","message":"one"}`), []byte("two"), nil}
	f.Add(recordBatch(0, recs, 0))
	f.Add(recordBatch(5, recs, 1))
	f.Add(recordBatch(7, recs, 4))
	f.Add(append(recordBatch(0, recs, 0), recordBatch(3, recs, 4)...))
	f.Add(recordBatch(0, [][]byte{bytes.Repeat([]byte{' '}, 1<<20)}, 4)) // over the limit
	// 64 KiB of records claimed to be a million: the client allocates
	// 160 bytes for each byte (measured 168 with the rest; at a bound of
	// 100 this seed fails).
	claim := recordBatch(0, [][]byte{make([]byte, 64<<10)}, 0)
	binary.BigEndian.PutUint32(claim[57:], 1<<20) // NumRecords
	f.Add(claim)

	budget := newFetchBudget(consumerDecompressor(f), 4*fuzzBatchLimit)

	f.Fuzz(func(t *testing.T, raw []byte) {
		budget.polled()
		counting := &countingDecompressor{Decompressor: budget}
		rp := &kmsg.FetchResponseTopicPartition{HighWatermark: 1 << 40, LastStableOffset: 1 << 40, RecordBatches: raw}
		opts := kgo.ProcessFetchPartitionOpts{Topic: "t", DisableCRCValidation: true, IsolationLevel: kgo.ReadCommitted()}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		fp, _ := kgo.ProcessFetchPartition(opts, rp, counting, nil)
		runtime.ReadMemStats(&after)
		for _, r := range fp.Records {
			_ = len(r.Key) + len(r.Value) // the records are readable
		}
		held := counting.out + len(raw)
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(170*held+2*counting.out+1<<20) {
			t.Fatalf("%d bytes of batches (%d decompressed) made the client allocate %d bytes", len(raw), counting.out, alloc)
		}
	})
}

// consumerDecompressor is the decompressor of a client made with a pipe's
// settings, with LAKEPIPE_MAX_KAFKA_BATCH_BYTES at fuzzBatchLimit.
func consumerDecompressor(tb testing.TB) kgo.Decompressor {
	tb.Helper()
	st, err := Source{Bootstrap: []string{"127.0.0.1:1"}, Topic: "t", MaxBatchBytes: fuzzBatchLimit}.settings()
	if err != nil {
		tb.Fatal(err)
	}
	cl, err := kgo.NewClient(st.opts...) // connects on first use only
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(cl.Close)
	dec, ok := cl.OptValue(kgo.WithDecompressor).(kgo.Decompressor)
	if !ok {
		tb.Fatal("the client has no decompressor")
	}
	return dec
}

// recordBatch encodes records as one v2 record batch at offset first,
// compressed with codec (0 none, 1 gzip, 4 zstd), with a valid CRC.
func recordBatch(first int64, values [][]byte, codec int16) []byte {
	var body []byte
	for i, v := range values {
		var rec []byte
		rec = append(rec, 0)                     // attributes
		rec = binary.AppendVarint(rec, 0)        // timestamp delta
		rec = binary.AppendVarint(rec, int64(i)) // offset delta
		rec = binary.AppendVarint(rec, -1)       // no key
		if v == nil {
			rec = binary.AppendVarint(rec, -1)
		} else {
			rec = binary.AppendVarint(rec, int64(len(v)))
			rec = append(rec, v...)
		}
		rec = binary.AppendVarint(rec, 0) // no headers
		body = binary.AppendVarint(body, int64(len(rec)))
		body = append(body, rec...)
	}
	switch codec {
	case 1:
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		_, _ = w.Write(body)
		_ = w.Close()
		body = b.Bytes()
	case 4:
		enc, _ := zstd.NewWriter(nil)
		body = enc.EncodeAll(body, nil)
		_ = enc.Close()
	}
	var b []byte
	b = binary.BigEndian.AppendUint64(b, uint64(first))
	b = binary.BigEndian.AppendUint32(b, 0) // length, below
	b = binary.BigEndian.AppendUint32(b, 0) // partition leader epoch
	b = append(b, 2)                        // magic
	b = binary.BigEndian.AppendUint32(b, 0) // CRC, below
	b = binary.BigEndian.AppendUint16(b, uint16(codec))
	b = binary.BigEndian.AppendUint32(b, uint32(len(values)-1)) // last offset delta
	b = binary.BigEndian.AppendUint64(b, 1_765_000_000_000)     // first timestamp
	b = binary.BigEndian.AppendUint64(b, 1_765_000_000_000)     // max timestamp
	b = binary.BigEndian.AppendUint64(b, ^uint64(0))            // producer id -1
	b = binary.BigEndian.AppendUint16(b, ^uint16(0))            // producer epoch -1
	b = binary.BigEndian.AppendUint32(b, ^uint32(0))            // first sequence -1
	b = binary.BigEndian.AppendUint32(b, uint32(len(values)))
	b = append(b, body...)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// TestRecordBatchSeeds: the seeds decode as the records they were made of
// (so that the fuzzer starts from batches the client reads), and the one
// over the limit fails as too large.
func TestRecordBatchSeeds(t *testing.T) {
	dec := consumerDecompressor(t)
	recs := [][]byte{[]byte("one"), []byte("two"), nil}
	for _, codec := range []int16{0, 1, 4} {
		rp := &kmsg.FetchResponseTopicPartition{HighWatermark: 10, LastStableOffset: 10, RecordBatches: recordBatch(4, recs, codec)}
		fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Topic: "t", Offset: 4}, rp, dec, nil)
		if fp.Err != nil || len(fp.Records) != 3 || string(fp.Records[1].Value) != "two" || fp.Records[2].Value != nil || fp.Records[2].Offset != 6 {
			t.Fatalf("codec %d: err %v, %d records", codec, fp.Err, len(fp.Records))
		}
	}
	rp := &kmsg.FetchResponseTopicPartition{HighWatermark: 10, LastStableOffset: 10, RecordBatches: recordBatch(0, [][]byte{bytes.Repeat([]byte{' '}, 1<<20)}, 4)}
	fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Topic: "t"}, rp, dec, nil)
	if _, ok := errors.AsType[*kgo.ErrDecompressTooLarge](fp.Err); !ok {
		t.Fatalf("a batch of 1 MiB decompressed with a limit of 256 KiB: err %v (%T), %d records", fp.Err, fp.Err, len(fp.Records))
	}
}
