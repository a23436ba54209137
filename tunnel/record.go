package tunnel

import (
	"fmt"
	"math"
	"reflect"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/shopspring/decimal"
)

// Record is one row of a session's schema (Schema()), built with typed
// setters and added to a pack with RecordPack.Append, which copies it: a
// record may be Reset and reused for the next row.
//
// A setter returns an error for an unknown column, a value of the wrong
// kind, a number out of the column's range or NULL in a column that is
// not Nullable, and leaves the value as it was. The record also keeps its
// first error (Err): Append refuses the record with it, so a row with a
// bad value is never written even if the setter's error went unchecked.
// Reset clears the values and the error.
//
// A value never set is NULL in a Nullable column and the column's zero
// value ("", 0, 1970-01-01) otherwise. Columns whose ClickHouse type the
// client cannot encode (Array, Map, …) only take NULL: they are left out
// of flushes and the server fills them in.
//
// A Record is not safe for concurrent use.
type Record struct {
	l    *layout
	vals []value
	err  error
}

// value is one cell. n holds integers, float bits, bools, dates,
// timestamps and a decimal's low 64 bits; hi a decimal's high bits.
type value struct {
	state uint8
	n     uint64
	hi    int64
	s     string
	b     []byte
}

const (
	unset uint8 = iota
	isNull
	isSet
)

func newRecord(l *layout) *Record {
	return &Record{l: l, vals: make([]value, len(l.specs))}
}

// Reset unsets every value and clears the error, so the record can be
// reused for another row.
func (r *Record) Reset() {
	clear(r.vals)
	r.err = nil
}

// Err returns the first error of a setter since the last Reset, or nil.
func (r *Record) Err() error { return r.err }

// Len returns the number of columns of the record.
func (r *Record) Len() int { return len(r.vals) }

func (r *Record) idx(name string) (int, error) {
	i, ok := r.l.lookup(name)
	if !ok {
		return -1, r.fail(fmt.Errorf("tunnel: no column %q in the session schema", name))
	}
	return i, nil
}

// fail records err as the record's error if it is the first, and returns
// it.
func (r *Record) fail(err error) error {
	if r.err == nil {
		r.err = err
	}
	return err
}

// SetString sets a String (FixedString, UUID, Enum, IP) column.
func (r *Record) SetString(name, v string) error {
	i, err := r.idx(name)
	if err != nil {
		return err
	}
	return r.putString(i, v)
}

// SetBytes sets a String column to the bytes of v. The record refers to v
// until it is appended: do not change v before.
func (r *Record) SetBytes(name string, v []byte) error {
	i, err := r.idx(name)
	if err != nil {
		return err
	}
	return r.putBytes(i, v)
}

// SetBigint sets an integer column (Int8…Int64, UInt8…UInt64; out of the
// column's range is an error), or a Decimal or Float column.
func (r *Record) SetBigint(name string, v int64) error {
	i, err := r.idx(name)
	if err != nil {
		return err
	}
	return r.putInt(i, v)
}

// SetInt is SetBigint for an int32 (the INT of SQL).
func (r *Record) SetInt(name string, v int32) error {
	i, err := r.idx(name)
	if err != nil {
		return err
	}
	return r.putInt(i, int64(v))
}

// SetDouble sets a Float64 or Float32 column (narrowed to float32).
func (r *Record) SetDouble(name string, v float64) error {
	i, err := r.idx(name)
	if err != nil {
		return err
	}
	return r.putFloat(i, v)
}

// SetFloat sets a Float32 or Float64 column.
func (r *Record) SetFloat(name string, v float32) error {
	i, err := r.idx(name)
	if err != nil {
		return err
	}
	return r.putFloat(i, float64(v))
}

// SetBoolean sets a Bool column, or an integer column (BOOLEAN is stored
// as UInt8) to 1 or 0.
func (r *Record) SetBoolean(name string, v bool) error {
	i, err := r.idx(name)
	if err != nil {
		return err
	}
	return r.putBool(i, v)
}

// SetDecimal sets a Decimal(p, s) column to v: a decimal.Decimal, the
// text of a number ("-12.34", "1e3") or an integer. A value with more
// than s decimal places (other than trailing zeros) or more than p digits
// is an error: values are never rounded.
func (r *Record) SetDecimal(name string, v any) error {
	i, err := r.idx(name)
	if err != nil {
		return err
	}
	if r.l.specs[i].kind != kindDecimal {
		return r.failKind(i, "a decimal")
	}
	switch v.(type) {
	case float32, float64, bool, time.Time, []byte:
		return r.failKind(i, "values of type "+reflect.TypeOf(v).String())
	}
	return r.putAny(i, v)
}

