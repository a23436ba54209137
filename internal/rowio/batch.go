package rowio

import (
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// Column describes one column a reader yields or a writer takes.
// Type is a ClickHouse type name ("Int64", "Nullable(String)",
// "Decimal(10, 2)", …) when known; readers of text formats leave it "".
type Column struct {
	Name string
	Type string
}

// Vector holds one column of a batch. Text formats fill Text and Null
// (Text[i] is only valid until the next call to Next); Parquet fills Arrow.
// A Kafka pipe's evaluated SELECT list hands over values whose type matches
// the target column as they are, so that they are not written out as text
// and parsed again: Int, Float or Time (UTC) instead of Text, with Null.
type Vector struct {
	Text [][]byte
	// Kept says the bytes of Text's cells are never written again, so that
	// a consumer may hold them past the next batch without a copy (the
	// Kafka evaluator carves cells from chunks it never reuses).
	Kept  bool
	Null  []bool
	Arrow arrow.Array
	Int   []int64
	Float []float64
	Time  []time.Time
}

// RowError is a row the reader could not parse; the row is left out of the
// batch and reading goes on.
type RowError struct {
	Line int64 // 1-based line (CSV, JSON) or row number (Parquet) in the file
	Msg  string
}

// Batch is a run of rows, columnar.
type Batch struct {
	Rows int
	Cols []Vector
	// Line[i] is the 1-based source line (row number for Parquet) of row i,
	// so that conversion errors can name it.
	Line   []int64
	Errors []RowError
}

// Reader yields the rows of one file in batches.
type Reader interface {
	// Columns returns the columns every batch carries, in order.
	Columns() []Column
	// Next returns the next batch, or io.EOF after the last one. A batch is
	// valid until the following call to Next.
	Next() (*Batch, error)
	// BytesRead reports the compressed bytes consumed so far (for progress).
	BytesRead() int64
	Close() error
}

// Writer writes rows to one file. Values are the Go types clickhouse-go
// scans: int8…int64, uint8…uint64, float32/64, string, bool, time.Time,
// decimal.Decimal, pointers to these for Nullable columns (nil = NULL).
type Writer interface {
	Write(row []any) error
	// Close flushes and finishes the file (Parquet footer); it does not
	// close the underlying io.Writer.
	Close() error
}
