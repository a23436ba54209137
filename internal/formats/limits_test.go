package formats

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/klauspost/compress/gzip"
	"github.com/shopspring/decimal"

	"github.com/lakepipe/lakepipe/internal/rowio"
)

// readFile opens and reads a whole file, returning the first error. It
// does not recover: a panic fails the test.
func readFile(data []byte, name, format string, opts rowio.Options) (rows int, err error) {
	src := rowio.Source{R: bytes.NewReader(data), At: bytes.NewReader(data), Size: int64(len(data)), Name: name}
	r, err := Open(src, format, opts)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	for {
		b, err := r.Next()
		if errors.Is(err, io.EOF) {
			return rows, nil
		}
		if err != nil {
			return rows, err
		}
		for c := range b.Cols {
			if a := b.Cols[c].Arrow; a != nil {
				for i := range b.Rows {
					_ = a.ValueStr(i)
				}
			}
		}
		rows += b.Rows
	}
}

func wantLimit(t *testing.T, err error, limit string) {
	t.Helper()
	var le *rowio.LimitError
	if !errors.As(err, &le) || le.Limit != limit {
		t.Fatalf("got %v, want a *LimitError of %s", err, limit)
	}
	if !strings.Contains(err.Error(), limitEnv(limit)) {
		t.Fatalf("error %q does not name the limit", err)
	}
}

func totalAlloc() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

func TestLimitsDefaults(t *testing.T) {
	l := rowio.Limits{MaxColumns: 7}.WithDefaults()
	if l.MaxColumns != 7 || l.MaxLineBytes != rowio.DefaultMaxLineBytes || l.ZstdMaxWindow != rowio.DefaultZstdMaxWindow ||
		l.MaxJSONDepth != rowio.DefaultMaxJSONDepth || l.MaxReaderMemory != rowio.DefaultMaxReaderMemory {
		t.Fatalf("%+v", l)
	}
	o, err := rowio.ParseOptions(nil)
	if err != nil || o.Limits != (rowio.Limits{}).WithDefaults() {
		t.Fatalf("ParseOptions: %+v %v", o.Limits, err)
	}
	if got := (&rowio.LimitError{Limit: "MaxParquetFooterBytes", Value: 16 << 20, What: "the footer declares 176 GiB of metadata"}).Error(); got !=
		"the footer declares 176 GiB of metadata, over the limit of 16 MiB (LAKEPIPE_MAX_PARQUET_FOOTER_BYTES)" {
		t.Fatal(got)
	}
}

// zstdRLEBomb is a zstd frame of RLE blocks, each 4 bytes standing for
// 128 KiB of c: a ratio of 32768:1, built without compressing anything.
func zstdRLEBomb(c byte, blocks int) []byte {
	b := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 7 << 3} // no checksum, 128 KiB window
	for i := range blocks {
		h := uint32(1<<1 | (128<<10)<<3) // RLE, 128 KiB
		if i == blocks-1 {
			h |= 1
		}
		b = append(b, byte(h), byte(h>>8), byte(h>>16), c)
	}
	return b
}

// A 9-byte zstd frame declaring a 2 GiB window (the 10-byte file
// made the default decoder allocate 512 MiB) fails at its header.
func TestZstdWindowHeader(t *testing.T) {
	for _, wlog := range []byte{26, 28, 31} { // 64 MiB is the limit itself
		frame := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, (wlog - 10) << 3, 0x01, 0x00, 0x00}
		before := totalAlloc()
		_, err := readFile(frame, "w.csv.zst", "CSV", rowio.Options{})
		grew := totalAlloc() - before
		if wlog == 26 {
			if err != nil {
				t.Fatalf("window 2^%d: %v", wlog, err)
			}
			continue
		}
		wantLimit(t, err, "ZstdMaxWindow")
		if !strings.HasPrefix(err.Error(), "w.csv.zst: ") {
			t.Fatalf("error %q does not name the file", err)
		}
		if grew > 32<<20 {
			t.Fatalf("window 2^%d: allocated %d bytes", wlog, grew)
		}
	}
}

