package formats

import (
	"fmt"
	"io"
	"math"
	"math/big"
	"reflect"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/shopspring/decimal"

	"github.com/lakepipe/lakepipe/internal/rowio"
)

// parquetRowGroupRows is the number of rows per row group the Parquet
// writer produces.
const parquetRowGroupRows = 65536

// writeOnly hides any Close method of the destination: the Parquet
// library closes its sink, but Writer.Close must not.
type writeOnly struct{ w io.Writer }

func (w writeOnly) Write(p []byte) (int, error) { return w.w.Write(p) }

type parquetWriter struct {
	fw   *pqarrow.FileWriter
	bld  *array.RecordBuilder
	cols []rowio.Column
	put  []func(array.Builder, any) error
	null []bool
	vals []any // row after deref, reused
	rows int
	err  error
}

// NewParquetWriter returns a Writer of a snappy-compressed Parquet file
// with one column per cols entry, typed by ArrowType(col.Type), in row
// groups of 65536 rows. Reading the file back with Open yields the same
// column names and types (except Bool, which reads back as UInt8, and the
// types ArrowType maps to String).
func NewParquetWriter(w io.Writer, cols []rowio.Column) (rowio.Writer, error) {
	fields := make([]arrow.Field, len(cols))
	pw := &parquetWriter{cols: cols, put: make([]func(array.Builder, any) error, len(cols)), null: make([]bool, len(cols))}
	for i, c := range cols {
		dt, nullable, err := rowio.ArrowType(c.Type)
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", c.Name, err)
		}
		fields[i] = arrow.Field{Name: c.Name, Type: dt, Nullable: nullable}
		pw.null[i] = nullable
		pw.put[i] = appenderFor(dt)
	}
	schema := arrow.NewSchema(fields, nil)
	props := parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithMaxRowGroupLength(parquetRowGroupRows),
		parquet.WithAllocator(memory.DefaultAllocator),
	)
	fw, err := pqarrow.NewFileWriter(schema, writeOnly{w}, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		return nil, fmt.Errorf("starting Parquet file: %w", err)
	}
	pw.fw = fw
	pw.bld = array.NewRecordBuilder(memory.DefaultAllocator, schema)
	return pw, nil
}

func (pw *parquetWriter) Write(row []any) error {
	if pw.err != nil {
		return pw.err
	}
	if len(row) != len(pw.cols) {
		return fmt.Errorf("parquet writer: got %d values for %d columns", len(row), len(pw.cols))
	}
	// Check every value before appending any, so that a rejected row
	// leaves the columns aligned.
	vals := pw.vals[:0]
	for i, v := range row {
		v = deref(v)
		vals = append(vals, v)
		if v == nil && !pw.null[i] {
			return fmt.Errorf("column %q: NULL in a column that is not Nullable", pw.cols[i].Name)
		}
	}
	pw.vals = vals
	for i, v := range vals {
		b := pw.bld.Field(i)
		if v == nil {
			b.AppendNull()
			continue
		}
		if err := pw.put[i](b, v); err != nil {
			// The columns before i already have the row: the file cannot
			// be continued consistently.
			pw.err = fmt.Errorf("column %q: %w", pw.cols[i].Name, err)
			return pw.err
		}
	}
	pw.rows++
	if pw.rows >= parquetRowGroupRows {
		return pw.flush()
	}
	return nil
}

func (pw *parquetWriter) flush() error {
	if pw.rows == 0 {
		return nil
	}
	rec := pw.bld.NewRecordBatch()
	defer rec.Release()
	pw.rows = 0
	if err := pw.fw.Write(rec); err != nil {
		pw.err = fmt.Errorf("writing Parquet row group: %w", err)
		return pw.err
	}
	return nil
}

func (pw *parquetWriter) Close() error {
	if pw.bld == nil {
		return pw.err
	}
	err := pw.err
	if err == nil {
		err = pw.flush()
	}
	if cerr := pw.fw.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("finishing Parquet file: %w", cerr)
	}
	pw.bld.Release()
	pw.bld = nil
	if pw.err == nil {
		pw.err = fmt.Errorf("parquet writer is closed")
	}
	return err
}

