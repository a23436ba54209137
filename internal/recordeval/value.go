package recordeval

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
	"unsafe"

	"github.com/lakepipe/lakepipe/internal/recordeval/rawjson"

	"github.com/shopspring/decimal"
)

// kind is the type of a value.
type kind uint8

const (
	kNull kind = iota
	kString
	kInt
	kFloat
	kBool
	kTime
	kDate
	kDecimal
	kJSON
	// kUnknown is only used at compile time: the kind is known when
	// evaluating.
	kUnknown
)

var kindNames = [...]string{
	kNull: "NULL", kString: "STRING", kInt: "BIGINT", kFloat: "DOUBLE", kBool: "BOOLEAN",
	kTime: "TIMESTAMP", kDate: "DATE", kDecimal: "DECIMAL", kJSON: "JSON", kUnknown: "?",
}

func (k kind) String() string { return kindNames[k] }

// value is one evaluated value. The zero value is NULL. Bytes are never
// modified in place: they may be the record's, a literal's or scratch.
type value struct {
	Kind  kind
	Bytes []byte    // kString; kDecimal: exact decimal text; kJSON: validated JSON text
	Int   int64     // kInt; kBool: 0 or 1
	Float float64   // kFloat
	Time  time.Time // kTime (UTC); kDate: midnight UTC
}

func strV(s []byte) value     { return value{Kind: kString, Bytes: s} }
func intV(i int64) value      { return value{Kind: kInt, Int: i} }
func floatV(f float64) value  { return value{Kind: kFloat, Float: f} }
func timeV(t time.Time) value { return value{Kind: kTime, Time: t} }
func dateV(t time.Time) value { return value{Kind: kDate, Time: t} }
func decV(s []byte) value     { return value{Kind: kDecimal, Bytes: s} }
func jsonV(raw []byte) value  { return value{Kind: kJSON, Bytes: raw} }
func boolV(b bool) value {
	if b {
		return value{Kind: kBool, Int: 1}
	}
	return value{Kind: kBool}
}

