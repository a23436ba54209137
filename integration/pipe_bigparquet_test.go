//go:build integration

package integration

import (
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/minio/minio-go/v7"
)

// TestPipeBigParquet: a 1 GiB Parquet file (row groups of 1,048,576 rows,
// as writers commonly make them) through a pipe, with the test process,
// the worker in it, under 300 MB of resident memory while it loads
// (TestPipeBigFile does the same with a 1 GiB CSV file).
func TestPipeBigParquet(t *testing.T) {
	if os.Getenv("LAKEPIPE_SKIP_BIG") == "1" {
		t.Skip("LAKEPIPE_SKIP_BIG=1")
	}
	s := newStack(t)
	s.withWorker()
	s.volume("bigpq_vol", "bigpq", true)
	s.run("CREATE TABLE bigpq (id BIGINT, product STRING, amount DOUBLE, dt STRING)")
	s.run(`CREATE PIPE bigpq_pipe POLL_INTERVAL_IN_SECONDS = '1' AS COPY INTO bigpq FROM VOLUME bigpq_vol USING PARQUET PURGE = TRUE`)

	const size = 1 << 30
	start := time.Now()
	pr, pw := io.Pipe()
	type gen struct{ rows, bytes, sum int64 }
	genc := make(chan gen, 1)
	go func() {
		g, err := bigParquet(pw, size)
		pw.CloseWithError(err)
		genc <- g
	}()
	_, err := rawS3(t).PutObject(s.Ctx, s3Bucket, s.key("bigpq/big.parquet"), pr, -1, minio.PutObjectOptions{PartSize: 16 << 20})
	pr.CloseWithError(err)
	g := <-genc
	if err != nil {
		t.Fatalf("upload of the big file: %v", err)
	}
	t.Logf("big.parquet: %d rows, %d bytes (%.2f GiB) made and uploaded in %v", g.rows, g.bytes, float64(g.bytes)/(1<<30), time.Since(start).Round(time.Millisecond))

	// Peak RSS of the load alone: the generator's memory is returned first.
	debug.FreeOSMemory()
	reset := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
	before := peakRSS(t)
	var h map[string]string
	took := pipeWait(t, 9*time.Minute, "big.parquet was not LOADED", func() bool {
		h = s.pipeHistory("bigpq")["big.parquet"]
		return h != nil && (h["status"] == "LOADED" || h["status"] == "FAILED")
	})
	after := peakRSS(t)
	t.Logf("big.parquet loaded %v after its upload (%.1f MB/s, %.0f rows/s); peak RSS of the test process (VmHWM) %d MB (before the load %d MB, high-water mark reset: %v)",
		took.Round(time.Millisecond), float64(g.bytes)/1e6/took.Seconds(), float64(g.rows)/took.Seconds(), after>>20, before>>20, reset)
	if h["status"] != "LOADED" || h["rows_loaded"] != strconv.FormatInt(g.rows, 10) {
		t.Fatalf("load_history big.parquet = %v, want LOADED with %d rows", h, g.rows)
	}
	if got := s.pipeScalar("SELECT sum(id) FROM bigpq"); got != strconv.FormatInt(g.sum, 10) {
		t.Errorf("sum(id) = %s, want %d", got, g.sum)
	}
	limit := int64(300 << 20)
	if !reset {
		limit += before
	}
	if after > limit {
		t.Errorf("peak RSS %d MB, want under %d MB: the load must stream row group by row group", after>>20, limit>>20)
	}
}

// bigParquet writes an uncompressed Parquet file of rows (id, product-id,
// amount, dt) until at least size bytes are out.
func bigParquet(w io.Writer, size int64) (g struct{ rows, bytes, sum int64 }, err error) {
	cw := &countingWriter{w: w}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "product", Type: arrow.BinaryTypes.String},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64},
		{Name: "dt", Type: arrow.BinaryTypes.String},
	}, nil)
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Uncompressed),
		parquet.WithDictionaryDefault(false), parquet.WithMaxRowGroupLength(1<<20))
	fw, err := pqarrow.NewFileWriter(schema, cw, props, pqarrow.DefaultWriterProps())
	if err != nil {
		return g, err
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	var buf []byte
	for id := int64(1); cw.n < size; {
		for i := 0; i < 1<<16; i++ {
			b.Field(0).(*array.Int64Builder).Append(id)
			buf = strconv.AppendInt(append(buf[:0], "product-"...), id, 10)
			b.Field(1).(*array.StringBuilder).Append(string(buf))
			b.Field(2).(*array.Float64Builder).Append(float64(id%100000) + 0.5)
			b.Field(3).(*array.StringBuilder).Append("2026-06-01")
			g.rows++
			g.sum += id
			id++
		}
		rec := b.NewRecordBatch()
		err = fw.WriteBuffered(rec)
		rec.Release()
		if err != nil {
			return g, err
		}
	}
	if err := fw.Close(); err != nil {
		return g, err
	}
	g.bytes = cw.n
	return g, nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
