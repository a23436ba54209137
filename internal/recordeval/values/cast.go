package values

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/shopspring/decimal"

	"github.com/lakepipe/lakepipe/internal/chstore"
	"github.com/lakepipe/lakepipe/internal/recordeval/rawjson"
	"github.com/lakepipe/lakepipe/internal/sqlast"
	"github.com/lakepipe/lakepipe/schemas"
)

// Target is the type of a cast.
type Target struct {
	Kind        Kind   // KString, KInt, KFloat, KBool, KTime, KDate, KDecimal, KJSON
	name        string // as written, for messages
	min, max    int64  // KInt
	Prec, Scale int    // KDecimal
}

var (
	BigintTarget    = Target{Kind: KInt, name: "BIGINT", min: math.MinInt64, max: math.MaxInt64}
	TimestampTarget = Target{Kind: KTime, name: "TIMESTAMP"}
	DateTarget      = Target{Kind: KDate, name: "DATE"}
)

// TargetOf maps a declared SQL type to a cast target.
func TargetOf(t sqlast.TypeName) (Target, error) {
	name := sqlast.FormatType(t)
	switch t.Name {
	case "STRING", "VARCHAR", "CHAR", "TEXT", "BINARY":
		return Target{Kind: KString, name: name}, nil
	case "TINYINT", "BYTE":
		return Target{Kind: KInt, name: name, min: math.MinInt8, max: math.MaxInt8}, nil
	case "SMALLINT", "SHORT":
		return Target{Kind: KInt, name: name, min: math.MinInt16, max: math.MaxInt16}, nil
	case "INT", "INTEGER":
		return Target{Kind: KInt, name: name, min: math.MinInt32, max: math.MaxInt32}, nil
	case "BIGINT", "LONG":
		return Target{Kind: KInt, name: name, min: math.MinInt64, max: math.MaxInt64}, nil
	case "FLOAT", "REAL", "DOUBLE", "FLOAT64":
		return Target{Kind: KFloat, name: name}, nil
	case "DECIMAL", "NUMERIC", "NUMBER":
		p, s, err := schemas.DecimalParams(t)
		if err != nil {
			return Target{}, fmt.Errorf("%s: precision must be 1..38 and scale 0..precision", name)
		}
		return Target{Kind: KDecimal, name: name, Prec: p, Scale: s}, nil
	case "BOOLEAN", "BOOL":
		return Target{Kind: KBool, name: name}, nil
	case "TIMESTAMP", "TIMESTAMP_NTZ", "TIMESTAMP_LTZ", "DATETIME":
		return Target{Kind: KTime, name: name}, nil
	case "DATE":
		return Target{Kind: KDate, name: name}, nil
	case "JSON", "VARIANT":
		return Target{Kind: KJSON, name: name}, nil
	}
	return Target{}, fmt.Errorf("cannot cast to %s in a Kafka pipe's SELECT (supported: STRING, VARCHAR(n), TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, DECIMAL(p,s), BOOLEAN, TIMESTAMP, DATE, JSON; keep nested data as JSON text)", name)
}

// Cast converts v to t. A NULL (or JSON null) stays NULL.
func (cx *Ctx) Cast(v Value, t *Target) (Value, error) {
	if v.Kind == KNull {
		return v, nil
	}
	if t.Kind == KJSON {
		return cx.castJSON(v)
	}
	if t.Kind == KString {
		b, null := cx.Text(v)
		if null {
			return Value{}, nil
		}
		return String(b), nil
	}
	s := cx.Scalar(v)
	if s.Kind == KNull {
		return s, nil
	}
	r, err := cx.castScalar(s, t)
	if err != nil {
		if err == errCast {
			return Value{}, fmt.Errorf("cannot cast %s to %s", Describe(v), t.name)
		}
		return Value{}, fmt.Errorf("cannot cast %s to %s: %w", Describe(v), t.name, err)
	}
	return r, nil
}

// errCast is a cast that has nothing more to say than that it failed.
var errCast = errors.New("cannot cast")

