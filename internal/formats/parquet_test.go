package formats

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/shopspring/decimal"

	"github.com/lakepipe/lakepipe/internal/rowio"
)

var roundTripCols = []rowio.Column{
	{Name: "id", Type: "Int64"},
	{Name: "name", Type: "Nullable(String)"},
	{Name: "price", Type: "Decimal(10, 2)"},
	{Name: "nprice", Type: "Nullable(Decimal(18, 4))"},
	{Name: "day", Type: "Date"},
	{Name: "ts", Type: "DateTime"},
	{Name: "nts", Type: "Nullable(DateTime)"},
	{Name: "u8", Type: "UInt8"},
	{Name: "i16", Type: "Int16"},
	{Name: "f", Type: "Float64"},
	{Name: "f32", Type: "Nullable(Float32)"},
	{Name: "lc", Type: "LowCardinality(String)"},
	{Name: "u64", Type: "UInt64"},
}

var roundTripTypes = []string{
	"Int64", "Nullable(String)", "Decimal(10, 2)", "Nullable(Decimal(18, 4))", "Date", "DateTime",
	"Nullable(DateTime)", "UInt8", "Int16", "Float64", "Nullable(Float32)", "String", "UInt64",
}

var base = time.Date(2026, 6, 1, 12, 34, 56, 0, time.UTC)

func roundTripRow(i int) []any {
	var name *string
	var nprice *decimal.Decimal
	var nts *time.Time
	var f32 *float32
	if i%3 != 0 {
		s := "name " + strings.Repeat("x", i%5)
		name = &s
		d := decimal.New(int64(i)*12345, -4)
		nprice = &d
		ts := base.Add(time.Duration(i) * time.Second)
		nts = &ts
		f := float32(i) / 4
		f32 = &f
	}
	return []any{
		int64(i) - 1000,
		name,
		decimal.New(int64(i)*100+99, -2),
		nprice,
		base.AddDate(0, 0, i%400).Truncate(24 * time.Hour),
		base.Add(time.Duration(i) * time.Minute),
		nts,
		uint8(i),
		int16(-i % 30000),
		float64(i) * 1.5,
		f32,
		"lc" + string(rune('a'+i%3)),
		uint64(i) << 20,
	}
}

