package formats

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakepipe/lakepipe/internal/rowio"
)

// arrowStream writes one IPC stream of schema with a record batch per JSON
// array in batches (array.RecordFromJSON syntax).
func arrowStream(t testing.TB, schema *arrow.Schema, batches ...string) []byte {
	t.Helper()
	return arrowStreamWith(t, schema, nil, batches...)
}

// arrowStreamWith is arrowStream with writer options (compression).
func arrowStreamWith(t testing.TB, schema *arrow.Schema, opts []ipc.Option, batches ...string) []byte {
	t.Helper()
	recs := make([]arrow.RecordBatch, len(batches))
	for i, js := range batches {
		rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, schema, strings.NewReader(js))
		if err != nil {
			t.Fatalf("building %s: %v", js, err)
		}
		defer rec.Release()
		recs[i] = rec
	}
	return ipcStream(t, schema, opts, recs...)
}

// ipcStream writes recs as one IPC stream of schema.
func ipcStream(t testing.TB, schema *arrow.Schema, opts []ipc.Option, recs ...arrow.RecordBatch) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, append([]ipc.Option{ipc.WithSchema(schema)}, opts...)...)
	for _, rec := range recs {
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// arrowFile is arrowStream in the IPC file format.
func arrowFile(t testing.TB, schema *arrow.Schema, batches ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := ipc.NewFileWriter(&buf, ipc.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	for _, js := range batches {
		rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, schema, strings.NewReader(js))
		if err != nil {
			t.Fatalf("building %s: %v", js, err)
		}
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func field(name string, dt arrow.DataType, nullable bool) arrow.Field {
	return arrow.Field{Name: name, Type: dt, Nullable: nullable}
}

// arrowTypes is what each column's Vector.Arrow holds.
func arrowTypes(b *rowio.Batch) []string {
	out := make([]string, len(b.Cols))
	for i, v := range b.Cols {
		out[i] = fmt.Sprintf("%T", v.Arrow)
	}
	return out
}

func TestArrowReader(t *testing.T) {
	ts := func(u arrow.TimeUnit, tz string) arrow.DataType { return &arrow.TimestampType{Unit: u, TimeZone: tz} }
	type tc struct {
		name    string
		fields  []arrow.Field
		batches []string
		opts    rowio.Options
		cols    []rowio.Column
		types   []string // of Vector.Arrow, first batch
		rows    [][]string
		lines   []int64
		sizes   []int // rows per batch
	}
	tests := []tc{
		{name: "integers",
			fields: []arrow.Field{
				field("i8", arrow.PrimitiveTypes.Int8, false), field("i16", arrow.PrimitiveTypes.Int16, false),
				field("i32", arrow.PrimitiveTypes.Int32, false), field("i64", arrow.PrimitiveTypes.Int64, false),
				field("u8", arrow.PrimitiveTypes.Uint8, false), field("u16", arrow.PrimitiveTypes.Uint16, false),
				field("u32", arrow.PrimitiveTypes.Uint32, false), field("u64", arrow.PrimitiveTypes.Uint64, false),
			},
			batches: []string{`[{"i8":-128,"i16":-32768,"i32":-2147483648,"i64":-9223372036854775808,"u8":0,"u16":0,"u32":0,"u64":0},
				{"i8":127,"i16":32767,"i32":2147483647,"i64":9223372036854775807,"u8":255,"u16":65535,"u32":4294967295,"u64":18446744073709551615}]`},
			cols:  []rowio.Column{{Name: "i8", Type: "Int8"}, {Name: "i16", Type: "Int16"}, {Name: "i32", Type: "Int32"}, {Name: "i64", Type: "Int64"}, {Name: "u8", Type: "UInt8"}, {Name: "u16", Type: "UInt16"}, {Name: "u32", Type: "UInt32"}, {Name: "u64", Type: "UInt64"}},
			types: []string{"*array.Int8", "*array.Int16", "*array.Int32", "*array.Int64", "*array.Uint8", "*array.Uint16", "*array.Uint32", "*array.Uint64"},
			rows: [][]string{
				{"-128", "-32768", "-2147483648", "-9223372036854775808", "0", "0", "0", "0"},
				{"127", "32767", "2147483647", "9223372036854775807", "255", "65535", "4294967295", "18446744073709551615"},
			},
			lines: []int64{1, 2}, sizes: []int{2}},
		{name: "floats, bool, strings, binary",
			fields: []arrow.Field{
				field("f32", arrow.PrimitiveTypes.Float32, false), field("f64", arrow.PrimitiveTypes.Float64, false),
				field("b", arrow.FixedWidthTypes.Boolean, false), field("s", arrow.BinaryTypes.String, false),
				field("ls", arrow.BinaryTypes.LargeString, false), field("bin", arrow.BinaryTypes.Binary, false),
				field("lbin", arrow.BinaryTypes.LargeBinary, false),
			},
			batches: []string{`[{"f32":1.5,"f64":-2.25,"b":true,"s":"héllo","ls":"","bin":"AAE=","lbin":"/w=="},
				{"f32":0,"f64":1e300,"b":false,"s":"a,b\n\"c\"","ls":"x","bin":"","lbin":""}]`},
			cols:  []rowio.Column{{Name: "f32", Type: "Float32"}, {Name: "f64", Type: "Float64"}, {Name: "b", Type: "UInt8"}, {Name: "s", Type: "String"}, {Name: "ls", Type: "String"}, {Name: "bin", Type: "String"}, {Name: "lbin", Type: "String"}},
			types: []string{"*array.Float32", "*array.Float64", "*array.Boolean", "*array.String", "*array.LargeString", "*array.Binary", "*array.LargeBinary"},
			rows: [][]string{
				{"1.5", "-2.25", "true", "héllo", "", "AAE=", "/w=="},
				{"0", "1e+300", "false", "a,b\n\"c\"", "x", "", ""},
			},
			lines: []int64{1, 2}, sizes: []int{2}},
		{name: "decimal, dates, timestamps of every unit",
			fields: []arrow.Field{
				field("d", &arrow.Decimal128Type{Precision: 10, Scale: 2}, false), field("day", arrow.FixedWidthTypes.Date32, false),
				field("s", ts(arrow.Second, "UTC"), false), field("ms", ts(arrow.Millisecond, ""), false),
				field("us", ts(arrow.Microsecond, "Europe/Paris"), false), field("ns", ts(arrow.Nanosecond, "UTC"), false),
			},
			batches: []string{`[{"d":"-12.34","day":"2026-06-01","s":1780317296,"ms":1780317296789,"us":1780317296123456,"ns":1780317296123456789}]`},
			cols:    []rowio.Column{{Name: "d", Type: "Decimal(10, 2)"}, {Name: "day", Type: "Date"}, {Name: "s", Type: "DateTime"}, {Name: "ms", Type: "DateTime"}, {Name: "us", Type: "DateTime"}, {Name: "ns", Type: "DateTime"}},
			types:   []string{fmt.Sprintf("%T", (*array.Decimal128)(nil)), "*array.Date32", "*array.Timestamp", "*array.Timestamp", "*array.Timestamp", "*array.Timestamp"},
			rows:    [][]string{{"-12.34", "2026-06-01", "2026-06-01T12:34:56Z", "2026-06-01T12:34:56.789", "2026-06-01T14:34:56.123456+02:00", "2026-06-01T12:34:56.123456789Z"}},
			lines:   []int64{1}, sizes: []int{1}},
		{name: "types without a ClickHouse counterpart arrive as text; date64 as a date",
			fields: []arrow.Field{
				field("d64", arrow.FixedWidthTypes.Date64, true), field("l", arrow.ListOf(arrow.PrimitiveTypes.Int32), true),
				field("st", arrow.StructOf(field("x", arrow.BinaryTypes.String, true)), true),
				field("dict", &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}, true),
				// pyarrow types an all-None column null, and a column of
				// empty lists list<null>.
				field("none", arrow.Null, true), field("empty", arrow.ListOf(arrow.Null), true),
			},
			batches: []string{`[{"d64":"2026-06-01","l":[1,null,3],"st":{"x":"a"},"dict":"red","none":null,"empty":[]},{"d64":null,"l":null,"st":null,"dict":null,"none":null,"empty":[null]}]`},
			cols:    []rowio.Column{{Name: "d64", Type: "Nullable(Date)"}, {Name: "l", Type: "Nullable(String)"}, {Name: "st", Type: "Nullable(String)"}, {Name: "dict", Type: "Nullable(String)"}, {Name: "none", Type: ""}, {Name: "empty", Type: "Nullable(String)"}},
			types:   []string{"*array.Date64", "*array.String", "*array.String", "*array.String", "*array.String", "*array.String"},
			rows:    [][]string{{"2026-06-01", "[1,null,3]", `{"x":"a"}`, "red", "<NULL>", "[]"}, {"<NULL>", "<NULL>", "<NULL>", "<NULL>", "<NULL>", "[null]"}},
			lines:   []int64{1, 2}, sizes: []int{2}},
		{name: "nulls in nullable columns",
			fields: []arrow.Field{
				field("i", arrow.PrimitiveTypes.Int32, true), field("s", arrow.BinaryTypes.String, true),
				field("f", arrow.PrimitiveTypes.Float64, true), field("t", ts(arrow.Microsecond, "UTC"), true),
				field("d", &arrow.Decimal128Type{Precision: 5, Scale: 1}, true), field("b", arrow.FixedWidthTypes.Boolean, true),
			},
			batches: []string{`[{"i":1,"s":null,"f":null,"t":"2026-01-01T00:00:00Z","d":null,"b":true},{"i":null,"s":"x","f":0.5,"t":null,"d":"1.5","b":null}]`},
			cols:    []rowio.Column{{Name: "i", Type: "Nullable(Int32)"}, {Name: "s", Type: "Nullable(String)"}, {Name: "f", Type: "Nullable(Float64)"}, {Name: "t", Type: "Nullable(DateTime)"}, {Name: "d", Type: "Nullable(Decimal(5, 1))"}, {Name: "b", Type: "Nullable(UInt8)"}},
			rows:    [][]string{{"1", "<NULL>", "<NULL>", "2026-01-01T00:00:00Z", "<NULL>", "true"}, {"<NULL>", "x", "0.5", "<NULL>", "1.5", "<NULL>"}},
			lines:   []int64{1, 2}, sizes: []int{2}},
		{name: "several record batches: running row numbers, empty batches skipped",
			fields:  []arrow.Field{field("n", arrow.PrimitiveTypes.Int64, false)},
			batches: []string{`[{"n":1},{"n":2}]`, `[]`, `[{"n":3}]`, `[{"n":4},{"n":5},{"n":6}]`},
			cols:    []rowio.Column{{Name: "n", Type: "Int64"}},
			rows:    [][]string{{"1"}, {"2"}, {"3"}, {"4"}, {"5"}, {"6"}},
			lines:   []int64{1, 2, 3, 4, 5, 6}, sizes: []int{2, 1, 3}},
		{name: "record batches above BatchRows are sliced",
			fields:  []arrow.Field{field("n", arrow.PrimitiveTypes.Int64, false), field("s", arrow.BinaryTypes.String, true), field("d", arrow.FixedWidthTypes.Date64, true)},
			batches: []string{`[{"n":1,"s":"a","d":"2026-01-01"},{"n":2,"s":null,"d":null},{"n":3,"s":"c","d":"2026-01-03"},{"n":4,"s":"d","d":"2026-01-04"},{"n":5,"s":"e","d":"2026-01-05"}]`, `[{"n":6,"s":"f","d":null}]`},
			opts:    rowio.Options{BatchRows: 2},
			cols:    []rowio.Column{{Name: "n", Type: "Int64"}, {Name: "s", Type: "Nullable(String)"}, {Name: "d", Type: "Nullable(Date)"}},
			rows:    [][]string{{"1", "a", "2026-01-01"}, {"2", "<NULL>", "<NULL>"}, {"3", "c", "2026-01-03"}, {"4", "d", "2026-01-04"}, {"5", "e", "2026-01-05"}, {"6", "f", "<NULL>"}},
			lines:   []int64{1, 2, 3, 4, 5, 6}, sizes: []int{2, 2, 1, 1}},
		{name: "schema picks, reorders and repeats fields; exact name before case-insensitive",
			fields:  []arrow.Field{field("id", arrow.PrimitiveTypes.Int64, false), field("Name", arrow.BinaryTypes.String, true), field("name", arrow.BinaryTypes.String, true), field("other", arrow.PrimitiveTypes.Float64, false)},
			batches: []string{`[{"id":1,"Name":"A","name":"a","other":0.5}]`},
			opts:    rowio.Options{Schema: []rowio.Column{{Name: "OTHER"}, {Name: "name"}, {Name: "ID", Type: "UInt8"}, {Name: "NAME"}, {Name: "id"}}},
			cols:    []rowio.Column{{Name: "OTHER", Type: "Float64"}, {Name: "name", Type: "Nullable(String)"}, {Name: "ID", Type: "Int64"}, {Name: "NAME", Type: "Nullable(String)"}, {Name: "id", Type: "Int64"}},
			types:   []string{"*array.Float64", "*array.String", "*array.Int64", "*array.String", "*array.Int64"},
			rows:    [][]string{{"0.5", "a", "1", "A", "1"}},
			lines:   []int64{1}, sizes: []int{1}},
		{name: "schema only, no record batch",
			fields: []arrow.Field{field("a", arrow.PrimitiveTypes.Int64, true)},
			cols:   []rowio.Column{{Name: "a", Type: "Nullable(Int64)"}}},
		{name: "no fields", batches: []string{`[{},{}]`}, cols: []rowio.Column{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			schema := arrow.NewSchema(tt.fields, nil)
			for _, kind := range []string{"stream", "file", "choppy stream"} {
				var data []byte
				if kind == "file" {
					data = arrowFile(t, schema, tt.batches...)
				} else {
					data = arrowStream(t, schema, tt.batches...)
				}
				var src io.Reader = bytes.NewReader(data)
				if kind == "choppy stream" {
					src = &choppyReader{data: data, rng: rand.New(rand.NewPCG(7, 1)), max: 11}
				}
				r, err := Open(rowio.Source{R: src, Name: "t.arrow"}, "arrow", tt.opts)
				if err != nil {
					t.Fatalf("%s: Open: %v", kind, err)
				}
				if !reflect.DeepEqual(r.Columns(), tt.cols) && len(r.Columns())+len(tt.cols) > 0 {
					t.Errorf("%s: columns %v, want %v", kind, r.Columns(), tt.cols)
				}
				var got [][]*string
				var lines []int64
				var sizes []int
				for {
					b, err := r.Next()
					if errors.Is(err, io.EOF) {
						break
					}
					if err != nil {
						t.Fatalf("%s: Next: %v", kind, err)
					}
					if err := checkBatch(b, len(tt.cols)); err != nil {
						t.Fatal(err)
					}
					if sizes == nil && tt.types != nil && !reflect.DeepEqual(arrowTypes(b), tt.types) {
						t.Errorf("%s: arrays %v, want %v", kind, arrowTypes(b), tt.types)
					}
					sizes = append(sizes, b.Rows)
					for i := range b.Rows {
						row := make([]*string, len(b.Cols))
						for c, v := range b.Cols {
							if !v.Arrow.IsNull(i) {
								row[c] = sp(v.Arrow.ValueStr(i))
							}
						}
						got = append(got, row)
					}
					lines = append(lines, b.Line...)
				}
				if want := rowsOf(tt.rows...); !reflect.DeepEqual(got, want) && len(got)+len(want) > 0 {
					t.Errorf("%s: rows %s, want %s", kind, show(got), show(want))
				}
				if !reflect.DeepEqual(lines, tt.lines) && len(lines)+len(tt.lines) > 0 {
					t.Errorf("%s: lines %v, want %v", kind, lines, tt.lines)
				}
				if !reflect.DeepEqual(sizes, tt.sizes) && len(sizes)+len(tt.sizes) > 0 {
					t.Errorf("%s: batch sizes %v, want %v", kind, sizes, tt.sizes)
				}
				if _, err := r.Next(); !errors.Is(err, io.EOF) {
					t.Errorf("%s: Next after the end: %v", kind, err)
				}
				if r.BytesRead() != int64(len(data)) {
					t.Errorf("%s: BytesRead %d of %d", kind, r.BytesRead(), len(data))
				}
				if err := r.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func TestArrowReaderCompressed(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{field("n", arrow.PrimitiveTypes.Int64, false)}, nil)
	data := arrowStream(t, schema, `[{"n":1},{"n":2}]`)
	for _, tt := range []struct {
		name, mode string
		data       []byte
	}{
		{"p.arrow.gz", "", gzipBytes(t, data)},
		{"p.arrow", rowio.CompressionAuto, zstdBytes(t, data)},
		{"p", rowio.CompressionZstd, zstdBytes(t, data)},
		{"p.arrow", rowio.CompressionNone, data},
	} {
		r, err := Open(rowio.Source{R: bytes.NewReader(tt.data), Name: tt.name}, "ARROW", rowio.Options{Compression: tt.mode})
		if err != nil {
			t.Fatalf("%s %q: %v", tt.name, tt.mode, err)
		}
		got := collect(t, r)
		if len(got.rows) != 2 || *got.rows[1][0] != "2" {
			t.Errorf("%s %q: rows %s", tt.name, tt.mode, show(got.rows))
		}
		if r.BytesRead() != int64(len(tt.data)) {
			t.Errorf("%s %q: BytesRead %d of %d", tt.name, tt.mode, r.BytesRead(), len(tt.data))
		}
	}
}

func TestArrowReaderErrors(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{field("n", arrow.PrimitiveTypes.Int64, false), field("s", arrow.BinaryTypes.String, true)}, nil)
	good := arrowStream(t, schema, `[{"n":1,"s":"a"},{"n":2,"s":"b"}]`, `[{"n":3,"s":"c"}]`)
	other := arrowStream(t, arrow.NewSchema([]arrow.Field{field("x", arrow.BinaryTypes.String, false)}, nil), `[{"x":"y"}]`)
	// A stream whose writer never closed it has no end-of-stream marker.
	unclosed := good[:len(good)-8]
	file := arrowFile(t, schema, `[{"n":1,"s":"a"}]`)

	tests := []struct {
		name    string
		data    []byte
		opts    rowio.Options
		openErr string // error from Open, or
		nextErr string // error from Next after rows rows
		rows    int
	}{
		{name: "empty", data: nil, openErr: "t.arrow: not an Arrow IPC stream: it ends before its schema"},
		{name: "CSV text", data: []byte("n,s\n1,a\n2,b\n"), openErr: "t.arrow: not an Arrow IPC stream"},
		{name: "Parquet", data: []byte("PAR1\x15\x00\x15\x1c"), openErr: "t.arrow: not an Arrow IPC stream"},
		{name: "missing schema column", data: good, opts: rowio.Options{Schema: []rowio.Column{{Name: "n"}, {Name: "nope"}}}, openErr: `t.arrow: no column "nope" in the Arrow stream (it has: n, s)`},
		{name: "truncated in a record batch", data: good[:len(good)-40], rows: 2, nextErr: "t.arrow: the Arrow stream is truncated after row 2"},
		{name: "truncated in the schema", data: good[:20], openErr: "t.arrow: not an Arrow IPC stream"},
		{name: "second stream appended", data: append(append([]byte{}, good...), other...), rows: 3, nextErr: "t.arrow: data after the end-of-stream marker"},
		{name: "schema change mid-stream", data: append(append([]byte{}, unclosed...), other...), rows: 3, nextErr: "unexpected schema message"},
		{name: "garbage after the end", data: append(append([]byte{}, good...), 'x'), rows: 3, nextErr: "data after the end-of-stream marker"},
		{name: "unclosed stream reads as complete", data: unclosed, rows: 3},
		{name: "truncated file", data: file[:len(file)-3], rows: 1, nextErr: "t.arrow: the Arrow file is truncated or malformed"},
		{name: "file cut after its stream", data: file[:bytes.LastIndex(file[:len(file)-6], []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0})+8], rows: 1, nextErr: "no footer"},
		{name: "decreasing string offsets", data: corruptStringOffsets(t, schema, 0, 4), nextErr: `t.arrow: record batch after row 0, column "s": arrow/array: string offsets are not monotonically non-decreasing`},
		{name: "string offset past the data", data: corruptStringOffsets(t, schema, 1, 9), nextErr: `t.arrow: record batch after row 0, column "s": invalid array: runtime error: slice bounds out of range`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Open(rowio.Source{R: bytes.NewReader(tt.data), Name: "t.arrow"}, "ARROW", tt.opts)
			if tt.openErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.openErr) {
					t.Fatalf("Open: %v, want %q", err, tt.openErr)
				}
				if errors.Is(err, io.EOF) {
					t.Fatalf("Open error wraps io.EOF: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer r.Close()
			rows := 0
			for {
				b, err := r.Next()
				if errors.Is(err, io.EOF) {
					if tt.nextErr != "" {
						t.Fatalf("EOF after %d rows, want error %q", rows, tt.nextErr)
					}
					break
				}
				if err != nil {
					if tt.nextErr == "" || !strings.Contains(err.Error(), tt.nextErr) {
						t.Fatalf("Next: %v, want %q", err, tt.nextErr)
					}
					if _, again := r.Next(); again == nil || again.Error() != err.Error() {
						t.Fatalf("Next after the error: %v", again)
					}
					break
				}
				rows += b.Rows
			}
			if rows != tt.rows {
				t.Fatalf("%d rows before the end, want %d", rows, tt.rows)
			}
		})
	}
}

// corruptStringOffsets writes a stream of the strings "abc" and "defg"
// (offsets 0, 3, 7) with offset i set to v: structurally valid IPC holding
// an inconsistent array, which the IPC reader itself does not notice.
func corruptStringOffsets(t *testing.T, schema *arrow.Schema, i int, v byte) []byte {
	t.Helper()
	data := arrowStream(t, schema, `[{"n":1,"s":"abc"},{"n":2,"s":"defg"}]`)
	at := bytes.Index(data, []byte{0, 0, 0, 0, 3, 0, 0, 0, 7, 0, 0, 0})
	if at < 0 {
		t.Fatal("offsets not found")
	}
	out := append([]byte{}, data...)
	out[at+4*i] = v
	return out
}

// TestArrowReaderEveryPrefix cuts a valid stream at every byte: each
// prefix must give its complete record batches and then either the end
// (cut between messages) or an error, never a panic.
func TestArrowReaderEveryPrefix(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		field("n", arrow.PrimitiveTypes.Int64, true), field("s", arrow.BinaryTypes.String, true),
		field("l", arrow.ListOf(arrow.PrimitiveTypes.Int8), true),
		field("d", &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.BinaryTypes.String}, true),
	}, nil)
	data := arrowStream(t, schema, `[{"n":1,"s":"a","l":[1],"d":"x"},{"n":null,"s":null,"l":null,"d":null}]`, `[{"n":3,"s":"ccc","l":[],"d":"y"}]`)
	for cut := range len(data) {
		r, err := Open(rowio.Source{R: bytes.NewReader(data[:cut]), Name: "cut"}, "ARROW", rowio.Options{})
		if err != nil {
			continue
		}
		rows := 0
		for {
			b, err := r.Next()
			if err != nil {
				break
			}
			for c := range b.Cols {
				for i := range b.Rows {
					b.Cols[c].Arrow.ValueStr(i)
				}
			}
			rows += b.Rows
		}
		if rows != 0 && rows != 2 && rows != 3 {
			t.Fatalf("cut at %d: %d rows", cut, rows)
		}
		r.Close()
	}
}

// poisonAllocator counts live bytes and overwrites what is freed, as an
// allocator that recycles memory would, so that a use after release shows.
type poisonAllocator struct {
	*memory.CheckedAllocator
}

func (p poisonAllocator) Free(b []byte) {
	for i := range b {
		b[i] = 0xdb
	}
	p.CheckedAllocator.Free(b)
}

// TestArrowReaderMemory checks that every buffer is released by Close and
// that a batch's values are intact until the next call to Next, with an
// allocator that poisons freed memory.
func TestArrowReaderMemory(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer func(old func() memory.Allocator) { newArrowAllocator = old }(newArrowAllocator)
	newArrowAllocator = func() memory.Allocator { return poisonAllocator{mem} }

	schema := arrow.NewSchema([]arrow.Field{field("n", arrow.PrimitiveTypes.Int64, false), field("s", arrow.BinaryTypes.String, true)}, nil)
	var batches []string
	for b := range 4 {
		var rows []string
		for i := range 5 {
			n := b*5 + i
			rows = append(rows, fmt.Sprintf(`{"n":%d,"s":"value %d"}`, n, n))
		}
		batches = append(batches, "["+strings.Join(rows, ",")+"]")
	}
	data := arrowStream(t, schema, batches...)
	for _, batchRows := range []int{0, 2, 5, 100} {
		r, err := Open(rowio.Source{R: bytes.NewReader(data), Name: "m.arrow"}, "ARROW", rowio.Options{BatchRows: batchRows})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for {
			b, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			ids := b.Cols[0].Arrow.(*array.Int64)
			ss := b.Cols[1].Arrow.(*array.String)
			for i := range b.Rows {
				if ids.Value(i) != int64(n) || ss.Value(i) != fmt.Sprintf("value %d", n) {
					t.Fatalf("batch_rows %d: row %d reads %d %q", batchRows, n, ids.Value(i), ss.Value(i))
				}
				n++
			}
		}
		if n != 20 {
			t.Fatalf("batch_rows %d: %d rows", batchRows, n)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		mem.AssertSize(t, 0)
	}
	// Closing early releases too.
	r, err := Open(rowio.Source{R: bytes.NewReader(data), Name: "m.arrow"}, "ARROW", rowio.Options{BatchRows: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	mem.AssertSize(t, 0)
}

// ipcMessage locates one message of a stream: its metadata and body.
type ipcMessage struct{ meta, metaLen, body, bodyLen int }

func ipcMessages(t *testing.T, data []byte) []ipcMessage {
	t.Helper()
	var out []ipcMessage
	var lay arrowLayout
	for p := 0; p+8 <= len(data); {
		n := int(binary.LittleEndian.Uint32(data[p+4:]))
		if n == 0 {
			break
		}
		info, err := checkArrowMessage(data[p+8:p+8+n], rowio.DefaultMaxColumns, &lay)
		if err != nil {
			t.Fatal(err)
		}
		m := ipcMessage{meta: p + 8, metaLen: n, body: p + 8 + n, bodyLen: int(info.bodyLen)}
		out = append(out, m)
		p = m.body + m.bodyLen
	}
	return out
}

// header returns the metadata of m and the position of its header table.
func (m ipcMessage) header(t *testing.T, data []byte) (fb, uint32) {
	t.Helper()
	b := fb(data[m.meta : m.meta+m.metaLen])
	root, _ := b.u32(0)
	h, ok, err := b.table(root, fbMessageHeader)
	if err != nil || !ok {
		t.Fatalf("no header: %v", err)
	}
	return b, h
}

// vectorAt returns the position in b of the length of a vector field.
func vectorAt(t *testing.T, b fb, table uint32, slot uint16) uint32 {
	t.Helper()
	p, err := b.field(table, slot)
	if err != nil || p == 0 {
		t.Fatalf("no vector in slot %d: %v", slot, err)
	}
	v, _ := b.indirect(p)
	return v
}

// TestArrowReaderHostileMetadata feeds messages whose metadata makes
// arrow-go allocate or recurse without bound when read unchecked: each
// would end the process (out of memory, stack overflow), not panic.
func TestArrowReaderHostileMetadata(t *testing.T) {
	withMeta := arrow.NewSchema([]arrow.Field{
		{Name: "st", Type: arrow.StructOf(field("a", arrow.PrimitiveTypes.Int64, true)), Nullable: true},
		{Name: "sv", Type: arrow.BinaryTypes.StringView, Nullable: true},
	}, func() *arrow.Metadata { m := arrow.NewMetadata([]string{"k"}, []string{"v"}); return &m }())
	base := arrowStream(t, withMeta, `[{"st":{"a":1},"sv":"a string longer than twelve bytes"}]`)
	put32 := func(data []byte, at int, v uint32) []byte {
		out := append([]byte{}, data...)
		binary.LittleEndian.PutUint32(out[at:], v)
		return out
	}
	schemaMsg := ipcMessages(t, base)[0]
	b, schema := schemaMsg.header(t, base)
	fields := vectorAt(t, b, schema, fbSchemaFields)
	st, _ := b.indirect(fields + 4)
	children := vectorAt(t, b, st, fbFieldChildren)

	batchMsg := ipcMessages(t, base)[1]
	bb, batch := batchMsg.header(t, base)
	variadic := vectorAt(t, bb, batch, fbBatchVariadic)

	var compressed bytes.Buffer
	w := ipc.NewWriter(&compressed, ipc.WithSchema(arrow.NewSchema([]arrow.Field{field("n", arrow.PrimitiveTypes.Int64, false)}, nil)), ipc.WithZstd())
	rec, _, _ := array.RecordFromJSON(memory.DefaultAllocator, arrow.NewSchema([]arrow.Field{field("n", arrow.PrimitiveTypes.Int64, false)}, nil), strings.NewReader(`[{"n":1},{"n":2}]`))
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	w.Close()
	zmsg := ipcMessages(t, compressed.Bytes())[1]
	// The body's first buffer (the validity bitmap is left out when there
	// are no nulls) begins with its decompressed size.
	zb, zbatch := zmsg.header(t, compressed.Bytes())
	zbuf := vectorAt(t, zb, zbatch, fbBatchBuffers)
	var firstData int64
	for i := range 2 {
		p := zbuf + 4 + uint32(16*i)
		if n, _ := zb.i64(p + 8); n > 0 {
			firstData, _ = zb.i64(p)
			break
		}
	}
	bomb := append([]byte{}, compressed.Bytes()...)
	binary.LittleEndian.PutUint64(bomb[zmsg.body+int(firstData):], 1<<40)

	nulls := func(n int) []byte {
		var buf bytes.Buffer
		s := arrow.NewSchema([]arrow.Field{field("z", arrow.Null, true)}, nil)
		w := ipc.NewWriter(&buf, ipc.WithSchema(s))
		col := array.NewNull(n)
		rec := array.NewRecordBatch(s, []arrow.Array{col}, int64(n))
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		col.Release()
		w.Close()
		return buf.Bytes()
	}

	tests := []struct {
		name    string
		data    []byte
		wantErr string // "" = reads fine
	}{
		{"unchanged", base, ""},
		{"2^31 fields", put32(base, schemaMsg.meta+int(fields), 1<<31-1), "a vector of 2147483647 elements overruns"},
		{"2^31 metadata pairs", put32(base, schemaMsg.meta+int(vectorAt(t, b, schema, fbSchemaMetadata)), 1<<31-1), "a vector of 2147483647 elements overruns"},
		{"a struct that is its own child", put32(base, schemaMsg.meta+int(children)+4, st-(children+4)), "fields nested more than 64 deep"},
		{"2^40 variadic buffers", put32(base, batchMsg.meta+int(variadic)+4, 1<<8), "variadic buffer count 256"},
		{"compressed buffer of 2^40 bytes", bomb, "decompress to more than"},
		{"65536 rows without data", nulls(1 << 16), ""},
		{"a million rows without data", nulls(1 << 20), "a record batch of 1048576 rows in 0 bytes of data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Open(rowio.Source{R: bytes.NewReader(tt.data), Name: "h.arrow"}, "ARROW", rowio.Options{})
			if err == nil {
				for {
					if _, err = r.Next(); err != nil {
						break
					}
				}
				r.Close()
			}
			if tt.wantErr == "" {
				if !errors.Is(err, io.EOF) {
					t.Fatalf("error %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "h.arrow: ") {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
		})
	}
}
