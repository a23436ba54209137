package values

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
	"unsafe"

	"github.com/shopspring/decimal"

	"github.com/lakepipe/lakepipe/internal/recordeval/rawjson"
)

// Kind is the type of a value.
type Kind uint8

const (
	KNull Kind = iota
	KString
	KInt
	KFloat
	KBool
	KTime
	KDate
	KDecimal
	KJSON
	// KUnknown is only used at compile time: the kind is known when
	// evaluating.
	KUnknown
)

var kindNames = [...]string{
	KNull: "NULL", KString: "STRING", KInt: "BIGINT", KFloat: "DOUBLE", KBool: "BOOLEAN",
	KTime: "TIMESTAMP", KDate: "DATE", KDecimal: "DECIMAL", KJSON: "JSON", KUnknown: "?",
}

// String is the kind's SQL name, for messages.
func (k Kind) String() string { return kindNames[k] }

// Value is one evaluated value. The zero value is NULL. Bytes are never
// modified in place: they may be the record's, a literal's or scratch.
//
// A time is kept as Unix seconds in Int and nanoseconds in nsec, not as a
// time.Time, and is always UTC: values are copied in and out of every
// node of every record (a CPU profile of a Kafka pipe showed those copies
// as the evaluator's largest own cost), and a time.Time made them 72 bytes
// instead of 48.
type Value struct {
	Kind  Kind
	nsec  int32   // KTime, KDate: nanoseconds within the second in Int
	Bytes []byte  // KString; KDecimal: exact decimal text; KJSON: validated JSON text
	Int   int64   // KInt; KBool: 0 or 1; KTime, KDate: Unix seconds (UTC; a DATE's midnight)
	Float float64 // KFloat
}

// Time is a KTime or KDate value's time, in UTC.
func (v Value) Time() time.Time { return time.Unix(v.Int, int64(v.nsec)).UTC() }

// String, Int, Float, Timestamp, Date, Decimal, JSON and Bool make values
// of their kinds; the bytes are kept, not copied.
func String(s []byte) Value { return Value{Kind: KString, Bytes: s} }

func Int(i int64) Value { return Value{Kind: KInt, Int: i} }

func Float(f float64) Value { return Value{Kind: KFloat, Float: f} }

func Timestamp(t time.Time) Value {
	return Value{Kind: KTime, Int: t.Unix(), nsec: int32(t.Nanosecond())}
}

func Date(t time.Time) Value { return Value{Kind: KDate, Int: t.Unix(), nsec: int32(t.Nanosecond())} }

func Decimal(s []byte) Value { return Value{Kind: KDecimal, Bytes: s} }

func JSON(raw []byte) Value { return Value{Kind: KJSON, Bytes: raw} }

func Bool(b bool) Value {
	if b {
		return Value{Kind: KBool, Int: 1}
	}
	return Value{Kind: KBool}
}

