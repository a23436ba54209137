package values

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/shopspring/decimal"

	"github.com/lakepipe/lakepipe/internal/recordeval/rawjson"
)

// Fn computes a function from its evaluated arguments.
type Fn func(cx *Ctx, args []Value) (Value, error)

// Func is a function computed from its evaluated arguments alone.
type Func struct {
	Min, Max int  // argument counts; max < 0: no limit
	Kind     Kind // result kind when always the same, else KUnknown
	Call     Fn
	NullArgs bool // call sees NULL arguments; otherwise a NULL argument gives NULL
}

// Funcs are the functions computed from their arguments alone, by
// lower-case name.
func Funcs() map[string]Func {
	str := func(impl Fn, min, max int) Func {
		return Func{Min: min, Max: max, Kind: KString, Call: impl}
	}
	num := func(impl Fn, min, max int) Func {
		return Func{Min: min, Max: max, Kind: KUnknown, Call: impl}
	}
	part := func(get func(t time.Time) int) Func {
		return Func{Min: 1, Max: 1, Kind: KInt, Call: func(cx *Ctx, a []Value) (Value, error) {
			t, err := cx.Cast(a[0], &TimestampTarget)
			if err != nil || t.Kind == KNull {
				return t, err
			}
			return Int(int64(get(t.Time()))), nil
		}}
	}
	return map[string]Func{
		// text
		"lower":            str(fnLower, 1, 1),
		"lcase":            str(fnLower, 1, 1),
		"upper":            str(fnUpper, 1, 1),
		"ucase":            str(fnUpper, 1, 1),
		"trim":             str(trimFn(true, true), 1, 2),
		"ltrim":            str(trimFn(true, false), 1, 2),
		"rtrim":            str(trimFn(false, true), 1, 2),
		"length":           {Min: 1, Max: 1, Kind: KInt, Call: fnLength},
		"char_length":      {Min: 1, Max: 1, Kind: KInt, Call: fnLength},
		"character_length": {Min: 1, Max: 1, Kind: KInt, Call: fnLength},
		"substr":           str(fnSubstr, 2, 3),
		"substring":        str(fnSubstr, 2, 3),
		"concat":           str(fnConcat, 1, -1),
		"concat_ws":        {Min: 2, Max: -1, Kind: KString, Call: fnConcatWS, NullArgs: true},
		"replace":          str(fnReplace, 2, 3),
		"split_part":       str(fnSplitPart, 3, 3),
		// NULL handling
		"nullif": {Min: 2, Max: 2, Kind: KUnknown, Call: fnNullIf, NullArgs: true},
		// numbers
		"abs":     num(fnAbs, 1, 1),
		"round":   num(fnRound, 1, 2),
		"floor":   num(floorCeil(true), 1, 1),
		"ceil":    num(floorCeil(false), 1, 1),
		"ceiling": num(floorCeil(false), 1, 1),
		// time
		"year":       part(func(t time.Time) int { return t.Year() }),
		"month":      part(func(t time.Time) int { return int(t.Month()) }),
		"day":        part(func(t time.Time) int { return t.Day() }),
		"dayofmonth": part(func(t time.Time) int { return t.Day() }),
		"hour":       part(func(t time.Time) int { return t.Hour() }),
		"minute":     part(func(t time.Time) int { return t.Minute() }),
		"second":     part(func(t time.Time) int { return t.Second() }),
	}
}

// IntArg converts an argument to BIGINT.
func (cx *Ctx) IntArg(v Value, what string) (int64, error) {
	n, err := cx.Cast(v, &BigintTarget)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	return n.Int, nil
}

// StrResult is the STRING of the scratch bytes appended since start.
func (cx *Ctx) StrResult(start int) (Value, error) { return String(cx.Carve(start)), nil }

func fnLower(cx *Ctx, a []Value) (Value, error) {
	s, _ := cx.Text(a[0])
	start := len(cx.Scratch)
	cx.Scratch = AppendLower(cx.Scratch, s)
	return cx.StrResult(start)
}

func fnUpper(cx *Ctx, a []Value) (Value, error) {
	s, _ := cx.Text(a[0])
	start := len(cx.Scratch)
	cx.Scratch = appendCase(cx.Scratch, s, true)
	return cx.StrResult(start)
}

