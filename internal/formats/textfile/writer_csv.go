package textfile

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"time"

	"github.com/shopspring/decimal"

	"github.com/lakepipe/lakepipe/internal/rowio"
)

type csvWriter struct {
	w      *bufio.Writer
	cols   []rowio.Column
	kinds  []valueKind
	opts   rowio.Options
	delim  byte
	quote  byte
	header bool // still to be written
	line   []byte
	err    error
}

// valueKind is what a column's ClickHouse type says about formatting.
type valueKind struct {
	date     bool // time.Time → "2006-01-02"
	scale    int  // decimal places for decimal.Decimal, -1 = as is
	fraction int  // sub-second digits for DateTime64
}

func kindOf(chType string) valueKind {
	return valueKind{date: rowio.IsDateType(chType), scale: rowio.ColumnScale(chType), fraction: rowio.DateTime64Precision(chType)}
}

// NewCSVWriter returns a Writer of RFC 4180 CSV lines ending in "\n",
// with Options' delimiter and quote, a header line first if opts.Header.
// A field is quoted only when it holds the delimiter, the quote or a line
// break (or when it would otherwise read back as NULL). NULL is written as
// an empty field, or as opts.NullValue when set. time.Time is written as
// "2006-01-02 15:04:05" in its own location ("2006-01-02" for Date
// columns, with fractional seconds for DateTime64(p)); decimal.Decimal
// with the column's scale; bool as true/false; pointers are dereferenced,
// nil meaning NULL.
func NewCSVWriter(w io.Writer, cols []rowio.Column, opts rowio.Options) rowio.Writer {
	opts = opts.WithDefaults()
	cw := &csvWriter{
		w:      bufio.NewWriterSize(w, 256<<10),
		cols:   cols,
		kinds:  make([]valueKind, len(cols)),
		opts:   opts,
		delim:  opts.DelimiterByte(),
		quote:  opts.QuoteByte(),
		header: opts.Header,
	}
	for i, c := range cols {
		cw.kinds[i] = kindOf(c.Type)
	}
	return cw
}

func (cw *csvWriter) Write(row []any) error {
	if cw.err != nil {
		return cw.err
	}
	if len(row) != len(cw.cols) {
		return fmt.Errorf("csv writer: got %d values for %d columns", len(row), len(cw.cols))
	}
	if cw.header {
		if err := cw.writeHeader(); err != nil {
			return err
		}
	}
	line := cw.line[:0]
	for i, v := range row {
		if i > 0 {
			line = append(line, cw.delim)
		}
		line = cw.appendValue(line, v, cw.kinds[i])
	}
	line = append(line, '\n')
	cw.line = line
	if _, err := cw.w.Write(line); err != nil {
		cw.err = err
		return err
	}
	return nil
}

func (cw *csvWriter) writeHeader() error {
	cw.header = false
	line := cw.line[:0]
	for i, c := range cw.cols {
		if i > 0 {
			line = append(line, cw.delim)
		}
		line = cw.appendString(line, c.Name)
	}
	line = append(line, '\n')
	cw.line = line
	if _, err := cw.w.Write(line); err != nil {
		cw.err = err
		return err
	}
	return nil
}

func (cw *csvWriter) Close() error {
	if cw.err != nil {
		return cw.err
	}
	if cw.header { // a file without rows still gets its header
		if err := cw.writeHeader(); err != nil {
			return err
		}
	}
	if err := cw.w.Flush(); err != nil {
		cw.err = err
		return err
	}
	return nil
}

func (cw *csvWriter) appendNull(dst []byte) []byte {
	if cw.opts.HasNullValue {
		return append(dst, cw.opts.NullValue...)
	}
	return dst
}

// appendString writes s, quoted if it must be to read back the same.
func (cw *csvWriter) appendString(dst []byte, s string) []byte {
	need := false
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == cw.delim || c == cw.quote || c == '\n' || c == '\r' {
			need = true
			break
		}
	}
	if !need && cw.opts.HasNullValue && s == cw.opts.NullValue {
		need = true // unquoted it would read back as NULL
	}
	if !need {
		return append(dst, s...)
	}
	dst = append(dst, cw.quote)
	for i := 0; i < len(s); i++ {
		if s[i] == cw.quote {
			dst = append(dst, cw.quote)
		}
		dst = append(dst, s[i])
	}
	return append(dst, cw.quote)
}

func (cw *csvWriter) appendValue(dst []byte, v any, k valueKind) []byte {
	switch x := v.(type) {
	case nil:
		return cw.appendNull(dst)
	case string:
		return cw.appendString(dst, x)
	case int64:
		return strconv.AppendInt(dst, x, 10)
	case int32:
		return strconv.AppendInt(dst, int64(x), 10)
	case int16:
		return strconv.AppendInt(dst, int64(x), 10)
	case int8:
		return strconv.AppendInt(dst, int64(x), 10)
	case int:
		return strconv.AppendInt(dst, int64(x), 10)
	case uint64:
		return strconv.AppendUint(dst, x, 10)
	case uint32:
		return strconv.AppendUint(dst, uint64(x), 10)
	case uint16:
		return strconv.AppendUint(dst, uint64(x), 10)
	case uint8:
		return strconv.AppendUint(dst, uint64(x), 10)
	case uint:
		return strconv.AppendUint(dst, uint64(x), 10)
	case float64:
		return appendFloat(dst, x, 64)
	case float32:
		return appendFloat(dst, float64(x), 32)
	case bool:
		return strconv.AppendBool(dst, x)
	case time.Time:
		return appendTime(dst, x, k)
	case decimal.Decimal:
		if k.scale >= 0 {
			return append(dst, x.StringFixed(int32(k.scale))...)
		}
		return append(dst, x.String()...)
	case []byte:
		return cw.appendString(dst, string(x))
	case *string:
		if x == nil {
			return cw.appendNull(dst)
		}
		return cw.appendString(dst, *x)
	case *time.Time:
		if x == nil {
			return cw.appendNull(dst)
		}
		return appendTime(dst, *x, k)
	case *decimal.Decimal:
		if x == nil {
			return cw.appendNull(dst)
		}
		return cw.appendValue(dst, *x, k)
	case fmt.Stringer:
		if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && rv.IsNil() {
			return cw.appendNull(dst)
		}
		return cw.appendString(dst, x.String())
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return cw.appendNull(dst)
		}
		return cw.appendValue(dst, rv.Elem().Interface(), k)
	}
	return cw.appendString(dst, fmt.Sprint(v))
}

// appendFloat writes plain decimals for ordinary magnitudes (as
// ClickHouse does) and exponents only for extreme ones.
func appendFloat(dst []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "nan"...)
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	}
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		return strconv.AppendFloat(dst, f, 'g', -1, bits)
	}
	return strconv.AppendFloat(dst, f, 'f', -1, bits)
}

func appendTime(dst []byte, t time.Time, k valueKind) []byte {
	if k.date {
		return t.AppendFormat(dst, "2006-01-02")
	}
	dst = t.AppendFormat(dst, "2006-01-02 15:04:05")
	if k.fraction > 0 {
		ns := strconv.AppendInt(nil, int64(t.Nanosecond())+1e9, 10)[1:] // 9 digits
		dst = append(dst, '.')
		dst = append(dst, ns[:k.fraction]...)
	}
	return dst
}