// A 32 KiB file that decompresses to 1 GiB fails once 64 MiB are out,
// having allocated far less than that.
func TestDecompressionBomb(t *testing.T) {
	for _, format := range []string{"CSV", "JSON"} {
		bomb := zstdRLEBomb('\n', 8192)
		before := totalAlloc()
		_, err := readFile(bomb, "bomb.zst", format, rowio.Options{})
		wantLimit(t, err, "MaxCompressionRatio")
		if grew := totalAlloc() - before; grew > 64<<20 {
			t.Errorf("%s: allocated %d bytes", format, grew)
		}
	}

	// gzip cannot pass about 1030:1, so a lowered limit stands in (and
	// the default lets the same file through).
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	line := bytes.Repeat([]byte("1,2\n"), 1<<18)
	for range 80 { // 80 MiB
		zw.Write(line)
	}
	zw.Close()
	_, err := readFile(buf.Bytes(), "bomb.csv.gz", "CSV", rowio.Options{Limits: rowio.Limits{MaxCompressionRatio: 500}})
	wantLimit(t, err, "MaxCompressionRatio")
	if n, err := readFile(buf.Bytes(), "ok.csv.gz", "CSV", rowio.Options{}); err != nil || n != 80<<18 {
		t.Fatalf("%d rows, %v", n, err)
	}
}

func TestLineAndColumnLimits(t *testing.T) {
	lim := rowio.Limits{MaxLineBytes: 1 << 20, MaxColumns: 100, MaxJSONDepth: 8}
	long := "1," + strings.Repeat("x", 2<<20) + "\n2,y\n"
	got := readString(t, long, "CSV", rowio.Options{Limits: lim})
	if len(got.rows) != 1 || len(got.errs) != 1 || !strings.Contains(got.errs[0].Msg, "LAKEPIPE_MAX_LINE_BYTES") {
		t.Fatalf("long line: %d rows, errors %v", len(got.rows), got.errs)
	}
	got = readString(t, `{"a":1}`+"\n"+`{"a":"`+strings.Repeat("x", 2<<20)+`"}`+"\n", "JSON", rowio.Options{Limits: lim})
	if len(got.rows) != 1 || len(got.errs) != 1 || !strings.Contains(got.errs[0].Msg, "LAKEPIPE_MAX_LINE_BYTES") {
		t.Fatalf("long JSON line: %d rows, errors %v", len(got.rows), got.errs)
	}

	// A line of commas: too many columns to open, and one bad row once
	// the columns are known.
	commas := strings.Repeat(",", 1000) + "\n"
	for _, header := range []bool{false, true} {
		_, err := Open(rowio.Source{R: strings.NewReader(commas), Name: "c.csv"}, "CSV", rowio.Options{Header: header, Limits: lim})
		wantLimit(t, err, "MaxColumns")
	}
	got = readString(t, "1,2\n"+commas+"3,4\n", "CSV", rowio.Options{Limits: lim})
	if len(got.rows) != 2 || len(got.errs) != 1 || got.errs[0].Line != 2 || !strings.Contains(got.errs[0].Msg, "LAKEPIPE_MAX_COLUMNS") {
		t.Fatalf("wide row: %d rows, errors %v", len(got.rows), got.errs)
	}
	// Exactly the limit is fine.
	got = readString(t, strings.Repeat("a,", 99)+"b\n", "CSV", rowio.Options{Limits: lim})
	if len(got.cols) != 100 || len(got.rows) != 1 {
		t.Fatalf("100 columns: %d columns, %d rows", len(got.cols), len(got.rows))
	}

	var obj strings.Builder
	obj.WriteString("{")
	for i := range 101 {
		if i > 0 {
			obj.WriteString(",")
		}
		obj.WriteString(`"k` + string(rune('0'+i%10)) + strings.Repeat("z", i) + `":1`)
	}
	obj.WriteString("}\n")
	_, err := Open(rowio.Source{R: strings.NewReader(obj.String()), Name: "k.json"}, "JSON", rowio.Options{Limits: lim})
	wantLimit(t, err, "MaxColumns")

	// Eight levels, the object's included, are allowed; nine are not.
	deep := `{"a":` + strings.Repeat("[", 8) + strings.Repeat("]", 8) + "}\n" + `{"a":` + strings.Repeat("[", 7) + strings.Repeat("]", 7) + "}\n"
	got = readString(t, deep, "JSON", rowio.Options{Limits: lim, Schema: []rowio.Column{{Name: "a"}}})
	if len(got.rows) != 1 || len(got.errs) != 1 || got.errs[0].Line != 1 || !strings.Contains(got.errs[0].Msg, "LAKEPIPE_MAX_JSON_DEPTH") {
		t.Fatalf("deep JSON: %d rows, errors %v", len(got.rows), got.errs)
	}
}

