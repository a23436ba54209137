package formats

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/lakepipe/lakepipe/internal/formats/textfile"
	"github.com/lakepipe/lakepipe/internal/rowio"
)

// fuzzRead reads data through tiny reads and tiny batches, checking the
// batch invariants; it fails the test on a read error (the source cannot
// fail) and returns everything read.
func fuzzRead(t *testing.T, data []byte, format string, opts rowio.Options, seed uint64) (result, bool) {
	r, err := Open(rowio.Source{R: &choppyReader{data: data, rng: rand.New(rand.NewPCG(seed, 1)), max: 5}, Name: "fuzz"}, format, opts)
	if err != nil {
		return result{}, false // e.g. a malformed header
	}
	res := result{cols: r.Columns()}
	for {
		b, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		if err := checkBatch(b, len(res.cols)); err != nil {
			t.Fatal(err)
		}
		if b.Rows == 0 && len(b.Errors) == 0 {
			t.Fatal("empty batch")
		}
		for i := range b.Rows {
			row := make([]*string, len(b.Cols))
			for c := range b.Cols {
				if !b.Cols[c].Null[i] {
					row[c] = sp(string(b.Cols[c].Text[i]))
				}
			}
			res.rows = append(res.rows, row)
		}
		for i := 1; i < len(b.Line); i++ {
			if b.Line[i] < b.Line[i-1] { // equal: several array elements on one line
				t.Fatalf("line numbers decreasing: %v", b.Line)
			}
		}
		res.lines = append(res.lines, b.Line...)
		res.errs = append(res.errs, b.Errors...)
	}
	r.Close()
	return res, true
}

func FuzzCSV(f *testing.F) {
	for _, s := range []string{
		"1,a,x\n2,b,y\n",
		"1,\"a,b\",\"say \"\"hi\"\"\"\r\n2,\"x\ny\",z\n",
		"1,\"oops\n2,b,c\n",
		"a,b\n\n\"c\"d,e\n,\n",
		"\"\"\n\"\"\"\"\n",
		"1;2\t3\n",
		"x\r\ny\rz\n\r",
	} {
		f.Add([]byte(s), uint8(0))
		f.Add([]byte(s), uint8(5))
	}
	f.Fuzz(func(t *testing.T, data []byte, mode uint8) {
		opts := rowio.Options{BatchRows: 1 + int(mode%3)}
		switch mode / 3 % 4 {
		case 1:
			opts.Delimiter = ';'
		case 2:
			opts.Header = true
		case 3:
			opts.HasNullValue, opts.NullValue = true, ""
		}
		got, ok := fuzzRead(t, data, "CSV", opts, uint64(mode))
		if !ok {
			return
		}
		for _, row := range got.rows {
			if len(row) != len(got.cols) {
				t.Fatalf("row of %d fields for %d columns", len(row), len(got.cols))
			}
		}
		// Where the standard library accepts the input, it must agree.
		if opts.Header || bytes.ContainsRune(data, '\r') || bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
			return
		}
		cr := csv.NewReader(bytes.NewReader(data))
		cr.FieldsPerRecord = -1
		cr.Comma = rune(opts.DelimiterByte())
		var want [][]string
		var lines []int64
		for {
			rec, err := cr.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				return
			}
			line, _ := cr.FieldPos(0)
			want = append(want, rec)
			lines = append(lines, int64(line))
		}
		if len(want) == 0 {
			if len(got.rows)+len(got.errs) != 0 {
				t.Fatalf("rows from nothing: %s %v", show(got.rows), got.errs)
			}
			return
		}
		ncols := len(want[0])
		if len(got.cols) != ncols {
			t.Fatalf("%d columns, want %d", len(got.cols), ncols)
		}
		var nerr int
		k := 0
		for i, rec := range want {
			if len(rec) != ncols {
				if nerr >= len(got.errs) || got.errs[nerr].Line != lines[i] {
					t.Fatalf("record at line %d (%d fields): no matching RowError in %v", lines[i], len(rec), got.errs)
				}
				nerr++
				continue
			}
			if k >= len(got.rows) {
				t.Fatalf("missing row for line %d", lines[i])
			}
			if got.lines[k] != lines[i] {
				t.Fatalf("row %d: line %d, want %d", k, got.lines[k], lines[i])
			}
			for j, v := range rec {
				g := got.rows[k][j]
				if opts.HasNullValue && g == nil && v == "" {
					continue
				}
				if g == nil || *g != v {
					t.Fatalf("row %d field %d: %s, want %q", k, j, show(got.rows[k:k+1]), v)
				}
			}
			k++
		}
		if k != len(got.rows) || nerr != len(got.errs) {
			t.Fatalf("%d rows and %d errors, want %d and %d", len(got.rows), len(got.errs), k, nerr)
		}
	})
}

