package chstore

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	chcolumn "github.com/ClickHouse/clickhouse-go/v2/lib/column"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakepipe/lakepipe/internal/rowio"
)

func TestParseInt(t *testing.T) {
	good := map[string]int64{"0": 0, "42": 42, "-7": -7, "+3": 3, " 12 ": 12, "5.00": 5, "9223372036854775807": 9223372036854775807, "-9223372036854775808": -9223372036854775808}
	for in, want := range good {
		if got, err := parseInt(in); err != nil || got != want {
			t.Errorf("parseInt(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-", "1.5", "abc", "9223372036854775808", "12345678901234567890"} {
		if _, err := parseInt(in); err == nil {
			t.Errorf("parseInt(%q) accepted", in)
		}
	}
}

func TestParseDecimal(t *testing.T) {
	for in, want := range map[string]string{"8999.00": "8999", "-1.5": "-1.5", "0.01": "0.01", "1e3": "1000", "12345678901234567890.5": "12345678901234567890.5"} {
		d, err := parseDecimal(in, 2)
		if err != nil || d.String() != want {
			t.Errorf("parseDecimal(%q) = %s, %v; want %s", in, d, err, want)
		}
	}
	for _, in := range []string{"", "x", "1.2.3", "--1"} {
		if _, err := parseDecimal(in, 2); err == nil {
			t.Errorf("parseDecimal(%q) accepted", in)
		}
	}
}

func TestParseTime(t *testing.T) {
	want := time.Date(2026, 6, 1, 12, 30, 0, 0, time.UTC)
	for _, in := range []string{"2026-06-01 12:30:00", "2026-06-01T12:30:00Z", "2026-06-01T14:30:00+02:00", "2026-06-01T12:30:00"} {
		if got, err := ParseTime(in); err != nil || !got.Equal(want) {
			t.Errorf("ParseTime(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseTime("June 1st"); err == nil {
		t.Error("ParseTime accepted prose")
	}
}

// TestColumnRejectsRows checks that a bad value rejects its row in every
// column, so that the columns stay aligned.
func TestColumnRejectsRows(t *testing.T) {
	ids, _ := newColumn("Nullable(Int64)")
	names, _ := newColumn("String")
	src := []rowio.Vector{
		{Text: [][]byte{[]byte("1"), []byte("x"), []byte(""), []byte("4")}},
		{Text: [][]byte{[]byte("a"), []byte("b"), []byte("c"), []byte("d")}},
	}
	keep := []bool{true, true, true, true}
	bad := func(r int, _ string) { keep[r] = false }
	ids.add(&src[0], 4, bad)
	names.add(&src[1], 4, bad)
	ids.keep(keep)
	names.keep(keep)
	got := ids.values().([]*int64)
	if len(got) != 3 || *got[0] != 1 || got[1] != nil || *got[2] != 4 {
		t.Fatalf("ids = %v", got)
	}
	if n := names.values().([]string); len(n) != 3 || n[1] != "c" {
		t.Fatalf("names = %v", n)
	}
}

// show renders what values() returned, NULL for a nil pointer, with its
// Go type, so that a test sees both the values and the form
// (plain or pointers) clickhouse-go gets.
func show(v any) string {
	rv := reflect.ValueOf(v)
	parts := make([]string, rv.Len())
	for i := range parts {
		e := rv.Index(i)
		if e.Kind() == reflect.Pointer {
			if e.IsNil() {
				parts[i] = "NULL"
				continue
			}
			e = e.Elem()
		}
		switch x := e.Interface().(type) {
		case time.Time:
			parts[i] = x.Format(time.RFC3339Nano)
		case fmt.Stringer:
			parts[i] = x.String()
		default:
			parts[i] = fmt.Sprint(x)
		}
	}
	return fmt.Sprintf("%T%v", v, parts)
}

func arrowArray(t testing.TB, dt arrow.DataType, js string) arrow.Array {
	t.Helper()
	a, _, err := array.FromJSON(memory.DefaultAllocator, dt, strings.NewReader(js))
	if err != nil {
		t.Fatalf("%s %s: %v", dt, js, err)
	}
	return a
}

// TestArrowFastPaths converts each Arrow type the readers yield into the
// ClickHouse columns it commonly feeds, rows that do not fit included.
func TestArrowFastPaths(t *testing.T) {
	ts := func(u arrow.TimeUnit) arrow.DataType { return &arrow.TimestampType{Unit: u, TimeZone: "Europe/Paris"} }
	i8, i16, i32, i64 := arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64
	u8, u16, u32, u64 := arrow.PrimitiveTypes.Uint8, arrow.PrimitiveTypes.Uint16, arrow.PrimitiveTypes.Uint32, arrow.PrimitiveTypes.Uint64
	f32, f64 := arrow.PrimitiveTypes.Float32, arrow.PrimitiveTypes.Float64
	tests := []struct {
		target string
		dt     arrow.DataType
		in     string // JSON array
		want   string // show() of values() after the bad rows are dropped
		bad    []int  // rows rejected
	}{
		// Integers: every width into every width, range-checked.
		{"Int8", i8, `[-128, 127]`, "[]int8[-128 127]", nil},
		{"Int8", i64, `[-129, 5, 128]`, "[]int8[5]", []int{0, 2}},
		{"Int16", i32, `[32767, 32768, -32769]`, "[]int16[32767]", []int{1, 2}},
		{"Int32", u32, `[2147483647, 2147483648]`, "[]int32[2147483647]", []int{1}},
		{"Int64", u64, `[9223372036854775807, 9223372036854775808]`, "[]int64[9223372036854775807]", []int{1}},
		{"Int64", i16, `[-32768, 7]`, "[]int64[-32768 7]", nil},
		{"UInt8", i16, `[0, 255, 256, -1]`, "[]uint8[0 255]", []int{2, 3}},
		{"UInt8", u8, `[0, 255]`, "[]uint8[0 255]", nil},
		{"UInt16", u64, `[65535, 65536]`, "[]uint16[65535]", []int{1}},
		{"Int16", u16, `[32767, 32768]`, "[]int16[32767]", []int{1}},
		{"UInt32", i8, `[-1, 1]`, "[]uint32[1]", []int{0}},
		{"UInt64", u64, `[18446744073709551615, 0]`, "[]uint64[18446744073709551615 0]", nil},
		{"UInt64", i64, `[-1, 9223372036854775807]`, "[]uint64[9223372036854775807]", []int{0}},
		{"Nullable(Int32)", i64, `[1, null, 3]`, "[]*int32[1 NULL 3]", nil},
		{"Nullable(Int64)", i64, `[1, 2]`, "[]int64[1 2]", nil},
		{"Int64", i64, `[1, null]`, "[]int64[1 0]", nil}, // NULL into NOT NULL: the zero value, as for text
		{"Nullable(UInt8)", arrow.FixedWidthTypes.Boolean, `[true, false, null]`, "[]*uint8[1 0 NULL]", nil},
		{"Int32", arrow.FixedWidthTypes.Boolean, `[true, false]`, "[]int32[1 0]", nil},
		// Floats, from floats and integers.
		{"Float32", f32, `[1.5, -0.25]`, "[]float32[1.5 -0.25]", nil},
		{"Float64", f32, `[1.5, null]`, "[]float64[1.5 0]", nil},
		{"Float32", f64, `[1e300, 3.5, -1e39]`, "[]float32[3.5]", []int{0, 2}},
		{"Float64", i64, `[-3, 9007199254740993]`, "[]float64[-3 9.007199254740992e+15]", nil},
		{"Nullable(Float64)", u64, `[18446744073709551615, null]`, "[]*float64[1.8446744073709552e+19 NULL]", nil},
		{"Nullable(Float32)", u8, `[1, 2]`, "[]float32[1 2]", nil},
		// Strings from every string and binary type.
		{"String", arrow.BinaryTypes.String, `["a", "", "héllo"]`, "[]string[a  héllo]", nil},
		{"Nullable(String)", arrow.BinaryTypes.LargeString, `["x", null]`, "[]*string[x NULL]", nil},
		{"Nullable(String)", arrow.BinaryTypes.Binary, `["AP8=", ""]`, "[]string[\x00\xff ]", nil},
		{"String", arrow.BinaryTypes.LargeBinary, `["YWI=", null]`, "[]string[ab ]", nil},
		{"String", i64, `[42]`, "[]string[42]", nil}, // other types: their text, as before
		// Times, from every timestamp unit and both date types.
		{"DateTime", ts(arrow.Second), `[1780317296]`, "[]time.Time[2026-06-01T12:34:56Z]", nil},
		{"DateTime64(3)", ts(arrow.Millisecond), `[1780317296789]`, "[]time.Time[2026-06-01T12:34:56.789Z]", nil},
		{"DateTime64(6)", ts(arrow.Microsecond), `[1780317296123456]`, "[]time.Time[2026-06-01T12:34:56.123456Z]", nil},
		{"Nullable(DateTime64(9))", ts(arrow.Nanosecond), `[1780317296123456789, null]`, "[]*time.Time[2026-06-01T12:34:56.123456789Z NULL]", nil},
		{"Nullable(DateTime)", ts(arrow.Second), `[0]`, "[]time.Time[1970-01-01T00:00:00Z]", nil},
		{"Date", arrow.FixedWidthTypes.Date32, `["2026-06-01", "1970-01-01"]`, "[]time.Time[2026-06-01T00:00:00Z 1970-01-01T00:00:00Z]", nil},
		{"Date", arrow.FixedWidthTypes.Date64, `["2026-06-01"]`, "[]time.Time[2026-06-01T00:00:00Z]", nil},
		{"DateTime", arrow.FixedWidthTypes.Date32, `["2026-06-01"]`, "[]time.Time[2026-06-01T00:00:00Z]", nil},
		{"Nullable(Date)", arrow.FixedWidthTypes.Date32, `["2026-06-01"]`, "[]*time.Time[2026-06-01T00:00:00Z]", nil}, // see timeCol.values
		// Decimals from Decimal128 and integers.
		{"Decimal(10, 2)", &arrow.Decimal128Type{Precision: 10, Scale: 2}, `["-12.34", "0.05"]`, "[]decimal.Decimal[-12.34 0.05]", nil},
		{"Decimal(4, 2)", &arrow.Decimal128Type{Precision: 10, Scale: 3}, `["-99.994", "99.995", "123.4", "0.001"]`, "[]decimal.Decimal[-99.994 0.001]", []int{1, 2}},
		{"Decimal(5, 2)", i32, `[123, -999, 1000]`, "[]decimal.Decimal[123 -999]", []int{2}},
		{"Decimal(18, 0)", u64, `[18446744073709551615, 999999999999999999]`, "[]decimal.Decimal[999999999999999999]", []int{0}},
		{"Decimal(38, 0)", u64, `[18446744073709551615]`, "[]decimal.Decimal[18446744073709551615]", nil},
		{"Decimal(20, 1)", i64, `[-9223372036854775808]`, "[]decimal.Decimal[-9223372036854775808]", nil},
		{"Nullable(Decimal(3, 0))", i8, `[-128, null, 0]`, "[]*decimal.Decimal[-128 NULL 0]", nil},
	}
	for _, tt := range tests {
		t.Run(tt.target+" from "+tt.dt.String(), func(t *testing.T) {
			col, err := newColumn(tt.target)
			if err != nil {
				t.Fatal(err)
			}
			a := arrowArray(t, tt.dt, tt.in)
			defer a.Release()
			keep := make([]bool, a.Len())
			for i := range keep {
				keep[i] = true
			}
			var bad []int
			col.add(&rowio.Vector{Arrow: a}, a.Len(), func(r int, msg string) {
				bad = append(bad, r)
				keep[r] = false
				if !strings.Contains(msg, "out of range") && !strings.Contains(msg, "does not fit") {
					t.Errorf("row %d: message %q", r, msg)
				}
			})
			col.keep(keep)
			if !slices.Equal(bad, tt.bad) {
				t.Errorf("bad rows %v, want %v", bad, tt.bad)
			}
			if got := show(col.values()); got != tt.want {
				t.Errorf("values %s, want %s", got, tt.want)
			}
		})
	}
}

// TestArrowSlices converts a slice of an array (the ARROW reader slices
// record batches larger than a batch), where values start at an offset.
func TestArrowSlices(t *testing.T) {
	for _, tt := range []struct {
		target string
		dt     arrow.DataType
		in     string
		want   string
	}{
		{"Nullable(Int64)", arrow.PrimitiveTypes.Int32, `[1, 2, null, 4, 5]`, "[]*int64[2 NULL 4]"},
		{"Nullable(String)", arrow.BinaryTypes.String, `["a", "b", null, "d", "e"]`, "[]*string[b NULL d]"},
		{"Float64", arrow.PrimitiveTypes.Uint16, `[1, 2, 3, 4, 5]`, "[]float64[2 3 4]"},
		{"UInt8", arrow.FixedWidthTypes.Boolean, `[true, false, true, true, false]`, "[]uint8[0 1 1]"},
	} {
		a := arrowArray(t, tt.dt, tt.in)
		s := array.NewSlice(a, 1, 4)
		col, _ := newColumn(tt.target)
		col.add(&rowio.Vector{Arrow: s}, s.Len(), func(r int, msg string) { t.Errorf("%s row %d: %s", tt.target, r, msg) })
		if got := show(col.values()); got != tt.want {
			t.Errorf("%s from a slice of %s: %s, want %s", tt.target, tt.dt, got, tt.want)
		}
		s.Release()
		a.Release()
	}
}

// TestNullableValuesAppend hands values() of Nullable columns, with and
// without a NULL in the block, to clickhouse-go's own columns and reads
// them back: the plain slice must be taken as "no NULL" wherever it is
// used, and every row must keep its null flag.
func TestNullableValuesAppend(t *testing.T) {
	for _, tt := range []struct {
		target string
		text   []string // "" = NULL
	}{
		{"Nullable(Int64)", []string{"1", "2"}},
		{"Nullable(Int64)", []string{"1", ""}},
		{"Nullable(UInt8)", []string{"7", "8"}},
		{"Nullable(Float32)", []string{"1.5", "2"}},
		{"Nullable(Float64)", []string{"", "2"}},
		{"Nullable(String)", []string{"a", "b"}},
		{"Nullable(String)", []string{"a", ""}},
		{"LowCardinality(Nullable(String))", []string{"a", "b"}},
		{"Nullable(FixedString(2))", []string{"ab", "cd"}},
		{"Nullable(Decimal(10, 2))", []string{"1.25", "2"}},
		{"Nullable(Decimal(10, 2))", []string{"", "2"}},
		{"Nullable(DateTime)", []string{"2026-06-01 12:00:00", "2026-06-02 12:00:00"}},
		{"Nullable(DateTime64(3))", []string{"2026-06-01 12:00:00", "2026-06-02 12:00:00"}},
		{"Nullable(DateTime)", []string{"", "2026-06-02 12:00:00"}},
		{"Nullable(Date)", []string{"2026-06-01", "2026-06-02"}},
		{"Nullable(Date)", []string{"2026-06-01", ""}},
	} {
		col, err := newColumn(tt.target)
		if err != nil {
			t.Fatal(err)
		}
		src := rowio.Vector{Null: make([]bool, len(tt.text))}
		for i, s := range tt.text {
			src.Text = append(src.Text, []byte(s))
			src.Null[i] = s == ""
		}
		col.add(&src, len(tt.text), func(r int, msg string) { t.Fatalf("%s row %d: %s", tt.target, r, msg) })
		vals := col.values()
		ch, err := chcolumn.Type(tt.target).Column("c", &chcolumn.ServerContext{Timezone: time.UTC})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ch.Append(vals); err != nil {
			t.Fatalf("%s: Append(%T): %v", tt.target, vals, err)
		}
		if ch.Rows() != len(tt.text) {
			t.Fatalf("%s: %d rows, want %d", tt.target, ch.Rows(), len(tt.text))
		}
		if strings.HasPrefix(tt.target, "LowCardinality(") {
			continue // it builds its dictionary, and rows to read, on Encode
		}
		for i, s := range tt.text {
			null := func() (null bool) {
				defer func() {
					if recover() != nil {
						t.Fatalf("%s from %T: row %d has no null flag", tt.target, vals, i)
					}
				}()
				v := reflect.ValueOf(ch.Row(i, true))
				return !v.IsValid() || (v.Kind() == reflect.Pointer && v.IsNil())
			}()
			if null != (s == "") {
				t.Errorf("%s from %T: row %d NULL = %v, want %v", tt.target, vals, i, null, s == "")
			}
		}
	}
}

// TestArrowStringsOutliveRelease checks what stringCol's zero-copy Arrow
// path relies on: the strings it keeps stay intact after the array is
// released and its memory could be reused.
func TestArrowStringsOutliveRelease(t *testing.T) {
	if _, ok := memory.DefaultAllocator.(*memory.GoAllocator); !ok {
		t.Fatalf("memory.DefaultAllocator is %T: the Parquet reader's strings would not outlive their record", memory.DefaultAllocator)
	}
	col, _ := newColumn("String")
	var want []string
	for batch := range 20 {
		b := array.NewStringBuilder(memory.NewGoAllocator())
		for i := range 1000 {
			s := fmt.Sprintf("batch %d value %d %s", batch, i, strings.Repeat("x", i%50))
			b.Append(s)
			want = append(want, s)
		}
		a := b.NewArray()
		b.Release()
		col.add(&rowio.Vector{Arrow: a}, a.Len(), func(int, string) {})
		a.Release()
		// Churn the heap so that freed memory would be handed out again.
		for range 100 {
			junk := make([]byte, 64<<10)
			for i := range junk {
				junk[i] = 0xdb
			}
		}
		runtime.GC()
	}
	got := col.values().([]string)
	if !slices.Equal(got, want) {
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("value %d: %q, want %q", i, got[i], want[i])
			}
		}
	}
}

// TestKeptTextCells: text cells a reader may overwrite at its next batch
// are copied into the column; cells it marks Kept (never written again)
// are held as they are, without a copy.
func TestKeptTextCells(t *testing.T) {
	for _, kept := range []bool{false, true} {
		cells := [][]byte{[]byte("alpha"), nil, []byte("gamma")}
		col, _ := newColumn("Nullable(String)")
		col.add(&rowio.Vector{Text: cells, Null: []bool{false, true, false}, Kept: kept}, len(cells), func(int, string) {})
		sc := col.(*stringCol)
		if shared := unsafe.StringData(sc.vals[0]) == &cells[0][0]; shared != kept {
			t.Errorf("Kept %v: the column shares the cell's bytes: %v", kept, shared)
		}
		if !kept {
			copy(cells[0], "ALPHA") // the reader's next batch
		}
		if got := []string{sc.vals[0], sc.vals[2]}; !slices.Equal(got, []string{"alpha", "gamma"}) || !sc.nulls[1] {
			t.Errorf("Kept %v: values %q, nulls %v", kept, got, sc.nulls)
		}
	}
}

var benchRows = 1 << 16

// BenchmarkArrowInt64 and BenchmarkArrowString convert one batch into a
// column: the Arrow fast path next to the text path (CSV/JSON cells) and
// to the ValueStr fallback the fast path replaces.
func BenchmarkArrowInt64(b *testing.B) {
	bld := array.NewInt64Builder(memory.DefaultAllocator)
	var text [][]byte
	for i := range benchRows {
		v := int64(i)*7919 - 1<<30
		bld.Append(v)
		text = append(text, []byte(strconv.FormatInt(v, 10)))
	}
	arr := bld.NewArray()
	defer arr.Release()
	run := func(b *testing.B, target string, src *rowio.Vector) {
		col, _ := newColumn(target)
		b.ReportAllocs()
		for b.Loop() {
			col.add(src, benchRows, func(int, string) {})
			col.values()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchRows), "ns/row")
	}
	b.Run("arrow", func(b *testing.B) { run(b, "Int64", &rowio.Vector{Arrow: arr}) })
	b.Run("arrow-nullable", func(b *testing.B) { run(b, "Nullable(Int64)", &rowio.Vector{Arrow: arr}) })
	b.Run("arrow-to-Int32-via-ValueStr", func(b *testing.B) {
		// What every non-Int64 integer array cost before: Int32 has no
		// fast path from a Float64 array, so this is the fallback.
		f := array.NewFloat64Builder(memory.DefaultAllocator)
		for i := range benchRows {
			f.Append(float64(i))
		}
		fa := f.NewArray()
		defer fa.Release()
		run(b, "Int32", &rowio.Vector{Arrow: fa})
	})
	b.Run("text", func(b *testing.B) { run(b, "Int64", &rowio.Vector{Text: text}) })
}

func BenchmarkArrowString(b *testing.B) {
	bld := array.NewStringBuilder(memory.DefaultAllocator)
	bin := array.NewBinaryBuilder(memory.DefaultAllocator, arrow.BinaryTypes.Binary)
	var text [][]byte
	for i := range benchRows {
		s := "product name " + strconv.Itoa(i%997)
		bld.Append(s)
		bin.Append([]byte(s))
		text = append(text, []byte(s))
	}
	arr, barr := bld.NewArray(), bin.NewArray()
	defer arr.Release()
	defer barr.Release()
	run := func(b *testing.B, target string, src *rowio.Vector) {
		col, _ := newColumn(target)
		b.ReportAllocs()
		for b.Loop() {
			col.add(src, benchRows, func(int, string) {})
			col.values()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchRows), "ns/row")
	}
	b.Run("arrow-string", func(b *testing.B) { run(b, "String", &rowio.Vector{Arrow: arr}) })
	b.Run("arrow-string-nullable", func(b *testing.B) { run(b, "Nullable(String)", &rowio.Vector{Arrow: arr}) })
	b.Run("arrow-binary", func(b *testing.B) { run(b, "String", &rowio.Vector{Arrow: barr}) })
	b.Run("text", func(b *testing.B) { run(b, "String", &rowio.Vector{Text: text}) })
}