// SetTimestamp sets a DateTime or DateTime64 column to the instant t
// (microseconds, or nanoseconds for DateTime64 with more than 6 digits;
// finer parts are dropped). Given a Date column it sets the calendar date
// of t in t's location.
func (r *Record) SetTimestamp(name string, t time.Time) error {
	i, err := r.idx(name)
	if err != nil {
		return err
	}
	return r.putTime(i, t, false)
}

// SetDate sets a Date or Date32 column to the calendar date of t in t's
// location (2023-10-01 23:30 in Asia/Shanghai is 2023-10-01). Given a
// DateTime column it sets midnight UTC of that date.
func (r *Record) SetDate(name string, t time.Time) error {
	i, err := r.idx(name)
	if err != nil {
		return err
	}
	return r.putTime(i, t, true)
}

// SetNull sets a Nullable column to NULL. A column that is not Nullable
// is an error.
func (r *Record) SetNull(name string) error {
	i, err := r.idx(name)
	if err != nil {
		return err
	}
	return r.putNull(i)
}

// Set sets a column from a Go value, checked against the column's type:
//
//	nil                          NULL (Nullable columns only)
//	int, int8…int64, uint…uint64 integer, Decimal and Float columns
//	float32, float64             Float columns
//	bool                         Bool and integer columns (1 or 0)
//	string                       String columns; Decimal columns (parsed)
//	[]byte                       String columns (kept until Append)
//	decimal.Decimal              Decimal columns
//	time.Time                    Date and DateTime columns (as SetDate and SetTimestamp)
//
// Other types are an error.
func (r *Record) Set(name string, v any) error {
	i, err := r.idx(name)
	if err != nil {
		return err
	}
	return r.putAny(i, v)
}

// SetAt is Set by column index in Schema(); it skips the name lookup.
func (r *Record) SetAt(i int, v any) error {
	if i < 0 || i >= len(r.vals) {
		return r.fail(fmt.Errorf("tunnel: column index %d out of range [0, %d)", i, len(r.vals)))
	}
	return r.putAny(i, v)
}

// failKind records that column i does not take values of what.
func (r *Record) failKind(i int, what string) error {
	sp := &r.l.specs[i]
	if sp.kind == kindUnsupported {
		return r.fail(fmt.Errorf("tunnel: column %q (%s) cannot be written by this client, only left NULL: %s", sp.name, sp.chType, sp.why))
	}
	return r.fail(fmt.Errorf("tunnel: column %q (%s) does not take %s", sp.name, sp.chType, what))
}

func (r *Record) failValue(i int, format string, args ...any) error {
	sp := &r.l.specs[i]
	return r.fail(fmt.Errorf("tunnel: column %q (%s): %s", sp.name, sp.chType, fmt.Sprintf(format, args...)))
}

func (r *Record) putNull(i int) error {
	sp := &r.l.specs[i]
	if !sp.nullable && sp.kind != kindUnsupported {
		return r.fail(fmt.Errorf("tunnel: column %q (%s) is not Nullable", sp.name, sp.chType))
	}
	r.vals[i] = value{state: isNull}
	return nil
}

func (r *Record) putString(i int, v string) error {
	if r.l.specs[i].kind != kindString {
		return r.failKind(i, "a string")
	}
	r.vals[i] = value{state: isSet, s: v}
	return nil
}

func (r *Record) putBytes(i int, v []byte) error {
	if r.l.specs[i].kind != kindString {
		return r.failKind(i, "bytes")
	}
	r.vals[i] = value{state: isSet, b: v}
	return nil
}

func (r *Record) putInt(i int, v int64) error {
	sp := &r.l.specs[i]
	switch sp.kind {
	case kindInt:
		if v < sp.min || v > sp.max {
			return r.failValue(i, "%d is out of range", v)
		}
		r.vals[i] = value{state: isSet, n: uint64(v)}
		return nil
	case kindUint:
		if v < 0 || uint64(v) > sp.umax {
			return r.failValue(i, "%d is out of range", v)
		}
		r.vals[i] = value{state: isSet, n: uint64(v)}
		return nil
	case kindDecimal:
		return r.putNum(i, decimal128.FromI64(v), 0)
	case kindFloat:
		return r.putFloat(i, float64(v))
	default:
		return r.failKind(i, "an integer")
	}
}

