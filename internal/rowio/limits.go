package rowio

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Defaults of the Limits fields. They are sized so that four files read at
// once stay well inside a 2 GiB worker, while no file a real writer
// produces comes near them.
const (
	DefaultMaxLineBytes          = 16 << 20
	DefaultMaxJSONDepth          = 1000
	DefaultMaxColumns            = 10_000
	DefaultMaxCompressionRatio   = 2_000
	DefaultZstdMaxWindow         = 64 << 20
	DefaultMaxParquetFooterBytes = 16 << 20
	DefaultMaxParquetPageBytes   = 256 << 20
	DefaultMaxParquetRowsPerByte = 10_000
	DefaultMaxReaderMemory       = 256 << 20
	DefaultMaxArrowMessageBytes  = 256 << 20
	DefaultMaxKafkaBatchBytes    = 64 << 20
	DefaultMaxKafkaFetchMemory   = 256 << 20
	DefaultMaxStatementFiles     = 1_000_000
	DefaultMaxResultBytes        = 512 << 20
	DefaultMaxScriptBytes        = 256 << 20
)

// ParquetFreeRows is how many rows (and nested values) a Parquet file may
// hold before MaxParquetRowsPerByte applies: a small file of constant or
// all-NULL columns legitimately holds millions. A variable, so that tests
// can lower it.
var ParquetFreeRows int64 = 1 << 26

// compressionRatioGrace is the output a compressed stream may produce
// before MaxCompressionRatio applies: small files of one repeated value
// legitimately compress far better than 1000:1, and 64 MiB costs nothing.
const compressionRatioGrace = 64 << 20