// TestDecimalTextFits: decimal text that would need more digits before the
// point than the column has is refused (ClickHouse would store it out of
// range); a sign is no digit, fractions are rounded to the scale first.
func TestDecimalTextFits(t *testing.T) {
	for _, tt := range []struct {
		target string
		in     string
		ok     bool
	}{
		{"Decimal(5, 2)", "-999.99", true},
		{"Decimal(5, 2)", "999.99", true},
		{"Decimal(5, 2)", "999.994", true},
		{"Decimal(5, 2)", "999.995", false}, // rounds to 1000.00
		{"Decimal(5, 2)", "1000", false},
		{"Decimal(5, 2)", "-1000", false},
		{"Decimal(3, 2)", "123", false},
		{"Decimal(3, 2)", "9.99", true},
		{"Decimal(2, 2)", "0.99", true},
		{"Decimal(2, 2)", "-0.5", true},
		{"Decimal(2, 2)", "1", false},
		{"Decimal(18, 0)", "-999999999999999999", true},
		{"Decimal(18, 0)", "1e18", false},
		{"Decimal(10, 2)", "1.5e3", true},
	} {
		col, err := newColumn(tt.target)
		if err != nil {
			t.Fatal(err)
		}
		var bad bool
		col.add(&rowio.Vector{Text: [][]byte{[]byte(tt.in)}, Null: []bool{false}}, 1, func(int, string) { bad = true })
		if bad == tt.ok {
			t.Errorf("%s ← %q: refused %v, want %v", tt.target, tt.in, bad, !tt.ok)
		}
	}
}