func (r *Record) putUint(i int, v uint64) error {
	sp := &r.l.specs[i]
	switch sp.kind {
	case kindInt:
		if v > uint64(sp.max) {
			return r.failValue(i, "%d is out of range", v)
		}
		r.vals[i] = value{state: isSet, n: v}
		return nil
	case kindUint:
		if v > sp.umax {
			return r.failValue(i, "%d is out of range", v)
		}
		r.vals[i] = value{state: isSet, n: v}
		return nil
	case kindDecimal:
		return r.putNum(i, decimal128.FromU64(v), 0)
	case kindFloat:
		return r.putFloat(i, float64(v))
	default:
		return r.failKind(i, "an integer")
	}
}

func (r *Record) putFloat(i int, v float64) error {
	sp := &r.l.specs[i]
	if sp.kind != kindFloat {
		return r.failKind(i, "a float")
	}
	if sp.bits == 32 {
		v = float64(float32(v))
	}
	r.vals[i] = value{state: isSet, n: math.Float64bits(v)}
	return nil
}

func (r *Record) putBool(i int, v bool) error {
	switch r.l.specs[i].kind {
	case kindBool, kindInt, kindUint:
	default:
		return r.failKind(i, "a bool")
	}
	var n uint64
	if v {
		n = 1
	}
	r.vals[i] = value{state: isSet, n: n}
	return nil
}

// putNum sets a Decimal column to n·10^-scale.
func (r *Record) putNum(i int, n decimal128.Num, scale int32) error {
	sp := &r.l.specs[i]
	n, err := rescale(n, scale, sp.prec, sp.scale)
	if err != nil {
		return r.failValue(i, "%s", err)
	}
	r.vals[i] = value{state: isSet, n: n.LowBits(), hi: n.HighBits()}
	return nil
}

func (r *Record) putDecimal(i int, v decimal.Decimal) error {
	if r.l.specs[i].kind != kindDecimal {
		return r.failKind(i, "a decimal")
	}
	n, scale, err := fromDecimal(v)
	if err != nil {
		return r.failValue(i, "%s: %s", v, err)
	}
	return r.putNum(i, n, scale)
}

func (r *Record) putDecimalString(i int, v string) error {
	if r.l.specs[i].kind != kindDecimal {
		return r.failKind(i, "a decimal")
	}
	n, scale, err := parseDecimal(v)
	if err != nil {
		return r.failValue(i, "%q: %s", v, err)
	}
	return r.putNum(i, n, scale)
}

const secondsPerDay = 86400

func (r *Record) putTime(i int, t time.Time, asDate bool) error {
	sp := &r.l.specs[i]
	switch sp.kind {
	case kindDate:
		y, m, d := t.Date()
		days := time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / secondsPerDay
		if days < math.MinInt32 || days > math.MaxInt32 {
			return r.failValue(i, "date %s is out of range", t)
		}
		r.vals[i] = value{state: isSet, n: uint64(days)}
		return nil
	case kindTimestamp:
		if asDate {
			y, m, d := t.Date()
			t = time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
		}
		var n int64
		switch sp.unit {
		case arrow.Second:
			n = t.Unix()
		case arrow.Millisecond:
			n = t.UnixMilli()
		case arrow.Microsecond:
			n = t.UnixMicro()
		default:
			if y := t.Year(); y < 1678 || y > 2261 {
				return r.failValue(i, "%s is out of the range of nanosecond timestamps", t)
			}
			n = t.UnixNano()
		}
		r.vals[i] = value{state: isSet, n: uint64(n)}
		return nil
	default:
		return r.failKind(i, "a time")
	}
}

func (r *Record) putAny(i int, v any) error {
	switch x := v.(type) {
	case nil:
		return r.putNull(i)
	case string:
		if r.l.specs[i].kind == kindDecimal {
			return r.putDecimalString(i, x)
		}
		return r.putString(i, x)
	case int64:
		return r.putInt(i, x)
	case float64:
		return r.putFloat(i, x)
	case int:
		return r.putInt(i, int64(x))
	case int32:
		return r.putInt(i, int64(x))
	case bool:
		return r.putBool(i, x)
	case time.Time:
		return r.putTime(i, x, false)
	case decimal.Decimal:
		return r.putDecimal(i, x)
	case []byte:
		return r.putBytes(i, x)
	case float32:
		return r.putFloat(i, float64(x))
	case int8:
		return r.putInt(i, int64(x))
	case int16:
		return r.putInt(i, int64(x))
	case uint:
		return r.putUint(i, uint64(x))
	case uint8:
		return r.putUint(i, uint64(x))
	case uint16:
		return r.putUint(i, uint64(x))
	case uint32:
		return r.putUint(i, uint64(x))
	case uint64:
		return r.putUint(i, x)
	default:
		// reflect.TypeOf keeps v from escaping; printing v would not.
		return r.failKind(i, "values of type "+reflect.TypeOf(v).String())
	}
}