func FuzzJSON(f *testing.F) {
	for _, s := range []string{
		`{"a":1,"b":"x"}` + "\n" + `{"b":"y","a":null,"c":[1,{"d":2}]}` + "\n",
		`{"s":"\u00e9\ud83d\ude00\"\\"}` + "\n" + `{"s":` + "\n",
		"[\n{\"a\":1},\n{\"a\":[2, 3]}\n]",
		`{"a":1e5,"b":-0.0,"c":true,"d":false}` + "\n" + `not json` + "\n" + `[1]`,
		`{"a" : { "x" : [ ] } , "b":"\ud800"}`,
	} {
		f.Add([]byte(s), uint8(0))
	}
	f.Fuzz(func(t *testing.T, data []byte, mode uint8) {
		opts := rowio.Options{BatchRows: 1 + int(mode%3)}
		got, ok := fuzzRead(t, data, "JSON", opts, uint64(mode))
		if !ok {
			return
		}
		for _, row := range got.rows {
			if len(row) != len(got.cols) {
				t.Fatalf("row of %d fields for %d columns", len(row), len(got.cols))
			}
		}
		trimmed := bytes.TrimLeft(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")), " \t\r\n")
		if bytes.HasPrefix(trimmed, []byte("[")) {
			return // array mode: invariants only
		}
		// Line by line, compare with encoding/json.
		k, nerr := 0, 0
		for i, line := range bytes.Split(data, []byte("\n")) {
			if i == 0 {
				line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
			}
			if textfile.IsBlank(line) {
				continue
			}
			var obj map[string]json.RawMessage
			valid := json.Unmarshal(line, &obj) == nil && obj != nil
			if !valid && bytes.ContainsFunc(bytes.TrimSuffix(line, []byte("\r")), func(r rune) bool { return r < 0x20 }) {
				// We accept raw control characters in strings (a CR too,
				// {"\r":1}); Go does not. A CR ending the line is CRLF.
				return
			}
			if !valid {
				if nerr >= len(got.errs) || got.errs[nerr].Line != int64(i+1) {
					t.Fatalf("line %d %q: no matching RowError in %v", i+1, line, got.errs)
				}
				nerr++
				continue
			}
			if k >= len(got.rows) || got.lines[k] != int64(i+1) {
				t.Fatalf("line %d %q: no row (errors %v)", i+1, line, got.errs)
			}
			for c, col := range got.cols {
				if !utf8.Valid(line) {
					break // Go replaces invalid UTF-8, in keys too; we keep the bytes
				}
				raw, has := obj[col.Name]
				g := got.rows[k][c]
				if !has || string(raw) == "null" {
					if g != nil {
						t.Fatalf("line %d key %q: %q, want NULL", i+1, col.Name, *g)
					}
					continue
				}
				if g == nil {
					t.Fatalf("line %d key %q: NULL, want %s", i+1, col.Name, raw)
				}
				var want string
				switch raw[0] {
				case '"':
					json.Unmarshal(raw, &want)
				case '{', '[':
					var b bytes.Buffer
					json.Compact(&b, raw)
					want = b.String()
				default:
					want = string(raw)
				}
				if *g != want {
					t.Fatalf("line %d key %q: %q, want %q", i+1, col.Name, *g, want)
				}
			}
			k++
		}
		if k != len(got.rows) || nerr != len(got.errs) {
			t.Fatalf("%d rows and %d errors, want %d and %d", len(got.rows), len(got.errs), k, nerr)
		}
	})
}

// FuzzArrowReader feeds arbitrary bytes (seeded with valid streams and a
// file) to the ARROW reader. Malformed input must be an error naming the
// source, never a panic, and every value of every batch it yields must be
// readable the way chstore reads it.
func FuzzArrowReader(f *testing.F) {
	ts := &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}
	wide := arrow.NewSchema([]arrow.Field{
		field("i8", arrow.PrimitiveTypes.Int8, true), field("u64", arrow.PrimitiveTypes.Uint64, false),
		field("f32", arrow.PrimitiveTypes.Float32, true), field("b", arrow.FixedWidthTypes.Boolean, true),
		field("s", arrow.BinaryTypes.String, true), field("ls", arrow.BinaryTypes.LargeString, true),
		field("bin", arrow.BinaryTypes.Binary, true), field("d", &arrow.Decimal128Type{Precision: 9, Scale: 3}, true),
		field("day", arrow.FixedWidthTypes.Date32, true), field("ts", ts, true),
	}, nil)
	wideRows := []string{
		`[{"i8":1,"u64":2,"f32":1.5,"b":true,"s":"x","ls":"yy","bin":"AA==","d":"1.250","day":"2026-06-01","ts":1780317296789},
		  {"i8":null,"u64":0,"f32":null,"b":null,"s":null,"ls":null,"bin":null,"d":null,"day":null,"ts":null}]`,
		`[{"i8":-1,"u64":18446744073709551615,"f32":-0.5,"b":false,"s":"","ls":"","bin":"","d":"-0.001","day":"1970-01-01","ts":0}]`,
	}
	nested := arrow.NewSchema([]arrow.Field{
		field("l", arrow.ListOf(arrow.PrimitiveTypes.Int16), true),
		field("st", arrow.StructOf(field("a", arrow.BinaryTypes.String, true), field("b", arrow.PrimitiveTypes.Int64, true)), true),
		field("dict", &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}, true),
		field("d64", arrow.FixedWidthTypes.Date64, true),
	}, nil)
	nestedRows := `[{"l":[1,null,2],"st":{"a":"x","b":3},"dict":"red","d64":"2026-06-01"},{"l":null,"st":null,"dict":null,"d64":null},{"l":[],"st":{"a":null,"b":null},"dict":"blue","d64":"1970-01-01"}]`
	for _, seed := range [][]byte{
		arrowStream(f, wide, wideRows...),
		arrowStream(f, nested, nestedRows),
		arrowFile(f, wide, wideRows[1]),
		arrowStream(f, arrow.NewSchema([]arrow.Field{field("n", arrow.PrimitiveTypes.Int64, false)}, nil)),
		arrowStreamWith(f, wide, []ipc.Option{ipc.WithZstd()}, wideRows...),
		arrowStreamWith(f, wide, []ipc.Option{ipc.WithLZ4()}, wideRows[0]),
		arrowStream(f, arrow.NewSchema([]arrow.Field{field("z", arrow.Null, true), field("lz", arrow.ListOf(arrow.Null), true)}, nil), `[{"z":null,"lz":[]},{"z":null,"lz":[null,null]}]`),
	} {
		for _, mode := range []uint8{0, 1, 6} {
			f.Add(seed, mode)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, mode uint8) {
		opts := rowio.Options{BatchRows: 1 + int(mode%3)*2, Compression: rowio.CompressionNone}
		if mode&4 != 0 {
			opts.Schema = []rowio.Column{{Name: "S"}, {Name: "i8"}}
		}
		src := &choppyReader{data: data, rng: rand.New(rand.NewPCG(uint64(mode), 1)), max: 1 + int(mode>>3)*64}
		r, err := Open(rowio.Source{R: src, Name: "fuzz"}, "ARROW", opts)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz: ") || errors.Is(err, io.EOF) {
				t.Fatalf("Open error %q does not name the source or wraps io.EOF", err)
			}
			return
		}
		defer r.Close()
		var row int64
		// A record batch may declare 65536 rows with next to no data
		// (arrowFreeRows); reading all of them in batches of one row
		// would only slow the fuzzer down.
		if !readFuzzBatches(t, r, 4096, func(b *rowio.Batch) {
			if b.Rows == 0 || b.Rows > opts.BatchRows {
				t.Fatalf("batch of %d rows (batch_rows %d)", b.Rows, opts.BatchRows)
			}
			for i, l := range b.Line {
				if l != row+int64(i)+1 {
					t.Fatalf("line numbers %v after row %d", b.Line, row)
				}
			}
			row += int64(b.Rows)
		}) {
			return
		}
		if r.BytesRead() > int64(len(data)) {
			t.Fatalf("BytesRead %d of %d", r.BytesRead(), len(data))
		}
	})
}