// TestTypedVectorsMatchText: values handed over typed (a Kafka pipe's
// evaluated columns) load as the same values, with the same rows
// rejected, as their text would.
func TestTypedVectorsMatchText(t *testing.T) {
	ts := []time.Time{
		time.Date(2026, 12, 2, 10, 1, 2, 0, time.UTC),
		time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC),
		{},
		time.Date(1999, 1, 2, 3, 4, 5, 123456789, time.UTC),
	}
	ints := []int64{1, -5, 0, 300, math.MaxInt64}
	floats := []float64{1.5, -2, 0, 1e300, math.Inf(1)}
	null := func(n, at int) []bool { b := make([]bool, n); b[at] = true; return b }
	cases := []struct {
		chType string
		typed  rowio.Vector
	}{
		{"DateTime", rowio.Vector{Time: ts, Null: null(len(ts), 2)}},
		{"Nullable(DateTime)", rowio.Vector{Time: ts, Null: null(len(ts), 2)}},
		{"Date", rowio.Vector{Time: ts, Null: null(len(ts), 2)}},
		{"Nullable(Date)", rowio.Vector{Time: ts, Null: null(len(ts), 2)}},
		{"DateTime64(3)", rowio.Vector{Time: ts, Null: null(len(ts), 2)}},
		{"Int64", rowio.Vector{Int: ints, Null: null(len(ints), 2)}},
		{"Nullable(Int32)", rowio.Vector{Int: ints, Null: null(len(ints), 2)}},
		{"UInt8", rowio.Vector{Int: ints, Null: null(len(ints), 2)}},
		{"UInt64", rowio.Vector{Int: ints, Null: null(len(ints), 2)}},
		{"Float64", rowio.Vector{Int: ints, Null: null(len(ints), 2)}},
		{"Float64", rowio.Vector{Float: floats, Null: null(len(floats), 2)}},
		{"Nullable(Float32)", rowio.Vector{Float: floats, Null: null(len(floats), 2)}},
		{"String", rowio.Vector{Float: floats, Null: null(len(floats), 2)}},
		{"Nullable(String)", rowio.Vector{Time: ts, Null: null(len(ts), 2)}},
	}
	for _, c := range cases {
		rows := len(c.typed.Null)
		text := rowio.Vector{Null: c.typed.Null}
		for r := 0; r < rows; r++ {
			s, _ := cell(&c.typed, r)
			text.Text = append(text.Text, []byte(s))
		}
		load := func(v *rowio.Vector) (string, []int) {
			col, err := newColumn(c.chType)
			if err != nil {
				t.Fatal(err)
			}
			var bad []int
			col.add(v, rows, func(r int, _ string) { bad = append(bad, r) })
			return show(col.values()), bad
		}
		gotV, gotBad := load(&c.typed)
		wantV, wantBad := load(&text)
		if gotV != wantV || fmt.Sprint(gotBad) != fmt.Sprint(wantBad) {
			t.Errorf("%s: typed gives %s (bad rows %v), text %s (bad rows %v)", c.chType, gotV, gotBad, wantV, wantBad)
		}
	}
}