// AppendLower appends s in lower case (UTF-8 aware; other bytes kept).
func AppendLower(dst, s []byte) []byte { return appendCase(dst, s, false) }

// appendCase maps the letters of s to upper or lower case; bytes that are
// not UTF-8 are kept.
func appendCase(dst, s []byte, upper bool) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case upper && c >= 'a' && c <= 'z':
				c -= 'a' - 'A'
			case !upper && c >= 'A' && c <= 'Z':
				c += 'a' - 'A'
			}
			dst = append(dst, c)
			i++
			continue
		}
		r, n := utf8.DecodeRune(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			dst = append(dst, c)
		case upper:
			dst = utf8.AppendRune(dst, unicode.ToUpper(r))
		default:
			dst = utf8.AppendRune(dst, unicode.ToLower(r))
		}
		i += n
	}
	return dst
}

// trimFn trims spaces (' ' only, as Spark and ClickHouse's trimBoth do:
// tabs and other white space stay), or with a second argument any of its
// characters (Snowflake's TRIM(s, chars)).
func trimFn(left, right bool) Fn {
	return func(cx *Ctx, a []Value) (Value, error) {
		s, _ := cx.Text(a[0])
		if len(a) == 1 {
			if left {
				s = bytes.TrimLeft(s, " ")
			}
			if right {
				s = bytes.TrimRight(s, " ")
			}
			return String(s), nil
		}
		chars, _ := cx.Text(a[1])
		if left {
			s = bytes.TrimLeft(s, bstr(chars))
		}
		if right {
			s = bytes.TrimRight(s, bstr(chars))
		}
		return String(s), nil
	}
}

func fnLength(cx *Ctx, a []Value) (Value, error) {
	s, _ := cx.Text(a[0])
	return Int(int64(utf8.RuneCount(s))), nil
}

// fnSubstr is Spark's substr(s, pos[, len]): pos counts characters from 1,
// 0 acts as 1, a negative pos counts from the end; a negative len gives "".
func fnSubstr(cx *Ctx, a []Value) (Value, error) {
	s, _ := cx.Text(a[0])
	pos, err := cx.IntArg(a[1], "position")
	if err != nil {
		return Value{}, err
	}
	length := int64(math.MaxInt64)
	if len(a) == 3 {
		if length, err = cx.IntArg(a[2], "length"); err != nil {
			return Value{}, err
		}
		if length <= 0 {
			return String(s[:0]), nil
		}
	}
	n := int64(utf8.RuneCount(s))
	var start int64
	switch {
	case pos > 0:
		start = pos - 1
	case pos < 0:
		start = n + pos
	}
	end := start + length
	if end < start { // overflow
		end = math.MaxInt64
	}
	start = max(start, 0)
	end = min(end, n)
	if start >= end {
		return String(s[:0]), nil
	}
	b0, b1 := runeOffset(s, start), 0
	b1 = b0 + runeOffset(s[b0:], end-start)
	return String(s[b0:b1]), nil
}

// runeOffset returns the byte offset of the n-th rune of s.
func runeOffset(s []byte, n int64) int {
	i := 0
	for ; n > 0 && i < len(s); n-- {
		if s[i] < utf8.RuneSelf {
			i++
			continue
		}
		_, size := utf8.DecodeRune(s[i:])
		i += size
	}
	return i
}

func fnConcat(cx *Ctx, a []Value) (Value, error) {
	texts := make([][]byte, 0, 8)
	for _, v := range a {
		s, null := cx.Text(v)
		if null {
			return Value{}, nil
		}
		texts = append(texts, s)
	}
	start := len(cx.Scratch)
	for _, s := range texts {
		cx.Scratch = append(cx.Scratch, s...)
	}
	return cx.StrResult(start)
}

// fnConcatWS joins the arguments that are not NULL with the separator; a
// NULL separator gives NULL.
func fnConcatWS(cx *Ctx, a []Value) (Value, error) {
	sep, null := cx.Text(a[0])
	if null {
		return Value{}, nil
	}
	texts := make([][]byte, 0, 8)
	for _, v := range a[1:] {
		if s, null := cx.Text(v); !null {
			texts = append(texts, s)
		}
	}
	start := len(cx.Scratch)
	for i, s := range texts {
		if i > 0 {
			cx.Scratch = append(cx.Scratch, sep...)
		}
		cx.Scratch = append(cx.Scratch, s...)
	}
	return cx.StrResult(start)
}