// deref turns a nil pointer into nil and a pointer into its value.
func deref(v any) any {
	switch x := v.(type) {
	case nil, string, int64, int32, int16, int8, uint64, uint32, uint16, uint8,
		float64, float32, bool, time.Time, decimal.Decimal:
		return v
	case *string:
		if x == nil {
			return nil
		}
		return *x
	case *int64:
		if x == nil {
			return nil
		}
		return *x
	case *float64:
		if x == nil {
			return nil
		}
		return *x
	case *time.Time:
		if x == nil {
			return nil
		}
		return *x
	case *decimal.Decimal:
		if x == nil {
			return nil
		}
		return *x
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return nil
		}
		return deref(rv.Elem().Interface())
	}
	return v
}

func toInt64(v any) (int64, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case int32:
		return int64(x), nil
	case int16:
		return int64(x), nil
	case int8:
		return int64(x), nil
	case int:
		return int64(x), nil
	case uint8:
		return int64(x), nil
	case uint16:
		return int64(x), nil
	case uint32:
		return int64(x), nil
	case uint64:
		if x > math.MaxInt64 {
			return 0, fmt.Errorf("%d is out of range", x)
		}
		return int64(x), nil
	case uint:
		return toInt64(uint64(x))
	case bool:
		if x {
			return 1, nil
		}
		return 0, nil
	}
	return 0, fmt.Errorf("cannot store %T as an integer", v)
}

func toUint64(v any) (uint64, error) {
	switch x := v.(type) {
	case uint64:
		return x, nil
	case uint32:
		return uint64(x), nil
	case uint16:
		return uint64(x), nil
	case uint8:
		return uint64(x), nil
	case uint:
		return uint64(x), nil
	}
	i, err := toInt64(v)
	if err != nil {
		return 0, err
	}
	if i < 0 {
		return 0, fmt.Errorf("%d is out of range", i)
	}
	return uint64(i), nil
}

func toFloat64(v any) (float64, error) {
	switch x := v.(type) {
	case float64:
		return x, nil
	case float32:
		return float64(x), nil
	case decimal.Decimal:
		return x.InexactFloat64(), nil
	}
	i, err := toInt64(v)
	if err != nil {
		return 0, fmt.Errorf("cannot store %T as a float", v)
	}
	return float64(i), nil
}