// errDateDigits refuses text like 20240115 as a DATE. Text that is only a
// number is Unix time, which made the common yyyyMMdd spelling a plausible
// wrong date (20240115 seconds: 1970-08-23) without a word; Spark's CAST
// refuses it too (NULL), and ClickHouse's toDate fails on it.
var errDateDigits = errors.New("8 digits that read as a yyyyMMdd date are not cast to DATE, to not take them for Unix seconds: " +
	"TO_DATE(x, 'yyyyMMdd') reads them as a date, CAST(CAST(x AS BIGINT) AS TIMESTAMP) as Unix time")

// yyyyMMdd reports whether b is exactly 8 digits forming a valid date.
func yyyyMMdd(b []byte) bool {
	if len(b) != 8 {
		return false
	}
	y, ok1 := digits(b[0:4])
	m, ok2 := digits(b[4:6])
	d, ok3 := digits(b[6:8])
	return ok1 && ok2 && ok3 && m >= 1 && m <= 12 && d >= 1 && d <= daysIn(m, y)
}

func (cx *Ctx) castScalar(v Value, t *Target) (Value, error) {
	switch t.Kind {
	case KInt:
		i, err := castInt(v)
		if err != nil {
			return Value{}, err
		}
		if i < t.min || i > t.max {
			return Value{}, ErrIntRange
		}
		return Int(i), nil
	case KFloat:
		return castFloat(v)
	case KBool:
		return castBool(v)
	case KTime:
		tm, err := castTime(v)
		if err != nil {
			return Value{}, err
		}
		return Timestamp(tm), nil
	case KDate:
		if v.Kind == KString && yyyyMMdd(trimBlank(v.Bytes)) {
			return Value{}, errDateDigits
		}
		tm, err := castTime(v)
		if err != nil {
			return Value{}, err
		}
		return Date(TruncDay(tm)), nil
	case KDecimal:
		return cx.castDecimal(v, t.Prec, t.Scale)
	}
	return Value{}, errCast
}

func castInt(v Value) (int64, error) {
	switch v.Kind {
	case KInt:
		return v.Int, nil
	case KBool:
		return v.Int, nil
	case KFloat:
		return floatToInt(v.Float)
	case KDecimal:
		d, err := decimal.NewFromString(bstr(v.Bytes))
		if err != nil || !smallExponent(v.Bytes) {
			return 0, errCast
		}
		d = d.Truncate(0)
		if d.GreaterThan(decimal.NewFromInt(math.MaxInt64)) || d.LessThan(decimal.NewFromInt(math.MinInt64)) {
			return 0, ErrIntRange
		}
		return d.IntPart(), nil
	case KString:
		b := trimBlank(v.Bytes)
		i, err := ParseInt(b)
		if err == nil || err == ErrIntRange {
			return i, err
		}
		f, ferr := strconv.ParseFloat(bstr(b), 64)
		if ferr != nil && !isRangeErr(ferr) {
			return 0, errCast
		}
		return floatToInt(f)
	case KTime:
		return v.Time().Unix(), nil
	}
	return 0, errCast
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// floatToInt truncates toward zero.
func floatToInt(f float64) (int64, error) {
	if math.IsNaN(f) {
		return 0, errCast
	}
	f = math.Trunc(f)
	if f < -9223372036854775808 || f >= 9223372036854775808 {
		return 0, ErrIntRange
	}
	return int64(f), nil
}

func castFloat(v Value) (Value, error) {
	switch v.Kind {
	case KFloat:
		return v, nil
	case KInt, KBool:
		return Float(float64(v.Int)), nil
	case KDecimal:
		return Float(toFloat(v)), nil
	case KString:
		f, err := strconv.ParseFloat(bstr(trimBlank(v.Bytes)), 64)
		if err != nil {
			if isRangeErr(err) {
				return Value{}, ErrIntRange
			}
			return Value{}, errCast
		}
		return Float(f), nil
	case KTime:
		return Float(float64(v.Time().UnixNano()) / 1e9), nil
	}
	return Value{}, errCast
}

func castBool(v Value) (Value, error) {
	switch v.Kind {
	case KBool:
		return v, nil
	case KInt:
		return Bool(v.Int != 0), nil
	case KFloat:
		return Bool(v.Float != 0), nil
	case KDecimal:
		return Bool(!ToDecimal(v).IsZero()), nil
	case KString:
		if b, ok := parseBool(v.Bytes); ok {
			return Bool(b), nil
		}
	}
	return Value{}, errCast
}

// castTime converts a scalar to a UTC time.
func castTime(v Value) (time.Time, error) {
	switch v.Kind {
	case KTime, KDate:
		return v.Time(), nil
	case KInt:
		return epochTime(v.Int), nil
	case KFloat:
		return epochFloatTime(v.Float)
	case KDecimal:
		return epochFloatTime(toFloat(v))
	case KString:
		return parseTimestamp(v.Bytes)
	}
	return time.Time{}, errCast
}

// epochTime reads n as Unix time: seconds when |n| < 1e11 (until year
// 5138), milliseconds when |n| < 1e14, microseconds when |n| < 1e17, else
// nanoseconds.
func epochTime(n int64) time.Time {
	a := n
	if a < 0 {
		a = -a // MinInt64 stays negative: nanoseconds
	}
	switch {
	case a >= 0 && a < 1e11:
		return time.Unix(n, 0).UTC()
	case a >= 0 && a < 1e14:
		return time.UnixMilli(n).UTC()
	case a >= 0 && a < 1e17:
		return time.UnixMicro(n).UTC()
	}
	return time.Unix(0, n).UTC()
}

// epochFloatTime is epochTime for numbers with a fraction.
func epochFloatTime(f float64) (time.Time, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return time.Time{}, errCast
	}
	a := math.Abs(f)
	var ns float64
	switch {
	case a < 1e11:
		ns = f * 1e9
	case a < 1e14:
		ns = f * 1e6
	case a < 1e17:
		ns = f * 1e3
	default:
		ns = f
	}
	if ns < -9.2e18 || ns > 9.2e18 {
		return time.Time{}, ErrIntRange
	}
	if a < 1e11 { // keep whole seconds exact
		sec, frac := math.Modf(f)
		return time.Unix(int64(sec), int64(math.Round(frac*1e9))).UTC(), nil
	}
	return time.Unix(0, int64(math.Round(ns))).UTC(), nil
}