// bstr views b as a string without copying; the string must not outlive b's
// contents.
func bstr(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// UnsafeBytes views s as bytes without copying; they must not be modified.
func UnsafeBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// Describe shows a value in an error message, shortened.
func Describe(v Value) string {
	const maxLen = 80
	short := func(b []byte) string {
		if len(b) > maxLen {
			return strconv.Quote(string(b[:maxLen])) + "…"
		}
		return strconv.Quote(string(b))
	}
	switch v.Kind {
	case KNull:
		return "NULL"
	case KString:
		return short(v.Bytes)
	case KJSON:
		return "JSON " + short(v.Bytes)
	case KDecimal:
		return "DECIMAL " + string(v.Bytes)
	}
	return v.Kind.String() + " " + string(appendScalar(nil, v))
}

// appendScalar appends the text of a value that is not a string, JSON or
// NULL.
func appendScalar(dst []byte, v Value) []byte {
	switch v.Kind {
	case KInt:
		return strconv.AppendInt(dst, v.Int, 10)
	case KFloat:
		return strconv.AppendFloat(dst, v.Float, 'g', -1, 64)
	case KBool:
		if v.Int != 0 {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case KTime:
		return appendTime(dst, v.Time())
	case KDate:
		return appendDate(dst, v.Time())
	case KString, KDecimal, KJSON:
		return append(dst, v.Bytes...)
	}
	return dst
}

// Ctx is what evaluating one record lends to value operations: the
// scratch bytes its intermediate values are carved from, and the record's
// now(), fixed for the whole record.
type Ctx struct {
	Scratch []byte
	now     time.Time
	haveNow bool
}

// Reset forgets the previous record's scratch and now.
func (cx *Ctx) Reset() {
	cx.Scratch = cx.Scratch[:0]
	cx.haveNow = false
}

// Carve returns the scratch bytes appended since start, capped so that a
// later append cannot overwrite them.
func (cx *Ctx) Carve(start int) []byte {
	n := len(cx.Scratch)
	return cx.Scratch[start:n:n]
}

// Now is current_timestamp(): fixed for the whole record.
func (cx *Ctx) Now() time.Time {
	if !cx.haveNow {
		cx.now = time.Now().UTC()
		cx.haveNow = true
	}
	return cx.now
}

// Text renders v as the text a cast to STRING gives; null reports NULL
// (including JSON null). The bytes may be v's own.
func (cx *Ctx) Text(v Value) (b []byte, null bool) {
	switch v.Kind {
	case KNull:
		return nil, true
	case KString, KDecimal:
		return v.Bytes, false
	case KJSON:
		switch v.Bytes[0] {
		case 'n':
			return nil, true
		case '"':
			if c, ok := rawjson.StringContent(v.Bytes); ok {
				return c, false
			}
			start := len(cx.Scratch)
			cx.Scratch = rawjson.AppendUnquoted(cx.Scratch, v.Bytes)
			return cx.Carve(start), false
		case '{', '[':
			return rawjson.Compact(v.Bytes, &cx.Scratch), false
		}
		return v.Bytes, false
	}
	start := len(cx.Scratch)
	cx.Scratch = appendScalar(cx.Scratch, v)
	return cx.Carve(start), false
}

// Scalar turns a JSON value into the scalar it stands for: a string's text,
// a number, a boolean, NULL, or an object's or array's compact text. Other
// values are returned as they are.
func (cx *Ctx) Scalar(v Value) Value {
	if v.Kind != KJSON {
		return v
	}
	switch v.Bytes[0] {
	case 'n':
		return Value{}
	case 't':
		return Bool(true)
	case 'f':
		return Bool(false)
	case '"', '{', '[':
		b, _ := cx.Text(v)
		return String(b)
	}
	n, err := parseNumber(v.Bytes)
	if err != nil { // cannot happen for valid JSON
		return String(v.Bytes)
	}
	return n
}

// maxDecimalDigits bounds the integers kept as exact DECIMAL beyond BIGINT's
// range; longer ones are DOUBLE.
const maxDecimalDigits = 80

// parseNumber parses a number's text (surrounding blanks allowed): integers
// are BIGINT, or DECIMAL beyond its range; others DOUBLE (±Inf beyond
// float64's range).
func parseNumber(b []byte) (Value, error) {
	b = trimBlank(b)
	if i, err := ParseInt(b); err == nil {
		return Int(i), nil
	} else if err == ErrIntRange && len(b) <= maxDecimalDigits {
		return Decimal(b), nil
	}
	f, err := strconv.ParseFloat(bstr(b), 64)
	if err != nil && !isRangeErr(err) {
		return Value{}, errors.New("not a number")
	}
	return Float(f), nil
}

var (
	ErrIntRange = errors.New("out of range")
	errNotInt   = errors.New("not an integer")
)

// ParseInt parses an optionally signed decimal integer without allocating.
func ParseInt(b []byte) (int64, error) {
	neg := false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg = b[0] == '-'
		b = b[1:]
	}
	if len(b) == 0 {
		return 0, errNotInt
	}
	var u uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, errNotInt
		}
		if u > (math.MaxUint64-9)/10 {
			u = math.MaxUint64 // keep scanning for non-digits
			continue
		}
		u = u*10 + uint64(c-'0')
	}
	if neg {
		if u > 1<<63 {
			return 0, ErrIntRange
		}
		return -int64(u), nil
	}
	if u > math.MaxInt64 {
		return 0, ErrIntRange
	}
	return int64(u), nil
}

