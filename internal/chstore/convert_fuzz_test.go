package chstore

import (
	"bytes"
	"encoding/binary"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/shopspring/decimal"

	"github.com/lakepipe/lakepipe/internal/rowio"
)

// fuzzTypes are the column types newColumn converts into, plain and
// Nullable.
var fuzzTypes = func() []string {
	base := []string{
		"Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64",
		"Float32", "Float64", "String", "FixedString(4)", "Enum8('a' = 1, 'b' = 2)",
		"Date", "DateTime", "DateTime64(3)", "DateTime64(9, 'UTC')",
		"Decimal(1, 0)", "Decimal(9, 2)", "Decimal(18, 18)", "Decimal(38, 10)", "Decimal(76, 0)",
	}
	out := base
	for _, b := range base {
		out = append(out, "Nullable("+b+")")
	}
	return out
}()

// fuzzCells splits fuzz input into text cells: 0x1e separates cells, and a
// cell that starts with 0x1f is NULL.
func fuzzCells(data []byte) rowio.Vector {
	var v rowio.Vector
	for _, c := range bytes.Split(data, []byte{0x1e}) {
		null := len(c) > 0 && c[0] == 0x1f
		v.Text = append(v.Text, c)
		v.Null = append(v.Null, null)
	}
	return v
}

// fuzzArrays builds Arrow arrays of every kind the readers yield, their
// values taken from the input's bytes (8 at a time) and strings from its
// cells: the typed fast paths and the ValueStr fallback.
func fuzzArrays(data []byte, cells rowio.Vector, scale int8) []arrow.Array {
	mem := memory.DefaultAllocator
	words := make([]uint64, 0, len(data)/8+1)
	for i := 0; i+8 <= len(data); i += 8 {
		words = append(words, binary.LittleEndian.Uint64(data[i:]))
	}
	if len(words) == 0 {
		words = append(words, 0)
	}
	null := func(i int) bool { return words[i]%7 == 3 }
	var out []arrow.Array
	build := func(b array.Builder, appendOne func(i int)) {
		for i := range words {
			if null(i) {
				b.AppendNull()
			} else {
				appendOne(i)
			}
		}
		out = append(out, b.NewArray())
		b.Release()
	}
	i8 := array.NewInt8Builder(mem)
	build(i8, func(i int) { i8.Append(int8(words[i])) })
	i16 := array.NewInt16Builder(mem)
	build(i16, func(i int) { i16.Append(int16(words[i])) })
	i32 := array.NewInt32Builder(mem)
	build(i32, func(i int) { i32.Append(int32(words[i])) })
	i64 := array.NewInt64Builder(mem)
	build(i64, func(i int) { i64.Append(int64(words[i])) })
	u8 := array.NewUint8Builder(mem)
	build(u8, func(i int) { u8.Append(uint8(words[i])) })
	u16 := array.NewUint16Builder(mem)
	build(u16, func(i int) { u16.Append(uint16(words[i])) })
	u32 := array.NewUint32Builder(mem)
	build(u32, func(i int) { u32.Append(uint32(words[i])) })
	u64 := array.NewUint64Builder(mem)
	build(u64, func(i int) { u64.Append(words[i]) })
	f32 := array.NewFloat32Builder(mem)
	build(f32, func(i int) { f32.Append(math.Float32frombits(uint32(words[i]))) })
	f64 := array.NewFloat64Builder(mem)
	build(f64, func(i int) { f64.Append(math.Float64frombits(words[i])) })
	bl := array.NewBooleanBuilder(mem)
	build(bl, func(i int) { bl.Append(words[i]&1 == 1) })
	for _, unit := range []arrow.TimeUnit{arrow.Second, arrow.Millisecond, arrow.Microsecond, arrow.Nanosecond} {
		ts := array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: unit, TimeZone: "UTC"})
		build(ts, func(i int) { ts.Append(arrow.Timestamp(int64(words[i]))) })
	}
	d32 := array.NewDate32Builder(mem)
	build(d32, func(i int) { d32.Append(arrow.Date32(int32(words[i]))) })
	d64 := array.NewDate64Builder(mem)
	build(d64, func(i int) { d64.Append(arrow.Date64(int64(words[i]))) })
	dec := array.NewDecimal128Builder(mem, &arrow.Decimal128Type{Precision: 38, Scale: int32(scale)})
	build(dec, func(i int) { dec.Append(decimal128.New(int64(words[i]), words[(i+1)%len(words)])) })

	// Strings and binaries from the text cells.
	sb := array.NewStringBuilder(mem)
	lsb := array.NewLargeStringBuilder(mem)
	bb := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
	for r, c := range cells.Text {
		if cells.Null[r] {
			sb.AppendNull()
			lsb.AppendNull()
			bb.AppendNull()
			continue
		}
		sb.Append(string(c))
		lsb.Append(string(c))
		bb.Append(c)
	}
	for _, b := range []array.Builder{sb, lsb, bb} {
		out = append(out, b.NewArray())
		b.Release()
	}
	return out
}