// panicReader panics once n bytes have been read.
type panicReader struct {
	r io.Reader
	n int
}

func (p *panicReader) Read(b []byte) (int, error) {
	if p.n <= 0 {
		var m map[string]int
		m["boom"]++ // a real runtime panic, as a library bug would raise
	}
	b = b[:min(len(b), p.n)]
	n, err := p.r.Read(b)
	p.n -= n
	return n, err
}

func TestPanicsBecomeErrors(t *testing.T) {
	data := strings.Repeat("1,2\n", 100000)
	for _, n := range []int{0, 200 << 10} {
		var err error
		r, err := Open(rowio.Source{R: &panicReader{r: strings.NewReader(data), n: n}, Name: "p.csv"}, "CSV", rowio.Options{BatchRows: 10})
		for err == nil {
			_, err = r.Next()
		}
		var ce *rowio.CorruptError
		if !errors.As(err, &ce) || ce.Name != "p.csv" || !strings.HasPrefix(err.Error(), "p.csv: corrupt CSV file: ") {
			t.Fatalf("after %d bytes: %v", n, err)
		}
		if r != nil {
			if _, again := r.Next(); again != err {
				t.Fatalf("Next after a panic: %v", again)
			}
			r.Close()
		}
	}
}

func TestParquetFooterLimits(t *testing.T) {
	good := writeParquet(t, 3)
	n := binary.LittleEndian.Uint32(good[len(good)-8:])
	for _, tt := range []struct {
		name  string
		data  []byte
		limit string // "" for a CorruptError
	}{
		{"length over the limit", setFooterLen(good, 0xfffffff0), "MaxParquetFooterBytes"},
		{"length over the file", setFooterLen(good, uint32(len(good))), ""},
		{"zero length", setFooterLen(good, 0), ""},
		{"no magic", append(append([]byte{}, good[:len(good)-1]...), 'X'), ""},
		{"short", good[len(good)-10:], ""},
		{"footer cut short", setFooterLen(good, n/2), ""},
	} {
		_, err := readFile(tt.data, "f.parquet", "PARQUET", rowio.Options{})
		if tt.limit != "" {
			wantLimit(t, err, tt.limit)
			continue
		}
		var ce *rowio.CorruptError
		if !errors.As(err, &ce) || !strings.HasPrefix(err.Error(), "f.parquet: corrupt Parquet file: ") {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
	// A lowered limit refuses the real footer.
	_, err := readFile(good, "f.parquet", "PARQUET", rowio.Options{Limits: rowio.Limits{MaxParquetFooterBytes: int64(n) - 1}})
	wantLimit(t, err, "MaxParquetFooterBytes")
}

func setFooterLen(data []byte, n uint32) []byte {
	out := append([]byte(nil), data...)
	binary.LittleEndian.PutUint32(out[len(out)-8:], n)
	return out
}

// The file: the ARROW:schema in the footer claims 2^32 fields,
// which arrow-go allocated (189 GB) before reading any. Rebuilt here by
// changing the length of the schema's fields vector.
func TestParquetArrowSchemaFieldCount(t *testing.T) {
	data := writeParquet(t, 3)
	enc, dec := arrowSchemaOf(t, data)
	b := fb(dec[8:]) // after the continuation marker and length
	root, _ := b.u32(0)
	header, _, err := b.table(root, fbMessageHeader)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := b.field(header, fbSchemaFields)
	vec, _ := b.indirect(p)
	binary.LittleEndian.PutUint32(dec[8+vec:], 0xffffffff)
	bad := bytes.Replace(data, []byte(enc), []byte(base64.StdEncoding.EncodeToString(dec)), 1)
	before := totalAlloc()
	_, err = readFile(bad, "part-7.parquet", "PARQUET", rowio.Options{})
	var ce *rowio.CorruptError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "ARROW:schema") {
		t.Fatalf("got %v", err)
	}
	if grew := totalAlloc() - before; grew > 16<<20 {
		t.Fatalf("allocated %d bytes", grew)
	}
}

// arrowSchemaOf finds the base64 ARROW:schema in a Parquet file.
func arrowSchemaOf(t *testing.T, data []byte) (string, []byte) {
	t.Helper()
	n := int64(binary.LittleEndian.Uint32(data[len(data)-8:]))
	f, err := scanFooter(data[int64(len(data))-8-n:len(data)-8], int64(len(data)), rowio.Limits{}.WithDefaults())
	if err != nil || f.arrowSchema == nil {
		t.Fatalf("no ARROW:schema: %v", err)
	}
	dec, err := base64.StdEncoding.DecodeString(string(f.arrowSchema))
	if err != nil {
		t.Fatal(err)
	}
	return string(f.arrowSchema), dec
}

// smallParquet is a ~1.5 KB file like the issue's: a few rows of several
// types, with the ARROW:schema stored.
func smallParquet(t testing.TB) []byte {
	t.Helper()
	cols := []rowio.Column{{Name: "id", Type: "Int64"}, {Name: "s", Type: "Nullable(String)"}, {Name: "d", Type: "Decimal(10, 2)"}, {Name: "ts", Type: "DateTime"}}
	var buf bytes.Buffer
	w, err := NewParquetWriter(&buf, cols)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		var s *string
		if i%2 == 0 {
			v := strings.Repeat("ab", i)
			s = &v
		}
		if err := w.Write([]any{int64(i), s, decimal.New(int64(i)*101, -2), base.Add(time.Duration(i) * time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Every byte of a small valid file, changed a few ways, and every
// truncation: each read returns data or an error, never a panic (no
// recover here) and never an allocation the limits do not allow.
func TestParquetMutationsNeverPanic(t *testing.T) {
	data := smallParquet(t)
	rng := rand.New(rand.NewPCG(17, 17))
	opts := rowio.Options{BatchRows: 3, Limits: rowio.Limits{MaxReaderMemory: 64 << 20}}
	check := func(what string, mutated []byte) {
		_, err := readFile(mutated, "m.parquet", "PARQUET", opts)
		if err != nil && !strings.HasPrefix(err.Error(), "m.parquet: ") {
			t.Fatalf("%s: error %q does not name the file", what, err)
		}
	}
	buf := make([]byte, len(data))
	// Two mutations of each byte and one large length at each offset, cycling
	// through the values, keep this sweep a few seconds on two cores; the
	// fuzz targets explore random ones.
	for i := range data {
		alt := []byte{0x00, 0xff, data[i] ^ 0x01, byte(rng.Uint32())}[i%4]
		for _, v := range []byte{data[i] ^ 0x80, alt} {
			copy(buf, data)
			buf[i] = v
			check("byte", buf)
		}
	}
	for n := range len(data) {
		check("truncated", data[:n])
	}
	// Length fields: four bytes at a time, set to large values.
	for i := 0; i+4 <= len(data); i++ {
		copy(buf, data)
		binary.LittleEndian.PutUint32(buf[i:], []uint32{0x7fffffff, 0xffffffff, 0x00ffffff}[i%3])
		check("word", buf)
	}
}

// A page header may declare any page size; past the limit it is the
// file's error, whichever page it is.
func TestParquetPageSizeLimit(t *testing.T) {
	data := writeParquet(t, 2000)
	_, err := readFile(data, "p.parquet", "PARQUET", rowio.Options{Limits: rowio.Limits{MaxParquetPageBytes: 1 << 10}})
	wantLimit(t, err, "MaxParquetPageBytes")
	_, err = readFile(data, "p.parquet", "PARQUET", rowio.Options{Limits: rowio.Limits{MaxReaderMemory: 64 << 10}})
	wantLimit(t, err, "MaxReaderMemory")
	if n, err := readFile(data, "p.parquet", "PARQUET", rowio.Options{}); err != nil || n != 2000 {
		t.Fatalf("%d rows, %v", n, err)
	}
}

// The memory a Parquet reader holds comes back as batches are released,
// so MaxReaderMemory bounds what is held, not what was ever allocated.
func TestParquetReaderMemoryReturns(t *testing.T) {
	data := writeParquet(t, 150_000)
	r, err := newParquetReader(rowio.Source{At: bytes.NewReader(data), Size: int64(len(data)), Name: "m.parquet"}, rowio.Options{}.WithDefaults())
	if err != nil {
		t.Fatal(err)
	}
	var peak int64
	for {
		_, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		peak = max(peak, r.mem.Held.Load())
	}
	r.Close()
	if peak > 64<<20 || r.mem.Held.Load() > 8<<20 {
		t.Fatalf("peak %d bytes held, %d after Close", peak, r.mem.Held.Load())
	}
}

// parquetSeeds are valid files of every type the writer makes, plus
// nested, dictionary and Null columns and each page codec, for the
// Parquet fuzz target and its regression tests.
func parquetSeeds(t testing.TB) [][]byte {
	t.Helper()
	seeds := [][]byte{smallParquet(t), writeParquet(t, 20)}
	every := []rowio.Column{
		{Name: "i8", Type: "Int8"}, {Name: "i16", Type: "Nullable(Int16)"}, {Name: "i32", Type: "Int32"},
		{Name: "u16", Type: "UInt16"}, {Name: "u32", Type: "Nullable(UInt32)"}, {Name: "f32", Type: "Float32"},
		{Name: "b", Type: "Bool"}, {Name: "fs", Type: "FixedString(4)"}, {Name: "d32", Type: "Date32"},
		{Name: "t64", Type: "DateTime64(3)"}, {Name: "t9", Type: "Nullable(DateTime64(9))"},
		{Name: "dec", Type: "Decimal(38, 10)"}, {Name: "lcn", Type: "LowCardinality(Nullable(String))"},
	}
	var buf bytes.Buffer
	w, err := NewParquetWriter(&buf, every)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		var i16 *int64
		var u32 *int64
		var t9 *time.Time
		var lcn *string
		if i%2 == 1 {
			v, u, tt, s := int64(-i), int64(i), base.Add(time.Duration(i)), "x"
			i16, u32, t9, lcn = &v, &u, &tt, &s
		}
		row := []any{int8(i), i16, int32(i * 1000), uint16(i), u32, float32(i) / 3, i%2 == 0, "abcd",
			base.AddDate(0, 0, i).Truncate(24 * time.Hour), base.Add(time.Duration(i) * time.Millisecond), t9,
			decimal.New(int64(i)*12345, -10), lcn}
		if err := w.Write(row); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	seeds = append(seeds, buf.Bytes())

	nested := arrow.NewSchema([]arrow.Field{
		{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
		{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "a", Type: arrow.BinaryTypes.String, Nullable: true}, arrow.Field{Name: "b", Type: arrow.PrimitiveTypes.Float64}), Nullable: true},
		{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64), Nullable: true},
		{Name: "dict", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}, Nullable: true},
		{Name: "none", Type: arrow.Null, Nullable: true},
		{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
	}, nil)
	rows := `[{"l":[1,null,3],"st":{"a":"x","b":1.5},"m":[{"key":"k","value":1}],"dict":"red","none":null,"bin":"AQI="},
	          {"l":null,"st":null,"m":null,"dict":null,"none":null,"bin":null},
	          {"l":[],"st":{"a":null,"b":0},"m":[],"dict":"blue","none":null,"bin":""}]`
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, nested, strings.NewReader(rows))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	for _, codec := range []compress.Compression{compress.Codecs.Zstd, compress.Codecs.Gzip, compress.Codecs.Uncompressed, compress.Codecs.Snappy} {
		var buf bytes.Buffer
		props := parquet.NewWriterProperties(parquet.WithCompression(codec), parquet.WithDictionaryDefault(codec != compress.Codecs.Gzip))
		fw, err := pqarrow.NewFileWriter(nested, &buf, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
		if err != nil {
			t.Fatal(err)
		}
		if err := fw.Write(rec); err != nil {
			t.Fatal(err)
		}
		if err := fw.Close(); err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, buf.Bytes())
	}
	return seeds
}

// Every seed reads back whole: the footer checks accept what real
// writers make.
func TestParquetSeedsRead(t *testing.T) {
	for i, seed := range parquetSeeds(t) {
		if n, err := readFile(seed, "s.parquet", "PARQUET", rowio.Options{}); err != nil || n == 0 {
			t.Errorf("seed %d: %d rows, %v", i, n, err)
		}
	}
}

// limitEnv is the environment variable of a Limits field, which errors name.
func limitEnv(field string) string {
	for _, v := range rowio.LimitVars {
		if v.Field == field {
			return v.Env
		}
	}
	return "formats.Limits." + field
}

// parquetOf writes rec as a Parquet file with arrow-go's default
// properties.
func parquetOf(t *testing.T, rec arrow.RecordBatch) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(rec.Schema(), &buf, nil, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestParquetRowsBounded: a page may declare 2^31 values that a run of
// NULLs encodes in a few bytes, so past ParquetFreeRows a Parquet file's
// rows, and the values of its nested columns loaded as text, are bounded
// by its size (MaxParquetRowsPerByte): a file of a few KB cannot keep a
// load busy for years. Real values stay far below the default.
func TestParquetRowsBounded(t *testing.T) {
	defer func(n int64) { rowio.ParquetFreeRows = n }(rowio.ParquetFreeRows)
	rowio.ParquetFreeRows = 1000
	column := func(dt arrow.DataType, fill func(b array.Builder)) []byte {
		schema := arrow.NewSchema([]arrow.Field{{Name: "c", Type: dt, Nullable: true}}, nil)
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		defer b.Release()
		fill(b.Field(0))
		rec := b.NewRecordBatch()
		defer rec.Release()
		return parquetOf(t, rec)
	}
	nulls := column(arrow.PrimitiveTypes.Int64, func(b array.Builder) { b.AppendNulls(1_000_000) })
	ids := column(arrow.PrimitiveTypes.Int64, func(b array.Builder) {
		for i := range 100_000 {
			b.(*array.Int64Builder).Append(int64(i))
		}
	})
	lists := column(arrow.ListOf(arrow.PrimitiveTypes.Int64), func(b array.Builder) {
		lb := b.(*array.ListBuilder)
		for range 1000 {
			lb.Append(true)
			lb.ValueBuilder().AppendNulls(1000)
		}
	})
	t.Logf("sizes: %d rows of NULL %d bytes, %d ids %d bytes, lists of %d NULLs %d bytes", 1_000_000, len(nulls), 100_000, len(ids), 1_000_000, len(lists))
	for _, tt := range []struct {
		name string
		data []byte
		k    int64
		want string
	}{
		{"NULL rows past the limit", nulls, 10, "1000000 rows declared in a file of 175 bytes (more than 1000 rows plus the limit's rows a byte), over the limit of 10 (LAKEPIPE_MAX_PARQUET_ROWS_PER_BYTE)"},
		{"NULL rows within the default", nulls, 0, ""},
		{"distinct values within the default", ids, 0, ""},
		{"distinct values within a tight limit", ids, 1, ""},
		{"nested NULLs past the limit", lists, 50, "more than 262350 nested values in a file of 5.1 KiB (more than 1000 values plus the limit's values a byte), over the limit of 50 (LAKEPIPE_MAX_PARQUET_ROWS_PER_BYTE)"},
		{"nested NULLs within the default", lists, 0, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readFile(tt.data, "r.parquet", "PARQUET", rowio.Options{Limits: rowio.Limits{MaxParquetRowsPerByte: tt.k}})
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
}