// TestExpectSizesBlocks: an Inserter told how many rows come makes each
// column its block's size at the first Add (no growing while it fills),
// bounded by BlockRows, and converts the same values as without.
func TestExpectSizesBlocks(t *testing.T) {
	cols := []rowio.Column{{Name: "n", Type: "Int64"}, {Name: "s", Type: "Nullable(String)"}, {Name: "f", Type: "Float64"},
		{Name: "d", Type: "Decimal(10, 2)"}, {Name: "ts", Type: "DateTime"}}
	b := &rowio.Batch{Rows: 2, Cols: []rowio.Vector{
		{Text: [][]byte{[]byte("1"), []byte("2")}},
		{Text: [][]byte{[]byte("a"), nil}, Null: []bool{false, true}},
		{Text: [][]byte{[]byte("1.5"), []byte("2.5")}},
		{Text: [][]byte{[]byte("1.25"), []byte("2.50")}},
		{Text: [][]byte{[]byte("2026-12-05 10:00:00"), []byte("2026-12-05 11:00:00")}},
	}}
	var want []any
	for _, expect := range []int64{0, 5000} {
		in, err := (&Store{}).NewInserter(context.Background(), "db", "t", cols, "_lp_commit", 1)
		if err != nil {
			t.Fatal(err)
		}
		in.BlockRows = 1000
		in.Expect(expect)
		if _, err := in.Add(b, []int{0, 1, 2, 3, 4}); err != nil {
			t.Fatal(err)
		}
		var got []any
		for i, c := range in.columns {
			// At least the block, at most its allocation's size class.
			if n := capOf(c); expect > 0 && i < len(cols) && (n < 1000 || n > 1100) {
				t.Errorf("Expect(%d), BlockRows 1000: column %s holds room for %d rows", expect, cols[i].Name, n)
			}
			got = append(got, c.values())
		}
		in.Abort()
		if want == nil {
			want = got
		} else if !reflect.DeepEqual(got, want) {
			t.Errorf("Expect(%d) converted %v, without it %v", expect, got, want)
		}
	}
}

func capOf(c column) int {
	switch c := c.(type) {
	case *intCol[int64]:
		return cap(c.vals)
	case *stringCol:
		return min(cap(c.vals), cap(c.nulls))
	case *floatCol[float64]:
		return cap(c.vals)
	case *decimalCol:
		return cap(c.vals)
	case *timeCol:
		return cap(c.vals)
	}
	return -1
}