// Limits bound what a reader allocates on the word of the file it reads,
// so that no corrupt or hostile file can take the process down: a file
// that breaks one is that file's error (a *LimitError naming the limit),
// and reading other files goes on. The zero value of each field means its
// default. The limits are per file; besides MaxParquetRowsPerByte they do
// not bound rows, only what one row, page, message or header may claim.
//
//	Setting                 Default   Breaking it
//	MaxLineBytes            16 MiB    CSV/JSON: the row is a RowError, reading resumes at the next line
//	MaxJSONDepth            1000      JSON: the row is a RowError
//	MaxColumns              10000     CSV/JSON: Open fails (header / first record), or the row is a RowError;
//	                                  Parquet, Arrow: Open fails
//	MaxCompressionRatio     2000      gzip/zstd: reading fails once the output passes 64 MiB
//	ZstdMaxWindow           64 MiB    zstd: reading fails at the frame header
//	MaxParquetFooterBytes   16 MiB    Parquet: Open fails
//	MaxParquetPageBytes     256 MiB   Parquet: reading fails at the page
//	MaxParquetRowsPerByte   10000     Parquet: Open fails (rows), or reading fails (nested values)
//	MaxReaderMemory         256 MiB   Parquet: reading fails at the allocation
//	MaxArrowMessageBytes    256 MiB   Arrow IPC: reading fails at the message
//	MaxKafkaBatchBytes      64 MiB    Kafka: the pipe pauses at the record batch
//	MaxKafkaFetchMemory     256 MiB   Kafka: the pipe pauses at the record batch
//	MaxStatementFiles       1000000   COPY INTO / SELECT … FROM VOLUME: the statement fails
//	MaxResultBytes          512 MiB   a query's result, as the process holds it: the statement fails
//	MaxScriptBytes          256 MiB   lakepipe sql: a script (-f, stdin) fails before any statement runs
type Limits struct {
	// MaxLineBytes bounds one CSV record (quoted line breaks included) or
	// one JSON line or array element. A longer one is a RowError and
	// reading resumes after it, so a stray quote costs one row, not the
	// rest of the file.
	MaxLineBytes int64
	// MaxJSONDepth bounds the nesting of arrays and objects in a JSON
	// value; deeper values are RowErrors. ClickHouse's own JSON input
	// stops at the same depth (input_format_json_max_depth).
	MaxJSONDepth int
	// MaxColumns bounds the columns of a file: CSV fields per record, JSON
	// keys found in the first object, Parquet leaf columns, Arrow fields
	// (nested fields included). A CSV record with more fields is a
	// RowError; a header, schema or first object with more fails Open.
	MaxColumns int
	// MaxCompressionRatio bounds decompressed bytes per compressed byte of
	// a gzip or zstd file, once the output passes 64 MiB: real CSV and
	// JSON compress 5-50x, a zstd decompression bomb 9000x and more (1 GiB
	// of one repeated row is 112 KiB). gzip cannot pass about 1030x, so
	// with the default only zstd files trip it (a CSV of one repeated line
	// does reach 1024x in gzip). Reading a file past it fails.
	MaxCompressionRatio int64
	// ZstdMaxWindow bounds the window a zstd frame may declare, which the
	// decoder allocates up front. zstd levels 1-19 use at most 8 MiB;
	// only `zstd --long` or --ultra (128 MiB and more) need it raised.
	ZstdMaxWindow int64
	// MaxParquetFooterBytes bounds a Parquet footer (the file metadata),
	// which is read and decoded whole before any row. The decoded footer
	// is bounded too: its thrift structures are counted before decoding,
	// each at 128 bytes, against 16 times this limit.
	MaxParquetFooterBytes int64
	// MaxParquetPageBytes bounds one Parquet page as its header declares
	// it, compressed and uncompressed; a compressed page that decodes to
	// more than its header says is corrupt. Writers make pages of about
	// 1 MiB.
	MaxParquetPageBytes int64
	// MaxParquetRowsPerByte bounds the rows of a Parquet file, and the
	// values of its nested columns loaded as text, by the file's size,
	// past the first ParquetFreeRows (64 Mi): a page's header may declare
	// 2^31 values its encoding holds in a few bytes (a run of NULLs or of
	// one value), so a hostile file of a few KB could declare more rows
	// than a load would finish in years. Writers make pages of at most
	// 20,000 rows (parquet-mr, Arrow C++), about 1,000 rows a byte for a
	// column of one value; real data is a few bytes a row.
	MaxParquetRowsPerByte int64
	// MaxReaderMemory bounds the Arrow memory one Parquet reader holds at
	// once: pages, dictionaries and the arrays of the current batch. It
	// catches sizes no header states, such as a dictionary or a batch a
	// page's values blow up to. Four loads at once (the worker's default)
	// then stay within 1 GiB.
	MaxReaderMemory int64
	// MaxArrowMessageBytes bounds the body of one Arrow IPC message as
	// sent (its metadata is bounded at a quarter of it, its decompressed
	// body at four times it).
	MaxArrowMessageBytes int64
	// MaxKafkaBatchBytes bounds one Kafka record batch decompressed (the
	// Kafka client's own default is 1 GiB). Brokers take batches of
	// about 1 MiB compressed (message.max.bytes), which real records
	// decompress to a few MiB; a batch that would pass it is a
	// decompression bomb or a misconfigured producer, and its pipe
	// pauses there.
	MaxKafkaBatchBytes int64
	// MaxKafkaFetchMemory bounds what the compressed record batches a
	// pipe's consumer fetches between two polls take once decompressed
	// and decoded: their bytes plus ~170 bytes a record. The per-batch
	// bound alone lets one fetch of 1 MiB hold hundreds of batches that
	// each decompress to it, and 64 MiB of 7-byte records decode to
	// 1.6 GiB. Real fetches (1 MiB compressed a fetch, records of
	// hundreds of bytes) take tens of MiB at most.
	MaxKafkaFetchMemory int64
	// MaxStatementFiles bounds the files one COPY INTO or SELECT … FROM
	// VOLUME reads (those its FILES, SUBDIRECTORY and REGEXP select),
	// which the statement lists and keeps in memory before it reads them
	// (~200 bytes a file). Not a per-file limit: a bucket of millions of
	// objects must not take the process's memory with one statement.
	// Pipes list page by page and are not bound by it.
	MaxStatementFiles int64
	// MaxResultBytes bounds what the rows a query returns take in the
	// process that asked (lakepipe sql, a program using the engine), as
	// estimated while they arrive: a SELECT * of a billion-row table must
	// fail with advice, not take the process's memory. The rows are
	// counted as Go holds them (a cell's value and its interface, about
	// 16 bytes more than the value).
	MaxResultBytes int64
	// MaxScriptBytes bounds a SQL script lakepipe sql reads (-f, stdin),
	// which it reads whole and splits into statements before running the
	// first. Data belongs in files that COPY INTO loads, not in VALUES.
	MaxScriptBytes int64
}

// WithDefaults fills every unset (zero or negative) field with its default.
func (l Limits) WithDefaults() Limits {
	def := func(v *int64, d int64) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.MaxLineBytes, DefaultMaxLineBytes)
	def(&l.MaxCompressionRatio, DefaultMaxCompressionRatio)
	def(&l.ZstdMaxWindow, DefaultZstdMaxWindow)
	def(&l.MaxParquetFooterBytes, DefaultMaxParquetFooterBytes)
	def(&l.MaxParquetPageBytes, DefaultMaxParquetPageBytes)
	def(&l.MaxParquetRowsPerByte, DefaultMaxParquetRowsPerByte)
	def(&l.MaxReaderMemory, DefaultMaxReaderMemory)
	def(&l.MaxArrowMessageBytes, DefaultMaxArrowMessageBytes)
	def(&l.MaxKafkaBatchBytes, DefaultMaxKafkaBatchBytes)
	def(&l.MaxKafkaFetchMemory, DefaultMaxKafkaFetchMemory)
	def(&l.MaxStatementFiles, DefaultMaxStatementFiles)
	def(&l.MaxResultBytes, DefaultMaxResultBytes)
	def(&l.MaxScriptBytes, DefaultMaxScriptBytes)
	if l.MaxJSONDepth <= 0 {
		l.MaxJSONDepth = DefaultMaxJSONDepth
	}
	if l.MaxColumns <= 0 {
		l.MaxColumns = DefaultMaxColumns
	}
	return l
}