func trimBlank(b []byte) []byte {
	for len(b) > 0 && rawjson.IsSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && rawjson.IsSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// Number converts v to BIGINT, DOUBLE or DECIMAL for arithmetic; v is not
// NULL.
func (cx *Ctx) Number(v Value) (Value, error) {
	v = cx.Scalar(v)
	switch v.Kind {
	case KInt, KFloat, KDecimal, KNull:
		return v, nil
	case KString:
		n, err := parseNumber(v.Bytes)
		if err != nil {
			return Value{}, fmt.Errorf("%s is not a number", Describe(v))
		}
		return n, nil
	}
	return Value{}, fmt.Errorf("%s is not a number", Describe(v))
}

func isNumeric(k Kind) bool { return k == KInt || k == KFloat || k == KDecimal }

// toFloat converts a number (KInt, KFloat, KDecimal) to float64.
func toFloat(v Value) float64 {
	switch v.Kind {
	case KInt:
		return float64(v.Int)
	case KFloat:
		return v.Float
	}
	f, _ := strconv.ParseFloat(bstr(v.Bytes), 64)
	return f
}

// ToDecimal converts KInt or KDecimal to an exact decimal. DECIMAL values
// only come from bounded text (parseNumber, casts, arithmetic on them), so
// shopspring never expands a huge exponent here.
func ToDecimal(v Value) decimal.Decimal {
	if v.Kind == KInt {
		return decimal.NewFromInt(v.Int)
	}
	d, _ := decimal.NewFromString(bstr(v.Bytes))
	return d
}

// Tri is a three-valued truth value.
type Tri uint8

const (
	TriNull Tri = iota
	TriFalse
	TriTrue
)

// TriOf is TriTrue or TriFalse.
func TriOf(b bool) Tri {
	if b {
		return TriTrue
	}
	return TriFalse
}

// Value is t as a BOOLEAN, NULL for TriNull.
func (t Tri) Value() Value {
	if t == TriNull {
		return Value{}
	}
	return Bool(t == TriTrue)
}

// Truth reads v as a condition: BOOLEAN, NULL, a number (true when not 0),
// or text spelling a boolean.
func (cx *Ctx) Truth(v Value) (Tri, error) {
	v = cx.Scalar(v)
	switch v.Kind {
	case KNull:
		return TriNull, nil
	case KBool:
		return TriOf(v.Int != 0), nil
	case KInt:
		return TriOf(v.Int != 0), nil
	case KFloat:
		return TriOf(v.Float != 0), nil
	case KDecimal:
		return TriOf(!ToDecimal(v).IsZero()), nil
	case KString:
		if b, ok := parseBool(v.Bytes); ok {
			return TriOf(b), nil
		}
	}
	return TriNull, fmt.Errorf("%s is not a boolean", Describe(v))
}

// parseBool reads the spellings of a boolean, in any case.
func parseBool(b []byte) (bool, bool) {
	b = trimBlank(b)
	if len(b) > 5 {
		return false, false
	}
	var low [5]byte
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		low[i] = c
	}
	switch string(low[:len(b)]) {
	case "true", "t", "yes", "y", "on", "1":
		return true, true
	case "false", "f", "no", "n", "off", "0":
		return false, true
	}
	return false, false
}

// Compare orders two non-NULL values: numbers numerically, text bytewise,
// booleans false < true, times and dates in time. Text compared with a
// number, a time or a boolean is converted to that type first.
func (cx *Ctx) Compare(a, b Value) (int, error) {
	a, b = cx.Scalar(a), cx.Scalar(b)
	if a.Kind == KNull || b.Kind == KNull {
		return 0, errors.New("internal error: comparing NULL")
	}
	var err error
	switch {
	case a.Kind == KString && b.Kind == KString:
		return bytes.Compare(a.Bytes, b.Bytes), nil
	case a.Kind == KString && b.Kind != KString:
		if a, err = cx.coerceText(a, b.Kind); err != nil {
			return 0, err
		}
	case b.Kind == KString && a.Kind != KString:
		if b, err = cx.coerceText(b, a.Kind); err != nil {
			return 0, err
		}
	}
	switch {
	case isNumeric(a.Kind) && isNumeric(b.Kind):
		return compareNumbers(a, b), nil
	case (a.Kind == KTime || a.Kind == KDate) && (b.Kind == KTime || b.Kind == KDate):
		return a.Time().Compare(b.Time()), nil
	case a.Kind == KBool && b.Kind == KBool:
		return int(a.Int - b.Int), nil
	}
	return 0, fmt.Errorf("cannot compare %s with %s", Describe(a), Describe(b))
}

// coerceText converts text to the kind k it is compared with.
func (cx *Ctx) coerceText(s Value, k Kind) (Value, error) {
	switch k {
	case KInt, KFloat, KDecimal:
		n, err := parseNumber(s.Bytes)
		if err != nil {
			return Value{}, fmt.Errorf("cannot compare %s with a number", Describe(s))
		}
		return n, nil
	case KTime, KDate:
		t, err := parseTimestamp(s.Bytes)
		if err != nil {
			return Value{}, fmt.Errorf("cannot compare %s with a %s: %w", Describe(s), k, err)
		}
		return Timestamp(t), nil
	case KBool:
		if b, ok := parseBool(s.Bytes); ok {
			return Bool(b), nil
		}
		return Value{}, fmt.Errorf("cannot compare %s with a BOOLEAN", Describe(s))
	}
	return s, nil
}

func compareNumbers(a, b Value) int {
	switch {
	case a.Kind == KInt && b.Kind == KInt:
		return cmpInt(a.Int, b.Int)
	case a.Kind == KFloat || b.Kind == KFloat:
		return cmpFloat(toFloat(a), toFloat(b))
	}
	return ToDecimal(a).Cmp(ToDecimal(b))
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// cmpFloat orders NaN above every number and equal to itself, as Spark.
func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	case a == b:
		return 0
	case math.IsNaN(a) && math.IsNaN(b):
		return 0
	case math.IsNaN(a):
		return 1
	}
	return -1
}