func fnReplace(cx *Ctx, a []Value) (Value, error) {
	s, _ := cx.Text(a[0])
	from, _ := cx.Text(a[1])
	var to []byte
	if len(a) == 3 {
		to, _ = cx.Text(a[2])
	}
	if len(from) == 0 || bytes.Index(s, from) < 0 {
		return String(s), nil
	}
	start := len(cx.Scratch)
	for {
		i := bytes.Index(s, from)
		if i < 0 {
			break
		}
		cx.Scratch = append(append(cx.Scratch, s[:i]...), to...)
		s = s[i+len(from):]
	}
	cx.Scratch = append(cx.Scratch, s...)
	return cx.StrResult(start)
}

// fnSplitPart is split_part(s, delimiter, n): the n-th part counting from 1
// (negative n counts from the end, 0 acts as 1, as in Snowflake); "" when
// there is no such part. An empty delimiter does not split.
func fnSplitPart(cx *Ctx, a []Value) (Value, error) {
	s, _ := cx.Text(a[0])
	d, _ := cx.Text(a[1])
	n, err := cx.IntArg(a[2], "part number")
	if err != nil {
		return Value{}, err
	}
	if n == 0 {
		n = 1
	}
	count := int64(1)
	if len(d) > 0 {
		count += int64(bytes.Count(s, d))
	}
	if n < 0 {
		n = count + n + 1
	}
	if n < 1 || n > count {
		return String(s[:0]), nil
	}
	if len(d) == 0 {
		return String(s), nil
	}
	for ; n > 1; n-- {
		s = s[bytes.Index(s, d)+len(d):]
	}
	if i := bytes.Index(s, d); i >= 0 {
		s = s[:i]
	}
	return String(s), nil
}

// JavaReplacement converts a Java replacement string to a Go template.
func JavaReplacement(r []byte, groups int) []byte {
	var out []byte
	for i := 0; i < len(r); i++ {
		c := r[i]
		switch {
		case c == '\\' && i+1 < len(r):
			i++
			if r[i] == '$' {
				out = append(out, '$', '$')
			} else {
				out = append(out, r[i])
			}
		case c == '$' && i+1 < len(r) && rawjson.IsDigit(r[i+1]):
			// Java reads as many digits as still name a group
			g := int(r[i+1] - '0')
			j := i + 2
			for j < len(r) && rawjson.IsDigit(r[j]) && g*10+int(r[j]-'0') <= groups {
				g = g*10 + int(r[j]-'0')
				j++
			}
			out = append(out, "${"...)
			out = strconv.AppendInt(out, int64(g), 10)
			out = append(out, '}')
			i = j - 1
		case c == '$' && i+1 < len(r) && r[i+1] == '{':
			k := bytes.IndexByte(r[i:], '}')
			if k < 0 {
				out = append(out, '$', '$')
				continue
			}
			out = append(out, r[i:i+k+1]...)
			i += k
		case c == '$':
			out = append(out, '$', '$')
		default:
			out = append(out, c)
		}
	}
	return out
}

// fnNullIf is NULLIF(a, b): NULL when a = b, else a.
func fnNullIf(cx *Ctx, a []Value) (Value, error) {
	if a[0].Kind == KNull || a[1].Kind == KNull {
		return a[0], nil
	}
	c, err := cx.Compare(a[0], a[1])
	if err != nil {
		return Value{}, err
	}
	if c == 0 {
		return Value{}, nil
	}
	return a[0], nil
}

func fnAbs(cx *Ctx, a []Value) (Value, error) {
	v, err := cx.Number(a[0])
	if err != nil {
		return Value{}, err
	}
	switch v.Kind {
	case KInt:
		if v.Int == math.MinInt64 {
			return Value{}, ErrOverflow
		}
		if v.Int < 0 {
			return Int(-v.Int), nil
		}
	case KFloat:
		return Float(math.Abs(v.Float)), nil
	case KDecimal:
		return Decimal(UnsafeBytes(ToDecimal(v).Abs().String())), nil
	}
	return v, nil
}