// TruncDay is midnight UTC of t's UTC day.
func TruncDay(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

func (cx *Ctx) castDecimal(v Value, p, s int) (Value, error) {
	var b []byte
	switch v.Kind {
	case KInt:
		start := len(cx.Scratch)
		cx.Scratch = strconv.AppendInt(cx.Scratch, v.Int, 10)
		b = cx.Carve(start)
	case KFloat:
		if math.IsNaN(v.Float) || math.IsInf(v.Float, 0) {
			return Value{}, errCast
		}
		start := len(cx.Scratch)
		cx.Scratch = strconv.AppendFloat(cx.Scratch, v.Float, 'f', -1, 64)
		b = cx.Carve(start)
	case KDecimal, KString:
		b = trimBlank(v.Bytes)
	default:
		return Value{}, errCast
	}
	start := len(cx.Scratch)
	out, err := appendRoundDecimal(cx.Scratch, b, s, p-s)
	if err != nil {
		return Value{}, err
	}
	cx.Scratch = out
	return Decimal(cx.Carve(start)), nil
}

// appendRoundDecimal appends the number text b rounded half away from zero
// to scale fraction digits (exactly scale digits are written). An integer
// part longer than maxInt digits (when maxInt >= 0) is an error.
func appendRoundDecimal(dst, b []byte, scale, maxInt int) ([]byte, error) {
	neg := false
	t := b
	if len(t) > 0 && (t[0] == '-' || t[0] == '+') {
		neg = t[0] == '-'
		t = t[1:]
	}
	intPart, frac := t, []byte(nil)
	for i, c := range t {
		if c == '.' {
			intPart, frac = t[:i], t[i+1:]
			break
		}
	}
	plain := len(intPart)+len(frac) > 0
	for _, c := range intPart {
		plain = plain && rawjson.IsDigit(c)
	}
	for _, c := range frac {
		plain = plain && rawjson.IsDigit(c)
	}
	if !plain { // exponent or junk: let shopspring read it
		if !smallExponent(t) {
			return dst, ErrIntRange
		}
		d, err := decimal.NewFromString(bstr(b))
		if err != nil {
			return dst, errCast
		}
		return appendRoundDecimal(dst, []byte(d.StringFixed(int32(scale))), scale, maxInt)
	}
	for len(intPart) > 0 && intPart[0] == '0' {
		intPart = intPart[1:]
	}
	// digs = a carry digit, intPart and frac padded or cut to scale digits,
	// rounded on frac[scale]
	var buf [64]byte
	digs := append(buf[:0], '0')
	digs = append(digs, intPart...)
	n := min(scale, len(frac))
	digs = append(digs, frac[:n]...)
	for k := n; k < scale; k++ {
		digs = append(digs, '0')
	}
	if scale < len(frac) && frac[scale] >= '5' {
		for k := len(digs) - 1; k >= 0; k-- {
			if digs[k] == '9' {
				digs[k] = '0'
				continue
			}
			digs[k]++
			break
		}
	}
	lead := 0
	for lead < len(digs)-scale && digs[lead] == '0' {
		lead++
	}
	intDigits := len(digs) - scale - lead
	if maxInt >= 0 && intDigits > maxInt {
		return dst, fmt.Errorf("does not fit: %d integer digits, at most %d", intDigits, maxInt)
	}
	zero := true
	for _, c := range digs {
		zero = zero && c == '0'
	}
	if neg && !zero {
		dst = append(dst, '-')
	}
	if intDigits == 0 {
		dst = append(dst, '0')
	}
	dst = append(dst, digs[lead:len(digs)-scale]...)
	if scale > 0 {
		dst = append(dst, '.')
		dst = append(dst, digs[len(digs)-scale:]...)
	}
	return dst, nil
}

// smallExponent reports whether number text has no exponent beyond ±400,
// which shopspring would expand digit by digit.
func smallExponent(t []byte) bool {
	for i, c := range t {
		if c == 'e' || c == 'E' {
			e, err := ParseInt(t[i+1:])
			return err != nil || e >= -400 && e <= 400 // junk fails later
		}
	}
	return true
}

func (cx *Ctx) castJSON(v Value) (Value, error) {
	switch v.Kind {
	case KJSON:
		return v, nil
	case KString:
		raw, err := rawjson.Valid(v.Bytes)
		if err != nil {
			return Value{}, fmt.Errorf("%s is not valid JSON: %w", Describe(v), err)
		}
		if raw[0] == 'n' {
			return Value{}, nil
		}
		return JSON(raw), nil
	case KInt, KFloat, KDecimal, KBool:
		if v.Kind == KFloat && (math.IsNaN(v.Float) || math.IsInf(v.Float, 0)) {
			return Value{}, fmt.Errorf("cannot cast %s to JSON", Describe(v))
		}
		start := len(cx.Scratch)
		cx.Scratch = appendScalar(cx.Scratch, v)
		return JSON(cx.Carve(start)), nil
	}
	start := len(cx.Scratch)
	cx.Scratch = rawjson.AppendQuoted(cx.Scratch, appendScalar(nil, v))
	return JSON(cx.Carve(start)), nil
}

// parseTimestamp reads timestamp text (see recordeval's package documentation);
// text that is only a number is Unix time (epochTime).
// TextTimestamp is CAST(text AS TIMESTAMP) for text that is not NULL.
func TextTimestamp(b []byte) (time.Time, error) { return parseTimestamp(b) }

func parseTimestamp(b []byte) (time.Time, error) {
	b = trimBlank(b)
	if t, ok := parseISO(b); ok {
		return t, nil
	}
	if len(b) > 0 && (rawjson.IsDigit(b[0]) || b[0] == '-' || b[0] == '+' || b[0] == '.') {
		if i, err := ParseInt(b); err == nil {
			return epochTime(i), nil
		}
		if f, err := strconv.ParseFloat(bstr(b), 64); err == nil {
			return epochFloatTime(f)
		}
	}
	s := string(b)
	if t, err := chstore.ParseTime(s); err == nil {
		return t, nil
	}
	for _, l := range extraLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, errors.New("not a timestamp")
}

var extraLayouts = []string{time.RFC1123Z, time.RFC1123, "02/Jan/2006:15:04:05 -0700"}

// parseISO reads YYYY-MM-DD[(T| )hh:mm[:ss[.f]]][zone] and the same with /
// in the date, where zone is Z, [ ]±hh, ±hhmm, ±hh:mm or [ ]UTC.
func parseISO(b []byte) (time.Time, bool) {
	if len(b) < 10 || (b[4] != '-' && b[4] != '/') || b[7] != b[4] {
		return time.Time{}, false
	}
	y, ok1 := digits(b[0:4])
	mo, ok2 := digits(b[5:7])
	d, ok3 := digits(b[8:10])
	if !ok1 || !ok2 || !ok3 || mo < 1 || mo > 12 || d < 1 || d > daysIn(mo, y) {
		return time.Time{}, false
	}
	var h, mi, sec, ns int
	rest := b[10:]
	if len(rest) > 0 && (rest[0] == 'T' || rest[0] == ' ') && len(rest) >= 6 && rest[3] == ':' {
		var ok1, ok2 bool
		h, ok1 = digits(rest[1:3])
		mi, ok2 = digits(rest[4:6])
		if !ok1 || !ok2 || h > 23 || mi > 59 {
			return time.Time{}, false
		}
		rest = rest[6:]
		if len(rest) >= 3 && rest[0] == ':' {
			var ok bool
			if sec, ok = digits(rest[1:3]); !ok || sec > 59 {
				return time.Time{}, false
			}
			rest = rest[3:]
			if len(rest) >= 2 && (rest[0] == '.' || rest[0] == ',') && rawjson.IsDigit(rest[1]) {
				k, scale := 1, 100000000
				for ; k < len(rest) && rawjson.IsDigit(rest[k]); k++ {
					ns += int(rest[k]-'0') * scale
					scale /= 10
				}
				rest = rest[k:]
			}
		}
	}
	off := 0
	switch {
	case len(rest) == 0:
	case len(rest) == 1 && (rest[0] == 'Z' || rest[0] == 'z'):
	case string(rest) == "UTC" || string(rest) == " UTC":
	default:
		if rest[0] == ' ' {
			rest = rest[1:]
		}
		if len(rest) < 3 || (rest[0] != '+' && rest[0] != '-') {
			return time.Time{}, false
		}
		oh, okH := digits(rest[1:3])
		om, okM := 0, true
		switch z := rest[3:]; {
		case len(z) == 0:
		case len(z) == 2:
			om, okM = digits(z)
		case len(z) == 3 && z[0] == ':':
			om, okM = digits(z[1:])
		default:
			okM = false
		}
		if !okH || !okM || oh > 23 || om > 59 {
			return time.Time{}, false
		}
		off = oh*3600 + om*60
		if rest[0] == '-' {
			off = -off
		}
	}
	t := time.Date(y, time.Month(mo), d, h, mi, sec, ns, time.UTC)
	if off != 0 {
		t = t.Add(-time.Duration(off) * time.Second)
	}
	return t, true
}

func digits(b []byte) (int, bool) {
	n := 0
	for _, c := range b {
		if !rawjson.IsDigit(c) {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

func daysIn(m, y int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// appendTime appends t in UTC as 2006-01-02 15:04:05.999999999.
func appendTime(dst []byte, t time.Time) []byte {
	t = t.UTC()
	y, mo, d := t.Date()
	if y < 0 || y > 9999 {
		return t.AppendFormat(dst, "2006-01-02 15:04:05.999999999")
	}
	h, mi, s := t.Clock()
	dst = append(dst, byte('0'+y/1000), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10), '-',
		byte('0'+int(mo)/10), byte('0'+int(mo)%10), '-', byte('0'+d/10), byte('0'+d%10), ' ',
		byte('0'+h/10), byte('0'+h%10), ':', byte('0'+mi/10), byte('0'+mi%10), ':', byte('0'+s/10), byte('0'+s%10))
	if ns := t.Nanosecond(); ns != 0 {
		var frac [10]byte
		frac[0] = '.'
		for k := 9; k >= 1; k-- {
			frac[k] = byte('0' + ns%10)
			ns /= 10
		}
		n := 10
		for frac[n-1] == '0' {
			n--
		}
		dst = append(dst, frac[:n]...)
	}
	return dst
}

// appendDate appends t's UTC day as 2006-01-02.
func appendDate(dst []byte, t time.Time) []byte {
	t = t.UTC()
	y, mo, d := t.Date()
	if y < 0 || y > 9999 {
		return t.AppendFormat(dst, "2006-01-02")
	}
	return append(dst, byte('0'+y/1000), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10), '-',
		byte('0'+int(mo)/10), byte('0'+int(mo)%10), '-', byte('0'+d/10), byte('0'+d%10))
}