// LimitError reports a file that breaks one of the Limits. It is the
// file's fault, not a transient failure: reading the same bytes again
// fails the same way. Readers wrap it with the file's name.
type LimitError struct {
	// Limit is the name of the Limits field, e.g. "MaxLineBytes".
	Limit string
	// Value is the limit in force.
	Value int64
	// What says what the file claims or holds, e.g. "a zstd window of
	// 2 GiB"; it never quotes the file's contents.
	What string
}

func (e *LimitError) Error() string {
	v := fmt.Sprint(e.Value)
	switch e.Limit {
	case "MaxJSONDepth", "MaxColumns", "MaxStatementFiles", "MaxParquetRowsPerByte":
	case "MaxCompressionRatio":
		v += ":1"
	default:
		v = ByteSize(e.Value)
	}
	// Users set limits through the environment: name the variable.
	for _, lv := range LimitVars {
		if lv.Field == e.Limit {
			return fmt.Sprintf("%s, over the limit of %s (%s)", e.What, v, lv.Env)
		}
	}
	return fmt.Sprintf("%s, over the limit of %s (formats.Limits.%s)", e.What, v, e.Limit)
}

// CorruptError reports a file whose bytes a reader could not make sense
// of, including a panic inside a decoding library that the reader
// recovered. Like LimitError it is the file's fault.
type CorruptError struct {
	Name   string // the file
	Format string // "Parquet", "CSV", …
	Err    error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("%s: corrupt %s file: %v", e.Name, e.Format, e.Err)
}

func (e *CorruptError) Unwrap() error { return e.Err }

// Recovered turns a panic value caught while reading a file into that
// file's error: a *LimitError thrown by limitedAllocator stays one, any
// other panic makes the file corrupt. p must not be nil.
func Recovered(name, format string, p any) error {
	if le, ok := p.(*LimitError); ok {
		return fmt.Errorf("%s: %w", name, le)
	}
	err, ok := p.(error)
	if !ok {
		err = fmt.Errorf("%v", p)
	}
	var le *LimitError
	if errors.As(err, &le) {
		return fmt.Errorf("%s: %w", name, err)
	}
	return &CorruptError{Name: name, Format: format, Err: shortError{err}}
}

// shortError cuts a recovered panic's message, which may quote file
// contents, to 200 bytes.
type shortError struct{ err error }

func (e shortError) Error() string {
	s := e.err.Error()
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

func (e shortError) Unwrap() error { return e.err }

func ByteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d bytes", n)
	}
	f, suffix := float64(n), ""
	for _, s := range []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"} {
		f /= unit
		suffix = s
		if f < unit {
			break
		}
	}
	if f == float64(int64(f)) {
		return fmt.Sprintf("%d %s", int64(f), suffix)
	}
	return fmt.Sprintf("%.1f %s", f, suffix)
}

// LimitedAllocator is a memory.Allocator that refuses to hold more than
// max bytes at once. A refused allocation panics with a *LimitError: the
// arrow-go code that allocates has no error path, and the reader's recover
// turns the panic into the file's error. Memory comes from a GoAllocator,
// so it is ordinary Go heap that outlives Free if something still points
// into it (see arrowReader).
type LimitedAllocator struct {
	mem  memory.Allocator
	max  int64
	Held atomic.Int64
}

func NewLimitedAllocator(max int64) *LimitedAllocator {
	return &LimitedAllocator{mem: memory.NewGoAllocator(), max: max}
}

// reserve adds n (which may be negative) to the bytes held.
func (a *LimitedAllocator) reserve(n int64) {
	if held := a.Held.Add(n); n > 0 && held > a.max {
		a.Held.Add(-n)
		panic(&LimitError{Limit: "MaxReaderMemory", Value: a.max, What: fmt.Sprintf("reading the file needs %s at once", ByteSize(held))})
	}
}

func (a *LimitedAllocator) Allocate(size int) []byte {
	if size < 0 {
		panic(&LimitError{Limit: "MaxReaderMemory", Value: a.max, What: fmt.Sprintf("an allocation of %d bytes", size)})
	}
	a.reserve(int64(size))
	return a.mem.Allocate(size)
}

func (a *LimitedAllocator) Reallocate(size int, b []byte) []byte {
	if size < 0 {
		panic(&LimitError{Limit: "MaxReaderMemory", Value: a.max, What: fmt.Sprintf("an allocation of %d bytes", size)})
	}
	a.reserve(int64(size - len(b)))
	return a.mem.Reallocate(size, b)
}

func (a *LimitedAllocator) Free(b []byte) {
	a.Held.Add(-int64(len(b)))
	a.mem.Free(b)
}