// fnRound is round(x[, d]): half away from zero at d fraction digits
// (negative d rounds to tens, hundreds, …). Floats are rounded on their
// shortest decimal text, as Spark does: round(1.005, 2) = 1.01.
func fnRound(cx *Ctx, a []Value) (Value, error) {
	v, err := cx.Number(a[0])
	if err != nil || v.Kind == KNull {
		return Value{}, err
	}
	var d int64
	if len(a) == 2 {
		if d, err = cx.IntArg(a[1], "scale"); err != nil {
			return Value{}, err
		}
	}
	switch v.Kind {
	case KInt:
		if d >= 0 {
			return v, nil
		}
		return roundInt(v.Int, d)
	case KFloat:
		if math.IsNaN(v.Float) || math.IsInf(v.Float, 0) {
			return v, nil
		}
		if d < 0 {
			f, _ := decimal.NewFromFloat(v.Float).Round(int32(max(d, -400))).Float64()
			return Float(f), nil
		}
		text := strconv.AppendFloat(nil, v.Float, 'f', -1, 64)
		if d >= int64(fracDigits(text)) {
			return v, nil
		}
		r, err := appendRoundDecimal(nil, text, int(d), -1)
		if err != nil {
			return Value{}, err
		}
		f, _ := strconv.ParseFloat(bstr(r), 64)
		return Float(f), nil
	}
	dec := ToDecimal(v)
	if d >= int64(max(0, -int(dec.Exponent()))) {
		return v, nil
	}
	// The result keeps d digits after the point (2.04 to 1 digit is 2.0).
	return Decimal(UnsafeBytes(dec.Round(int32(max(d, -400))).StringFixed(int32(max(d, 0))))), nil
}

func fracDigits(text []byte) int {
	if i := bytes.IndexByte(text, '.'); i >= 0 {
		return len(text) - i - 1
	}
	return 0
}

func roundInt(x, d int64) (Value, error) {
	if d < -18 {
		return Int(0), nil
	}
	p := int64(1)
	for ; d < 0; d++ {
		p *= 10
	}
	q, r := x/p, x%p
	if r < 0 {
		r = -r
	}
	if r*2 >= p {
		if x < 0 {
			q--
		} else {
			q++
		}
	}
	v, err := Arith('*', Int(q), Int(p))
	if err != nil {
		return Value{}, err
	}
	return v, nil
}

// floorCeil gives BIGINT (DECIMAL beyond its range) as Spark does.
func floorCeil(floor bool) Fn {
	return func(cx *Ctx, a []Value) (Value, error) {
		v, err := cx.Number(a[0])
		if err != nil || v.Kind == KNull {
			return Value{}, err
		}
		switch v.Kind {
		case KInt:
			return v, nil
		case KFloat:
			f := math.Ceil(v.Float)
			if floor {
				f = math.Floor(v.Float)
			}
			i, err := floatToInt(f)
			if err != nil {
				return Value{}, fmt.Errorf("%s: %w", Describe(v), err)
			}
			return Int(i), nil
		}
		d := ToDecimal(v)
		if floor {
			d = d.Floor()
		} else {
			d = d.Ceil()
		}
		if d.GreaterThanOrEqual(decimal.NewFromInt(math.MinInt64)) && d.LessThanOrEqual(decimal.NewFromInt(math.MaxInt64)) {
			return Int(d.IntPart()), nil
		}
		return Decimal(UnsafeBytes(d.String())), nil
	}
}

const defaultJavaFormat = "yyyy-MM-dd HH:mm:ss"

var DefaultLayout, _ = JavaLayout(defaultJavaFormat)

// ParseLayout parses v's text with a Go layout, in UTC.
func (cx *Ctx) ParseLayout(v Value, layout string) (time.Time, error) {
	if v.Kind == KTime || v.Kind == KDate {
		return v.Time(), nil
	}
	s, null := cx.Text(v)
	if null {
		return time.Time{}, errors.New("NULL")
	}
	t, err := time.Parse(layout, bstr(s))
	if err != nil { // not wrapped: the error would keep a view of scratch
		return time.Time{}, fmt.Errorf("cannot parse %s as %q", Describe(String(s)), layout)
	}
	return t.UTC(), nil
}