func writeParquet(t testing.TB, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewParquetWriter(&buf, roundTripCols)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := w.Write(roundTripRow(i)); err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestParquetRoundTrip(t *testing.T) {
	const n = 150_000 // three row groups
	data := writeParquet(t, n)
	r, err := Open(rowio.Source{At: bytes.NewReader(data), Size: int64(len(data)), Name: "rt.parquet"}, "parquet", rowio.Options{BatchRows: 40000})
	if err != nil {
		t.Fatal(err)
	}
	cols := r.Columns()
	for i, c := range cols {
		if c.Name != roundTripCols[i].Name || c.Type != roundTripTypes[i] {
			t.Errorf("column %d: %+v, want %s %s", i, c, roundTripCols[i].Name, roundTripTypes[i])
		}
	}
	row := 0
	for {
		b, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := checkBatch(b, len(cols)); err != nil {
			t.Fatal(err)
		}
		if b.Rows > 40000 {
			t.Fatalf("batch of %d rows", b.Rows)
		}
		ids := b.Cols[0].Arrow.(*array.Int64)
		names := b.Cols[1].Arrow.(*array.String)
		prices := b.Cols[2].Arrow.(*array.Decimal128)
		nprices := b.Cols[3].Arrow.(*array.Decimal128)
		days := b.Cols[4].Arrow.(*array.Date32)
		tss := b.Cols[5].Arrow.(*array.Timestamp)
		ntss := b.Cols[6].Arrow.(*array.Timestamp)
		u8 := b.Cols[7].Arrow.(*array.Uint8)
		lc := b.Cols[11].Arrow.(*array.String)
		u64 := b.Cols[12].Arrow.(*array.Uint64)
		for i := range b.Rows {
			want := roundTripRow(row)
			if b.Line[i] != int64(row+1) {
				t.Fatalf("row %d: line %d", row, b.Line[i])
			}
			if ids.Value(i) != want[0].(int64) || u8.Value(i) != want[7].(uint8) || lc.Value(i) != want[11].(string) || u64.Value(i) != want[12].(uint64) {
				t.Fatalf("row %d: ints/strings differ", row)
			}
			if got := prices.ValueStr(i); !decimal.RequireFromString(got).Equal(want[2].(decimal.Decimal)) {
				t.Fatalf("row %d: price %s, want %s", row, got, want[2])
			}
			if got := days.Value(i).ToTime(); !got.Equal(want[4].(time.Time)) {
				t.Fatalf("row %d: day %v, want %v", row, got, want[4])
			}
			if got := tss.Value(i).ToTime(arrow.Microsecond); !got.Equal(want[5].(time.Time)) {
				t.Fatalf("row %d: ts %v, want %v", row, got, want[5])
			}
			if p := want[1].(*string); p == nil {
				if !names.IsNull(i) || !nprices.IsNull(i) || !ntss.IsNull(i) || !b.Cols[10].Arrow.IsNull(i) {
					t.Fatalf("row %d: NULLs not read back", row)
				}
			} else {
				if names.Value(i) != *p {
					t.Fatalf("row %d: name %q, want %q", row, names.Value(i), *p)
				}
				// Arrow's text drops trailing zeros: compare values.
				if got, w := nprices.ValueStr(i), want[3].(*decimal.Decimal); !decimal.RequireFromString(got).Equal(*w) {
					t.Fatalf("row %d: nprice %s, want %s", row, got, w)
				}
				if nprices.DataType().(*arrow.Decimal128Type).Scale != 4 {
					t.Fatalf("nprice scale %d", nprices.DataType().(*arrow.Decimal128Type).Scale)
				}
				if got := ntss.Value(i).ToTime(arrow.Microsecond); !got.Equal(*want[6].(*time.Time)) {
					t.Fatalf("row %d: nts %v", row, got)
				}
			}
			row++
		}
	}
	if row != n {
		t.Fatalf("read %d rows, want %d", row, n)
	}
	if r.BytesRead() == 0 {
		t.Error("BytesRead is 0")
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestParquetSchemaSelection(t *testing.T) {
	data := writeParquet(t, 10)
	opts := rowio.Options{Schema: []rowio.Column{{Name: "PRICE"}, {Name: "id"}, {Name: "Name"}}}
	r, err := Open(rowio.Source{At: bytes.NewReader(data), Size: int64(len(data)), Name: "s.parquet"}, "PARQUET", opts)
	if err != nil {
		t.Fatal(err)
	}
	got := collect(t, r)
	want := []rowio.Column{{Name: "PRICE", Type: "Decimal(10, 2)"}, {Name: "id", Type: "Int64"}, {Name: "Name", Type: "Nullable(String)"}}
	if len(got.cols) != 3 || got.cols[0] != want[0] || got.cols[1] != want[1] || got.cols[2] != want[2] {
		t.Fatalf("columns %+v", got.cols)
	}
	if len(got.rows) != 10 || *got.rows[1][0] != "1.99" || *got.rows[1][1] != "-999" || got.rows[0][2] != nil || *got.rows[1][2] != "name x" {
		t.Fatalf("rows %s", show(got.rows[:2]))
	}

	_, err = Open(rowio.Source{At: bytes.NewReader(data), Size: int64(len(data)), Name: "s.parquet"}, "PARQUET", rowio.Options{Schema: []rowio.Column{{Name: "nope"}}})
	if err == nil || !strings.Contains(err.Error(), `"nope"`) || !strings.Contains(err.Error(), "price") {
		t.Fatalf("missing column: %v", err)
	}
}

func TestParquetEmptyAndBad(t *testing.T) {
	data := writeParquet(t, 0)
	got := collect(t, openBytes(t, data, "e.parquet", "PARQUET", rowio.Options{}))
	if len(got.cols) != len(roundTripCols) || len(got.rows) != 0 {
		t.Fatalf("empty file: %d columns, %d rows", len(got.cols), len(got.rows))
	}
	if _, err := Open(rowio.Source{At: strings.NewReader("not parquet"), Size: 11, Name: "x.parquet"}, "PARQUET", rowio.Options{}); err == nil {
		t.Fatal("garbage accepted")
	}
	gz := gzipBytes(t, writeParquet(t, 3))
	for _, name := range []string{"x.parquet.gz", "x.parquet"} {
		_, err := Open(rowio.Source{At: bytes.NewReader(gz), Size: int64(len(gz)), Name: name}, "PARQUET", rowio.Options{})
		if err == nil || !strings.Contains(err.Error(), "Parquet compresses its pages internally") {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

func TestParquetWriterErrors(t *testing.T) {
	if _, err := NewParquetWriter(io.Discard, []rowio.Column{{Name: "a", Type: "Array(Int8)"}}); err == nil {
		t.Fatal("Array accepted")
	}
	w, err := NewParquetWriter(io.Discard, []rowio.Column{{Name: "a", Type: "Int8"}, {Name: "b", Type: "Decimal(5, 2)"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write([]any{nil, decimal.New(1, 0)}); err == nil {
		t.Fatal("NULL in Int8 accepted")
	}
	if err := w.Write([]any{int8(1)}); err == nil {
		t.Fatal("short row accepted")
	}
	if err := w.Write([]any{int64(300), decimal.New(1, 0)}); err == nil {
		t.Fatal("300 accepted as Int8")
	}
}

func TestTypeMaps(t *testing.T) {
	for ch, want := range map[string]string{
		"Int32":                            "int32",
		"Nullable(UInt16)":                 "uint16?",
		"LowCardinality(Nullable(String))": "utf8?",
		"FixedString(16)":                  "utf8",
		"Decimal(38, 10)":                  "decimal(38, 10)",
		"Decimal64(3)":                     "decimal(18, 3)",
		"DateTime('Europe/Berlin')":        "timestamp[us, tz=UTC]",
		"DateTime64(9, 'UTC')":             "timestamp[ns, tz=UTC]",
		"Date32":                           "date32",
		"Bool":                             "bool",
		"Nullable(Decimal(10, 2))":         "decimal(10, 2)?",
		"LowCardinality(Nullable(FixedString(2)))": "utf8?",
	} {
		dt, nullable, err := rowio.ArrowType(ch)
		if err != nil {
			t.Errorf("%s: %v", ch, err)
			continue
		}
		got := dt.String()
		if nullable {
			got += "?"
		}
		if got != want {
			t.Errorf("%s → %s, want %s", ch, got, want)
		}
	}
	for dt, want := range map[arrow.DataType]string{
		arrow.PrimitiveTypes.Uint32:                    "UInt32",
		arrow.BinaryTypes.LargeString:                  "String",
		arrow.FixedWidthTypes.Boolean:                  "UInt8",
		&arrow.Decimal128Type{Precision: 12, Scale: 3}: "Decimal(12, 3)",
		arrow.FixedWidthTypes.Timestamp_ns:             "DateTime",
		arrow.ListOf(arrow.PrimitiveTypes.Int8):        "String",
		arrow.FixedWidthTypes.Date32:                   "Date",
		arrow.BinaryTypes.Binary:                       "String",
		arrow.PrimitiveTypes.Float32:                   "Float32",
	} {
		got, err := rowio.ClickHouseType(dt, false)
		if err != nil || got != want {
			t.Errorf("%s → %s %v, want %s", dt, got, err, want)
		}
	}
	if got, _ := rowio.ClickHouseType(arrow.PrimitiveTypes.Int8, true); got != "Nullable(Int8)" {
		t.Errorf("nullable: %s", got)
	}
}

// A Null-typed column (pyarrow's type for an all-None column) reads as
// NULL in every row, not as the text "(null)".
func TestParquetNullColumn(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "none", Type: arrow.Null, Nullable: true}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2}, nil)
	b.Field(1).(*array.NullBuilder).AppendNulls(2)
	rec := b.NewRecordBatch()
	defer rec.Release()
	data := parquetOf(t, rec)
	r, err := Open(rowio.Source{At: bytes.NewReader(data), Size: int64(len(data)), Name: "n.parquet"}, "PARQUET", rowio.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := collect(t, r)
	if len(got.rows) != 2 || got.rows[0][1] != nil || got.rows[1][1] != nil || *got.rows[1][0] != "2" {
		t.Fatalf("rows %s, columns %+v", show(got.rows), got.cols)
	}
}