// readAll reads every value of a as chstore does: typed Value for the
// types it converts directly, ValueStr for the rest.
func readAll(t *testing.T, a arrow.Array, rows int) {
	if !rowio.NativeArrow(a.DataType()) {
		t.Fatalf("column of %s handed out", a.DataType())
	}
	for i := range rows {
		if a.IsNull(i) {
			continue
		}
		switch a := a.(type) {
		case *array.String:
			_ = a.Value(i)
		case *array.LargeString:
			_ = a.Value(i)
		case *array.Binary:
			_ = a.ValueString(i)
		case *array.LargeBinary:
			_ = a.ValueString(i)
		case *array.Decimal128:
			_ = a.Value(i).BigInt()
		case *array.Timestamp:
			_ = a.Value(i).ToTime(a.DataType().(*arrow.TimestampType).Unit)
		case *array.Date32:
			_ = a.Value(i).ToTime()
		default:
			_ = a.ValueStr(i)
		}
	}
}

// FuzzParquet feeds arbitrary bytes, seeded with files of every type the
// writer makes (and nested, dictionary, Null columns and each codec), to
// the PARQUET reader with a small memory limit. Malformed input must be
// an error naming the file, never a panic or a fatal allocation, and
// every value of every batch must be readable.
func FuzzParquet(f *testing.F) {
	for _, seed := range parquetSeeds(f) {
		f.Add(seed, uint8(0))
		f.Add(seed, uint8(5))
	}
	f.Fuzz(func(t *testing.T, data []byte, mode uint8) {
		opts := rowio.Options{BatchRows: 1 + int(mode%4)*3, Limits: rowio.Limits{MaxReaderMemory: 64 << 20, MaxParquetPageBytes: 8 << 20}}
		if mode&4 != 0 {
			opts.Schema = []rowio.Column{{Name: "S"}, {Name: "id"}}
		}
		r, err := Open(rowio.Source{At: bytes.NewReader(data), Size: int64(len(data)), Name: "fuzz"}, "PARQUET", opts)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz: ") {
				t.Fatalf("Open error %q does not name the source", err)
			}
			return
		}
		defer r.Close()
		readFuzzBatches(t, r, 4096, func(*rowio.Batch) {})
	})
}