func toTime(v any) (time.Time, error) {
	if t, ok := v.(time.Time); ok {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("cannot store %T as a time", v)
}

// intRange checks that i fits in a signed integer of the given bits.
func intRange(i int64, bits uint) error {
	if bits < 64 && (i < -1<<(bits-1) || i > 1<<(bits-1)-1) {
		return fmt.Errorf("%d is out of range for %d bits", i, bits)
	}
	return nil
}

func uintRange(u uint64, bits uint) error {
	if bits < 64 && u > 1<<bits-1 {
		return fmt.Errorf("%d is out of range for %d bits", u, bits)
	}
	return nil
}

// appenderFor returns the function that appends a non-NULL Go value to a
// builder of dt.
func appenderFor(dt arrow.DataType) func(array.Builder, any) error {
	switch dt.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64:
		bits := uint(dt.(arrow.FixedWidthDataType).BitWidth())
		return func(b array.Builder, v any) error {
			i, err := toInt64(v)
			if err == nil {
				err = intRange(i, bits)
			}
			if err != nil {
				return err
			}
			switch bb := b.(type) {
			case *array.Int8Builder:
				bb.Append(int8(i))
			case *array.Int16Builder:
				bb.Append(int16(i))
			case *array.Int32Builder:
				bb.Append(int32(i))
			case *array.Int64Builder:
				bb.Append(i)
			}
			return nil
		}
	case arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		bits := uint(dt.(arrow.FixedWidthDataType).BitWidth())
		return func(b array.Builder, v any) error {
			u, err := toUint64(v)
			if err == nil {
				err = uintRange(u, bits)
			}
			if err != nil {
				return err
			}
			switch bb := b.(type) {
			case *array.Uint8Builder:
				bb.Append(uint8(u))
			case *array.Uint16Builder:
				bb.Append(uint16(u))
			case *array.Uint32Builder:
				bb.Append(uint32(u))
			case *array.Uint64Builder:
				bb.Append(u)
			}
			return nil
		}
	case arrow.FLOAT32:
		return func(b array.Builder, v any) error {
			f, err := toFloat64(v)
			if err != nil {
				return err
			}
			b.(*array.Float32Builder).Append(float32(f))
			return nil
		}
	case arrow.FLOAT64:
		return func(b array.Builder, v any) error {
			f, err := toFloat64(v)
			if err != nil {
				return err
			}
			b.(*array.Float64Builder).Append(f)
			return nil
		}
	case arrow.BOOL:
		return func(b array.Builder, v any) error {
			switch x := v.(type) {
			case bool:
				b.(*array.BooleanBuilder).Append(x)
				return nil
			}
			i, err := toInt64(v)
			if err != nil {
				return fmt.Errorf("cannot store %T as a boolean", v)
			}
			b.(*array.BooleanBuilder).Append(i != 0)
			return nil
		}
	case arrow.STRING:
		return func(b array.Builder, v any) error {
			sb := b.(*array.StringBuilder)
			switch x := v.(type) {
			case string:
				sb.Append(x)
			case []byte:
				sb.BinaryBuilder.Append(x)
			case fmt.Stringer:
				sb.Append(x.String())
			default:
				sb.Append(fmt.Sprint(v))
			}
			return nil
		}
	case arrow.DATE32:
		return func(b array.Builder, v any) error {
			t, err := toTime(v)
			if err != nil {
				return err
			}
			b.(*array.Date32Builder).Append(dateOf(t))
			return nil
		}
	case arrow.TIMESTAMP:
		unit := dt.(*arrow.TimestampType).Unit
		return func(b array.Builder, v any) error {
			t, err := toTime(v)
			if err != nil {
				return err
			}
			var ts int64
			if unit == arrow.Nanosecond {
				ts = t.UnixNano()
			} else {
				ts = t.UnixMicro()
			}
			b.(*array.TimestampBuilder).Append(arrow.Timestamp(ts))
			return nil
		}
	case arrow.DECIMAL128:
		dd := dt.(*arrow.Decimal128Type)
		return func(b array.Builder, v any) error {
			d, err := toDecimal(v)
			if err != nil {
				return err
			}
			n, err := decimalToNum(d, dd.Precision, dd.Scale)
			if err != nil {
				return err
			}
			b.(*array.Decimal128Builder).Append(n)
			return nil
		}
	}
	return func(array.Builder, any) error { return fmt.Errorf("unsupported Arrow type %s", dt) }
}

// dateOf is the calendar date of t (in t's location) as days since
// 1970-01-01.
func dateOf(t time.Time) arrow.Date32 {
	y, m, d := t.Date()
	days := time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400
	return arrow.Date32(days)
}

func toDecimal(v any) (decimal.Decimal, error) {
	switch x := v.(type) {
	case decimal.Decimal:
		return x, nil
	case string:
		return decimal.NewFromString(x)
	case float64:
		return decimal.NewFromFloat(x), nil
	case float32:
		return decimal.NewFromFloat32(x), nil
	case *big.Int:
		return decimal.NewFromBigInt(x, 0), nil
	}
	i, err := toInt64(v)
	if err != nil {
		return decimal.Decimal{}, fmt.Errorf("cannot store %T as a decimal", v)
	}
	return decimal.NewFromInt(i), nil
}

// decimalToNum rounds d to scale and checks it fits precision digits.
func decimalToNum(d decimal.Decimal, prec, scale int32) (decimal128.Num, error) {
	unscaled := d.Round(scale).Shift(scale).BigInt()
	n := decimal128.FromBigInt(unscaled)
	if !n.FitsInPrecision(prec) || unscaled.BitLen() > 127 {
		return decimal128.Num{}, fmt.Errorf("%s does not fit Decimal(%d, %d)", d.String(), prec, scale)
	}
	return n, nil
}