// FuzzConvert feeds arbitrary cells, as text and as every Arrow array the
// readers yield, into a column of any type (which picks it from
// fuzzTypes): no input may panic, every row is
// either converted or rejected (never both dropped and kept), and the
// columns stay aligned once the rejected rows are dropped.
func FuzzConvert(f *testing.F) {
	for _, seed := range []string{
		"1\x1e-7\x1e\x1e\x1fnull\x1e 42 \x1e5.00",
		"9223372036854775807\x1e-9223372036854775808\x1e18446744073709551615",
		"1.5\x1e-0.25\x1e1e300\x1eNaN\x1e-Inf\x1e0x1p-2",
		"8999.00\x1e1e3\x1e12345678901234567890.5\x1e1e-99999\x1e1e2147483647\x1e.\x1e-",
		"2026-06-01 12:30:00\x1e2026-06-01T14:30:00+02:00\x1e1780317296\x1eJune 1st\x1e2026/06/01",
		"true\x1efalse\x1eTRUE\x1e\xff\xfe\x1ehéllo",
	} {
		for i := range fuzzTypes {
			f.Add([]byte(seed), uint8(i), int8(2))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, which uint8, scale int8) {
		cells := fuzzCells(data)
		arrays := fuzzArrays(data, cells, scale)
		defer func() {
			for _, a := range arrays {
				a.Release()
			}
		}()
		for _, typ := range []string{fuzzTypes[int(which)%len(fuzzTypes)]} {
			col, err := newColumn(typ)
			if err != nil {
				t.Fatalf("newColumn(%s): %v", typ, err)
			}
			srcs := []rowio.Vector{cells, {Text: cells.Text}}
			for _, a := range arrays {
				srcs = append(srcs, rowio.Vector{Arrow: a})
			}
			for _, src := range srcs {
				rows := len(src.Text)
				what := "text"
				if src.Arrow != nil {
					rows, what = src.Arrow.Len(), src.Arrow.DataType().String()
				}
				before := col.len()
				keep := make([]bool, rows)
				for i := range keep {
					keep[i] = true
				}
				col.add(&src, rows, func(r int, msg string) {
					if r < 0 || r >= rows {
						t.Fatalf("%s from %s: bad row %d of %d", typ, what, r, rows)
					}
					if msg == "" {
						t.Fatalf("%s from %s: row %d rejected without a message", typ, what, r)
					}
					keep[r] = false
				})
				if got := col.len() - before; got != rows {
					t.Fatalf("%s from %s: %d rows added, want %d", typ, what, got, rows)
				}
				kept := 0
				for _, k := range keep {
					if k {
						kept++
					}
				}
				col.keep(keep)
				if got := col.len() - before; got != kept {
					t.Fatalf("%s from %s: %d rows kept, want %d", typ, what, got, kept)
				}
				col.addNull(1)
				if n := reflect.ValueOf(col.values()).Len(); n != before+kept+1 {
					t.Fatalf("%s from %s: values() holds %d, want %d", typ, what, n, before+kept+1)
				}
				if col.len() != 0 {
					t.Fatalf("%s: values() did not reset the column", typ)
				}
			}
		}
	})
}

// FuzzParseNumbers checks the hand-written number parsers of the text
// path against the standard ones: parseInt against strconv.ParseInt (after
// the same trimming of spaces and of a zero fraction), parseDecimal
// against shopspring's NewFromString.
func FuzzParseNumbers(f *testing.F) {
	for _, s := range []string{"0", "42", "-7", "+3", " 12 ", "5.00", "1.", ".5", "-.5", "1e3", "9223372036854775807",
		"-9223372036854775808", "9223372036854775808", "00000000000000000042", "123456789012345678.9", "1.2.3", "--1", "\u00a01"} {
		f.Add(s, int8(2))
	}
	f.Fuzz(func(t *testing.T, s string, scale int8) {
		if scale < 0 {
			scale = -scale
		}
		want, werr := refParseInt(s)
		got, err := parseInt(s)
		if (err == nil) != (werr == nil) || (err == nil && got != want) {
			t.Fatalf("parseInt(%q) = %d, %v; strconv says %d, %v", s, got, err, want, werr)
		}
		ts := strings.TrimSpace(s)
		d, err := parseDecimal(ts, int32(scale))
		ref, rerr := decimal.NewFromString(ts)
		if (err == nil) != (rerr == nil) {
			t.Fatalf("parseDecimal(%q) = %s, %v; NewFromString says %s, %v", ts, d, err, ref, rerr)
		}
		if err == nil && !d.Round(int32(scale)).Equal(ref.Round(int32(scale))) {
			t.Fatalf("parseDecimal(%q) = %s; NewFromString says %s (scale %d)", ts, d, ref, scale)
		}
	})
}

// refParseInt is what parseInt means, by the standard library.
func refParseInt(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '.'); i >= 0 && strings.Trim(s[i+1:], "0") == "" {
		s = s[:i]
	}
	return strconv.ParseInt(s, 10, 64)
}

// TestParseIntLeadingZeros is FuzzParseNumbers' first find: more than 19
// characters of digits were "out of range" even when most were leading
// zeros, which fixed-width exports write.
func TestParseIntLeadingZeros(t *testing.T) {
	for in, want := range map[string]int64{"00000000000000000042": 42, "-000000000000000000009223372036854775808": math.MinInt64, "+0000": 0, "-0": 0, "0000000000000000000000.00": 0} {
		if got, err := parseInt(in); err != nil || got != want {
			t.Errorf("parseInt(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	if _, err := parseInt("000000000009223372036854775808"); err == nil {
		t.Error("parseInt accepted 2^63 behind leading zeros")
	}
}