// readFuzzBatches reads r's batches until the end or maxRows rows: each is
// checked (checkBatch, every Arrow value read) and handed to each. A read
// error must name the source; it ends the reading and the result is false.
func readFuzzBatches(t *testing.T, r rowio.Reader, maxRows int, each func(*rowio.Batch)) bool {
	cols := len(r.Columns())
	for rows := 0; rows < maxRows; {
		b, err := r.Next()
		if errors.Is(err, io.EOF) {
			return true
		}
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz: ") {
				t.Fatalf("Next error %q does not name the source", err)
			}
			return false
		}
		if err := checkBatch(b, cols); err != nil {
			t.Fatal(err)
		}
		each(b)
		for c := range b.Cols {
			readAll(t, b.Cols[c].Arrow, b.Rows)
		}
		rows += b.Rows
	}
	return true
}

// FuzzDecompress feeds arbitrary gzip and zstd streams (seeded with real
// ones, a bomb and a huge-window header) to the CSV reader. Whatever the
// stream declares, reading it must allocate no more than its bounds allow:
// the window, line and batch buffers, and output that passes through them.
func FuzzDecompress(f *testing.F) {
	plain := []byte(strings.Repeat("1,\"two\",3\n", 200))
	f.Add(gzipBytes(f, plain), uint8(0))
	f.Add(zstdBytes(f, plain), uint8(1))
	f.Add(zstdRLEBomb('\n', 16), uint8(1))
	f.Add(zstdRLEBomb('x', 64), uint8(1))
	f.Add([]byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 21 << 3, 0x01, 0x00, 0x00}, uint8(1))
	f.Add([]byte{0x28, 0xb5, 0x2f, 0xfd, 0xe4, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x01, 0x00, 0x00}, uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, mode uint8) {
		if len(data) > 64<<10 {
			return
		}
		opts := rowio.Options{Compression: rowio.CompressionGzip, BatchRows: 1024, Limits: rowio.Limits{MaxLineBytes: 1 << 20, ZstdMaxWindow: 8 << 20}}
		if mode&1 != 0 {
			opts.Compression = rowio.CompressionZstd
		}
		before := totalAlloc()
		_, err := readFile(data, "fuzz", "CSV", opts)
		if err != nil && !strings.HasPrefix(err.Error(), "fuzz: ") {
			t.Fatalf("error %q does not name the source", err)
		}
		// Generous slack: a few windows and line buffers, and the
		// 64 MiB of output allowed before the ratio applies flows through
		// reused buffers.
		if grew := totalAlloc() - before; grew > 96<<20 {
			t.Fatalf("reading %d bytes allocated %d bytes (%v)", len(data), grew, err)
		}
	})
}