// bstr views b as a string without copying; the string must not outlive b's
// contents.
func bstr(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// sbytes views s as bytes without copying; they must not be modified.
func sbytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// describe shows a value in an error message, shortened.
func describe(v value) string {
	const maxLen = 80
	short := func(b []byte) string {
		if len(b) > maxLen {
			return strconv.Quote(string(b[:maxLen])) + "…"
		}
		return strconv.Quote(string(b))
	}
	switch v.Kind {
	case kNull:
		return "NULL"
	case kString:
		return short(v.Bytes)
	case kJSON:
		return "JSON " + short(v.Bytes)
	case kDecimal:
		return "DECIMAL " + string(v.Bytes)
	}
	return v.Kind.String() + " " + string(appendScalar(nil, v))
}

// appendScalar appends the text of a value that is not a string, JSON or
// NULL.
func appendScalar(dst []byte, v value) []byte {
	switch v.Kind {
	case kInt:
		return strconv.AppendInt(dst, v.Int, 10)
	case kFloat:
		return strconv.AppendFloat(dst, v.Float, 'g', -1, 64)
	case kBool:
		if v.Int != 0 {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case kTime:
		return appendTime(dst, v.Time)
	case kDate:
		return appendDate(dst, v.Time)
	case kString, kDecimal, kJSON:
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

// reset forgets the previous record's scratch and now.
func (c *Ctx) reset() {
	c.Scratch = c.Scratch[:0]
	c.haveNow = false
}

// carve returns the scratch bytes appended since start, capped so that a
// later append cannot overwrite them.
func (c *Ctx) carve(start int) []byte {
	n := len(c.Scratch)
	return c.Scratch[start:n:n]
}

// nowTime is current_timestamp(): fixed for the whole record.
func (c *Ctx) nowTime() time.Time {
	if !c.haveNow {
		c.now = time.Now().UTC()
		c.haveNow = true
	}
	return c.now
}

// text renders v as the text a cast to STRING gives; null reports NULL
// (including JSON null). The bytes may be v's own.
func (st *Ctx) text(v value) (b []byte, null bool) {
	switch v.Kind {
	case kNull:
		return nil, true
	case kString, kDecimal:
		return v.Bytes, false
	case kJSON:
		switch v.Bytes[0] {
		case 'n':
			return nil, true
		case '"':
			if c, ok := rawjson.StringContent(v.Bytes); ok {
				return c, false
			}
			start := len(st.Scratch)
			st.Scratch = rawjson.AppendUnquoted(st.Scratch, v.Bytes)
			return st.carve(start), false
		case '{', '[':
			return rawjson.Compact(v.Bytes, &st.Scratch), false
		}
		return v.Bytes, false
	}
	start := len(st.Scratch)
	st.Scratch = appendScalar(st.Scratch, v)
	return st.carve(start), false
}

// scalar turns a JSON value into the scalar it stands for: a string's text,
// a number, a boolean, NULL, or an object's or array's compact text. Other
// values are returned as they are.
func (st *Ctx) scalar(v value) value {
	if v.Kind != kJSON {
		return v
	}
	switch v.Bytes[0] {
	case 'n':
		return value{}
	case 't':
		return boolV(true)
	case 'f':
		return boolV(false)
	case '"', '{', '[':
		b, _ := st.text(v)
		return strV(b)
	}
	n, err := parseNumber(v.Bytes)
	if err != nil { // cannot happen for valid JSON
		return strV(v.Bytes)
	}
	return n
}

// maxDecimalDigits bounds the integers kept as exact DECIMAL beyond BIGINT's
// range; longer ones are DOUBLE.
const maxDecimalDigits = 80

// parseNumber parses a number's text (surrounding blanks allowed): integers
// are BIGINT, or DECIMAL beyond its range; others DOUBLE (±Inf beyond
// float64's range).
func parseNumber(b []byte) (value, error) {
	b = trimBlank(b)
	if i, err := parseInt(b); err == nil {
		return intV(i), nil
	} else if err == errIntRange && len(b) <= maxDecimalDigits {
		return decV(b), nil
	}
	f, err := strconv.ParseFloat(bstr(b), 64)
	if err != nil && !isRangeErr(err) {
		return value{}, errors.New("not a number")
	}
	return floatV(f), nil
}

var (
	errIntRange = errors.New("out of range")
	errNotInt   = errors.New("not an integer")
)

// parseInt parses an optionally signed decimal integer without allocating.
func parseInt(b []byte) (int64, error) {
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
			return 0, errIntRange
		}
		return -int64(u), nil
	}
	if u > math.MaxInt64 {
		return 0, errIntRange
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

// number converts v to BIGINT, DOUBLE or DECIMAL for arithmetic; v is not
// NULL.
func (st *Ctx) number(v value) (value, error) {
	v = st.scalar(v)
	switch v.Kind {
	case kInt, kFloat, kDecimal, kNull:
		return v, nil
	case kString:
		n, err := parseNumber(v.Bytes)
		if err != nil {
			return value{}, fmt.Errorf("%s is not a number", describe(v))
		}
		return n, nil
	}
	return value{}, fmt.Errorf("%s is not a number", describe(v))
}

func isNumeric(k kind) bool { return k == kInt || k == kFloat || k == kDecimal }

// toFloat converts a number (kInt, kFloat, kDecimal) to float64.
func toFloat(v value) float64 {
	switch v.Kind {
	case kInt:
		return float64(v.Int)
	case kFloat:
		return v.Float
	}
	f, _ := strconv.ParseFloat(bstr(v.Bytes), 64)
	return f
}

// toDecimal converts kInt or kDecimal to an exact decimal. DECIMAL values
// only come from bounded text (parseNumber, casts, arithmetic on them), so
// shopspring never expands a huge exponent here.
func toDecimal(v value) decimal.Decimal {
	if v.Kind == kInt {
		return decimal.NewFromInt(v.Int)
	}
	d, _ := decimal.NewFromString(bstr(v.Bytes))
	return d
}

// tri is a three-valued truth value.
type tri uint8

const (
	triNull tri = iota
	triFalse
	triTrue
)

func triOf(b bool) tri {
	if b {
		return triTrue
	}
	return triFalse
}

func (t tri) value() value {
	if t == triNull {
		return value{}
	}
	return boolV(t == triTrue)
}

// truth reads v as a condition: BOOLEAN, NULL, a number (true when not 0),
// or text spelling a boolean.
func (st *Ctx) truth(v value) (tri, error) {
	v = st.scalar(v)
	switch v.Kind {
	case kNull:
		return triNull, nil
	case kBool:
		return triOf(v.Int != 0), nil
	case kInt:
		return triOf(v.Int != 0), nil
	case kFloat:
		return triOf(v.Float != 0), nil
	case kDecimal:
		return triOf(!toDecimal(v).IsZero()), nil
	case kString:
		if b, ok := parseBool(v.Bytes); ok {
			return triOf(b), nil
		}
	}
	return triNull, fmt.Errorf("%s is not a boolean", describe(v))
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

// compare orders two non-NULL values: numbers numerically, text bytewise,
// booleans false < true, times and dates in time. Text compared with a
// number, a time or a boolean is converted to that type first.
func (st *Ctx) compare(a, b value) (int, error) {
	a, b = st.scalar(a), st.scalar(b)
	if a.Kind == kNull || b.Kind == kNull {
		return 0, errors.New("internal error: comparing NULL")
	}
	var err error
	switch {
	case a.Kind == kString && b.Kind == kString:
		return bytes.Compare(a.Bytes, b.Bytes), nil
	case a.Kind == kString && b.Kind != kString:
		if a, err = st.coerceText(a, b.Kind); err != nil {
			return 0, err
		}
	case b.Kind == kString && a.Kind != kString:
		if b, err = st.coerceText(b, a.Kind); err != nil {
			return 0, err
		}
	}
	switch {
	case isNumeric(a.Kind) && isNumeric(b.Kind):
		return compareNumbers(a, b), nil
	case (a.Kind == kTime || a.Kind == kDate) && (b.Kind == kTime || b.Kind == kDate):
		return a.Time.Compare(b.Time), nil
	case a.Kind == kBool && b.Kind == kBool:
		return int(a.Int - b.Int), nil
	}
	return 0, fmt.Errorf("cannot compare %s with %s", describe(a), describe(b))
}

// coerceText converts text to the kind k it is compared with.
func (st *Ctx) coerceText(s value, k kind) (value, error) {
	switch k {
	case kInt, kFloat, kDecimal:
		n, err := parseNumber(s.Bytes)
		if err != nil {
			return value{}, fmt.Errorf("cannot compare %s with a number", describe(s))
		}
		return n, nil
	case kTime, kDate:
		t, err := parseTimestamp(s.Bytes)
		if err != nil {
			return value{}, fmt.Errorf("cannot compare %s with a %s: %w", describe(s), k, err)
		}
		return timeV(t), nil
	case kBool:
		if b, ok := parseBool(s.Bytes); ok {
			return boolV(b), nil
		}
		return value{}, fmt.Errorf("cannot compare %s with a BOOLEAN", describe(s))
	}
	return s, nil
}

func compareNumbers(a, b value) int {
	switch {
	case a.Kind == kInt && b.Kind == kInt:
		return cmpInt(a.Int, b.Int)
	case a.Kind == kFloat || b.Kind == kFloat:
		return cmpFloat(toFloat(a), toFloat(b))
	}
	return toDecimal(a).Cmp(toDecimal(b))
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
